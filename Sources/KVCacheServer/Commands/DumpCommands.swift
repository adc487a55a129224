import Foundation
import RESP
import SQLiteKVCache

/// DUMP and RESTORE in Redis's payload format (see RDB.swift), so a value
/// moves between this server and Redis 7.0 either way.
let dumpCommands: [Command] = [
    Command(name: "dump", arity: 2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Returns a serialized representation of the value stored at a key.", handler: dump),
    Command(name: "restore", arity: -4, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Creates a key from the serialized representation of a value.", handler: restore),
]

private func dump(_ ctx: CommandContext) throws {
    guard let entry = try ctx.keyspace.lookupStored(ctx.args.bytes(1), read: true) else {
        ctx.connection.replyNull()
        return
    }
    ctx.connection.replyBulk(try RDB.dump(entry))
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency],
/// checked in Redis's order: options, BUSYKEY, TTL, footer, payload.
/// IDLETIME sets the key's idle time (OBJECT IDLETIME), FREQ its LFU counter
/// under an LFU maxmemory-policy (OBJECT FREQ).
private func restore(_ ctx: CommandContext) throws {
    var replace = false, absoluteTTL = false
    var idle: Int64?, frequency: Int64?
    var j = 4
    while j < ctx.args.count {
        let more = j + 1 < ctx.args.count
        switch ctx.option(j) {
        case "replace": replace = true
        case "absttl": absoluteTTL = true
        case "idletime" where more && frequency == nil:
            let value = try ctx.integer(j + 1)
            guard value >= 0 else { throw ReplyError("ERR Invalid IDLETIME value, must be >= 0") }
            idle = value
            j += 1
        case "freq" where more && idle == nil:
            let value = try ctx.integer(j + 1)
            guard value >= 0 && value <= 255 else { throw ReplyError("ERR Invalid FREQ value, must be >= 0 and <= 255") }
            frequency = value
            j += 1
        default:
            throw ReplyError.syntax
        }
        j += 1
    }
    let key = ctx.args.bytes(1)
    if !replace, try ctx.keyspace.exists(key) {
        throw ReplyError("BUSYKEY Target key name already exists.")
    }
    var ttl = try ctx.integer(2)
    guard ttl >= 0 else { throw ReplyError("ERR Invalid TTL value, must be >= 0") }
    let payload = ctx.args.bytes(3)
    guard RDB.verify(payload, checksum: !ctx.server.skipChecksumValidation) else { throw ReplyError("ERR DUMP payload version or checksum are wrong") }
    let kind: ValueKind, value: [UInt8]
    do {
        (kind, value) = try RDB.load(payload, limits: ctx.limits)
    } catch {
        // Redis's rdbReportCorruptRDB line (RESTORE goes on serving).
        if !error.emptyKey {
            ctx.server.logger.warning("Internal error in RDB reading offset 0, function at rdb.c:0 -> \(error.reason)")
        }
        throw ReplyError("ERR Bad data format")
    }
    let now = ctx.now
    if ttl > 0 && !absoluteTTL { ttl = ttl.addingReportingOverflow(now).overflow ? .max : ttl + now }
    if ttl > 0 && ttl <= now {
        // Already expired: the key is gone (REPLACE deleted it), as in Redis.
        if replace, try ctx.keyspace.delete(key) {
            let lazy = ctx.server.config.lazyFree["lazyfree-lazy-server-del"] ?? false
            ctx.server.propagateAs([Array((lazy ? "UNLINK" : "DEL").utf8), key])
        }
        ctx.connection.replyOK()
        return
    }
    try ctx.keyspace.store(SQLiteKVCache.Entry(key: key, storageDate: Date(), metadata: [], value: value,
                                               expiresAt: ttl > 0 ? ttl : nil, kind: kind))
    if ttl > 0 && !absoluteTTL && ctx.server.replicationFeeding {
        // Propagated with its TTL as an absolute time.
        var args = ctx.args.copies
        args[2] = Array(String(ttl).utf8)
        ctx.server.propagateAs(args + [Array("ABSTTL".utf8)])
    }
    // As Redis's objectSetLRUOrLFU: FREQ under an LFU policy, IDLETIME under any other.
    let lfu = ctx.server.config.maxMemoryPolicy.isLFU
    if (lfu && frequency != nil) || (!lfu && idle != nil) {
        try ctx.keyspace.setAccess(key, idleSeconds: lfu ? nil : idle, frequency: lfu ? frequency.map { UInt8($0) } : nil)
    }
    ctx.connection.replyOK()
}
