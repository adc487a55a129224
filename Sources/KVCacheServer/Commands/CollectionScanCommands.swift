import RESP
import SQLiteKVCache

/// SSCAN, HSCAN and ZSCAN (Redis's scanGenericCommand over a collection),
/// and HRANDFIELD. A collection in Redis's small encoding (intset,
/// listpack) answers whole in one call with cursor 0, as Redis does. A
/// large one is walked by position from its end: its members sit in an
/// array where a removal moves the last member into the hole and an
/// addition appends, so walking toward the start returns every member
/// present for the whole scan at least once, whatever changes meanwhile.
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
    let size = value.count
    let whole: Bool
    switch value {
    case let set as SetValue: whole = !set.large
    case let hash as HashValue: whole = !hash.large
    case let zset as ZSetValue: whole = !zset.large
    default: whole = true
    }
    // Positions [low, high) this call returns.
    var high = size, low = 0
    if !whole {
        if cursor != 0 { high = cursor > UInt64(size) ? size : Int(cursor) }
        low = max(0, high - count)
    }
    var items: [[UInt8]] = []
    for position in stride(from: high - 1, through: low, by: -1) {
        switch value {
        case let set as SetValue:
            let member = set.member(at: whole ? size - 1 - position : position)
            if pattern.map({ globMatch($0, member) }) ?? true { items.append(member) }
        case let hash as HashValue:
            let at = whole ? size - 1 - position : position
            if pattern.map({ globMatch($0, hash.fields[at]) }) ?? true {
                items.append(hash.fields[at])
                items.append(hash.values[at])
            }
        case let zset as ZSetValue:
            let (member, score) = whole ? zset.element(at: size - 1 - position) : zset.slot(position)
            if pattern.map({ globMatch($0, member) }) ?? true {
                items.append(member)
                items.append(formatDouble(score))
            }
        default:
            break
        }
    }
    ctx.connection.replyArrayHeader(2)
    ctx.connection.replyBulk(String(whole ? 0 : low))
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
        ctx.connection.replyBulk(hash.fields[ctx.randomIndex(hash.count)])
        return
    }
    let requested = try randomCount(ctx, 2, pairs: ctx.args.count == 4)
    guard ctx.args.count == 3 || (ctx.args.count == 4 && ctx.option(3) == "withvalues") else { throw ReplyError.syntax }
    let withValues = ctx.args.count == 4
    guard let (hash, _) = try ctx.keyspace.loadHash(ctx.args.bytes(1), read: true), requested != 0 else {
        ctx.connection.replyArrayHeader(0)
        return
    }
    let positions = requested > 0 ? distinctRandomPositions(hash.count, requested, ctx)
        : (0..<Int(requested.magnitude)).map { _ in ctx.randomIndex(hash.count) }
    let c = ctx.connection
    let pairs = withValues && c.protocolVersion >= 3
    c.replyArrayHeader(withValues && !pairs ? positions.count * 2 : positions.count)
    for i in positions {
        if pairs { c.replyArrayHeader(2) }
        c.replyBulk(hash.fields[i])
        if withValues { c.replyBulk(hash.values[i]) }
    }
}
