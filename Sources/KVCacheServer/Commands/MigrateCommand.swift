import RESP
import SQLiteKVCache

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
/// [AUTH password | AUTH2 username password] [KEYS key ...], as Redis 7.0's
/// migrateCommand: the keys' DUMP payloads sent as RESTORE (after AUTH and
/// SELECT) over one connection, synchronously, each step bounded by the
/// timeout; the keys the target took are deleted here (unless COPY) and
/// propagate as DEL. A connection is opened for each MIGRATE (Redis keeps
/// one cached for 10 s), so SELECT is always sent.
let migrateCommands: [Command] = [
    Command(name: "migrate", arity: -6, flags: ["write", "movablekeys"], firstKey: 3, lastKey: 3, step: 1,
            group: "generic", summary: "Atomically transfers a key from one Redis instance to another.",
            handler: migrate),
]

private func migrate(_ ctx: CommandContext) throws {
    var copy = false, replace = false
    var auth: [[UInt8]] = []
    var firstKey = 3, keyCount = 1
    var j = 6
    options: while j < ctx.args.count {
        let more = ctx.args.count - j - 1
        switch ctx.option(j) {
        case "copy": copy = true
        case "replace": replace = true
        case "auth":
            guard more >= 1 else { throw ReplyError.syntax }
            auth = [ctx.args.bytes(j + 1)]
            j += 1
        case "auth2":
            guard more >= 2 else { throw ReplyError.syntax }
            auth = [ctx.args.bytes(j + 1), ctx.args.bytes(j + 2)]
            j += 2
        case "keys":
            guard ctx.args[3].isEmpty else {
                throw ReplyError("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
            }
            firstKey = j + 1
            keyCount = ctx.args.count - j - 1
            break options
        default:
            throw ReplyError.syntax
        }
        j += 1
    }
    var timeout = try ctx.integer(5)
    let db = try ctx.integer(4)
    if timeout <= 0 { timeout = 1000 }

    var entries: [StoredEntry] = []
    for k in firstKey..<(firstKey + keyCount) {
        if let entry = try ctx.keyspace.lookupStored(ctx.args.bytes(k), read: true) { entries.append(entry) }
    }
    guard !entries.isEmpty else {
        ctx.connection.replySimple("NOKEY")
        return
    }
    let milliseconds = Int(clamping: timeout)
    guard let port = parseStrictInt64(ctx.args[2]), let target = SyncSocket.connect(
        host: ctx.text(1), port: Int(truncatingIfNeeded: port), timeout: milliseconds) else {
        throw ReplyError("IOERR error or timeout connecting to the client")
    }

    var request: [UInt8] = []
    if !auth.isEmpty { RESPEncoder.bulkArray([Array("AUTH".utf8)] + auth, into: &request) }
    RESPEncoder.bulkArray([Array("SELECT".utf8), Array(String(db).utf8)], into: &request)
    var sent: [StoredEntry] = []
    let now = Server.nowMilliseconds()
    for entry in entries {
        var ttl: Int64 = 0
        if let expiresAt = entry.row.expiresAt {
            ttl = expiresAt - now
            if ttl < 0 { continue }  // expired since the lookup
            ttl = max(ttl, 1)
        }
        var restore = [Array("RESTORE".utf8), entry.key, Array(String(ttl).utf8), try RDB.dump(entry)]
        if replace { restore.append(Array("REPLACE".utf8)) }
        RESPEncoder.bulkArray(restore, into: &request)
        sent.append(entry)
    }
    guard target.write(request, timeout: milliseconds) else {
        throw ReplyError("IOERR error or timeout writing to target instance")
    }
    let authReply = auth.isEmpty ? nil : target.readLine(timeout: milliseconds)
    guard auth.isEmpty || authReply != nil, let selectReply = target.readLine(timeout: milliseconds) else {
        throw ReplyError("IOERR error or timeout reading to target instance")
    }
    // A refused AUTH or SELECT fails every key. The error quoted is AUTH's,
    // else SELECT's, else the key's own (Redis's migrateCommand).
    let isError = { (line: [UInt8]?) in line?.first == UInt8(ascii: "-") }
    let handshakeError = isError(authReply) ? authReply : isError(selectReply) ? selectReply : nil
    var targetError: [UInt8]?
    var moved: [[UInt8]] = []
    var socketError = false
    for entry in sent {
        guard let reply = target.readLine(timeout: milliseconds) else {
            socketError = true
            break
        }
        if let failed = handshakeError ?? (isError(reply) ? reply : nil) {
            if targetError == nil { targetError = Array(failed.dropFirst()) }
        } else if !copy {
            _ = try ctx.keyspace.delete(entry.key)
            moved.append(entry.key)
        }
    }
    // Propagated as the DEL of the keys the target took (nothing for COPY).
    ctx.server.propagateAs(commands: moved.isEmpty ? [] : [[Array("DEL".utf8)] + moved])
    if let targetError {
        throw ReplyError("ERR Target instance replied with error: " + String(keepingBytes: targetError))
    }
    if socketError { throw ReplyError("IOERR error or timeout reading to target instance") }
    ctx.connection.replyOK()
}
