// The Lua side of scripting: Redis 7.0's script_lua.c, eval.c and
// function_lua.c rebuilt over Debian's stock Lua 5.1. See kvlua.h.
//
// Redis patches its Lua to mark tables read-only; stock Lua has no such
// flag, so the sandbox is built from proxies instead: the global table a
// script sees is an empty table whose metatable reads through to the real
// globals and refuses every assignment ("Attempt to modify a readonly
// table"), every library table (redis, string, cjson, ...) is such a proxy
// of the real one, and `setmetatable`/`rawset` refuse protected tables.
// Reading an undefined global fails as in Redis ("Script attempted to
// access nonexistent global variable 'x'"). Binary chunks never load: a
// chunk starting with ESC is fed to the text parser, which rejects it as
// Redis's patched Lua does.

#include "kvlua.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int luaopen_cjson(lua_State *L);
int luaopen_bit(lua_State *L);
int luaopen_struct(lua_State *L);
int luaopen_cmsgpack(lua_State *L);

struct kvlua {
    lua_State *L;
    int functions;
    kvlua_hooks hooks;
    void *ctx;
    /// A script or function is running: redis.call and friends work.
    int running;
    /// FUNCTION LOAD is running: redis.register_function works.
    int loading;
    double load_started;
    long load_timeout;
    /// The protocol of the script's client (redis.setresp).
    int resp;
    /// redis.call is running (a debug hook could call it again).
    int in_call;
    long gc_count;
    const char **argv;
    size_t *lens;
    char *numbers;
    int argv_capacity;
};

static char engine_key;
static char protected_key;
static char backing_key;
static char globals_meta_key;
static char library_api_key;
static char error_handler_key;

static double monotonic_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1000.0 + (double)now.tv_nsec / 1e6;
}

static kvlua *engine_of(lua_State *L) {
    lua_pushlightuserdata(L, &engine_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    kvlua *e = (kvlua *)lua_touserdata(L, -1);
    lua_pop(L, 1);
    return e;
}

// MARK: Buffers

typedef struct buffer {
    char *data;
    size_t len;
    size_t cap;
} buffer;

static void buf_reserve(buffer *b, size_t more) {
    if (b->len + more <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + more) cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) abort();
    b->data = data;
    b->cap = cap;
}

static void buf_append(buffer *b, const char *s, size_t len) {
    buf_reserve(b, len);
    memcpy(b->data + b->len, s, len);
    b->len += len;
}

static void buf_cstr(buffer *b, const char *s) { buf_append(b, s, strlen(s)); }

static void buf_printf(buffer *b, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(buffer *b, const char *format, ...) {
    char small[128];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(small, sizeof(small), format, args);
    va_end(args);
    if (n < 0) return;
    if ((size_t)n < sizeof(small)) {
        buf_append(b, small, (size_t)n);
        return;
    }
    buf_reserve(b, (size_t)n + 1);
    va_start(args, format);
    vsnprintf(b->data + b->len, (size_t)n + 1, format, args);
    va_end(args);
    b->len += (size_t)n;
}

/// Appends `s` with CR and LF turned into spaces (Redis's "safe" replies).
static void buf_append_safe(buffer *b, const char *s, size_t len) {
    buf_reserve(b, len);
    for (size_t i = 0; i < len; i++) b->data[b->len + i] = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
    b->len += len;
}

static char *dup_text(const char *s, size_t len) {
    char *copy = malloc(len + 1);
    if (!copy) abort();
    memcpy(copy, s, len);
    copy[len] = 0;
    return copy;
}

// MARK: Errors as Redis builds them

/// Pushes {err = "<CODE> <message>"}, as Redis's luaPushErrorBuff: a text
/// "-CODE message" keeps its code, a plain text gets ERR.
static void push_error_len(lua_State *L, const char *text, size_t len) {
    const char *code = "ERR";
    size_t code_len = 3;
    const char *message = text;
    size_t message_len = len;
    if (len > 0 && text[0] == '-') {
        const char *space = memchr(text, ' ', len);
        if (!space) {
            message = text + 1;
            message_len = len - 1;
        } else {
            code = text + 1;
            code_len = (size_t)(space - text - 1);
            message = space + 1;
            message_len = len - (size_t)(space + 1 - text);
        }
    }
    while (message_len > 0 && (message[0] == '\r' || message[0] == '\n')) {
        message++;
        message_len--;
    }
    while (message_len > 0 && (message[message_len - 1] == '\r' || message[message_len - 1] == '\n')) message_len--;
    lua_newtable(L);
    lua_pushstring(L, "err");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, code, code_len);
    luaL_addchar(&b, ' ');
    luaL_addlstring(&b, message, message_len);
    luaL_pushresult(&b);
    lua_settable(L, -3);
}

static void push_error(lua_State *L, const char *text) { push_error_len(L, text, strlen(text)); }

static void mark_ignore_stats(lua_State *L) {
    lua_pushstring(L, "ignore_error_stats_update");
    lua_pushboolean(L, 1);
    lua_settable(L, -3);
}

// MARK: Loading chunks (never bytecode)

typedef struct chunk_reader {
    const char *data;
    size_t len;
    int state;
} chunk_reader;

static const char *read_chunk(lua_State *L, void *ud, size_t *size) {
    (void)L;
    chunk_reader *r = ud;
    if (r->state == 0) {
        r->state = 1;
        *size = 1;
        return " ";
    }
    if (r->state == 1) {
        r->state = 2;
        *size = r->len;
        return r->data;
    }
    *size = 0;
    return NULL;
}

/// luaL_loadbuffer that reads a binary chunk as text (so it fails to parse,
/// as in Redis, whose Lua never loads bytecode).
static int safe_load(lua_State *L, const char *data, size_t len, const char *name) {
    if (len > 0 && data[0] == LUA_SIGNATURE[0]) {
        chunk_reader r = {data, len, 0};
        return lua_load(L, read_chunk, &r, name);
    }
    return luaL_loadbuffer(L, data, len, name);
}

/// unpack with Redis's fix to its Lua (lbaselib.c): the count is computed
/// without overflow, so a huge range is refused rather than overrunning
/// the stack (Debian's Lua 5.1 lacks the fix and crashes).
static int safe_unpack(lua_State *L) {
    int i, e;
    unsigned int n;
    luaL_checktype(L, 1, LUA_TTABLE);
    i = luaL_optint(L, 2, 1);
    e = luaL_opt(L, luaL_checkint, 3, luaL_getn(L, 1));
    if (i > e) return 0;
    n = (unsigned int)e - (unsigned int)i;
    if (n >= INT_MAX || !lua_checkstack(L, (int)++n)) return luaL_error(L, "too many results to unpack");
    lua_rawgeti(L, 1, i);
    while (i++ < e) lua_rawgeti(L, 1, i);
    return (int)n;
}

static int safe_loadstring(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    const char *name = luaL_optstring(L, 2, s);
    if (safe_load(L, s, len, name) == 0) return 1;
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
}

static int safe_load_reader(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    const char *name = luaL_optstring(L, 2, "=(load)");
    lua_settop(L, 2);
    lua_pushliteral(L, "");
    for (;;) {
        lua_pushvalue(L, 1);
        lua_call(L, 0, 1);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            break;
        }
        if (!lua_isstring(L, -1)) return luaL_error(L, "reader function must return a string");
        if (lua_objlen(L, -1) == 0) {
            lua_pop(L, 1);
            break;
        }
        lua_concat(L, 2);
    }
    size_t len;
    const char *code = lua_tolstring(L, -1, &len);
    if (safe_load(L, code, len, name) == 0) return 1;
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
}

// MARK: Read-only tables

static int is_protected(lua_State *L, int index) {
    if (!lua_istable(L, index)) return 0;
    lua_pushvalue(L, index);
    lua_pushlightuserdata(L, &protected_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_insert(L, -2);
    lua_rawget(L, -2);
    int protected = lua_toboolean(L, -1);
    lua_pop(L, 2);
    return protected;
}

static void mark_protected(lua_State *L, int index) {
    if (index < 0 && index > LUA_REGISTRYINDEX) index = lua_gettop(L) + index + 1;
    lua_pushlightuserdata(L, &protected_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_pushvalue(L, index);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

static int readonly_error(lua_State *L) {
    luaL_where(L, 1);
    lua_pushstring(L, "Attempt to modify a readonly table");
    lua_concat(L, 2);
    return lua_error(L);
}

static int nonexistent_global(lua_State *L) {
    if (lua_gettop(L) != 2) return luaL_error(L, "Wrong number of arguments to luaProtectedTableError");
    if (!lua_isstring(L, -1) && !lua_isnumber(L, -1)) {
        return luaL_error(L, "Second argument to luaProtectedTableError must be a string or number");
    }
    return luaL_error(L, "Script attempted to access nonexistent global variable '%s'", lua_tostring(L, -1));
}

/// Gives the table on top an __index that fails as an undefined global does.
static void set_error_metatable(lua_State *L) {
    lua_newtable(L);
    lua_pushcfunction(L, nonexistent_global);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
}

/// Pushes a read-only view of the table at `index`: an empty table whose
/// metatable reads from it and refuses writes. `shown` (an index, or 0) is
/// what getmetatable() answers for the view; with 0 it answers false.
static void push_readonly_view(lua_State *L, int index, int shown) {
    if (index < 0 && index > LUA_REGISTRYINDEX) index = lua_gettop(L) + index + 1;
    if (shown < 0 && shown > LUA_REGISTRYINDEX) shown = lua_gettop(L) + shown + 1;
    lua_newtable(L);
    lua_newtable(L);
    lua_pushvalue(L, index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, readonly_error);
    lua_setfield(L, -2, "__newindex");
    if (shown) lua_pushvalue(L, shown); else lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    mark_protected(L, -1);
}

static int safe_setmetatable(lua_State *L) {
    if (is_protected(L, 1)) return readonly_error(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static int safe_rawset(lua_State *L) {
    if (is_protected(L, 1)) return readonly_error(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

// MARK: Globals allowed while the libraries load (Redis's allow lists)

static const char *const allowed_globals[] = {
    "string", "cjson", "bit", "cmsgpack", "math", "table", "struct",
    "redis", "__redis__err__handler",
    "xpcall", "tostring", "setmetatable", "next", "assert", "tonumber", "rawequal", "collectgarbage",
    "getmetatable", "rawset", "pcall", "coroutine", "type", "_G", "select", "unpack", "gcinfo", "pairs",
    "rawget", "loadstring", "ipairs", "_VERSION", "load", "error",
    "debug",
    NULL,
};

/// Redis's lua-enable-deprecated-api: these stay too (an immutable setting,
/// read before the first interpreter is made).
static const char *const deprecated_globals[] = {"getfenv", "setfenv", "newproxy", NULL};
static int deprecated_api_enabled = 0;

void kvlua_enable_deprecated_api(int on) { deprecated_api_enabled = on; }

static int allowlist_newindex(lua_State *L) {
    if (lua_gettop(L) != 3) return luaL_error(L, "Wrong number of arguments to luaNewIndexAllowList");
    const char *name = lua_tostring(L, 2);
    if (!name) return 0;
    for (const char *const *allowed = allowed_globals; *allowed; allowed++) {
        if (strcmp(*allowed, name) == 0) {
            lua_rawset(L, 1);
            return 0;
        }
    }
    for (const char *const *allowed = deprecated_globals; deprecated_api_enabled && *allowed; allowed++) {
        if (strcmp(*allowed, name) == 0) {
            lua_rawset(L, 1);
            return 0;
        }
    }
    return 0;  // dofile, loadfile, print, newproxy, setfenv, getfenv...: dropped
}

// MARK: RESP -> Lua (a command's reply, as Redis's redisProtocolToLuaType)

static const char *line_end(const char *p, const char *end) {
    while (p + 1 < end) {
        if (p[0] == '\r' && p[1] == '\n') return p;
        p++;
    }
    return NULL;
}

static long long parse_ll(const char *p, const char *e) {
    char tmp[32];
    size_t n = (size_t)(e - p);
    if (n >= sizeof(tmp)) n = sizeof(tmp) - 1;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    return strtoll(tmp, NULL, 10);
}

/// Parses one reply at p, pushing its Lua form when `push`. Returns where
/// the next reply starts (end on malformed input, after pushing nil).
static const char *resp_to_lua(lua_State *L, const char *p, const char *end, int push) {
    if (push && !lua_checkstack(L, 5)) luaL_error(L, "lua stack limit reach when parsing redis.call reply");
    const char *eol = p < end ? line_end(p, end) : NULL;
    if (!eol) {
        if (push) lua_pushnil(L);
        return end;
    }
    const char *body = p + 1;
    const char *next = eol + 2;
    switch (*p) {
    case '+':
        if (push) {
            lua_newtable(L);
            lua_pushstring(L, "ok");
            lua_pushlstring(L, body, (size_t)(eol - body));
            lua_settable(L, -3);
        }
        return next;
    case '-':
        if (push) {
            buffer b = {0};
            buf_append(&b, "-", 1);
            buf_append(&b, body, (size_t)(eol - body));
            push_error_len(L, b.data, b.len);
            free(b.data);
            mark_ignore_stats(L);
        }
        return next;
    case ':':
        if (push) lua_pushnumber(L, (lua_Number)parse_ll(body, eol));
        return next;
    case ',':
        if (push) {
            char tmp[64];
            size_t n = (size_t)(eol - body);
            if (n >= sizeof(tmp)) n = sizeof(tmp) - 1;
            memcpy(tmp, body, n);
            tmp[n] = 0;
            lua_newtable(L);
            lua_pushstring(L, "double");
            lua_pushnumber(L, strtod(tmp, NULL));
            lua_settable(L, -3);
        }
        return next;
    case '(':
        if (push) {
            lua_newtable(L);
            lua_pushstring(L, "big_number");
            lua_pushlstring(L, body, (size_t)(eol - body));
            lua_settable(L, -3);
        }
        return next;
    case '_':
        if (push) lua_pushnil(L);
        return next;
    case '#':
        if (push) lua_pushboolean(L, *body == 't');
        return next;
    case '$':
    case '=': {
        long long n = parse_ll(body, eol);
        if (n < 0) {
            if (push) lua_pushboolean(L, 0);
            return next;
        }
        if ((long long)(end - next) < n + 2) {
            if (push) lua_pushnil(L);
            return end;
        }
        if (push) {
            if (*p == '$' || n < 4) {
                lua_pushlstring(L, next, (size_t)n);
            } else {
                lua_newtable(L);
                lua_pushstring(L, "verbatim_string");
                lua_newtable(L);
                lua_pushstring(L, "string");
                lua_pushlstring(L, next + 4, (size_t)n - 4);
                lua_settable(L, -3);
                lua_pushstring(L, "format");
                lua_pushlstring(L, next, 3);
                lua_settable(L, -3);
                lua_settable(L, -3);
            }
        }
        return next + n + 2;
    }
    case '*': {
        long long n = parse_ll(body, eol);
        if (n < 0) {
            if (push) lua_pushboolean(L, 0);
            return next;
        }
        if (push) lua_newtable(L);
        for (long long j = 0; j < n; j++) {
            if (push) lua_pushnumber(L, (lua_Number)(j + 1));
            next = resp_to_lua(L, next, end, push);
            if (push) lua_settable(L, -3);
        }
        return next;
    }
    case '%': {
        long long n = parse_ll(body, eol);
        if (push) {
            lua_newtable(L);
            lua_pushstring(L, "map");
            lua_newtable(L);
        }
        for (long long j = 0; j < n; j++) {
            next = resp_to_lua(L, next, end, push);
            next = resp_to_lua(L, next, end, push);
            if (push) lua_settable(L, -3);
        }
        if (push) lua_settable(L, -3);
        return next;
    }
    case '~': {
        long long n = parse_ll(body, eol);
        if (push) {
            lua_newtable(L);
            lua_pushstring(L, "set");
            lua_newtable(L);
        }
        for (long long j = 0; j < n; j++) {
            next = resp_to_lua(L, next, end, push);
            if (push) {
                lua_pushboolean(L, 1);
                lua_settable(L, -3);
            }
        }
        if (push) lua_settable(L, -3);
        return next;
    }
    case '|': {
        long long n = parse_ll(body, eol);
        for (long long j = 0; j < n; j++) {
            next = resp_to_lua(L, next, end, 0);
            next = resp_to_lua(L, next, end, 0);
        }
        return resp_to_lua(L, next, end, push);
    }
    default:
        if (push) lua_pushnil(L);
        return end;
    }
}

// MARK: Lua -> RESP (a script's result, as Redis's luaReplyToRedisReply)

typedef struct reply_context {
    buffer *out;
    int caller_resp;
    int script_resp;
} reply_context;

static void append_length_header(buffer *b, char kind, long long n) { buf_printf(b, "%c%lld\r\n", kind, n); }

static void append_bulk(buffer *b, const char *s, size_t len) {
    buf_printf(b, "$%zu\r\n", len);
    buf_append(b, s, len);
    buf_append(b, "\r\n", 2);
}

static void append_null(reply_context *r) { buf_cstr(r->out, r->caller_resp == 2 ? "$-1\r\n" : "_\r\n"); }

static void append_double(reply_context *r, double d) {
    char text[64];
    if (isinf(d)) {
        snprintf(text, sizeof(text), "%s", d > 0 ? "inf" : "-inf");
    } else {
        snprintf(text, sizeof(text), "%.17g", d);
    }
    if (r->caller_resp == 2) {
        append_bulk(r->out, text, strlen(text));
    } else {
        buf_printf(r->out, ",%s\r\n", text);
    }
}

/// The "err" of an error table at the top, with where it was raised.
typedef struct error_info {
    const char *message;
    size_t message_len;
    const char *source;
    const char *line;
    int ignore_stats;
} error_info;

/// Reads an error table at the top of the stack (rawget, never a
/// metamethod). The strings stay valid while the table is on the stack.
static void read_error_info(lua_State *L, error_info *info) {
    memset(info, 0, sizeof(*info));
    int t = lua_gettop(L);
    lua_pushstring(L, "err");
    lua_rawget(L, t);
    if (lua_isstring(L, -1)) info->message = lua_tolstring(L, -1, &info->message_len);
    lua_pushstring(L, "source");
    lua_rawget(L, t);
    if (lua_isstring(L, -1)) info->source = lua_tostring(L, -1);
    lua_pushstring(L, "line");
    lua_rawget(L, t);
    if (lua_isstring(L, -1)) info->line = lua_tostring(L, -1);
    lua_pushstring(L, "ignore_error_stats_update");
    lua_rawget(L, t);
    if (lua_isboolean(L, -1)) info->ignore_stats = lua_toboolean(L, -1);
    // The four values stay on the stack (keeping the strings alive); the
    // caller pops them with lua_settop.
}

static void lua_to_resp(lua_State *L, reply_context *r);

static int rawget_type(lua_State *L, const char *field) {
    lua_pushstring(L, field);
    lua_rawget(L, -2);
    return lua_type(L, -1);
}

static void lua_to_resp(lua_State *L, reply_context *r) {
    buffer *b = r->out;
    if (!lua_checkstack(L, 4)) {
        buf_cstr(b, "-ERR reached lua stack limit\r\n");
        lua_pop(L, 1);
        return;
    }
    switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        append_bulk(b, s, len);
        break;
    }
    case LUA_TBOOLEAN:
        if (r->script_resp == 2) {
            if (lua_toboolean(L, -1)) buf_cstr(b, ":1\r\n"); else append_null(r);
        } else if (r->caller_resp == 2) {
            buf_cstr(b, lua_toboolean(L, -1) ? ":1\r\n" : ":0\r\n");
        } else {
            buf_cstr(b, lua_toboolean(L, -1) ? "#t\r\n" : "#f\r\n");
        }
        break;
    case LUA_TNUMBER:
        buf_printf(b, ":%lld\r\n", (long long)lua_tonumber(L, -1));
        break;
    case LUA_TTABLE: {
        int t;
        if (rawget_type(L, "err") == LUA_TSTRING) {
            lua_pop(L, 1);
            int top = lua_gettop(L);
            error_info info;
            read_error_info(L, &info);
            buf_append(b, "-", 1);
            if (info.message) buf_append_safe(b, info.message, info.message_len);
            buf_append(b, "\r\n", 2);
            lua_settop(L, top);
            lua_pop(L, 1);
            return;
        }
        lua_pop(L, 1);
        if (rawget_type(L, "ok") == LUA_TSTRING) {
            const char *s = lua_tostring(L, -1);
            buf_append(b, "+", 1);
            buf_append_safe(b, s, strlen(s));
            buf_append(b, "\r\n", 2);
            lua_pop(L, 2);
            return;
        }
        lua_pop(L, 1);
        if (rawget_type(L, "double") == LUA_TNUMBER) {
            append_double(r, lua_tonumber(L, -1));
            lua_pop(L, 2);
            return;
        }
        lua_pop(L, 1);
        if (rawget_type(L, "big_number") == LUA_TSTRING) {
            size_t len;
            const char *s = lua_tolstring(L, -1, &len);
            if (r->caller_resp == 2) {
                buf_printf(b, "$%zu\r\n", len);
                buf_append_safe(b, s, len);
                buf_append(b, "\r\n", 2);
            } else {
                buf_append(b, "(", 1);
                buf_append_safe(b, s, len);
                buf_append(b, "\r\n", 2);
            }
            lua_pop(L, 2);
            return;
        }
        lua_pop(L, 1);
        if (rawget_type(L, "verbatim_string") == LUA_TTABLE) {
            if (rawget_type(L, "format") == LUA_TSTRING) {
                const char *format = lua_tostring(L, -1);
                lua_pushstring(L, "string");
                lua_rawget(L, -3);
                if (lua_type(L, -1) == LUA_TSTRING) {
                    size_t len;
                    const char *s = lua_tolstring(L, -1, &len);
                    if (r->caller_resp == 2) {
                        append_bulk(b, s, len);
                    } else {
                        char f[4] = "txt";
                        size_t fl = strlen(format);
                        for (size_t i = 0; i < 3 && i < fl; i++) f[i] = format[i];
                        buf_printf(b, "=%zu\r\n%s:", len + 4, f);
                        buf_append(b, s, len);
                        buf_append(b, "\r\n", 2);
                    }
                    lua_pop(L, 4);
                    return;
                }
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        if (rawget_type(L, "map") == LUA_TTABLE) {
            buffer items = {0};
            reply_context inner = {&items, r->caller_resp, r->script_resp};
            long long n = 0;
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pushvalue(L, -2);
                lua_to_resp(L, &inner);
                lua_to_resp(L, &inner);
                n++;
            }
            append_length_header(b, r->caller_resp == 2 ? '*' : '%', r->caller_resp == 2 ? n * 2 : n);
            buf_append(b, items.data, items.len);
            free(items.data);
            lua_pop(L, 2);
            return;
        }
        lua_pop(L, 1);
        if (rawget_type(L, "set") == LUA_TTABLE) {
            buffer items = {0};
            reply_context inner = {&items, r->caller_resp, r->script_resp};
            long long n = 0;
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pop(L, 1);
                lua_pushvalue(L, -1);
                lua_to_resp(L, &inner);
                n++;
            }
            append_length_header(b, r->caller_resp == 2 ? '*' : '~', n);
            buf_append(b, items.data, items.len);
            free(items.data);
            lua_pop(L, 2);
            return;
        }
        lua_pop(L, 1);
        {
            buffer items = {0};
            reply_context inner = {&items, r->caller_resp, r->script_resp};
            long long n = 0;
            for (int j = 1;; j++) {
                lua_pushnumber(L, j);
                lua_rawget(L, -2);
                t = lua_type(L, -1);
                if (t == LUA_TNIL) {
                    lua_pop(L, 1);
                    break;
                }
                lua_to_resp(L, &inner);
                n++;
            }
            append_length_header(b, '*', n);
            buf_append(b, items.data, items.len);
            free(items.data);
        }
        break;
    }
    default:
        append_null(r);
    }
    lua_pop(L, 1);
}

// MARK: The redis.* API

/// Converts the call's arguments (numbers as %.17g, as Redis does) for the
/// host. Returns the count, or -1 when one is not a string or number.
static int collect_arguments(kvlua *e, lua_State *L) {
    int argc = lua_gettop(L);
    if (argc > e->argv_capacity) {
        int cap = argc;
        e->argv = realloc((void *)e->argv, sizeof(char *) * (size_t)cap);
        e->lens = realloc(e->lens, sizeof(size_t) * (size_t)cap);
        e->numbers = realloc(e->numbers, 64 * (size_t)cap);
        if (!e->argv || !e->lens || !e->numbers) abort();
        e->argv_capacity = cap;
    }
    for (int j = 0; j < argc; j++) {
        if (lua_type(L, j + 1) == LUA_TNUMBER) {
            char *slot = e->numbers + 64 * j;
            int n = snprintf(slot, 64, "%.17g", (double)lua_tonumber(L, j + 1));
            e->argv[j] = slot;
            e->lens[j] = (size_t)n;
        } else {
            size_t len;
            const char *s = lua_tolstring(L, j + 1, &len);
            if (!s) return -1;
            e->argv[j] = s;
            e->lens[j] = len;
        }
    }
    return argc;
}

static int redis_generic(lua_State *L, int raise) {
    kvlua *e = engine_of(L);
    if (!e->running) {
        push_error(L, "redis.call/pcall can only be called inside a script invocation");
        return lua_error(L);
    }
    int argc = lua_gettop(L);
    if (argc == 0) {
        push_error(L, "Please specify at least one argument for this redis lib call");
        return raise ? lua_error(L) : 1;
    }
    if (collect_arguments(e, L) < 0) {
        lua_pop(L, argc);
        push_error(L, "Lua redis lib command arguments must be strings or integers");
        return raise ? lua_error(L) : 1;
    }
    if (e->in_call) {
        push_error(L, "luaRedisGenericCommand() recursive call detected. Are you doing funny stuff with Lua debug hooks?");
        return 1;
    }
    e->in_call = 1;
    const char *out = NULL;
    size_t out_len = 0;
    int rc = e->hooks.call(e->ctx, e->resp, argc, e->argv, e->lens, &out, &out_len);
    e->in_call = 0;
    lua_pop(L, argc);
    if (rc != 0) {
        push_error_len(L, out, out_len);
        mark_ignore_stats(L);
        return raise ? lua_error(L) : 1;
    }
    int is_error = out_len > 0 && out[0] == '-';
    resp_to_lua(L, out, out + out_len, 1);
    if (raise && is_error) return lua_error(L);
    return 1;
}

static int redis_call(lua_State *L) { return redis_generic(L, 1); }
static int redis_pcall(lua_State *L) { return redis_generic(L, 0); }

/// The global pcall: an error that is a Redis error table becomes its text.
static int lua_redis_pcall(lua_State *L) {
    int argc = lua_gettop(L);
    lua_pushboolean(L, 1);
    lua_insert(L, 1);
    if (lua_pcall(L, argc - 1, LUA_MULTRET, 0)) {
        lua_remove(L, 1);
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1)) {
                lua_replace(L, -2);
            } else {
                lua_pop(L, 1);
            }
        }
        lua_pushboolean(L, 0);
        lua_insert(L, 1);
    }
    return lua_gettop(L);
}

void kvlua_sha1hex(const char *data, size_t len, char *out) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_len = 0;
    EVP_Digest(data, len, digest, &digest_len, EVP_sha1(), NULL);
    for (unsigned i = 0; i < 20; i++) snprintf(out + 2 * i, 3, "%02x", digest[i]);
    out[40] = 0;
}

static int redis_sha1hex(lua_State *L) {
    if (lua_gettop(L) != 1) {
        push_error(L, "wrong number of arguments");
        return lua_error(L);
    }
    size_t len = 0;
    const char *s = lua_tolstring(L, 1, &len);
    if (!s) {
        s = "";
        len = 0;
    }
    char hex[41];
    kvlua_sha1hex(s, len, hex);
    lua_pushstring(L, hex);
    return 1;
}

static int redis_error_reply(lua_State *L) {
    if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
        push_error(L, "wrong number or type of arguments");
        return 1;
    }
    size_t len;
    const char *err = lua_tolstring(L, -1, &len);
    if (err[0] != '-') {
        buffer b = {0};
        buf_append(&b, "-", 1);
        buf_append(&b, err, strlen(err));
        push_error_len(L, b.data, b.len);
        free(b.data);
    } else {
        push_error_len(L, err, strlen(err));
    }
    return 1;
}

static int redis_status_reply(lua_State *L) {
    if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
        push_error(L, "wrong number or type of arguments");
        return 1;
    }
    lua_newtable(L);
    lua_pushstring(L, "ok");
    lua_pushvalue(L, -3);
    lua_settable(L, -3);
    return 1;
}

static int redis_set_repl(lua_State *L) {
    kvlua *e = engine_of(L);
    if (!e->running) {
        push_error(L, "redis.set_repl can only be called inside a script invocation");
        return lua_error(L);
    }
    if (lua_gettop(L) != 1) {
        push_error(L, "redis.set_repl() requires two arguments.");
        return lua_error(L);
    }
    int flags = (int)lua_tonumber(L, -1);
    if ((flags & ~3) != 0) {
        push_error(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
        return lua_error(L);
    }
    return 0;
}

static int redis_replicate_commands(lua_State *L) {
    lua_pushboolean(L, 1);
    return 1;
}

static int redis_breakpoint(lua_State *L) {
    lua_pushboolean(L, 0);
    return 1;
}

static int redis_debug(lua_State *L) {
    (void)L;
    return 0;
}

static int redis_acl_check_cmd(lua_State *L) {
    kvlua *e = engine_of(L);
    if (!e->running) {
        push_error(L, "redis.acl_check_cmd can only be called inside a script invocation");
        return lua_error(L);
    }
    int argc = lua_gettop(L);
    if (argc == 0) {
        push_error(L, "Please specify at least one argument for this redis lib call");
        return lua_error(L);
    }
    if (collect_arguments(e, L) < 0) {
        lua_pop(L, argc);
        push_error(L, "Lua redis lib command arguments must be strings or integers");
        return lua_error(L);
    }
    int allowed = e->hooks.acl_check(e->ctx, argc, e->argv, e->lens);
    lua_pop(L, argc);
    if (allowed < 0) {
        push_error(L, "Invalid command passed to redis.acl_check_cmd()");
        return lua_error(L);
    }
    lua_pushboolean(L, allowed);
    return 1;
}

static int redis_log(lua_State *L) {
    kvlua *e = engine_of(L);
    int argc = lua_gettop(L);
    if (argc < 2) {
        push_error(L, "redis.log() requires two arguments or more.");
        return lua_error(L);
    }
    if (!lua_isnumber(L, -argc)) {
        push_error(L, "First argument must be a number (log level).");
        return lua_error(L);
    }
    int level = (int)lua_tonumber(L, -argc);
    if (level < 0 || level > 3) {
        push_error(L, "Invalid debug level.");
        return lua_error(L);
    }
    buffer b = {0};
    for (int j = 1; j < argc; j++) {
        size_t len;
        const char *s = lua_tolstring(L, (-argc) + j, &len);
        if (s) {
            if (j != 1) buf_append(&b, " ", 1);
            buf_append(&b, s, len);
        }
    }
    e->hooks.log(e->ctx, level, b.data ? b.data : "", b.len);
    free(b.data);
    return 0;
}

static int redis_setresp(lua_State *L) {
    kvlua *e = engine_of(L);
    if (!e->running) {
        push_error(L, "redis.setresp can only be called inside a script invocation");
        return lua_error(L);
    }
    if (lua_gettop(L) != 1) {
        push_error(L, "redis.setresp() requires one argument.");
        return lua_error(L);
    }
    int resp = (int)lua_tonumber(L, -1);
    if (resp != 2 && resp != 3) {
        push_error(L, "RESP version must be 2 or 3.");
        return lua_error(L);
    }
    e->resp = resp;
    return 0;
}

// MARK: math.random (Redis's lrand48, the same sequence on every machine)

static uint64_t rand48_state = 0x1234ABCD330EULL;

int32_t kvlua_lrand48(void) {
    rand48_state = (rand48_state * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
    return (int32_t)(rand48_state >> 17);
}

void kvlua_srand48(int32_t seed) { rand48_state = ((uint64_t)(uint32_t)seed << 16 | 0x330E) & ((1ULL << 48) - 1); }

static int math_random(lua_State *L) {
    kvlua *e = engine_of(L);
    if (!e->running) return luaL_error(L, "math.random can only be called inside a script invocation");
    lua_Number r = (lua_Number)(kvlua_lrand48() % 2147483647) / (lua_Number)2147483647;
    switch (lua_gettop(L)) {
    case 0:
        lua_pushnumber(L, r);
        break;
    case 1: {
        int u = luaL_checkint(L, 1);
        luaL_argcheck(L, 1 <= u, 1, "interval is empty");
        lua_pushnumber(L, floor(r * u) + 1);
        break;
    }
    case 2: {
        int l = luaL_checkint(L, 1);
        int u = luaL_checkint(L, 2);
        luaL_argcheck(L, l <= u, 2, "interval is empty");
        lua_pushnumber(L, floor(r * (u - l + 1)) + l);
        break;
    }
    default:
        return luaL_error(L, "wrong number of arguments");
    }
    return 1;
}

static int math_randomseed(lua_State *L) {
    kvlua *e = engine_of(L);
    if (!e->running) return luaL_error(L, "math.randomseed can only be called inside a script invocation");
    kvlua_srand48(luaL_checkint(L, 1));
    return 0;
}

// MARK: redis.register_function (FUNCTION LOAD)

static const struct {
    const char *name;
    uint64_t flag;
} script_flags[] = {
    {"no-writes", KVLUA_FLAG_NO_WRITES},
    {"allow-oom", KVLUA_FLAG_ALLOW_OOM},
    {"allow-stale", KVLUA_FLAG_ALLOW_STALE},
    {"no-cluster", KVLUA_FLAG_NO_CLUSTER},
    {"allow-cross-slot-keys", KVLUA_FLAG_ALLOW_CROSS_SLOT},
    {NULL, 0},
};

static int read_flags(lua_State *L, uint64_t *flags) {
    uint64_t result = 0;
    for (int j = 1;; j++) {
        lua_pushnumber(L, j);
        lua_gettable(L, -2);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            break;
        }
        if (!lua_isstring(L, -1)) {
            lua_pop(L, 1);
            return -1;
        }
        const char *name = lua_tostring(L, -1);
        int found = 0;
        for (int i = 0; script_flags[i].name; i++) {
            if (!strcasecmp(script_flags[i].name, name)) {
                result |= script_flags[i].flag;
                found = 1;
                break;
            }
        }
        lua_pop(L, 1);
        if (!found) return -1;
    }
    *flags = result;
    return 0;
}

static int register_function(lua_State *L) {
    kvlua *e = engine_of(L);
    if (!e->loading) {
        push_error(L, "redis.register_function can only be called on FUNCTION LOAD command");
        return lua_error(L);
    }
    int argc = lua_gettop(L);
    if (argc < 1 || argc > 2) {
        push_error(L, "wrong number of arguments to redis.register_function");
        return lua_error(L);
    }
    const char *name = NULL, *desc = NULL;
    size_t name_len = 0, desc_len = 0;
    uint64_t flags = 0;
    int ref = LUA_NOREF;
    const char *err = NULL;
    // The name and description are kept alive in the registry-anchored table below.
    lua_newtable(L);
    int keep = lua_gettop(L);
    if (argc == 1) {
        if (!lua_istable(L, 1)) {
            err = "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).";
            goto error;
        }
        lua_pushnil(L);
        while (lua_next(L, 1)) {
            if (!lua_isstring(L, -2)) {
                err = "named argument key given to redis.register_function is not a string";
                goto error;
            }
            // A copy of the key is read, so lua_next keeps its own.
            lua_pushvalue(L, -2);
            const char *key_text = lua_tostring(L, -1);
            int key = !strcasecmp(key_text, "function_name") ? 1 : !strcasecmp(key_text, "description") ? 2
                : !strcasecmp(key_text, "callback") ? 3 : !strcasecmp(key_text, "flags") ? 4 : 0;
            lua_pop(L, 1);
            if (key == 1) {
                if (!lua_isstring(L, -1)) {
                    err = "function_name argument given to redis.register_function must be a string";
                    goto error;
                }
                lua_pushvalue(L, -1);
                name = lua_tolstring(L, -1, &name_len);
                lua_rawseti(L, keep, 1);
            } else if (key == 2) {
                if (!lua_isstring(L, -1)) {
                    err = "description argument given to redis.register_function must be a string";
                    goto error;
                }
                lua_pushvalue(L, -1);
                desc = lua_tolstring(L, -1, &desc_len);
                lua_rawseti(L, keep, 2);
            } else if (key == 3) {
                if (!lua_isfunction(L, -1)) {
                    err = "callback argument given to redis.register_function must be a function";
                    goto error;
                }
                if (ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, ref);
                ref = luaL_ref(L, LUA_REGISTRYINDEX);
                continue;
            } else if (key == 4) {
                if (!lua_istable(L, -1)) {
                    err = "flags argument to redis.register_function must be a table representing function flags";
                    goto error;
                }
                if (read_flags(L, &flags) != 0) {
                    err = "unknown flag given";
                    goto error;
                }
            } else {
                err = "unknown argument given to redis.register_function";
                goto error;
            }
            lua_pop(L, 1);
        }
        if (!name) {
            err = "redis.register_function must get a function name argument";
            goto error;
        }
        if (ref == LUA_NOREF) {
            err = "redis.register_function must get a callback argument";
            goto error;
        }
    } else {
        if (!lua_isstring(L, 1)) {
            err = "first argument to redis.register_function must be a string";
            goto error;
        }
        name = lua_tolstring(L, 1, &name_len);
        if (!lua_isfunction(L, 2)) {
            err = "second argument to redis.register_function must be a function";
            goto error;
        }
        lua_pushvalue(L, 2);
        ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    {
        const char *host_err = NULL;
        if (e->hooks.register_function(e->ctx, name, name_len, desc, desc_len, desc != NULL, flags, ref, &host_err) != 0) {
            luaL_unref(L, LUA_REGISTRYINDEX, ref);
            push_error(L, host_err ? host_err : "failed to register the function");
            return lua_error(L);
        }
    }
    return 0;
error:
    if (ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, ref);
    push_error(L, err);
    return lua_error(L);
}

// MARK: The count hook (busy scripts, FUNCTION LOAD's time limit)

static void count_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    kvlua *e = engine_of(L);
    if (e->loading) {
        if (e->load_timeout > 0 && monotonic_ms() - e->load_started > (double)e->load_timeout) {
            lua_sethook(L, count_hook, LUA_MASKLINE, 0);
            push_error(L, "FUNCTION LOAD timeout");
            lua_error(L);
        }
        return;
    }
    if (e->running && e->hooks.interrupt(e->ctx)) {
        // Fire on every line from now on, so pcall cannot swallow the kill.
        lua_sethook(L, count_hook, LUA_MASKLINE, 0);
        push_error(L, "Script killed by user with SCRIPT KILL...");
        lua_error(L);
    }
}

// MARK: Setting up an interpreter

static void set_function(lua_State *L, const char *name, lua_CFunction f) {
    lua_pushstring(L, name);
    lua_pushcfunction(L, f);
    lua_settable(L, -3);
}

static void set_number(lua_State *L, const char *name, lua_Number n) {
    lua_pushstring(L, name);
    lua_pushnumber(L, n);
    lua_settable(L, -3);
}

static void register_log(lua_State *L) {
    set_function(L, "log", redis_log);
    set_number(L, "LOG_DEBUG", 0);
    set_number(L, "LOG_VERBOSE", 1);
    set_number(L, "LOG_NOTICE", 2);
    set_number(L, "LOG_WARNING", 3);
}

static void register_version(lua_State *L) {
    set_number(L, "REDIS_VERSION_NUM", 0x00070000 | (0 << 8) | 15);
    lua_pushstring(L, "REDIS_VERSION");
    lua_pushstring(L, "7.0.15");
    lua_settable(L, -3);
}

static void load_library(lua_State *L, const char *name, lua_CFunction open) {
    lua_pushcfunction(L, open);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    if (name[0] && lua_istable(L, -1)) {
        lua_getglobal(L, name);
        int missing = lua_isnil(L, -1);
        lua_pop(L, 1);
        if (missing) {
            lua_pushvalue(L, -1);
            lua_setglobal(L, name);
        }
    }
    lua_pop(L, 1);
}

/// bit.tohex with Redis's fix to its lua_bit.c: a count of -2^31 (whose
/// negation overflows in Debian's lua-bitop, writing past its buffer) is
/// taken as -(2^31 - 1). The original function is the upvalue.
static int safe_tohex(lua_State *L) {
    if (lua_gettop(L) >= 2 && lua_type(L, 2) == LUA_TNUMBER) {
        /* bitop's own conversion: the low 32 bits after rounding. */
        union { double d; uint64_t b; } u;
        u.d = lua_tonumber(L, 2) + 6755399441055744.0;
        if ((int32_t)(uint32_t)u.b == INT32_MIN) {
            lua_pushnumber(L, -2147483647.0);
            lua_replace(L, 2);
        }
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static void wrap_bit_tohex(lua_State *L) {
    lua_getglobal(L, "bit");
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    lua_getfield(L, -1, "tohex");
    lua_pushcclosure(L, safe_tohex, 1);
    lua_setfield(L, -2, "tohex");
    lua_pop(L, 1);
}

static void wrap_global(lua_State *L, const char *name, lua_CFunction wrapper) {
    lua_getglobal(L, name);
    lua_pushcclosure(L, wrapper, 1);
    lua_setglobal(L, name);
}

/// The libraries, the redis API and the loaders, on the real globals (Redis's luaRegisterRedisAPI).
static void register_redis_api(lua_State *L) {
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_newtable(L);
    lua_pushcfunction(L, allowlist_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_setmetatable(L, -2);
    lua_pop(L, 1);

    load_library(L, "", luaopen_base);
    load_library(L, LUA_TABLIBNAME, luaopen_table);
    load_library(L, LUA_STRLIBNAME, luaopen_string);
    load_library(L, LUA_MATHLIBNAME, luaopen_math);
    load_library(L, LUA_DBLIBNAME, luaopen_debug);
    load_library(L, "cjson", luaopen_cjson);
    load_library(L, "struct", luaopen_struct);
    load_library(L, "cmsgpack", luaopen_cmsgpack);
    load_library(L, "bit", luaopen_bit);
    wrap_bit_tohex(L);

    lua_pushcfunction(L, lua_redis_pcall);
    lua_setglobal(L, "pcall");
    lua_pushcfunction(L, safe_loadstring);
    lua_setglobal(L, "loadstring");
    lua_pushcfunction(L, safe_unpack);
    lua_setglobal(L, "unpack");
    lua_pushcfunction(L, safe_load_reader);
    lua_setglobal(L, "load");
    wrap_global(L, "setmetatable", safe_setmetatable);
    wrap_global(L, "rawset", safe_rawset);

    lua_newtable(L);
    set_function(L, "call", redis_call);
    set_function(L, "pcall", redis_pcall);
    register_log(L);
    register_version(L);
    set_function(L, "setresp", redis_setresp);
    set_function(L, "sha1hex", redis_sha1hex);
    set_function(L, "error_reply", redis_error_reply);
    set_function(L, "status_reply", redis_status_reply);
    set_function(L, "set_repl", redis_set_repl);
    set_number(L, "REPL_NONE", 0);
    set_number(L, "REPL_AOF", 1);
    set_number(L, "REPL_SLAVE", 2);
    set_number(L, "REPL_REPLICA", 2);
    set_number(L, "REPL_ALL", 3);
    set_function(L, "acl_check_cmd", redis_acl_check_cmd);
    lua_setglobal(L, "redis");

    lua_getglobal(L, "math");
    set_function(L, "random", math_random);
    set_function(L, "randomseed", math_randomseed);
    lua_pop(L, 1);
}

static const char *error_handler_body =
    "  local i = dbg.getinfo(2,'nSl')\n"
    "  if i and i.what == 'C' then\n"
    "    i = dbg.getinfo(3,'nSl')\n"
    "  end\n"
    "  if type(err) ~= 'table' then\n"
    "    err = {err='ERR ' .. tostring(err)}"
    "  end"
    "  if i then\n"
    "    err['source'] = i.source\n"
    "    err['line'] = i.currentline\n"
    "  end"
    "  return err\n"
    "end\n";

/// Replaces every table-valued global but `_G` with a read-only view of it,
/// gives the real globals the undefined-variable error, and installs as
/// the globals an empty read-only table that reads through `through` (an
/// index; the real globals when 0). Leaves the view's metatable in the
/// registry so FUNCTION LOAD can switch what it reads through.
static void lock_globals(lua_State *L, int through) {
    int backing = lua_gettop(L) + 1;
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_pushlightuserdata(L, &backing_key);
    lua_pushvalue(L, backing);
    lua_rawset(L, LUA_REGISTRYINDEX);
    mark_protected(L, backing);

    // Read-only views of the libraries.
    lua_newtable(L);
    int names = lua_gettop(L);
    int count = 0;
    lua_pushnil(L);
    while (lua_next(L, backing)) {
        if (lua_istable(L, -1) && lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "_G") != 0) {
            lua_pushvalue(L, -2);
            lua_rawseti(L, names, ++count);
        }
        lua_pop(L, 1);
    }
    for (int i = 1; i <= count; i++) {
        lua_rawgeti(L, names, i);
        lua_pushvalue(L, -1);
        lua_rawget(L, backing);
        mark_protected(L, -1);
        push_readonly_view(L, -1, 0);
        lua_remove(L, -2);
        lua_rawset(L, backing);
    }
    lua_pop(L, 1);

    // The real globals fail on undefined names (replacing the allow list).
    lua_pushvalue(L, backing);
    set_error_metatable(L);
    lua_pop(L, 1);

    // What getmetatable(_G) shows: a read-only table whose __index is what
    // Redis's globals metatable holds.
    lua_newtable(L);
    if (through) {
        lua_pushvalue(L, through);
    } else {
        lua_pushcfunction(L, nonexistent_global);
    }
    lua_setfield(L, -2, "__index");
    int shown_table = lua_gettop(L);
    push_readonly_view(L, shown_table, 0);
    int shown = lua_gettop(L);

    // The globals scripts see.
    lua_newtable(L);
    int view = lua_gettop(L);
    lua_newtable(L);
    int meta = lua_gettop(L);
    lua_pushvalue(L, backing);
    lua_setfield(L, meta, "__index");
    lua_pushcfunction(L, readonly_error);
    lua_setfield(L, meta, "__newindex");
    lua_pushvalue(L, shown);
    lua_setfield(L, meta, "__metatable");
    lua_pushlightuserdata(L, &globals_meta_key);
    lua_pushvalue(L, meta);
    lua_rawset(L, LUA_REGISTRYINDEX);
    lua_setmetatable(L, view);
    mark_protected(L, view);
    lua_pushstring(L, "_G");
    lua_pushvalue(L, view);
    lua_rawset(L, backing);
    lua_replace(L, LUA_GLOBALSINDEX);
    lua_settop(L, backing - 1);

    // The string metatable: getmetatable('') shows a read-only view.
    lua_pushstring(L, "");
    if (lua_getmetatable(L, -1)) {
        int string_meta = lua_gettop(L);
        push_readonly_view(L, string_meta, 0);
        lua_setfield(L, string_meta, "__metatable");
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

static void push_backing(lua_State *L) {
    lua_pushlightuserdata(L, &backing_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
}

static int setup_eval(lua_State *L) {
    register_redis_api(L);
    lua_getglobal(L, "redis");
    set_function(L, "breakpoint", redis_breakpoint);
    set_function(L, "debug", redis_debug);
    set_function(L, "replicate_commands", redis_replicate_commands);
    lua_pop(L, 1);

    buffer b = {0};
    buf_cstr(&b, "local dbg = debug\ndebug = nil\nfunction __redis__err__handler(err)\n");
    buf_cstr(&b, error_handler_body);
    luaL_loadbuffer(L, b.data, b.len, "@err_handler_def");
    free(b.data);
    lua_call(L, 0, 0);

    lock_globals(L, 0);
    return 0;
}

static int setup_functions(lua_State *L) {
    register_redis_api(L);

    // What library code sees while it loads: redis.register_function and redis.log.
    lua_newtable(L);
    int library = lua_gettop(L);
    lua_newtable(L);
    set_function(L, "register_function", register_function);
    register_log(L);
    register_version(L);
    set_error_metatable(L);
    int library_redis = lua_gettop(L);
    push_readonly_view(L, library_redis, 0);
    lua_setfield(L, library, "redis");
    lua_pop(L, 1);
    set_error_metatable(L);
    push_readonly_view(L, library, 0);
    lua_pushlightuserdata(L, &library_api_key);
    lua_pushvalue(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
    lua_pop(L, 2);

    buffer b = {0};
    buf_cstr(&b, "local dbg = debug\ndebug = nil\nlocal error_handler = function (err)\n");
    buf_cstr(&b, error_handler_body);
    buf_cstr(&b, "return error_handler");
    luaL_loadbuffer(L, b.data, b.len, "@err_handler_def");
    free(b.data);
    lua_call(L, 0, 1);
    lua_pushlightuserdata(L, &error_handler_key);
    lua_insert(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);

    // getmetatable(_G).__index shows (a read-only view of) the real globals.
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    push_readonly_view(L, -1, 0);
    int through = lua_gettop(L);
    lock_globals(L, through);
    lua_pop(L, 2);
    return 0;
}

static int setup(lua_State *L) {
    kvlua *e = lua_touserdata(L, 1);
    lua_settop(L, 0);
    lua_pushlightuserdata(L, &engine_key);
    lua_pushlightuserdata(L, e);
    lua_rawset(L, LUA_REGISTRYINDEX);
    lua_pushlightuserdata(L, &protected_key);
    lua_newtable(L);
    lua_newtable(L);
    lua_pushstring(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
    return e->functions ? setup_functions(L) : setup_eval(L);
}

kvlua *kvlua_new(int functions, const kvlua_hooks *hooks, void *ctx) {
    kvlua *e = calloc(1, sizeof(*e));
    if (!e) abort();
    e->functions = functions;
    e->hooks = *hooks;
    e->ctx = ctx;
    e->resp = 2;
    e->L = luaL_newstate();
    if (!e->L) abort();
    if (lua_cpcall(e->L, setup, e) != 0) {
        fprintf(stderr, "kvlua: setting up Lua failed: %s\n", lua_tostring(e->L, -1));
        abort();
    }
    return e;
}

void kvlua_close(kvlua *e) {
    if (!e) return;
    lua_close(e->L);
    free((void *)e->argv);
    free(e->lens);
    free(e->numbers);
    free(e);
}

size_t kvlua_memory(kvlua *e) { return (size_t)lua_gc(e->L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(e->L, LUA_GCCOUNTB, 0); }

// MARK: EVAL scripts

int kvlua_eval_compile(kvlua *e, const char *sha, const char *body, size_t len, size_t skip, char **err) {
    lua_State *L = e->L;
    if (safe_load(L, body + skip, len - skip, "@user_script")) {
        size_t n;
        const char *message = lua_tolstring(L, -1, &n);
        buffer b = {0};
        buf_cstr(&b, "Error compiling script (new function): ");
        buf_append(&b, message ? message : "", message ? n : 0);
        buf_append(&b, "", 1);
        *err = b.data;
        lua_pop(L, 1);
        return 1;
    }
    char name[64];
    snprintf(name, sizeof(name), "f_%s", sha);
    lua_setfield(L, LUA_REGISTRYINDEX, name);
    return 0;
}

int kvlua_eval_defined(kvlua *e, const char *sha) {
    char name[64];
    snprintf(name, sizeof(name), "f_%s", sha);
    lua_getfield(e->L, LUA_REGISTRYINDEX, name);
    int defined = !lua_isnil(e->L, -1);
    lua_pop(e->L, 1);
    return defined;
}

static void push_array(lua_State *L, const char **items, const size_t *lens, int n) {
    lua_createtable(L, n, 0);
    for (int j = 0; j < n; j++) {
        lua_pushlstring(L, items[j], lens[j]);
        lua_rawseti(L, -2, j + 1);
    }
}

static void set_reply_error(kvlua_reply *out, const char *text, size_t len, int ignore) {
    buffer b = {0};
    buf_append_safe(&b, text, len);
    buf_append(&b, "", 1);
    out->data = b.data;
    out->len = len;
    out->is_error = 1;
    out->ignore_stats = ignore;
}

void kvlua_run(kvlua *e, const char *sha, int function_ref, const char *name, const char *items, const size_t *lens,
               int nkeys, int nargs, int caller_resp, int hook, kvlua_reply *out) {
    lua_State *L = e->L;
    memset(out, 0, sizeof(*out));
    int base = lua_gettop(L);
    const char **pointers = malloc(sizeof(char *) * (size_t)(nkeys + nargs + 1));
    if (!pointers) abort();
    const char *p = items;
    for (int j = 0; j < nkeys + nargs; j++) {
        pointers[j] = p;
        p += lens[j];
    }
    if (function_ref < 0) {
        lua_getglobal(L, "__redis__err__handler");
        char fname[64];
        snprintf(fname, sizeof(fname), "f_%s", sha);
        lua_getfield(L, LUA_REGISTRYINDEX, fname);
    } else {
        lua_pushlightuserdata(L, &error_handler_key);
        lua_rawget(L, LUA_REGISTRYINDEX);
        lua_rawgeti(L, LUA_REGISTRYINDEX, function_ref);
    }
    if (!lua_isfunction(L, -1)) {
        lua_settop(L, base);
        free(pointers);
        set_reply_error(out, "ERR the script is not loaded", strlen("ERR the script is not loaded"), 0);
        return;
    }
    e->running = 1;
    e->resp = 2;
    if (hook) lua_sethook(L, count_hook, LUA_MASKCOUNT, 100000);
    int err;
    if (function_ref < 0) {
        push_backing(L);
        push_array(L, pointers, lens, nkeys);
        lua_setfield(L, -2, "KEYS");
        push_array(L, pointers + nkeys, lens + nkeys, nargs);
        lua_setfield(L, -2, "ARGV");
        lua_pop(L, 1);
        err = lua_pcall(L, 0, 1, -2);
    } else {
        push_array(L, pointers, lens, nkeys);
        push_array(L, pointers + nkeys, lens + nkeys, nargs);
        err = lua_pcall(L, 2, 1, -4);
    }
    free(pointers);
    if (++e->gc_count == 50) {
        lua_gc(L, LUA_GCSTEP, 50);
        e->gc_count = 0;
    }
    if (err) {
        if (!lua_istable(L, -1)) {
            const char *message = lua_isstring(L, -1) ? lua_tostring(L, -1) : "execution failure";
            buffer b = {0};
            buf_printf(&b, "ERR Error running script %s, %.100s", name, message);
            set_reply_error(out, b.data, b.len, 0);
            free(b.data);
        } else {
            int top = lua_gettop(L);
            error_info info;
            read_error_info(L, &info);
            buffer b = {0};
            if (info.message) buf_append(&b, info.message, info.message_len); else buf_cstr(&b, "(null)");
            if (info.line && info.source) buf_printf(&b, " script: %s, on %s:%s.", name, info.source, info.line);
            set_reply_error(out, b.data, b.len, info.ignore_stats);
            free(b.data);
            lua_settop(L, top);
        }
        lua_pop(L, 1);
    } else {
        buffer b = {0};
        reply_context r = {&b, caller_resp, e->resp};
        int top = lua_gettop(L);
        int top_error = 0;
        if (lua_istable(L, -1)) {
            lua_pushstring(L, "err");
            lua_rawget(L, -2);
            top_error = lua_type(L, -1) == LUA_TSTRING;
            lua_pop(L, 1);
        }
        if (top_error) {
            error_info info;
            read_error_info(L, &info);
            set_reply_error(out, info.message ? info.message : "", info.message ? info.message_len : 0, info.ignore_stats);
            lua_settop(L, top - 1);
        } else {
            lua_to_resp(L, &r);
            out->data = b.data;
            out->len = b.len;
            b.data = NULL;
        }
        free(b.data);
    }
    if (hook) lua_sethook(L, NULL, 0, 0);
    e->running = 0;
    lua_settop(L, base);
}

// MARK: Functions

static void set_globals_through(lua_State *L, void *key) {
    lua_pushlightuserdata(L, &globals_meta_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_pushlightuserdata(L, key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}

int kvlua_function_load(kvlua *e, const char *code, size_t len, long timeout_ms, char **err) {
    lua_State *L = e->L;
    int base = lua_gettop(L);
    set_globals_through(L, &library_api_key);
    int rc = 0;
    if (safe_load(L, code, len, "@user_function")) {
        size_t n;
        const char *message = lua_tolstring(L, -1, &n);
        buffer b = {0};
        buf_cstr(&b, "Error compiling function: ");
        buf_append(&b, message ? message : "", message ? n : 0);
        buf_append(&b, "", 1);
        *err = b.data;
        rc = 1;
    } else {
        e->loading = 1;
        e->load_started = monotonic_ms();
        e->load_timeout = timeout_ms;
        lua_sethook(L, count_hook, LUA_MASKCOUNT, 100000);
        if (lua_pcall(L, 0, 0, 0)) {
            buffer b = {0};
            buf_cstr(&b, "Error registering functions: ");
            if (lua_isstring(L, -1)) {
                buf_cstr(&b, "ERR ");
                buf_cstr(&b, lua_tostring(L, -1));
            } else if (lua_istable(L, -1)) {
                lua_getfield(L, -1, "err");
                if (lua_isstring(L, -1)) buf_cstr(&b, lua_tostring(L, -1)); else buf_cstr(&b, "(null)");
                lua_pop(L, 1);
            } else {
                buf_cstr(&b, "(null)");
            }
            buf_append(&b, "", 1);
            *err = b.data;
            rc = 1;
        }
        lua_sethook(L, NULL, 0, 0);
        e->loading = 0;
    }
    set_globals_through(L, &backing_key);
    lua_settop(L, base);
    return rc;
}

void kvlua_unref(kvlua *e, int ref) { luaL_unref(e->L, LUA_REGISTRYINDEX, ref); }

void kvlua_reply_free(kvlua_reply *reply) {
    free(reply->data);
    reply->data = NULL;
}

void kvlua_free(void *pointer) { free(pointer); }
