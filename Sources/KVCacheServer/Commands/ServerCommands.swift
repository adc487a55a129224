import Foundation
import RESP

/// INFO, COMMAND, CONFIG, MODULE, SHUTDOWN.
let serverCommands: [Command] = [
    Command(name: "info", arity: -1, flags: ["loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Returns information and statistics about the server.", handler: info),
    Command(name: "command", arity: -1, flags: ["loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Returns detailed information about all commands.", handler: command,
            subcommands: ["count", "docs", "getkeys", "getkeysandflags", "info", "list"]),
    Command(name: "config", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "A container for server configuration commands.", handler: config,
            subcommands: ["get", "resetstat", "rewrite", "set"]),
    Command(name: "module", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "A container for module commands.", handler: module,
            subcommands: ["help", "list", "load", "loadex", "unload"]),
    Command(name: "shutdown", arity: -1, flags: ["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"],
            firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Commits everything, closes every cache and stops the server.", handler: shutdown),
]

private func info(_ ctx: CommandContext) throws {
    let sections = ctx.args.dropFirst().map { String(decoding: $0.map(asciiLower), as: UTF8.self) }
    ctx.connection.replyVerbatim(ctx.server.infoText(sections: sections, for: ctx.connection.user))
}

private func command(_ ctx: CommandContext) throws {
    let table = ctx.server.commands
    let c = ctx.connection
    guard ctx.args.count >= 2 else {
        let all = table.all
        c.replyArrayHeader(all.count)
        for command in all { c.reply(command.info()) }
        return
    }
    let sub = ctx.option(1)
    switch sub {
    case "help" where ctx.args.count == 2:
        c.replyHelp([
            "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "(no subcommand)", "    Return details about all Redis commands.",
            "COUNT", "    Return the total number of commands in this Redis server.",
            "LIST", "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]", "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]", "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>", "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>", "    Return the keys and the access flags from a full Redis command.",
        ])
    case "count":
        guard ctx.args.count == 2 else { throw ReplyError.wrongArity("command|count") }
        c.replyInteger(table.all.count)
    case "info":
        guard ctx.args.count > 2 else {
            c.replyArrayHeader(table.all.count)
            for command in table.all { c.reply(command.info()) }
            return
        }
        c.replyArrayHeader(ctx.args.count - 2)
        for i in 2..<ctx.args.count {
            // `parent|sub` names a subcommand, as Redis's lookupCommandBySds.
            let (command, full) = commandNamed(ctx.text(i), table)
            let info = full.map { command?.subcommandInfo($0) } ?? command?.info()
            if let info { c.reply(info) } else { c.replyNullArray() }
        }
    case "docs":
        var entries: [(String, RESPValue)] = []
        if ctx.args.count > 2 {
            for i in 2..<ctx.args.count {
                let (command, full) = commandNamed(ctx.text(i), table)
                guard let command else { continue }
                if let full {
                    if let docs = command.subcommandDocs(full) { entries.append((full, docs)) }
                } else {
                    entries.append((command.name, command.docs()))
                }
            }
        } else {
            entries = table.all.map { ($0.name, $0.docs()) }
        }
        c.replyMapHeader(entries.count)
        for (name, docs) in entries {
            c.replyBulk(name)
            c.reply(docs)
        }
    case "list":
        c.replyBulkArray(try commandList(ctx, table).map { Array($0.utf8) })
    case "getkeys":
        try CommandKeys.reply(ctx, withFlags: false)
    case "getkeysandflags":
        try CommandKeys.reply(ctx, withFlags: true)
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "command")
    }
}

/// The command a COMMAND INFO/DOCS argument names: `name`, or `parent|sub`
/// (then the lowercase full name, for the subcommand's entry). A name with
/// two bars names nothing.
private func commandNamed(_ text: String, _ table: CommandTable) -> (Command?, String?) {
    let parts = text.lowercased().split(separator: "|", omittingEmptySubsequences: false)
    switch parts.count {
    case 1: return (table.lookup(Array(text.utf8)), nil)
    case 2: return (table.lookup(Array(parts[0].utf8)), parts.joined(separator: "|"))
    default: return (nil, nil)
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]:
/// every command and, after it, its subcommands (`config|get`), each kept
/// or not on its own, as Redis 7.0's commandListWithFilter. No command is
/// a module's; an unknown category keeps none.
private func commandList(_ ctx: CommandContext, _ table: CommandTable) throws -> [String] {
    var keep: (ACLCommandEntry) -> Bool = { _ in true }
    var i = 2
    while i < ctx.args.count {
        guard ctx.option(i) == "filterby", ctx.args.count - 1 - i == 2 else { throw ReplyError.syntax }
        let argument = ctx.args.bytes(i + 2)
        switch ctx.option(i + 1) {
        case "module":
            keep = { _ in false }
        case "aclcat":
            let bit = ACLCategory.bits[String(decoding: argument, as: UTF8.self).lowercased()] ?? 0
            keep = { bit != 0 && $0.categories & bit != 0 }
        case "pattern":
            keep = { globMatch(argument, Array($0.fullName.utf8), caseInsensitive: true) }
        default:
            throw ReplyError.syntax
        }
        i += 3
    }
    var names: [String] = []
    for command in table.all {
        let entry = command.aclEntry
        if keep(entry) { names.append(entry.fullName) }
        for sub in entry.subcommands.keys.sorted() where keep(entry.subcommands[sub]!) {
            names.append(entry.subcommands[sub]!.fullName)
        }
    }
    return names
}

/// MODULE: this server loads no Redis module (they are C against Redis's
/// internals), so LIST is empty; LOAD, LOADEX and UNLOAD are refused as
/// Redis refuses them by default (`enable-module-command no`), and where
/// that allows them, fail as a module that does not load fails in Redis,
/// with the reason in the log.
private func module(_ ctx: CommandContext) throws {
    let c = ctx.connection
    let sub = ctx.option(1)
    // Each subcommand's arity, as Redis's table gives it (negative: at least).
    let arity = ["help": 2, "list": 2, "load": -3, "loadex": -3, "unload": 3]
    guard let wanted = arity[sub] else { throw ReplyError.unknownSubcommand(ctx.args[1], of: "module") }
    guard wanted > 0 ? ctx.args.count == wanted : ctx.args.count >= -wanted else {
        throw ReplyError.wrongArity("module|\(sub)")
    }
    switch sub {
    case "help":
        c.replyHelp([
            "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LIST", "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]", "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>", "    Unload a module.",
        ])
    case "list":
        c.replyArrayHeader(0)
    case "unload":
        try requireEnabled(ctx.server.config.enableModuleCommand, "MODULE", by: "enable-module-command", ctx)
        throw ReplyError("ERR Error unloading module: no such module with that name")
    default:  // load, loadex
        try requireEnabled(ctx.server.config.enableModuleCommand, "MODULE", by: "enable-module-command", ctx)
        ctx.server.logger.warning("Module \(ctx.text(2)) failed to load: kvcache-server does not load Redis modules")
        throw ReplyError("ERR Error loading the extension. Please check the server logs.")
    }
}

private func config(_ ctx: CommandContext) throws {
    let sub = ctx.option(1)
    switch sub {
    case "help" where ctx.args.count == 2:
        ctx.connection.replyHelp([
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>", "    Set the configuration <directive> to <value>.",
            "RESETSTAT", "    Reset statistics reported by the INFO command.",
            "REWRITE", "    Rewrite the configuration file.",
        ])
    case "get":
        guard ctx.args.count >= 3 else { throw ReplyError.wrongArity("config|get") }
        var pairs: [(String, String)] = []
        var seen = Set<String>()
        for pattern in ctx.args.dropFirst(2) {
            let lowered = pattern.map(asciiLower)
            // A name without glob characters is looked up (hidden settings
            // too) and answered under the name as given, as Redis 7.0.
            if !lowered.contains(where: { $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "[") }) {
                let name = String(decoding: lowered, as: UTF8.self)
                if !seen.contains(name), let directive = ServerConfig.directivesByName[name] {
                    seen.insert(name)
                    pairs.append((String(decoding: pattern, as: UTF8.self), directive.render(ctx.server.config)))
                }
                continue
            }
            for (name, directive) in ServerConfig.directiveNames where !directive.hidden && !seen.contains(name) {
                if globMatch(lowered, Array(name.utf8)) {
                    seen.insert(name)
                    pairs.append((name, directive.render(ctx.server.config)))
                }
            }
        }
        ctx.connection.replyMapHeader(pairs.count)
        for (name, value) in pairs {
            ctx.connection.replyBulk(name)
            ctx.connection.replyBulk(value)
        }
    case "set":
        try configSet(ctx)
    case "rewrite":
        guard ctx.args.count == 2 else { throw ReplyError.wrongArity("config|rewrite") }
        try configRewrite(ctx)
    case "resetstat":
        guard ctx.args.count == 2 else { throw ReplyError.wrongArity("config|resetstat") }
        ctx.server.resetStatistics()
        ctx.connection.replyOK()
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "config")
    }
}

/// The directives Redis 7.0 declares IMMUTABLE_CONFIG (CONFIG SET refuses
/// them whatever the value): these of this server's own, and those of the
/// table generated from Redis's config.c that CONFIG SET may not change.
private let redisImmutableConfigs = Set<String>([
    "daemonize", "aclfile", "appendfilename", "appenddirname", "databases", "logfile", "enable-debug-command",
    "enable-module-command",
]).union(ServerConfig.redisAcceptedDirectives.filter { !$0.live }.map(\.name))

/// CONFIG SET name value [name value ...]: all or nothing, applied at once.
/// A `cache` value is a whole line's arguments: "sessions 256mb lru".
private func configSet(_ ctx: CommandContext) throws {
    guard ctx.args.count >= 4, ctx.args.count % 2 == 0 else { throw ReplyError.wrongArity("config|set") }
    var config = ctx.server.config
    var seen = Set<String>()
    for i in stride(from: 2, to: ctx.args.count, by: 2) {
        let name = ctx.option(i)
        guard let directive = ServerConfig.directivesByName[name] else {
            throw ReplyError("ERR Unknown option or number of arguments for CONFIG SET - '\(ctx.quoted(i))'")
        }
        // One setting named twice (or by two of its names) is refused, as Redis.
        guard seen.insert(directive.name).inserted else {
            throw ReplyError("ERR CONFIG SET failed (possibly related to argument '\(ctx.quoted(i))') - duplicate parameter")
        }
        let value = ctx.text(i + 1)
        // A setting's current value is a no-op, as Redis's "CONFIG sanity"
        // test expects of every setting (this server cannot change bind at
        // run time, Redis can); Redis's own immutable ones refuse any value.
        let immutableInRedis = redisImmutableConfigs.contains(directive.name)
        if !immutableInRedis && value == directive.render(ctx.server.config) { continue }
        guard directive.live && !immutableInRedis else {
            throw ReplyError("ERR CONFIG SET failed (possibly related to argument '\(ctx.quoted(i))') - can't set immutable config")
        }
        let words = directive.words ? value.split(separator: " ").map(String.init) : [value]
        do {
            try config.apply(name, words)
        } catch let error as ConfigError {
            throw ReplyError("ERR CONFIG SET failed (possibly related to argument '\(ctx.quoted(i))') - \(error.description)")
        }
    }
    try ctx.server.apply(config)
    ctx.connection.replyOK()
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: the server stops as on
/// SIGTERM (first waiting up to shutdown-timeout for lagging replicas,
/// unless NOW; then the log fsynced, what memory holds applied to SQLite),
/// and like Redis sends no reply on success. Every acknowledged write is
/// kept either way, so SAVE, NOSAVE and FORCE change nothing. ABORT calls
/// off a shutdown that waits for replicas.
private func shutdown(_ ctx: CommandContext) throws {
    var options: Set<String> = []
    for i in ctx.args.indices.dropFirst() {
        guard ["nosave", "save", "now", "force", "abort"].contains(ctx.option(i)) else { throw ReplyError.syntax }
        options.insert(ctx.option(i))
    }
    if (options.contains("abort") && options.count > 1) || (options.contains("save") && options.contains("nosave")) {
        throw ReplyError.syntax
    }
    if options.contains("abort") {
        guard ctx.server.abortShutdown() else { throw ReplyError("ERR No shutdown in progress.") }
        ctx.connection.replyOK()
        return
    }
    ctx.server.logger.warning("User requested shutdown...")
    // A client that may not block (inside MULTI, a script) shuts down at
    // once, as Redis's CLIENT_DENY_BLOCKING.
    ctx.server.requestShutdown(now: options.contains("now") || !ctx.mayBlock || ctx.server.processingWhileBusy,
                               client: ctx.connection)
}

/// CONFIG REWRITE: writes the running configuration into the file the server
/// was started with, atomically (a temporary file, fsync, then rename).
func configRewrite(_ ctx: CommandContext, forceAll: Bool = false) throws {
    guard let path = ctx.server.config.configFile else {
        throw ReplyError("ERR The server is running without a config file")
    }
    let original = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    let text = ctx.server.config.rewritten(original: original, forceAll: forceAll)
    let failure = Posix.replaceFile(path, with: Array(text.utf8), temporary: "\(path).tmp-\(getpid())", syncing: nil)
    guard failure == 0 else { throw ReplyError("ERR Rewriting config file: \(String(cString: strerror(failure)))") }
    ctx.server.logger.notice("CONFIG REWRITE executed with success.")
    ctx.connection.replyOK()
}
