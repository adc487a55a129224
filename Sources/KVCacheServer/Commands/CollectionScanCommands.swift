import RESP
import SQLiteKVCache

/// SSCAN, HSCAN and ZSCAN (Redis's scanGenericCommand over a collection),
/// and HRANDFIELD. A collection in Redis's small encoding (intset,
/// listpack) answers whole in one call with cursor 0, as Redis does. A
/// large one is walked by slot from its end (`MemberSlots.scan`): every
/// member present for the whole scan is returned, once unless the slots'
/// holes were closed up meanwhile, whatever else changes.
let collectionScanCommands: [Command] = [
    Command(name: "sscan", arity: -3, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "set", summary: "Iterates over the members of a set.", handler: { try collectionScan($0, .set) }),
    Command(name: "hscan", arity: -3, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Iterates over the fields and values of a hash.", handler: { try collectionScan($0, .hash) }),
    Command(name: "zscan", arity: -3, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Iterates over the members and scores of a sorted set.",
            handler: { try collectionScan($0, .zset) }),
    Command(name: "hrandfield", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Returns one or more random fields of a hash.", handler: hrandfield),
]

/// SSCAN/HSCAN/ZSCAN key cursor [MATCH pattern] [COUNT count]
private func collectionScan(_ ctx: CommandContext, _ kind: ValueKind) throws {
    guard let cursor = parseScanCursor(ctx.args[2]) else { throw ReplyError("ERR invalid cursor") }
    guard let value = try ctx.keyspace.readCollection(ctx.args.bytes(1), of: kind) else {
        ctx.connection.replyArrayHeader(2)
        ctx.connection.replyBulk("0")
        ctx.connection.replyArrayHeader(0)
        return
    }
    var count = 10
    var pattern: [UInt8]?
    var i = 3
    while i < ctx.args.count {
        guard i + 1 < ctx.args.count else { throw ReplyError.syntax }
        switch ctx.option(i) {
        case "count":
            let n = try ctx.integer(i + 1)
            guard n >= 1 else { throw ReplyError.syntax }
            count = Int(min(n, 1 << 30))
        case "match":
            pattern = ctx.args[i + 1].count == 1 && ctx.args[i + 1].first == UInt8(ascii: "*") ? nil : ctx.args.bytes(i + 1)
        default:
            throw ReplyError.syntax
        }
        i += 2
    }
    var items: [[UInt8]] = []
    func matches(_ member: [UInt8]) -> Bool { pattern.map { globMatch($0, member) } ?? true }
    let limit = Int(min(cursor, UInt64(Int.max)))
    var next = 0
    switch value {
    case let set as SetValue:
        if set.large {
            next = set.scan(below: limit, count: count) { if matches($0) { items.append($0) } }
        } else {
            set.forEach { if matches($0) { items.append($0) } }
        }
    case let hash as HashValue:
        let add = { (pair: HashValue.Pair) in
            if matches(pair.field) { items += [pair.field, pair.value] }
        }
        if hash.large { next = hash.scan(below: limit, count: count, add) } else { hash.forEach(add) }
    case let zset as ZSetValue:
        let add = { (member: [UInt8], score: Double) in
            if matches(member) { items += [member, formatDouble(score)] }
        }
        if zset.large {
            next = zset.scan(below: limit, count: count, add)
        } else {
            zset.forEach(fromRank: 0) { member, score in
                add(member, score)
                return true
            }
        }
    default:
        break
    }
    ctx.connection.replyArrayHeader(2)
    ctx.connection.replyBulk(String(next))
    ctx.connection.replyBulkArray(items)
}

/// HRANDFIELD key [count [WITHVALUES]]: a positive count gives distinct
/// fields, a negative one may repeat them; O(1) per field.
private func hrandfield(_ ctx: CommandContext) throws {
    guard ctx.args.count >= 3 else {
        guard let (hash, _) = try ctx.keyspace.loadHash(ctx.args.bytes(1), read: true) else {
            ctx.connection.replyNull()
            return
        }
        ctx.connection.replyBulk(hash.randomPair(ctx.randomIndex).field)
        return
    }
    let requested = try randomCount(ctx, 2, pairs: ctx.args.count == 4)
    guard ctx.args.count == 3 || (ctx.args.count == 4 && ctx.option(3) == "withvalues") else { throw ReplyError.syntax }
    let withValues = ctx.args.count == 4
    guard let (hash, _) = try ctx.keyspace.loadHash(ctx.args.bytes(1), read: true), requested != 0 else {
        ctx.connection.replyArrayHeader(0)
        return
    }
    let picked = requested > 0 ? hash.distinctRandomPairs(requested, ctx.randomIndex)
        : (0..<Int(requested.magnitude)).map { _ in hash.randomPair(ctx.randomIndex) }
    let c = ctx.connection
    let pairs = withValues && c.protocolVersion >= 3
    c.replyArrayHeader(withValues && !pairs ? picked.count * 2 : picked.count)
    for pair in picked {
        if pairs { c.replyArrayHeader(2) }
        c.replyBulk(pair.field)
        if withValues { c.replyBulk(pair.value) }
    }
}
