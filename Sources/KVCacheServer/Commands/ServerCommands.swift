import Foundation
import RESP

/// INFO, COMMAND, CONFIG, FUNCTION.
let serverCommands: [Command] = [
    Command(name: "info", arity: -1, flags: ["loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Returns information and statistics about the server.", handler: info),
    Command(name: "command", arity: -1, flags: ["loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Returns detailed information about all commands.", handler: command,
            subcommands: ["count", "docs", "getkeys", "getkeysandflags", "info", "list"]),
    Command(name: "config", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "A container for server configuration commands.", handler: config,
            subcommands: ["get", "resetstat", "rewrite", "set"]),
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
        let wanted = ctx.args.count > 2 ? ctx.args.dropFirst(2).map { table.lookup($0) } : table.all.map { Optional($0) }
        c.replyArrayHeader(wanted.count)
        for command in wanted {
            if let command { c.reply(command.info()) } else { c.replyNullArray() }
        }
    case "docs":
        let wanted = ctx.args.count > 2 ? ctx.args.dropFirst(2).compactMap { table.lookup($0) } : table.all
        c.replyMapHeader(wanted.count)
        for command in wanted {
            c.replyBulk(command.name)
            c.reply(command.docs())
        }
    case "list":
        c.replyBulkArray(table.all.map { Array($0.name.utf8) })
    case "getkeys":
        try CommandKeys.reply(ctx, withFlags: false)
    case "getkeysandflags":
        try CommandKeys.reply(ctx, withFlags: true)
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "command")
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
            for (name, directive) in ServerConfig.directiveNames where !seen.contains(name) {
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
/// them whatever the value).
private let redisImmutableConfigs: Set<String> = [
    "rdbchecksum", "daemonize", "io-threads-do-reads", "tcp-backlog", "always-show-logo", "syslog-enabled",
    "cluster-enabled", "disable-thp", "aclfile", "unixsocket", "pidfile", "syslog-ident", "appendfilename",
    "appenddirname", "supervised", "syslog-facility", "databases", "io-threads", "logfile", "unixsocketperm",
    "set-proc-title", "cluster-config-file", "cluster-port", "enable-protected-configs", "enable-debug-command",
    "enable-module-command",
]

/// CONFIG SET name value [name value ...]: all or nothing, applied at once.
/// A `cache` value is a whole line's arguments: "sessions 256mb lru".
private func configSet(_ ctx: CommandContext) throws {
    guard ctx.args.count >= 4, ctx.args.count % 2 == 0 else { throw ReplyError.wrongArity("config|set") }
    var config = ctx.server.config
    var seen = Set<String>()
    for i in stride(from: 2, to: ctx.args.count, by: 2) {
        let name = ctx.option(i)
        guard let directive = ServerConfig.directivesByName[name] else {
            throw ReplyError("ERR Unknown option or number of arguments for CONFIG SET - '\(ctx.text(i))'")
        }
        // One setting named twice (or by two of its names) is refused, as Redis.
        guard seen.insert(directive.name).inserted else {
            throw ReplyError("ERR CONFIG SET failed (possibly related to argument '\(ctx.text(i))') - duplicate parameter")
        }
        let value = ctx.text(i + 1)
        // A setting's current value is a no-op, as Redis's "CONFIG sanity"
        // test expects of every setting (this server cannot change port or
        // bind at run time, Redis can); Redis's own immutable ones refuse
        // any value.
        let immutableInRedis = redisImmutableConfigs.contains(directive.name)
        if !immutableInRedis && value == directive.render(ctx.server.config) { continue }
        guard directive.live && !immutableInRedis else {
            throw ReplyError("ERR CONFIG SET failed (possibly related to argument '\(ctx.text(i))') - can't set immutable config")
        }
        let words = directive.words ? value.split(separator: " ").map(String.init) : [value]
        do {
            try config.apply(name, words)
        } catch let error as ConfigError {
            throw ReplyError("ERR CONFIG SET failed (possibly related to argument '\(ctx.text(i))') - \(error.description)")
        }
    }
    try ctx.server.apply(config)
    ctx.connection.replyOK()
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: the server stops as on SIGTERM
/// (the log fsynced, what memory holds applied to SQLite within
/// shutdown-timeout), and like Redis sends no reply on success. Every
/// acknowledged write is kept either way, so the options change nothing.
private func shutdown(_ ctx: CommandContext) throws {
    for i in ctx.args.indices.dropFirst() {
        guard ["nosave", "save", "now", "force"].contains(ctx.option(i)) else { throw ReplyError.syntax }
    }
    ctx.server.logger.warning("User requested shutdown...")
    ctx.server.requestShutdown()
}

/// CONFIG REWRITE: writes the running configuration into the file the server
/// was started with, atomically (a temporary file, fsync, then rename).
private func configRewrite(_ ctx: CommandContext) throws {
    guard let path = ctx.server.config.configFile else {
        throw ReplyError("ERR The server is running without a config file")
    }
    let original = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    let text = ctx.server.config.rewritten(original: original)
    let temporary = "\(path).tmp-\(getpid())"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw ReplyError("ERR Rewriting config file: \(String(cString: strerror(errno)))") }
    let bytes = Array(text.utf8)
    var written = 0
    while written < bytes.count {
        let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(temporary)
            throw ReplyError("ERR Rewriting config file: \(reason)")
        }
        written += n
    }
    let synced = fsync(fd) == 0
    close(fd)
    guard synced, rename(temporary, path) == 0 else {
        let reason = String(cString: strerror(errno))
        unlink(temporary)
        throw ReplyError("ERR Rewriting config file: \(reason)")
    }
    ctx.server.logger.notice("CONFIG REWRITE executed with success.")
    ctx.connection.replyOK()
}
