import Foundation
import RESP

/// SLOWLOG, MONITOR, OBJECT, and CLIENT KILL's helpers.
let observabilityCommands: [Command] = [
    Command(name: "slowlog", arity: -2, flags: ["admin", "loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "A container for slow log commands.", handler: slowlog,
            subcommands: ["get", "help", "len", "reset"]),
    Command(name: "monitor", arity: 1, flags: ["admin", "noscript", "loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Listens for all requests received by the server in real time.", handler: monitor),
    Command(name: "object", arity: -2, flags: ["readonly"], firstKey: 2, lastKey: 2, step: 1,
            group: "generic", summary: "A container for object introspection commands.", handler: object,
            subcommands: ["encoding", "freq", "help", "idletime", "refcount"]),
]

private func slowlog(_ ctx: CommandContext) throws {
    let c = ctx.connection
    switch ctx.option(1) {
    case "get":
        guard ctx.args.count <= 3 else { throw ReplyError.wrongArity("slowlog|get") }
        var count = 10
        if ctx.args.count == 3 {
            let n = try ctx.integer(2)
            guard n >= -1 else { throw ReplyError("ERR count should be greater than or equal to -1") }
            count = n == -1 ? Int.max : Int(n)
        }
        let entries = ctx.server.slowlog.entries.prefix(count)
        c.replyArrayHeader(entries.count)
        for entry in entries {
            c.replyArrayHeader(6)
            c.replyInteger(entry.id)
            c.replyInteger(entry.time)
            c.replyInteger(entry.microseconds)
            c.replyBulkArray(entry.args)
            c.replyBulk(entry.client)
            c.replyBulk(entry.name)
        }
    case "len":
        guard ctx.args.count == 2 else { throw ReplyError.wrongArity("slowlog|len") }
        c.replyInteger(ctx.server.slowlog.entries.count)
    case "reset":
        guard ctx.args.count == 2 else { throw ReplyError.wrongArity("slowlog|reset") }
        ctx.server.slowlog.reset()
        c.replyOK()
    case "help":
        c.replyHelp([
            "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "LEN", "    Return the length of the slowlog.",
            "RESET", "    Reset the slowlog.",
        ])
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "slowlog")
    }
}

private func monitor(_ ctx: CommandContext) throws {
    let c = ctx.connection
    guard !c.isMonitor else { return c.replyOK() }
    c.isMonitor = true
    ctx.server.monitors.append(c)
    c.replyOK()
}

extension Server {
    /// Sends a command line to every MONITOR client, in Redis's form:
    /// `+1339518083.107412 [0 127.0.0.1:60866] "set" "k" "v"`.
    func feedMonitors(_ args: Arguments, from client: Connection) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let micros = Int(now.tv_nsec / 1000)
        let fraction = String(micros).count < 6 ? String(repeating: "0", count: 6 - String(micros).count) + String(micros) : String(micros)
        let redacted = ["auth", "hello"].contains(args[0].lowercasedText)
        let words = args.enumerated().map { i, arg in
            redacted && i > 0 ? "\"(redacted)\"" : quoteForMonitor(arg)
        }
        let source = scripting.isScriptClient(client) ? "lua" : client.peer
        let line = "\(now.tv_sec).\(fraction) [\(client.databaseLabel) \(source)] " + words.joined(separator: " ")
        for monitor in monitors where monitor !== client && !monitor.closed {
            monitor.replySimple(line)
            queueReplies(monitor)
        }
    }
}

/// Quotes bytes as Redis's `sdscatrepr`: printable ASCII as is, `\\n \\r \\t
/// \\a \\b \\" \\\\` escaped, others as `\\xHH`.
func quoteForMonitor(_ bytes: some Collection<UInt8>) -> String {
    var out = "\""
    for b in bytes {
        switch b {
        case UInt8(ascii: "\\"): out += "\\\\"
        case UInt8(ascii: "\""): out += "\\\""
        case 0x0a: out += "\\n"
        case 0x0d: out += "\\r"
        case 0x09: out += "\\t"
        case 0x07: out += "\\a"
        case 0x08: out += "\\b"
        case 0x20...0x7e: out.append(Character(Unicode.Scalar(b)))
        default: out += String(format: "\\x%02x", b)
        }
    }
    return out + "\""
}

/// OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key, answered as Redis 7.0 would:
/// a string is `int`, `embstr` (up to 44 bytes) or `raw`; a collection
/// takes Redis's encoding by size (see Collections.swift).
private func object(_ ctx: CommandContext) throws {
    let sub = ctx.option(1)
    if sub == "help" {
        ctx.connection.replyHelp([
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ENCODING <key>", "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>", "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>", "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>", "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ])
        return
    }
    guard ["encoding", "refcount", "idletime", "freq"].contains(sub) else {
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "object")
    }
    guard ctx.args.count == 3 else { throw ReplyError.wrongArity("object|\(sub)") }
    guard let entry = try ctx.keyspace.peekStored(ctx.args.bytes(2)) else {
        ctx.connection.replyNull()
        return
    }
    switch sub {
    case "encoding":
        ctx.connection.replyBulk(encodingName(of: entry))
    case "refcount":
        // Redis shares the integers 0...9999 (refcount INT_MAX), except
        // under maxmemory with an LRU or LFU policy, where each key needs
        // its own object to carry its access stamp.
        let shares = ctx.server.config.maxMemory == 0 || !ctx.server.config.maxMemoryPolicy.ranksByAccess
        let integer = entry.row.kind == .string && entry.row.value.size <= 20 ? parseStrictInt64(entry.row.value.bytes) : nil
        ctx.connection.replyInteger(shares && integer.map { $0 >= 0 && $0 < 10_000 } == true ? Int(Int32.max) : 1)
    case "idletime":
        if ctx.server.config.maxMemoryPolicy.isLFU {
            throw ReplyError("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
                + "switching between policies at runtime LRU and LFU data will take some time to adjust.")
        }
        ctx.connection.replyInteger((try ctx.keyspace.idleMilliseconds(entry.key) ?? 0) / 1000)
    default:
        guard ctx.server.config.maxMemoryPolicy.isLFU else {
            throw ReplyError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that "
                + "when switching between policies at runtime LRU and LFU data will take some time to adjust.")
        }
        ctx.connection.replyInteger(Int(try ctx.keyspace.accessInfo(entry.key)?.frequency ?? 0))
    }
}
