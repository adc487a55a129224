import RESP

/// Scripting commands, as Redis 7.0's eval.c and functions.c: EVAL and
/// EVALSHA (and _RO), SCRIPT, FUNCTION, FCALL and FCALL_RO. The work is in
/// `Scripting` (Scripting/).
let scriptingCommands: [Command] = [
    Command(name: "eval", arity: -3, flags: ["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            firstKey: 0, lastKey: 0, step: 0, group: "scripting", summary: "Executes a server-side Lua script.",
            handler: { try $0.server.scripting.eval($0, bySha: false, readOnly: false) }),
    Command(name: "evalsha", arity: -3, flags: ["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            firstKey: 0, lastKey: 0, step: 0, group: "scripting", summary: "Executes a server-side Lua script by SHA1 digest.",
            handler: { try $0.server.scripting.eval($0, bySha: true, readOnly: false) }),
    Command(name: "eval_ro", arity: -3,
            flags: ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            firstKey: 0, lastKey: 0, step: 0, group: "scripting", summary: "Executes a read-only server-side Lua script.",
            handler: { try $0.server.scripting.eval($0, bySha: false, readOnly: true) }),
    Command(name: "evalsha_ro", arity: -3,
            flags: ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            firstKey: 0, lastKey: 0, step: 0, group: "scripting",
            summary: "Executes a read-only server-side Lua script by SHA1 digest.",
            handler: { try $0.server.scripting.eval($0, bySha: true, readOnly: true) }),
    Command(name: "fcall", arity: -3, flags: ["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            firstKey: 0, lastKey: 0, step: 0, group: "scripting", summary: "Invokes a function.",
            handler: { try $0.server.scripting.fcall($0, readOnly: false) }),
    Command(name: "fcall_ro", arity: -3,
            flags: ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            firstKey: 0, lastKey: 0, step: 0, group: "scripting", summary: "Invokes a read-only function.",
            handler: { try $0.server.scripting.fcall($0, readOnly: true) }),
    Command(name: "script", arity: -2, flags: ["noscript"], firstKey: 0, lastKey: 0, step: 0, group: "scripting",
            summary: "A container for Lua scripts management commands.", handler: script,
            subcommands: ["debug", "exists", "flush", "help", "kill", "load"]),
    Command(name: "function", arity: -2, flags: ["noscript"], firstKey: 0, lastKey: 0, step: 0, group: "scripting",
            summary: "A container for function commands.", handler: function,
            subcommands: ["delete", "dump", "flush", "help", "kill", "list", "load", "restore", "stats"]),
]

/// A subcommand's arity, as Redis checks it for subcommands.
private func checkArity(_ ctx: CommandContext, _ arity: Int) throws(ReplyError) {
    let ok = arity >= 0 ? ctx.args.count == arity : ctx.args.count >= -arity
    if !ok { throw ReplyError.wrongArity("\(ctx.commandName)|\(ctx.option(1))") }
}

/// Redis's addReplySubcommandSyntaxError.
private func subcommandSyntaxError(_ ctx: CommandContext) -> ReplyError {
    ReplyError("ERR unknown subcommand or wrong number of arguments for '\(ctx.quoted(1))'. Try \(ctx.commandName.uppercased()) HELP.")
}

/// Reads FLUSH's [ASYNC|SYNC].
private func flushMode(_ ctx: CommandContext, error: String) throws(ReplyError) {
    guard ctx.args.count == 2 || (ctx.args.count == 3 && ["async", "sync"].contains(ctx.option(2))) else {
        throw ReplyError(error)
    }
}

/// SCRIPT EXISTS|FLUSH|HELP|KILL|LOAD|DEBUG.
private func script(_ ctx: CommandContext) throws {
    let scripting = ctx.server.scripting
    let c = ctx.connection
    switch ctx.option(1) {
    case "help":
        try checkArity(ctx, 2)
        c.replyHelp("script", [
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ])
    case "flush":
        try checkArity(ctx, -2)
        try flushMode(ctx, error: "ERR SCRIPT FLUSH only support SYNC|ASYNC option")
        scripting.flushScripts()
        c.replyOK()
    case "exists":
        try checkArity(ctx, -3)
        c.replyArrayHeader(ctx.args.count - 2)
        for i in 2..<ctx.args.count { c.replyInteger(scripting.scriptExists(ctx.args.bytes(i)) ? 1 : 0) }
    case "load":
        try checkArity(ctx, 3)
        c.replyBulk(try scripting.createScript(ctx.args.bytes(2)))
    case "kill":
        try checkArity(ctx, 2)
        try scripting.kill(fromScriptCommand: true)
        c.replyOK()
    case "debug":
        try checkArity(ctx, 3)
        switch ctx.option(2) {
        case "no": c.replyOK()
        case "yes", "sync": throw ReplyError("ERR SCRIPT DEBUG (the Lua debugger) is not supported by this server")
        default: throw ReplyError("ERR Use SCRIPT DEBUG YES/SYNC/NO")
        }
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "script")
    }
}

/// FUNCTION LOAD|DELETE|LIST|FLUSH|DUMP|RESTORE|STATS|KILL|HELP.
private func function(_ ctx: CommandContext) throws {
    let scripting = ctx.server.scripting
    let c = ctx.connection
    switch ctx.option(1) {
    case "load":
        try checkArity(ctx, -3)
        var replace = false
        var position = 2
        while position < ctx.args.count - 1 {
            guard ctx.option(position) == "replace" else {
                throw ReplyError("ERR Unknown option given: \(ctx.quoted(position))")
            }
            replace = true
            position += 1
        }
        let name = try scripting.loadLibrary(ctx.args.bytes(position), replace: replace)
        try scripting.persistFunctions()
        ctx.server.markChanged()
        c.replyBulk(name)
    case "delete":
        try checkArity(ctx, 3)
        try scripting.deleteLibrary(ctx.text(2))
        try scripting.persistFunctions()
        ctx.server.markChanged()
        c.replyOK()
    case "flush":
        try checkArity(ctx, -2)
        if ctx.args.count > 3 { throw subcommandSyntaxError(ctx) }
        try flushMode(ctx, error: "ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
        scripting.flushLibraries()
        try scripting.persistFunctions()
        ctx.server.markChanged()
        c.replyOK()
    case "list":
        try checkArity(ctx, -2)
        try functionList(ctx)
    case "dump":
        try checkArity(ctx, 2)
        c.replyBulk(scripting.dumpLibraries())
    case "restore":
        try checkArity(ctx, -3)
        if ctx.args.count > 4 { throw subcommandSyntaxError(ctx) }
        var policy = Scripting.RestorePolicy.append
        if ctx.args.count == 4 {
            switch ctx.option(3) {
            case "append": policy = .append
            case "replace": policy = .replace
            case "flush": policy = .flush
            default: throw ReplyError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
            }
        }
        try scripting.restoreLibraries(ctx.args.bytes(2), policy: policy)
        try scripting.persistFunctions()
        ctx.server.markChanged()
        c.replyOK()
    case "stats":
        try checkArity(ctx, 2)
        try functionStats(ctx)
    case "kill":
        try checkArity(ctx, 2)
        try scripting.kill(fromScriptCommand: false)
        c.replyOK()
    case "help":
        try checkArity(ctx, 2)
        c.replyHelp("function", [
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ])
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "function")
    }
}

private func bulk(_ text: String) -> RESPValue { .bulk(Array(text.utf8)) }

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
private func functionList(_ ctx: CommandContext) throws {
    var withCode = false
    var pattern: [UInt8]?
    var i = 2
    while i < ctx.args.count {
        if !withCode && ctx.option(i) == "withcode" {
            withCode = true
        } else if pattern == nil && ctx.option(i) == "libraryname" {
            guard i < ctx.args.count - 1 else { throw ReplyError("ERR library name argument was not given") }
            i += 1
            pattern = ctx.args.bytes(i)
        } else {
            throw ReplyError("ERR Unknown argument \(ctx.quoted(i))")
        }
        i += 1
    }
    var entries: [RESPValue] = []
    for library in ctx.server.scripting.libraries.all {
        if let pattern, !globMatch(pattern, Array(library.name.utf8), caseInsensitive: true) { continue }
        let functions: [RESPValue] = library.orderedFunctions.map { function in
            .map([
                (bulk("name"), bulk(function.name)),
                (bulk("description"), .bulk(function.description)),
                (bulk("flags"), .set(ScriptFlags.names.filter { function.flags.contains($0.1) }.map { .simpleString($0.0) })),
            ])
        }
        var fields: [(RESPValue, RESPValue)] = [
            (bulk("library_name"), bulk(library.name)),
            (bulk("engine"), bulk("LUA")),
            (bulk("functions"), .array(functions)),
        ]
        if withCode { fields.append((bulk("library_code"), .bulk(library.code))) }
        entries.append(.map(fields))
    }
    ctx.connection.reply(.array(entries))
}

/// FUNCTION STATS: the running function, and the engine's counts.
private func functionStats(_ ctx: CommandContext) throws {
    let scripting = ctx.server.scripting
    if let run = scripting.running, run.isEval { throw ReplyError.busyEval }
    var running: RESPValue = .null
    if let run = scripting.running {
        running = .map([
            (bulk("name"), bulk(run.name)),
            (bulk("command"), .array(run.request.map { .bulk($0) })),
            (bulk("duration_ms"), .integer(Int64(run.elapsedMilliseconds))),
        ])
    }
    ctx.connection.reply(.map([
        (bulk("running_script"), running),
        (bulk("engines"), .map([
            (bulk("LUA"), .map([
                (bulk("libraries_count"), .integer(Int64(scripting.libraries.all.count))),
                (bulk("functions_count"), .integer(Int64(scripting.libraries.functionCount))),
            ])),
        ])),
    ]))
}
