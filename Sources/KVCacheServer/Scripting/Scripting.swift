import CLuaScripting
import Foundation
import RESP
import SQLiteKVCache

/// Lua scripting as Redis 7.0 has it (eval.c, functions.c, script.c): the
/// EVAL script cache and its interpreter, the FUNCTION libraries and
/// theirs, and the running script.
///
/// A script runs on the loop thread like any command. Its commands run on
/// a client of its own (not connected) through the server's command path,
/// their replies read back into Lua; everything they change is one record
/// of the append-only log (as MULTI/EXEC), so a crash keeps all of a
/// script's writes or none. Past `busy-reply-threshold` the script's count
/// hook serves the other clients between Lua instructions: they get -BUSY
/// (SCRIPT KILL, FUNCTION KILL, SHUTDOWN and the transaction commands
/// excepted), as Redis does from its Lua hook.
final class Scripting: LuaInterpreter.Host {
    unowned let server: Server
    /// The interpreter of EVAL scripts (replaced by SCRIPT FLUSH).
    private(set) var evalInterpreter: LuaInterpreter!
    /// The interpreter of FUNCTION libraries.
    private(set) var functionsInterpreter: LuaInterpreter!
    /// EVAL's cache: body and flags by sha (lowercase hex).
    private(set) var scripts: [String: EvalScript] = [:]
    /// The libraries and their functions.
    var libraries = FunctionLibraries()
    /// The running script or function.
    private(set) var current: ScriptRun?
    /// The library FUNCTION LOAD is building (redis.register_function adds to it).
    var loading: FunctionLibrary?
    /// DEBUG SET-DISABLE-DENY-SCRIPTS 1: scripts may call the commands
    /// flagged `noscript` (Redis's script_disable_deny_script, for tests).
    var disableDenyScripts = false
    /// The clients scripts' and functions' commands run on (made on first use).
    private var evalClient: Connection?
    private var functionsClient: Connection?

    struct EvalScript {
        let body: [UInt8]
        let flags: ScriptFlags
    }

    init(server: Server) {
        self.server = server
        kvlua_enable_deprecated_api(server.config.acceptedSettings["lua-enable-deprecated-api"] == "yes" ? 1 : 0)
        evalInterpreter = LuaInterpreter(forFunctions: false, host: self)
        functionsInterpreter = LuaInterpreter(forFunctions: true, host: self)
        loadPersistedFunctions()
    }

    /// The client EVAL's (or FCALL's) commands run on, in `cache` to begin with.
    private func scriptClient(functions: Bool, cache: OpenCache) -> Connection {
        if let client = functions ? functionsClient : evalClient {
            client.cache = cache
            return client
        }
        let client = Connection(id: 0, fd: -1, token: 0, peer: nil, local: "", cache: cache, limits: server.requestLimits,
                                now: Server.nowMilliseconds())
        if functions { functionsClient = client } else { evalClient = client }
        return client
    }

    /// Whether `connection` is a script's client (it never blocks, and its
    /// commands are part of the script's record).
    func isScriptClient(_ connection: Connection) -> Bool {
        connection === evalClient || connection === functionsClient
    }

    // MARK: The EVAL cache

    /// Redis's evalExtractShebangFlags: the flags of a `#!lua flags=…` first
    /// line and its length, or compat mode without one.
    static func shebangFlags(_ body: [UInt8]) throws(ReplyError) -> (flags: ScriptFlags, length: Int) {
        guard body.count >= 2, body[0] == UInt8(ascii: "#"), body[1] == UInt8(ascii: "!") else {
            return (.evalCompat, 0)
        }
        guard let newline = body.firstIndex(of: 0x0a) else { throw ReplyError("ERR Invalid script shebang") }
        let line = Array(body[..<newline])
        guard let parts = line.withUnsafeBytes({ splitArguments($0) }), !parts.isEmpty else {
            throw ReplyError("ERR Invalid engine in script shebang")
        }
        guard parts[0] == Array("#!lua".utf8) else {
            throw ReplyError("ERR Unexpected engine in script shebang: \(String(keepingBytes: parts[0]))")
        }
        var flags: ScriptFlags = []
        for part in parts.dropFirst() {
            guard part.starts(with: Array("flags=".utf8)) else {
                throw ReplyError("ERR Unknown lua shebang option: \(String(keepingBytes: part))")
            }
            let list = part.dropFirst(6)
            guard !list.isEmpty else { continue }
            for name in list.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                let text = String(decoding: name, as: UTF8.self)
                guard let flag = ScriptFlags.names.first(where: { $0.0 == text })?.1 else {
                    throw ReplyError("ERR Unexpected flag in script shebang: \(text)")
                }
                flags.insert(flag)
            }
        }
        return (flags, newline)
    }

    /// Compiles `body` into the EVAL cache unless it is there (Redis's luaCreateFunction).
    /// - Returns: its sha.
    @discardableResult
    func createScript(_ body: [UInt8]) throws(ReplyError) -> String {
        let sha = LuaInterpreter.sha1Hex(body)
        if scripts[sha] != nil { return sha }
        let (flags, skip) = try Self.shebangFlags(body)
        if let error = evalInterpreter.compile(sha: sha, body: body, skip: skip) { throw ReplyError("ERR \(error)") }
        scripts[sha] = EvalScript(body: body, flags: flags)
        return sha
    }

    /// Whether EVAL's, EVALSHA's or FCALL's script may write: true unless
    /// it declares no-writes (a script without a shebang, an unknown sha or
    /// function may).
    func mayWrite(_ command: String, _ args: Arguments) -> Bool {
        guard let flags = declaredFlags(command, args), !flags.contains(.evalCompat) else { return true }
        return !flags.contains(.noWrites)
    }

    /// Whether EVAL's, EVALSHA's or FCALL's script is declared as writing
    /// (Redis's scriptFlagsToCmdFlags adds the write flag): a shebang or a
    /// function without no-writes. A script without a shebang, an unknown
    /// sha or function is not (its writes fail as it runs instead).
    func declaresWrites(_ command: String, _ args: Arguments) -> Bool {
        guard let flags = declaredFlags(command, args) else { return false }
        return !flags.contains(.evalCompat) && !flags.contains(.noWrites)
    }

    /// The flags of the script EVAL, EVALSHA or FCALL would run, if known.
    func declaredFlags(_ command: String, _ args: Arguments) -> ScriptFlags? {
        guard args.count >= 2 else { return nil }
        switch command {
        case "eval": return (try? Self.shebangFlags(args.bytes(1)))?.flags
        case "evalsha": return scripts[String(decoding: args.bytes(1).map(asciiLower), as: UTF8.self)]?.flags
        default: return libraries.function(named: args.bytes(1))?.flags
        }
    }

    func scriptExists(_ sha: [UInt8]) -> Bool { scripts[String(decoding: sha, as: UTF8.self)] != nil }

    /// SCRIPT FLUSH: a new interpreter and an empty cache.
    func flushScripts() {
        scripts = [:]
        evalInterpreter = LuaInterpreter(forFunctions: false, host: self)
    }

    // MARK: Running

    /// Redis's scriptPrepareForRun checks for a script with `flags`.
    private func checkRunnable(_ flags: ScriptFlags, readOnlyCommand: Bool) throws(ReplyError) {
        guard !flags.contains(.evalCompat) else { return }
        if !flags.contains(.noWrites) {
            if server.persistence.writeRefusal != nil, let log = server.persistence.log {
                throw ReplyError("MISCONF Redis is configured to persist data to AOF, but it's currently unable to persist "
                    + "to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts. "
                    + "AOF error: \(String(cString: strerror(log.writeError ?? EIO)))")
            }
            if !server.enoughGoodReplicas { throw ReplyError.noReplicas }
            if readOnlyCommand { throw ReplyError("ERR Can not execute a script with write flag using *_ro command.") }
        }
        // no-writes implies allow-oom (Redis's scriptPrepareForRun).
        if server.preCommandOutOfMemory && server.config.maxMemory > 0 && !flags.contains(.allowOOM)
            && !flags.contains(.noWrites) {
            throw ReplyError("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'")
        }
    }

    /// EVAL, EVALSHA and their _RO forms.
    func eval(_ ctx: CommandContext, bySha: Bool, readOnly: Bool) throws {
        let args = ctx.args
        if bySha && args[1].count != 40 { throw ReplyError.noScript }
        let (keys, arguments) = try Self.keysAndArguments(ctx, countError: "ERR value is not an integer or out of range")
        let sha: String
        if bySha {
            sha = String(decoding: args[1].map(asciiLower), as: UTF8.self)
            guard scripts[sha] != nil else { throw ReplyError.noScript }
        } else {
            sha = try createScript(args.bytes(1))
        }
        let script = scripts[sha]!
        try checkRunnable(script.flags, readOnlyCommand: readOnly)
        let readOnlyRun = readOnly || (!script.flags.contains(.evalCompat) && script.flags.contains(.noWrites))
        let allowOOM = !script.flags.contains(.evalCompat) && script.flags.contains(.allowOOM)
        try run(ctx, client: scriptClient(functions: false, cache: ctx.cache), name: sha, isEval: true, readOnly: readOnlyRun, allowOOM: allowOOM) { interpreter, hook in
            interpreter.run(sha: sha, name: sha, keys: keys, args: arguments, callerResp: ctx.connection.protocolVersion, hook: hook)
        }
    }

    /// FCALL and FCALL_RO.
    func fcall(_ ctx: CommandContext, readOnly: Bool) throws {
        guard let function = libraries.function(named: ctx.args.bytes(1)) else { throw ReplyError("ERR Function not found") }
        let (keys, arguments) = try Self.keysAndArguments(ctx, countError: "ERR Bad number of keys provided")
        try checkRunnable(function.flags, readOnlyCommand: readOnly)
        let readOnlyRun = readOnly || function.flags.contains(.noWrites)
        try run(ctx, client: scriptClient(functions: true, cache: ctx.cache), name: function.name, isEval: false, readOnly: readOnlyRun,
                allowOOM: function.flags.contains(.allowOOM)) { interpreter, hook in
            interpreter.run(sha: nil, ref: function.ref, name: function.name, keys: keys, args: arguments,
                            callerResp: ctx.connection.protocolVersion, hook: hook)
        }
    }

    /// The keys and arguments after `numkeys` (argument 2).
    private static func keysAndArguments(_ ctx: CommandContext, countError: String) throws(ReplyError)
        -> (keys: [[UInt8]], arguments: [[UInt8]])
    {
        guard let numkeys = parseStrictInt64(ctx.args[2]) else { throw ReplyError(countError) }
        if numkeys > Int64(ctx.args.count - 3) { throw ReplyError("ERR Number of keys can't be greater than number of args") }
        if numkeys < 0 { throw ReplyError("ERR Number of keys can't be negative") }
        let all = (3..<ctx.args.count).map { ctx.args.bytes($0) }
        return (Array(all.prefix(Int(numkeys))), Array(all.dropFirst(Int(numkeys))))
    }

    /// Runs a script as one unit of the log, and replies with its outcome.
    private func run(_ ctx: CommandContext, client: Connection, name: String, isEval: Bool, readOnly: Bool, allowOOM: Bool,
                     _ body: (LuaInterpreter, Bool) -> LuaInterpreter.Outcome) throws {
        let caller = ctx.connection
        client.user = caller.user
        client.protocolVersion = 2
        client.output.removeAll(keepingCapacity: true)
        let run = ScriptRun(caller: caller, client: client, name: name, isEval: isEval, request: ctx.args.copies,
                            readOnly: readOnly, allowOOM: allowOOM)
        current = run
        // The clock stands still while a script runs (Redis's script time
        // snapshot): a key does not expire midway, and the log record's
        // time is the time its commands saw.
        let freezesClock = Server.clockOverride == nil
        if freezesClock { Server.clockOverride = Server.nowMilliseconds() }
        server.persistence.beginTransaction()
        let outcome = body(isEval ? evalInterpreter : functionsInterpreter, server.config.scripting.busyReplyThreshold > 0)
        if freezesClock { Server.clockOverride = nil }
        current = nil
        if run.timedOut { server.scriptBusyEnded(run) }
        if let lsn = server.persistence.endTransaction() { caller.awaitingLSN = lsn }
        switch outcome {
        case .reply(let bytes):
            caller.output.append(contentsOf: bytes)
        case .error(let text, let counted):
            if counted {
                // Counted in the error stats where it arose (a redis.call
                // refused); the EVAL or FCALL still failed (Redis's call():
                // failed_calls counts a command whose reply is an error).
                caller.replyError(ReplyError(text))
                server.commands.lookup(ctx.args[0])?.stats.failed += 1
            } else {
                throw ReplyError(text)
            }
        }
    }

    // MARK: What Lua asks of the server

    /// redis.call/pcall (Redis's scriptCall): the checks scripts get, then
    /// the command on the script's client, through the server's command path.
    func call(_ args: [[UInt8]], resp: Int) -> (isError: Bool, bytes: [UInt8]) {
        guard let run = current else { return (true, Array("redis.call/pcall can only be called inside a script invocation".utf8)) }
        let command = server.commands.lookup(args[0])
        let subcommand = args.count > 1 ? args[1] : nil
        let flags = RedisCommandFlags.flags(of: command, name: args[0], subcommand: subcommand)
        func refuse(_ text: String) -> (isError: Bool, bytes: [UInt8]) {
            command?.stats.rejected += 1
            server.countError(ReplyError(text.hasPrefix("-") ? String(text.dropFirst()) : "ERR " + text))
            return (true, Array(text.utf8))
        }
        guard let command else {
            if RedisCommandFlags.byName[String(decoding: args[0].map(asciiLower), as: UTF8.self)] != nil, flags.contains("noscript") {
                return refuse("This Redis command is not allowed from script")
            }
            return refuse("Unknown Redis command called from script")
        }
        guard command.accepts(argumentCount: args.count) else {
            return refuse("Wrong number of args calling Redis command from script")
        }
        if flags.contains("noscript") && !disableDenyScripts {
            return refuse("This Redis command is not allowed from script")
        }
        if let user = run.caller.user, !user.unrestricted {
            let refusal = Arguments.withCopy(of: args) {
                server.aclRefusal(user, command, $0, run.client, context: .lua)
            }
            if let refusal { return refuse("-" + refusal.text) }
        }
        let writes = flags.contains("write")
        if run.readOnly && (writes || flags.contains("may_replicate")) {
            return refuse("Write commands are not allowed from read-only scripts.")
        }
        if writes && server.refusesWrites(of: run.caller) {
            return refuse("-READONLY You can't write against a read only replica.")
        }
        if !flags.contains("stale") && server.servesNoStaleData {
            return refuse("Can not execute the command on a stale replica. The 'replica-serve-stale-data' config "
                + "is set to 'no' and the replica is not connected to the master.")
        }
        if writes && !run.wroteData, let refusal = server.persistence.writeRefusal {
            return refuse("-" + refusal.text)
        }
        if writes && !server.enoughGoodReplicas { return refuse("-" + ReplyError.noReplicas.text) }
        // Redis's scriptVerifyOOM: over maxmemory, a script's first write that may grow is refused.
        if !run.allowOOM && server.config.maxMemory > 0 && !run.wroteData && server.preCommandOutOfMemory
            && flags.contains("denyoom") {
            return refuse("-" + ReplyError.oom.text)
        }
        if writes { run.wroteData = true }
        run.client.protocolVersion = resp
        run.client.output.removeAll(keepingCapacity: true)
        Arguments.withCopy(of: args) { server.executeForScript(command, $0, on: run.client, caller: run.caller,
                                                                          callerRequest: run.request) }
        return (false, run.client.output)
    }

    /// The count hook (Redis's scriptInterrupt): once the script passes
    /// busy-reply-threshold, serve the other clients now and then.
    func interrupt() -> Bool {
        guard let run = current else { return false }
        if !run.timedOut {
            let elapsed = run.elapsedMilliseconds
            guard elapsed >= server.config.scripting.busyReplyThreshold else { return false }
            server.logger.warning("Slow script detected: still in execution after \(elapsed) milliseconds. You can try "
                + "killing the script using the \(run.isEval ? "SCRIPT KILL" : "FUNCTION KILL") command. "
                + "Script name is: \(run.name).")
            run.timedOut = true
            server.scriptBusyStarted(run)
        }
        server.processEventsWhileBusy(run)
        return run.killed
    }

    /// redis.acl_check_cmd: whether the script's caller may run the command (nil: no such command).
    func aclCheck(_ args: [[UInt8]]) -> Bool? {
        guard let command = server.commands.lookup(args[0]) else { return nil }
        guard let user = current?.caller.user, !user.unrestricted else { return true }
        return Arguments.withCopy(of: args) { server.aclDenial(user, command.aclEntry.resolve($0), $0) == nil }
    }

    func log(level: Int, _ message: String) {
        let levels: [LogLevel] = [.debug, .verbose, .notice, .warning]
        server.logger.log(levels[max(0, min(3, level))], message)
    }

    func registerFunction(name: [UInt8], description: [UInt8]?, flags: UInt64, ref: Int32) -> String? {
        guard let library = loading else { return "redis.register_function can only be called on FUNCTION LOAD command" }
        guard FunctionLibraries.isValidName(name) else {
            return "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
        }
        let text = String(decoding: name, as: UTF8.self)
        guard library.functions[text] == nil else { return "Function already exists in the library" }
        library.add(LibraryFunction(name: text, description: description, flags: ScriptFlags(rawValue: flags), ref: ref,
                                    library: library.name))
        return nil
    }

    // MARK: SCRIPT KILL, FUNCTION KILL, FUNCTION STATS

    /// Redis's scriptKill: stops the running script unless it wrote.
    func kill(fromScriptCommand: Bool) throws(ReplyError) {
        guard let run = current else { throw .notBusy }
        if run.wroteData { throw .unkillable }
        if fromScriptCommand && !run.isEval { throw .busyFunction }
        if !fromScriptCommand && run.isEval { throw .busyEval }
        run.killed = true
    }

    /// The running script, for FUNCTION STATS.
    var running: ScriptRun? { current }
}
