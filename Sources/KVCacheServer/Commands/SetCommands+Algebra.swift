import RESP
import SQLiteKVCache

/// Set commands over several keys, as Redis 7.0's t_set.c: SINTER, SUNION,
/// SDIFF, their STORE forms, and SINTERCARD. A missing key is an empty
/// set. A stored result replaces the destination (its expiry dropped), or
/// deletes it when empty.
let setAlgebraCommands: [Command] = [
    Command(name: "sinter", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: -1, step: 1,
            group: "set", summary: "Returns the intersection of sets.", handler: { try sinter($0, store: false) }),
    Command(name: "sinterstore", arity: -3, flags: ["write", "denyoom"], firstKey: 1, lastKey: -1, step: 1,
            group: "set", summary: "Stores the intersection of sets in a key.", handler: { try sinter($0, store: true) }),
    Command(name: "sintercard", arity: -3, flags: ["readonly", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "set", summary: "Returns the number of members in the intersection of sets.", handler: sintercard),
    Command(name: "sunion", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: -1, step: 1,
            group: "set", summary: "Returns the union of sets.", handler: { try sunionDiff($0, .union, store: false) }),
    Command(name: "sunionstore", arity: -3, flags: ["write", "denyoom"], firstKey: 1, lastKey: -1, step: 1,
            group: "set", summary: "Stores the union of sets in a key.", handler: { try sunionDiff($0, .union, store: true) }),
    Command(name: "sdiff", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: -1, step: 1,
            group: "set", summary: "Returns the difference of the first set and the others.",
            handler: { try sunionDiff($0, .diff, store: false) }),
    Command(name: "sdiffstore", arity: -3, flags: ["write", "denyoom"], firstKey: 1, lastKey: -1, step: 1,
            group: "set", summary: "Stores the difference of sets in a key.", handler: { try sunionDiff($0, .diff, store: true) }),
]

/// The sets at `keys` (nil for a missing key), as a counted read.
/// - Throws: WRONGTYPE at the first key holding another kind.
private func readSets(_ ctx: CommandContext, _ keys: [[UInt8]]) throws -> [SetValue?] {
    try keys.map { try ctx.keyspace.loadSet($0, read: true)?.value }
}

/// The intersection of `sets` (none missing), smallest first; stops after
/// `limit` members when given.
private func intersection(_ sets: [SetValue], limit: Int = 0) -> [[UInt8]] {
    let ordered = sets.sorted { $0.count < $1.count }
    let first = ordered[0]
    var result: [[UInt8]] = []
    for member in first.allMembers where ordered.dropFirst().allSatisfy({ $0 === first || $0.contains(member) }) {
        result.append(member)
        if limit > 0 && result.count >= limit { break }
    }
    return result
}

/// A result set built as Redis builds one (an intset while it can be).
private func setOf(_ members: [[UInt8]], limits: EncodingLimits) -> SetValue {
    let set = SetValue()
    for member in members { set.add(member, limits: limits) }
    return set
}

/// SINTER key [key ...] and SINTERSTORE destination key [key ...]
private func sinter(_ ctx: CommandContext, store: Bool) throws {
    let first = store ? 2 : 1
    let found = try readSets(ctx, (first..<ctx.args.count).map { ctx.args.bytes($0) })
    let sets = found.compactMap { $0 }
    let members = sets.count < found.count ? [] : intersection(sets)
    if store {
        let result = setOf(members, limits: ctx.limits)
        try ctx.keyspace.storeNew(result, of: .set, at: ctx.args.bytes(1))
        ctx.connection.replyInteger(result.count)
    } else {
        replySet(ctx, members)
    }
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]
private func sintercard(_ ctx: CommandContext) throws {
    let numkeysError = ReplyError("ERR numkeys should be greater than 0")
    guard let numkeys = parseStrictInt64(ctx.args[1]), numkeys > 0 else { throw numkeysError }
    guard numkeys <= Int64(ctx.args.count - 2) else {
        throw ReplyError("ERR Number of keys can't be greater than number of args")
    }
    var limit = 0
    var j = 2 + Int(numkeys)
    while j < ctx.args.count {
        guard ctx.option(j) == "limit", j + 1 < ctx.args.count else { throw ReplyError.syntax }
        guard let value = parseStrictInt64(ctx.args[j + 1]), value >= 0 else {
            throw ReplyError("ERR LIMIT can't be negative")
        }
        limit = Int(value)
        j += 2
    }
    let found = try readSets(ctx, (0..<Int(numkeys)).map { ctx.args.bytes(2 + $0) })
    let sets = found.compactMap { $0 }
    ctx.connection.replyInteger(sets.count < found.count ? 0 : intersection(sets, limit: limit).count)
}

/// SUNION/SDIFF key [key ...] and their STORE forms.
private func sunionDiff(_ ctx: CommandContext, _ op: SetOperation, store: Bool) throws {
    let first = store ? 2 : 1
    let sets = try readSets(ctx, (first..<ctx.args.count).map { ctx.args.bytes($0) })
    let result = SetValue()
    switch op {
    case .union:
        for set in sets.compactMap({ $0 }) {
            set.forEach { result.add($0, limits: ctx.limits) }
        }
    case .diff:
        guard let base = sets[0] else { break }
        let others = sets.dropFirst().compactMap { $0 }
        if others.contains(where: { $0 === base }) { break }
        base.forEach { member in
            if !others.contains(where: { $0.contains(member) }) { result.add(member, limits: ctx.limits) }
        }
    case .inter:
        break
    }
    if store {
        try ctx.keyspace.storeNew(result, of: .set, at: ctx.args.bytes(1))
        ctx.connection.replyInteger(result.count)
    } else {
        replySet(ctx, result.allMembers)
    }
}
