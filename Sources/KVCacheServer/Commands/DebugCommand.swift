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
            subcommands: ["digest", "digest-value", "loadaof", "pause-cron", "protocol", "reload", "set-active-expire", "sleep", "writer"]),
]

private func debug(_ ctx: CommandContext) throws {
    let setting = ctx.server.config.enableDebugCommand
    guard setting == "yes" || (setting == "local" && ctx.connection.peerIsLoopback) else {
        throw ReplyError("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
            + "you can run it from a local connection, otherwise you need to set this option in the configuration "
            + "file, and then restart the server.")
    }
    switch ctx.option(1) {
    case "set-active-expire":
        guard ctx.args.count == 3, let flag = parseStrictInt64(ctx.args[2]) else { throw ReplyError.syntax }
        ctx.server.activeExpire = flag != 0
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
        usleep(UInt32(min(seconds, 60) * 1_000_000))
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
    case "digest-value":
        ctx.connection.replyArrayHeader(ctx.args.count - 2)
        for key in ctx.args.dropFirst(2) {
            let digest = try ctx.keyspace.peek(key.bytes).map { try valueDigest($0) } ?? [UInt8](repeating: 0, count: 20)
            ctx.connection.replyBulk(hex(digest))
        }
    case "digest":
        guard ctx.args.count == 2 else { throw ReplyError.syntax }
        // Each key's digest of key, value and expiry, xored: independent of key order.
        var total = [UInt8](repeating: 0, count: 20)
        for key in try ctx.keyspace.keys() {
            guard let entry = try ctx.keyspace.peek(key) else { continue }
            var material = sha1(key) + (try valueDigest(entry))
            if let expiresAt = entry.expiresAt { material += Array(String(expiresAt).utf8) }
            for (i, byte) in sha1(material).enumerated() { total[i] ^= byte }
        }
        ctx.connection.replyBulk(hex(total))
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "debug")
    }
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
private func valueDigest(_ entry: SQLiteKVCache.Entry) throws -> [UInt8] {
    var material: [UInt8] = [entry.kind.rawValue]
    func add(_ element: [UInt8]) {
        material += Array(String(element.count).utf8) + [0x3a] + element
    }
    switch entry.kind {
    case .string:
        add(entry.value)
    case .list:
        for item in try ListValue(decoding: entry.value).items { add(item) }
    case .set:
        for member in try SetValue(decoding: entry.value).members.sorted(by: { $0.lexicographicallyPrecedes($1) }) { add(member) }
    case .hash:
        let hash = try HashValue(decoding: entry.value)
        for i in hash.fields.indices.sorted(by: { hash.fields[$0].lexicographicallyPrecedes(hash.fields[$1]) }) {
            add(hash.fields[i])
            add(hash.values[i])
        }
    case .zset:
        let zset = try ZSetValue(decoding: entry.value)
        for i in zset.members.indices {
            add(zset.members[i])
            add(formatDouble(zset.scores[i]))
        }
    }
    return sha1(material)
}

private func sha1(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 20)
    var length: UInt32 = 0
    let ok = bytes.withUnsafeBytes { input in
        digest.withUnsafeMutableBufferPointer { out in
            EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, EVP_sha1(), nil)
        }
    }
    precondition(ok == 1 && length == 20, "SHA-1 failed in OpenSSL")
    return digest
}

private func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
}
