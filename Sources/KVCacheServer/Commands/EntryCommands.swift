import Foundation
import RESP

/// This server's own commands for whole entries — (key, storage date,
/// metadata, value), the model of the Swift engine — so a remote program
/// can keep, say, HTTP headers beside a cached body. The `KVCACHE.` prefix
/// keeps them clear of Redis's command names.
let entryCommands: [Command] = [
    Command(name: "kvcache.put", arity: -5, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Stores a whole entry: KVCACHE.PUT key storage-date-ms metadata value [EX s|PX ms|EXAT t|PXAT t|KEEPTTL].",
            handler: put),
    Command(name: "kvcache.get", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Returns a whole entry: [key, storage-date-ms, metadata, value], or nil.",
            handler: get),
]

/// KVCACHE.PUT key storage-date metadata value [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]
/// storage-date is milliseconds since 1970, or `*` for now.
private func put(_ ctx: CommandContext) throws {
    let dateArgument = ctx.args[2]
    let storageDate: Date
    if dateArgument == [UInt8(ascii: "*")] {
        storageDate = Date()
    } else {
        // Years 1 to 9999: dates a Double of seconds holds to the millisecond.
        guard let ms = parseStrictInt64(dateArgument), ms >= -62_135_596_800_000, ms <= 253_402_300_799_999 else {
            throw ReplyError("ERR storage date must be milliseconds since 1970 or *")
        }
        storageDate = Date(timeIntervalSince1970: Double(ms) / 1000)
    }
    var expiry: (form: ExpiryForm, argument: Int)?
    var keepTTL = false
    var i = 5
    while i < ctx.args.count {
        let option = ctx.option(i)
        let forms: [String: ExpiryForm] = ["ex": .seconds, "px": .milliseconds, "exat": .unixSeconds, "pxat": .unixMilliseconds]
        if option == "keepttl" && expiry == nil {
            keepTTL = true
            i += 1
        } else if let form = forms[option], !keepTTL, expiry == nil, i + 1 < ctx.args.count {
            expiry = (form, i + 1)
            i += 2
        } else {
            throw ReplyError.syntax
        }
    }
    let key = ctx.args.bytes(1)
    var expiresAt = try expiry.map { try ctx.absoluteExpiry(ctx.args[$0.argument], $0.form, now: ctx.now) }
    if keepTTL { expiresAt = try ctx.keyspace.lookupStored(key, read: false)?.row.expiresAt }
    try ctx.keyspace.set(key, ctx.args.bytes(4), expiresAt: expiresAt, metadata: ctx.args.bytes(3), storageDate: storageDate)
    ctx.connection.replyOK()
}

private func get(_ ctx: CommandContext) throws {
    guard let entry = try ctx.keyspace.lookupRead(ctx.args.bytes(1), as: .string) else {
        ctx.connection.replyNullArray()
        return
    }
    let c = ctx.connection
    c.replyArrayHeader(4)
    c.replyBulk(entry.key)
    let ms = (entry.storageDate.timeIntervalSince1970 * 1000).rounded()
    c.replyInteger(ms.isFinite ? Int64(max(-9.0e18, min(9.0e18, ms))) : 0)
    c.replyBulk(entry.metadata)
    c.replyBulk(entry.value)
}
