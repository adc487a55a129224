#if canImport(Glibc)
import Glibc
#endif
import CCrypto
import RESP
import SQLiteKVCache

/// DEBUG, for tests and operators, refused unless `enable-debug-command`
/// allows it (as in Redis 7: `no` by default, `yes`, or `local` for
/// loopback clients only).
let debugCommands: [Command] = [
    Command(name: "debug", arity: -2, flags: ["admin", "noscript", "loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "A container for debugging commands.", handler: debug,
            subcommands: ["change-repl-id", "config-rewrite-force-all", "digest", "digest-value", "error", "help", "htstats",
                          "htstats-key", "jmap", "loadaof", "object", "pause-cron", "populate", "protocol",
                          "quicklist-packed-threshold", "reload", "replicate", "set-active-expire", "set-skip-checksum-validation",
                          "sleep", "writer"]),
]

/// Redis's protected commands (DEBUG, MODULE LOAD/UNLOAD): refused unless
/// their `enable-…-command` setting is `yes`, or `local` and the client
/// came over loopback, with Redis's text.
func requireEnabled(_ setting: String, _ command: String, by option: String, _ ctx: CommandContext) throws {
    guard setting == "yes" || (setting == "local" && ctx.connection.peerIsLoopback) else {
        throw ReplyError("ERR \(command) command not allowed. If the \(option) option is set to \"local\", "
            + "you can run it from a local connection, otherwise you need to set this option in the configuration "
            + "file, and then restart the server.")
    }
}

private func debug(_ ctx: CommandContext) throws {
    try requireEnabled(ctx.server.config.enableDebugCommand, "DEBUG", by: "enable-debug-command", ctx)
    switch ctx.option(1) {
    case "set-skip-checksum-validation":
        guard ctx.args.count == 3, let flag = parseStrictInt64(ctx.args[2]) else { throw ReplyError.syntax }
        ctx.server.skipChecksumValidation = flag != 0
        ctx.connection.replyOK()
    case "set-active-expire":
        guard ctx.args.count == 3, let flag = parseStrictInt64(ctx.args[2]) else { throw ReplyError.syntax }
        ctx.server.activeExpire = flag != 0
        ctx.connection.replyOK()
    case "error" where ctx.args.count == 3:
        // The argument as an error reply, newlines blanked (clients' tests
        // fake LOADING, READONLY or OOM with it), as Redis writes it: raw.
        let text = ctx.args.bytes(2).map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 }
        ctx.connection.output.append(0x2D)
        ctx.connection.output.append(contentsOf: text)
        ctx.connection.output.append(contentsOf: [0x0D, 0x0A])
    case "replicate" where ctx.args.count >= 3:
        // The arguments go to the replicas as a command of the stream, as
        // they are (no SELECT first): Redis's test of a replica's errors.
        var op: [UInt8] = []
        RESPEncoder.bulkArray((2..<ctx.args.count).map { ctx.args.bytes($0) }, into: &op)
        if ctx.server.replicationFeeding { ctx.server.sendToReplicas(op) }
        ctx.connection.replyOK()
    case "pause-cron":
        guard ctx.args.count == 3, let flag = parseStrictInt64(ctx.args[2]) else { throw ReplyError.syntax }
        ctx.server.cronPaused = flag != 0
        ctx.connection.replyOK()
    case "object":
        // Redis's text; the address is the key's digest prefix (there is no
        // object in memory), serializedlength the DUMP payload's object part.
        guard ctx.args.count == 3 else { throw ReplyError.syntax }
        guard let entry = try ctx.keyspace.peekIncludingExpired(ctx.args.bytes(2)) else {
            throw ReplyError("ERR no such key")
        }
        let serialized = max(0, (try RDB.dump(entry)).count - 11)
        ctx.connection.replySimple("Value at:0x7f0000000000 refcount:1 encoding:\(encodingName(of: entry)) "
            + "serializedlength:\(serialized) lru:0 lru_seconds_idle:0")
    case "set-disable-deny-scripts":
        guard ctx.args.count == 3, let flag = parseStrictInt64(ctx.args[2]) else { throw ReplyError.syntax }
        ctx.server.scripting.disableDenyScripts = flag != 0
        ctx.connection.replyOK()
    case "sleep":
        guard ctx.args.count == 3, let seconds = Double(ctx.text(2)), seconds >= 0 else { throw ReplyError.syntax }
        // The whole time, a signal or not (usleep ended early on one: a
        // 0.2 s sleep measured 0.183 s under ThreadSanitizer).
        let micros = Int(min(seconds, 60) * 1_000_000)
        var left = timespec(tv_sec: micros / 1_000_000, tv_nsec: micros % 1_000_000 * 1000)
        var asked = left
        while nanosleep(&asked, &left) != 0 && errno == EINTR { asked = left }
        ctx.connection.replyOK()
    case "protocol":
        guard ctx.args.count == 3 else { throw ReplyError.syntax }
        try debugProtocol(ctx)
    case "reload", "loadaof":
        // Redis's NOFLUSH without MERGE loads its RDB over what is in
        // memory, and fails on the first key or library already there.
        let options = Set(ctx.args.dropFirst(2).map { String(decoding: $0.map(asciiLower), as: UTF8.self) })
        if ctx.option(1) == "reload" && options.contains("noflush") && !options.contains("merge") {
            let hasKeys = ctx.server.registry.open.values.contains { ($0.engine?.count ?? 0) > 0 }
            if hasKeys || !ctx.server.scripting.libraries.all.isEmpty {
                throw ReplyError("ERR Error trying to load the RDB dump, check server logs.")
            }
        }
        // Redis reloads its dataset from the RDB or the AOF; here SQLite is
        // given everything and every cache reopened from its file.
        ctx.server.reloadCaches()
        ctx.connection.replyOK()
    case "writer":
        // DEBUG WRITER PAUSE|RESUME: holds the writer thread, so changes stay
        // in memory and in the log (to measure a replay, or a full memtable).
        guard ctx.args.count == 3 else { throw ReplyError.syntax }
        switch ctx.option(2) {
        case "pause": ctx.server.persistence.writer.setPaused(true)
        case "resume": ctx.server.persistence.writer.setPaused(false)
        default: throw ReplyError.syntax
        }
        ctx.connection.replyOK()
    case "object":
        guard ctx.args.count == 3 else { throw ReplyError.syntax }
        try debugObject(ctx)
    case "populate":
        try debugPopulate(ctx)
    case "quicklist-packed-threshold":
        // Redis's size past which a list element gets a node of its own;
        // a list here is a ring buffer of elements either way.
        guard ctx.args.count == 3, let size = parseMemorySize(ctx.text(2)), size <= Int(UInt32.max) else {
            throw ReplyError("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
        }
        ctx.connection.replyOK()
    case "config-rewrite-force-all":
        // CONFIG REWRITE writing every directive, defaults included.
        try configRewrite(ctx, forceAll: true)
    case "change-repl-id", "jmap":
        // No replication id to change (no replicas), no heap map to dump.
        ctx.connection.replyOK()
    case "htstats":
        guard ctx.args.count >= 3 else { throw ReplyError.syntax }
        let keys = try ctx.keyspace.count()
        ctx.connection.replyVerbatim("[Dictionary HT]\nHash table 0 stats (main hash table):\n table size: \(keys)\n"
            + " number of elements: \(keys)\n[Expires HT]\nNo stats available for empty dictionaries\n")
    case "htstats-key":
        guard ctx.args.count >= 3 else { throw ReplyError.syntax }
        guard let entry = try ctx.keyspace.peekStored(ctx.args.bytes(2)) else { throw ReplyError.noSuchKey }
        guard ["hashtable", "skiplist"].contains(encodingName(of: entry)) else {
            throw ReplyError("ERR The value stored at the specified key is not represented using an hash table")
        }
        let count = (try collectionValue(of: entry) as? LiveCollection)?.count ?? 0
        ctx.connection.replyVerbatim("Hash table 0 stats (main hash table):\n table size: \(count)\n number of elements: \(count)\n")
    case "help":
        ctx.connection.replyHelp([
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONFIG-REWRITE-FORCE-ALL",
            "    Like CONFIG REWRITE but writes all configuration options, including",
            "    keywords not listed in original configuration file or default values.",
            "DIGEST", "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]", "    Output a hex signature of the values of all the specified keys.",
            "ERROR <string>", "    Return a Redis protocol error with <string> as message. Useful for clients",
            "    unit tests to simulate Redis errors.",
            "LOADAOF", "    Apply every change to SQLite and reopen every cache from its file.",
            "OBJECT <key>", "    Show low level info about the `key` and associated value.",
            "POPULATE <count> [<prefix>] [<size>]", "    Create <count> string keys named key:<num>.",
            "PROTOCOL <type>", "    Reply with a sample of the given type.",
            "RELOAD", "    Apply every change to SQLite and reopen every cache from its file.",
            "REPLICATE <command> [<arg> ...]", "    Send the command to the replicas as part of the stream.",
            "SET-ACTIVE-EXPIRE <0|1>", "    Switch the expiry of keys in the background off or on.",
            "SLEEP <seconds>", "    Stop the server for <seconds>.",
            "WRITER PAUSE|RESUME", "    Hold the writer thread (changes stay in memory and in the log).",
        ])
    case "digest-value":
        ctx.connection.replyArrayHeader(ctx.args.count - 2)
        for key in ctx.args.dropFirst(2) {
            let digest = try ctx.keyspace.peekStored(key.bytes).map { try valueDigest($0) } ?? [UInt8](repeating: 0, count: 20)
            ctx.connection.replyBulk(Digest.hex(digest))
        }
    case "digest":
        guard ctx.args.count == 2 else { throw ReplyError.syntax }
        // Each key's digest of key, value and expiry, xored: independent of key order.
        var total = [UInt8](repeating: 0, count: 20)
        for key in try ctx.keyspace.keys() {
            guard let entry = try ctx.keyspace.peekStored(key) else { continue }
            var material = Digest.sha1(key) + (try valueDigest(entry))
            if let expiresAt = entry.row.expiresAt { material += Array(String(expiresAt).utf8) }
            for (i, byte) in Digest.sha1(material).enumerated() { total[i] ^= byte }
        }
        ctx.connection.replyBulk(Digest.hex(total))
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "debug")
    }
}

/// DEBUG OBJECT key: Redis's line of low-level facts about a value. The
/// address is the live value's (a string's: one derived from its key), so
/// it stays the same while a value is changed in place.
private func debugObject(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(2)
    guard let entry = try ctx.keyspace.peekStored(key) else { throw ReplyError.noSuchKey }
    let address: UInt
    if case .live(let value) = entry.row.value {
        address = UInt(bitPattern: ObjectIdentifier(value).hashValue)
    } else {
        address = UInt(truncatingIfNeeded: key.reduce(UInt64(14695981039346656037)) { ($0 ^ UInt64($1)) &* 1099511628211 })
    }
    let serialized = (try? RDB.dump(entry).count).map { $0 - 11 } ?? 0
    let idle = try ctx.keyspace.idleMilliseconds(key).map { $0 / 1000 } ?? 0
    var line = "Value at:0x\(String(address, radix: 16)) refcount:1 encoding:\(encodingName(of: entry)) "
        + "serializedlength:\(serialized) lru:\((Server.nowMilliseconds() / 1000 - idle) & 0xFFFFFF) lru_seconds_idle:\(idle)"
    if entry.row.kind == .list, let list = try collectionValue(of: entry) as? ListValue {
        line += " ql_nodes:\(max(1, list.count)) ql_avg_node:1.00 ql_listpack_max:\(ctx.server.config.listMaxListpackSize) "
            + "ql_compressed:\(ctx.server.config.listCompressDepth > 0 ? 1 : 0) ql_uncompressed_size:\(list.encodedSize)"
    }
    ctx.connection.replySimple(line)
}

/// DEBUG POPULATE count [prefix] [size]: string keys <prefix>:<n> (default
/// `key`) holding "value:<n>", or that padded with zero bytes (or cut) to
/// <size>; existing keys are left alone.
private func debugPopulate(_ ctx: CommandContext) throws {
    guard ctx.args.count >= 3 && ctx.args.count <= 5 else { throw ReplyError.wrongArity("debug|populate") }
    guard let count = parseStrictInt64(ctx.args[2]), count >= 0 else {
        throw ReplyError("ERR value is out of range, must be positive")
    }
    let prefix = ctx.args.count >= 4 ? ctx.text(3) : "key"
    var size: Int?
    if ctx.args.count == 5 {
        guard let n = parseStrictInt64(ctx.args[4]), n >= 0 else {
            throw ReplyError("ERR value is out of range, must be positive")
        }
        size = Int(n)
    }
    for i in 0..<Int(count) {
        let key = Array("\(prefix):\(i)".utf8)
        if try ctx.keyspace.exists(key) { continue }
        var value = Array("value:\(i)".utf8)
        if let size { value = Array((value + [UInt8](repeating: 0, count: max(0, size - value.count))).prefix(size)) }
        try ctx.keyspace.set(key, value, expiresAt: nil)
    }
    ctx.connection.replyOK()
}

/// DEBUG PROTOCOL <type>: one reply of each RESP3 type, for client tests.
private func debugProtocol(_ ctx: CommandContext) throws {
    let c = ctx.connection
    let resp3 = c.protocolVersion >= 3
    switch ctx.option(2) {
    case "string": c.replyBulk("Hello World")
    case "integer": c.replyInteger(12345)
    case "double": c.reply(.double(3.141))
    case "bignum":
        if resp3 { c.output.append(contentsOf: Array("(1234567999999999999999999999999999999\r\n".utf8)) }
        else { c.replyBulk("1234567999999999999999999999999999999") }
    case "null": c.replyNull()
    case "array": c.reply(.array([.integer(0), .integer(1), .integer(2)]))
    case "set": c.reply(.set([.integer(0), .integer(1), .integer(2)]))
    case "map": c.reply(.map([(.integer(0), .boolean(false)), (.integer(1), .boolean(true)), (.integer(2), .boolean(false))]))
    case "attrib":
        if resp3 {
            c.output.append(contentsOf: Array("|1\r\n".utf8))
            c.replyBulk("key-popularity")
            c.reply(.array([.bulk(Array("key:123".utf8)), .integer(90)]))
        }
        c.replyBulk("Some real reply following the attribute")
    case "push":
        guard resp3 else { throw ReplyError("ERR RESP2 is not supported by this command") }
        c.output.append(contentsOf: Array(">2\r\n".utf8))
        c.replyBulk("server-cpu-usage")
        c.replyInteger(42)
        c.replyBulk("Some real reply following the push reply")
    case "true": c.reply(.boolean(true))
    case "false": c.reply(.boolean(false))
    case "verbatim": c.reply(.verbatim(format: "txt", Array("This is a verbatim\nstring".utf8)))
    default:
        throw ReplyError("ERR Wrong protocol type name. Please use one of the following: "
            + "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
    }
}

/// DEBUG DIGEST-VALUE's digest of a value: SHA-1 of its kind and contents,
/// with a set's members and a hash's fields in sorted order, so equal
/// values digest alike whatever order they were built in.
private func valueDigest(_ entry: StoredEntry) throws -> [UInt8] {
    var material: [UInt8] = [entry.row.kind.rawValue]
    func add(_ element: [UInt8]) {
        material += Array(String(element.count).utf8) + [0x3a] + element
    }
    switch try collectionValue(of: entry) {
    case nil:
        add(entry.row.value.bytes)
    case let list as ListValue:
        for item in list.items { add(item) }
    case let set as SetValue:
        for member in set.allMembers.sorted(by: { $0.lexicographicallyPrecedes($1) }) { add(member) }
    case let hash as HashValue:
        for pair in hash.allPairs.sorted(by: { $0.field.lexicographicallyPrecedes($1.field) }) {
            add(pair.field)
            add(pair.value)
        }
    case let zset as ZSetValue:
        zset.forEach(fromRank: 0) { member, score in
            add(member)
            add(formatDouble(score))
            return true
        }
    case let stream as StreamValue:
        // The entries, as Redis's digest walks them (groups are not in it).
        stream.forEach { e in
            add(e.id.bytes)
            for element in stream.fields(of: e) { add(element) }
            return true
        }
    default:
        break
    }
    return Digest.sha1(material)
}

