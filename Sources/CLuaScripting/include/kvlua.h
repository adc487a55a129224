// The Lua side of scripting (EVAL and FUNCTION), in C because a Lua error
// is a longjmp: it must never cross a Swift frame. Every function here that
// runs Lua code does so under lua_pcall; the host's callbacks (Swift) are
// called from C functions that Lua called, and return normally before any
// Lua error is raised. Every symbol is prefixed kvlua_.
#ifndef KVLUA_H
#define KVLUA_H

#include <stddef.h>
#include <stdint.h>

/// One Lua interpreter set up as Redis 7.0 sets up its own: the libraries
/// (base, table, string, math, cjson, struct, cmsgpack, bit), the `redis`
/// API, the sandbox (no os/io/loadfile/dofile/print, no bytecode through
/// loadstring/load, globals and library tables read-only).
typedef struct kvlua kvlua;

/// What the host (the server) does for Lua.
typedef struct kvlua_hooks {
    /// redis.call/pcall: runs a command on the script's client, which
    /// speaks protocol `resp` (2 or 3). Returns 0 with the reply's RESP bytes
    /// in *out, or 1 with an error text (no leading '-') in *out; either
    /// stays valid until the next call.
    int (*call)(void *ctx, int resp, int argc, const char *const *argv, const size_t *lens,
                const char **out, size_t *out_len);
    /// The count hook of a running script: 1 when it must stop (SCRIPT KILL).
    int (*interrupt)(void *ctx);
    /// redis.acl_check_cmd: 1 allowed, 0 denied, -1 no such command.
    int (*acl_check)(void *ctx, int argc, const char *const *argv, const size_t *lens);
    /// redis.log, at Redis's level numbers (0 debug … 3 warning).
    void (*log)(void *ctx, int level, const char *message, size_t len);
    /// redis.register_function during FUNCTION LOAD: 0 when taken, else 1
    /// with an error text in *err (valid until the next call). `ref` is the
    /// callback's reference in the Lua registry (kvlua_unref frees it).
    int (*register_function)(void *ctx, const char *name, size_t name_len, const char *desc, size_t desc_len,
                             int has_desc, uint64_t flags, int ref, const char **err);
} kvlua_hooks;

/// Script flags (Redis's SCRIPT_FLAG_*), in shebangs and register_function.
enum {
    KVLUA_FLAG_NO_WRITES = 1 << 0,
    KVLUA_FLAG_ALLOW_OOM = 1 << 1,
    KVLUA_FLAG_ALLOW_STALE = 1 << 2,
    KVLUA_FLAG_NO_CLUSTER = 1 << 3,
    KVLUA_FLAG_ALLOW_CROSS_SLOT = 1 << 5,
};

/// A script's or function's outcome: RESP bytes for the caller, or an error
/// text (no leading '-', no CRLF). `data` is malloc'd: kvlua_reply_free.
typedef struct kvlua_reply {
    char *data;
    size_t len;
    int is_error;
    /// The error was already counted (it is a command's error reply).
    int ignore_stats;
} kvlua_reply;

/// A new interpreter: for EVAL scripts (`functions` 0) or for FUNCTION
/// libraries (1). Never NULL (aborts when out of memory, as Lua does).
kvlua *kvlua_new(int functions, const kvlua_hooks *hooks, void *ctx);
/// Keeps getfenv, setfenv and newproxy in interpreters made from now on
/// (Redis's lua-enable-deprecated-api).
void kvlua_enable_deprecated_api(int on);
void kvlua_close(kvlua *engine);
/// Bytes the interpreter holds (used_memory_lua).
size_t kvlua_memory(kvlua *engine);

/// Compiles an EVAL script's body (from `skip`, past a shebang line) into
/// the registry as f_<sha>. 0 on success; else 1 with *err malloc'd:
/// "Error compiling script (new function): ...".
int kvlua_eval_compile(kvlua *engine, const char *sha, const char *body, size_t len, size_t skip, char **err);
/// Whether f_<sha> is compiled.
int kvlua_eval_defined(kvlua *engine, const char *sha);

/// Runs the compiled EVAL script f_<sha> (`function_ref` < 0) or the
/// function at `function_ref`, with `nkeys` keys then `nargs` arguments
/// (`items`, concatenated, with their lengths), replying for a client of
/// protocol `caller_resp`. `name` names it in errors (the sha, or the
/// function's name). `hook`: install the count hook (busy-reply-threshold).
void kvlua_run(kvlua *engine, const char *sha, int function_ref, const char *name,
               const char *items, const size_t *lens, int nkeys, int nargs,
               int caller_resp, int hook, kvlua_reply *out);

/// Runs a library's code so it registers its functions (the hook's
/// register_function), within `timeout_ms` (0: none). 0 on success; else 1
/// with *err malloc'd ("Error compiling function: ...", "Error registering
/// functions: ...").
int kvlua_function_load(kvlua *engine, const char *code, size_t len, long timeout_ms, char **err);
/// Frees a function's registry reference.
void kvlua_unref(kvlua *engine, int ref);

void kvlua_reply_free(kvlua_reply *reply);
void kvlua_free(void *pointer);

/// The SHA1 of `data` as 40 lowercase hex digits and a NUL, into `out`.
void kvlua_sha1hex(const char *data, size_t len, char *out);

/// Redis's lrand48 (math.random), exposed for tests.
int32_t kvlua_lrand48(void);
void kvlua_srand48(int32_t seed);

#endif
