import RESP
import SQLiteKVCache

/// The blocking pops and moves, as Redis 7.0's: when one of the keys holds
/// something they act at once, like their non-blocking form, and are
/// logged as it (BLPOP as LPOP, BLMOVE as LMOVE, BZMPOP as ZPOPMIN … COUNT);
/// otherwise the client blocks (see Server+Blocking) until a key is pushed
/// to, its timeout (seconds, a float; 0 waits forever) passes, or CLIENT
/// UNBLOCK. Inside MULTI/EXEC they never block: they answer as on a timeout.
let blockingCommands: [Command] = [
    Command(name: "blpop", arity: -3, flags: ["write", "noscript", "blocking"], firstKey: 1, lastKey: -2, step: 1,
            group: "list", summary: "Removes and returns the first element of the first non-empty list, or blocks.",
            handler: { try blockingPop($0, head: true) }),
    Command(name: "brpop", arity: -3, flags: ["write", "noscript", "blocking"], firstKey: 1, lastKey: -2, step: 1,
            group: "list", summary: "Removes and returns the last element of the first non-empty list, or blocks.",
            handler: { try blockingPop($0, head: false) }),
    Command(name: "blmove", arity: 6, flags: ["write", "denyoom", "noscript", "blocking"], firstKey: 1, lastKey: 2, step: 1,
            group: "list", summary: "Pops an element from a list, pushes it to another list and returns it, or blocks.",
            handler: { try blockingMove($0, fromHead: nil, toHead: nil) }),
    Command(name: "brpoplpush", arity: 4, flags: ["write", "denyoom", "noscript", "blocking"], firstKey: 1, lastKey: 2, step: 1,
            group: "list", summary: "Pops the last element of a list and pushes it onto another, or blocks.",
            handler: { try blockingMove($0, fromHead: false, toHead: true) }),
    Command(name: "blmpop", arity: -5, flags: ["write", "blocking", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "list", summary: "Pops elements from the first non-empty list among several, or blocks.",
            handler: blmpop),
    Command(name: "bzpopmin", arity: -3, flags: ["write", "noscript", "blocking", "fast"], firstKey: 1, lastKey: -2, step: 1,
            group: "sorted-set", summary: "Removes and returns the member with the lowest score, or blocks.",
            handler: { try blockingZPop($0, max: false) }),
    Command(name: "bzpopmax", arity: -3, flags: ["write", "noscript", "blocking", "fast"], firstKey: 1, lastKey: -2, step: 1,
            group: "sorted-set", summary: "Removes and returns the member with the highest score, or blocks.",
            handler: { try blockingZPop($0, max: true) }),
    Command(name: "bzmpop", arity: -5, flags: ["write", "blocking", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "sorted-set", summary: "Removes and returns members from the first non-empty sorted set, or blocks.",
            handler: bzmpop),
]

/// The keys between the command's name and its last argument (the timeout).
private func keysBeforeTimeout(_ ctx: CommandContext) -> [[UInt8]] {
    (1..<(ctx.args.count - 1)).map { ctx.args.bytes($0) }
}

/// BLPOP/BRPOP key [key ...] timeout: [key, element] from the first
/// non-empty list.
private func blockingPop(_ ctx: CommandContext, head: Bool) throws {
    let deadline = try ctx.blockingDeadline(ctx.args.count - 1)
    let keys = keysBeforeTimeout(ctx)
    for key in keys {
        guard let (list, old) = try ctx.keyspace.loadList(key) else { continue }
        let element = list.pop(1, fromHead: head)[0]
        ctx.server.persistence.logCommand(as: [Array((head ? "LPOP" : "RPOP").utf8), key])
        try ctx.keyspace.store(list, at: key, replacing: old)
        ctx.connection.replyBulkArray([key, element])
        return
    }
    ctx.block(on: keys, kind: .list, deadline: deadline)
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout, and
/// BRPOPLPUSH source destination timeout (RIGHT LEFT).
private func blockingMove(_ ctx: CommandContext, fromHead fixedFrom: Bool?, toHead fixedTo: Bool?) throws {
    let fromHead = try fixedFrom ?? listEnd(ctx, 3)
    let toHead = try fixedTo ?? listEnd(ctx, 4)
    let deadline = try ctx.blockingDeadline(ctx.args.count - 1)
    let (source, destination) = (ctx.args.bytes(1), ctx.args.bytes(2))
    guard try ctx.keyspace.loadList(source, read: false) != nil else {
        ctx.block(on: [source], kind: .list, deadline: deadline, nullArray: false)
        return
    }
    let element = try moveListElement(ctx, from: source, to: destination, fromHead: fromHead, toHead: toHead)
    if fixedFrom == nil {
        ctx.server.persistence.logCommand(as: [Array("LMOVE".utf8), source, destination,
                                               Array((fromHead ? "LEFT" : "RIGHT").utf8), Array((toHead ? "LEFT" : "RIGHT").utf8)])
    } else {
        ctx.server.persistence.logCommand(as: [Array("RPOPLPUSH".utf8), source, destination])
    }
    ctx.connection.replyOptionalBulk(element)
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
private func blmpop(_ ctx: CommandContext) throws {
    let parsed = try MultiPopArguments(ctx, numkeysAt: 2, ends: ("left", "right"))
    let deadline = try ctx.blockingDeadline(1)
    if try !popFromFirstList(ctx, parsed.keys, head: parsed.firstEnd, count: max(parsed.count, 1)) {
        ctx.block(on: parsed.keys, kind: .list, deadline: deadline)
    }
}

/// BZPOPMIN/BZPOPMAX key [key ...] timeout: [key, member, score].
private func blockingZPop(_ ctx: CommandContext, max: Bool) throws {
    let deadline = try ctx.blockingDeadline(ctx.args.count - 1)
    let keys = keysBeforeTimeout(ctx)
    if try !popFromFirstSortedSet(ctx, keys, max: max, count: -1, reply: .withKey) {
        ctx.block(on: keys, kind: .zset, deadline: deadline)
    }
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
private func bzmpop(_ ctx: CommandContext) throws {
    let parsed = try MultiPopArguments(ctx, numkeysAt: 2, ends: ("min", "max"))
    let deadline = try ctx.blockingDeadline(1)
    if try !popFromFirstSortedSet(ctx, parsed.keys, max: !parsed.firstEnd, count: Swift.max(parsed.count, 1), reply: .nested) {
        ctx.block(on: parsed.keys, kind: .zset, deadline: deadline)
    }
}
