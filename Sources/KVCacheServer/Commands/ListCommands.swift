import RESP
import SQLiteKVCache

/// List commands, as Redis 7.0's t_list.c: pushes, pops, ranges, and the
/// edits by index or value. A list that becomes empty is deleted.
let listCommands: [Command] = [
    Command(name: "lpush", arity: -3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Prepends one or more elements to a list.", handler: { try push($0, head: true, onlyIfExists: false) }),
    Command(name: "rpush", arity: -3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Appends one or more elements to a list.", handler: { try push($0, head: false, onlyIfExists: false) }),
    Command(name: "lpushx", arity: -3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Prepends elements to a list only when the list exists.", handler: { try push($0, head: true, onlyIfExists: true) }),
    Command(name: "rpushx", arity: -3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Appends elements to a list only when the list exists.", handler: { try push($0, head: false, onlyIfExists: true) }),
    Command(name: "lpop", arity: -2, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Removes and returns the first elements of a list.", handler: { try pop($0, head: true) }),
    Command(name: "rpop", arity: -2, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Removes and returns the last elements of a list.", handler: { try pop($0, head: false) }),
    Command(name: "lrange", arity: 4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Returns a range of elements from a list.", handler: lrange),
    Command(name: "llen", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Returns the length of a list.", handler: llen),
    Command(name: "lindex", arity: 3, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Returns an element from a list by its index.", handler: lindex),
    Command(name: "lset", arity: 4, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Sets the value of an element in a list by its index.", handler: lset),
    Command(name: "lrem", arity: 4, flags: ["write"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Removes elements from a list.", handler: lrem),
    Command(name: "ltrim", arity: 4, flags: ["write"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Removes elements from both ends of a list.", handler: ltrim),
    Command(name: "linsert", arity: 5, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Inserts an element before or after another element in a list.", handler: linsert),
    Command(name: "lpos", arity: -3, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "list", summary: "Returns the index of matching elements in a list.", handler: lpos),
    Command(name: "lmove", arity: 5, flags: ["write", "denyoom"], firstKey: 1, lastKey: 2, step: 1,
            group: "list", summary: "Pops an element from a list, pushes it to another list and returns it.", handler: lmove),
    Command(name: "rpoplpush", arity: 3, flags: ["write", "denyoom"], firstKey: 1, lastKey: 2, step: 1,
            group: "list", summary: "Pops the last element of a list, pushes it onto another and returns it.", handler: rpoplpush),
    Command(name: "lmpop", arity: -4, flags: ["write", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "list", summary: "Pops elements from the first non-empty list among several.", handler: lmpop),
]

/// LEFT or RIGHT (any case): whether it is the head.
func listEnd(_ ctx: CommandContext, _ index: Int) throws -> Bool {
    switch ctx.option(index) {
    case "left": return true
    case "right": return false
    default: throw ReplyError.syntax
    }
}

/// Pops an element from `source`'s head (or tail) and pushes it onto
/// `destination`'s head (or tail), as Redis's lmoveGenericCommand: the
/// destination's type is checked before anything changes; a list moved
/// onto itself rotates.
/// - Returns: the element, or nil when the source is absent.
func moveListElement(_ ctx: CommandContext, from source: [UInt8], to destination: [UInt8],
                     fromHead: Bool, toHead: Bool) throws -> [UInt8]? {
    guard let (list, old) = try ctx.keyspace.loadList(source) else { return nil }
    let target: ListValue, targetEntry: StoredEntry?
    if source == destination {
        (target, targetEntry) = (list, old)
    } else {
        let loaded = try ctx.keyspace.loadList(destination)
        (target, targetEntry) = (loaded?.value ?? ListValue(), loaded?.entry)
    }
    let element = list.pop(1, fromHead: fromHead)[0]
    if toHead { target.prepend(element) } else { target.append(element) }
    try ctx.keyspace.store(target, at: destination, replacing: targetEntry)
    if source != destination { try ctx.keyspace.store(list, at: source, replacing: old) }
    return element
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
private func lmove(_ ctx: CommandContext) throws {
    let fromHead = try listEnd(ctx, 3), toHead = try listEnd(ctx, 4)
    ctx.connection.replyOptionalBulk(try moveListElement(ctx, from: ctx.args.bytes(1), to: ctx.args.bytes(2),
                                                         fromHead: fromHead, toHead: toHead))
}

/// RPOPLPUSH source destination: LMOVE source destination RIGHT LEFT.
private func rpoplpush(_ ctx: CommandContext) throws {
    ctx.connection.replyOptionalBulk(try moveListElement(ctx, from: ctx.args.bytes(1), to: ctx.args.bytes(2),
                                                         fromHead: false, toHead: true))
}

/// The parsed form of LMPOP and ZMPOP (and their blocking forms):
/// numkeys key [key ...] <where> [COUNT count], from argument `first`.
struct MultiPopArguments {
    var keys: [[UInt8]]
    /// Whether the end named is the first of the two (LEFT of LEFT/RIGHT, MIN of MIN/MAX).
    var firstEnd: Bool
    var count: Int

    init(_ ctx: CommandContext, numkeysAt first: Int, ends: (String, String)) throws {
        let numkeysError = ReplyError("ERR numkeys should be greater than 0")
        guard let numkeys = parseStrictInt64(ctx.args[first]) else { throw numkeysError }
        guard numkeys > 0 else { throw numkeysError }
        guard numkeys < Int64(ctx.args.count - first - 1) else { throw ReplyError.syntax }
        keys = (0..<Int(numkeys)).map { ctx.args.bytes(first + 1 + $0) }
        let whereIndex = first + 1 + Int(numkeys)
        switch ctx.option(whereIndex) {
        case ends.0: firstEnd = true
        case ends.1: firstEnd = false
        default: throw ReplyError.syntax
        }
        count = -1
        var j = whereIndex + 1
        while j < ctx.args.count {
            guard count == -1, ctx.option(j) == "count", j + 1 < ctx.args.count else { throw ReplyError.syntax }
            guard let n = parseStrictInt64(ctx.args[j + 1]), n > 0 else {
                throw ReplyError("ERR count should be greater than 0")
            }
            count = Int(n)
            j += 2
        }
    }
}

/// Pops up to `count` elements from the first non-empty list of `keys`,
/// replying [key, [elements]] (Redis's listPopRangeAndReplyWithKey) and
/// logging the pop as LPOP/RPOP key count.
/// - Returns: whether a list was found (nothing is replied otherwise).
func popFromFirstList(_ ctx: CommandContext, _ keys: [[UInt8]], head: Bool, count: Int) throws -> Bool {
    for key in keys {
        guard let (list, old) = try ctx.keyspace.loadList(key) else { continue }
        let taken = list.pop(count, fromHead: head)
        ctx.server.persistence.logCommand(as: [Array((head ? "LPOP" : "RPOP").utf8), key, Array(String(taken.count).utf8)])
        try ctx.keyspace.store(list, at: key, replacing: old)
        ctx.connection.replyArrayHeader(2)
        ctx.connection.replyBulk(key)
        ctx.connection.replyBulkArray(taken)
        return true
    }
    return false
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
private func lmpop(_ ctx: CommandContext) throws {
    let parsed = try MultiPopArguments(ctx, numkeysAt: 1, ends: ("left", "right"))
    if try !popFromFirstList(ctx, parsed.keys, head: parsed.firstEnd, count: max(parsed.count, 1)) {
        ctx.connection.replyNullArray()
    }
}

/// The argument at `index` as a C `long` (64-bit here), or Redis's not-an-integer error.
private func long(_ ctx: CommandContext, _ index: Int) throws -> Int {
    Int(try ctx.integer(index))
}

/// LRANGE's (and LTRIM's) normalization of an inclusive range over `count`
/// elements: negative from the end, clamped. Nil when empty.
func normalizedRange(_ start: Int, _ end: Int, count: Int) -> ClosedRange<Int>? {
    var start = start, end = end
    if start < 0 { start += count }
    if end < 0 { end += count }
    if start < 0 { start = 0 }
    if start > end || start >= count { return nil }
    if end >= count { end = count - 1 }
    return start...end
}

/// LPUSH/RPUSH/LPUSHX/RPUSHX key element [element ...]: O(1) per element
/// on the live list, whatever its length.
private func push(_ ctx: CommandContext, head: Bool, onlyIfExists: Bool) throws {
    let key = ctx.args.bytes(1)
    let loaded = try ctx.keyspace.loadList(key)
    if loaded == nil && onlyIfExists {
        ctx.connection.replyInteger(0)
        return
    }
    let list = loaded?.value ?? ListValue()
    for element in ctx.args[2...] {
        if head { list.prepend(element.bytes) } else { list.append(element.bytes) }
    }
    try ctx.keyspace.store(list, at: key, replacing: loaded?.entry)
    ctx.connection.replyInteger(list.count)
}

/// LPOP/RPOP key [count]
private func pop(_ ctx: CommandContext, head: Bool) throws {
    guard ctx.args.count <= 3 else { throw ReplyError.wrongArity(ctx.commandName) }
    var count: Int?
    if ctx.args.count == 3 {
        // Redis gives the same text for a non-integer as for a negative count.
        guard let value = parseStrictInt64(ctx.args[2]), value >= 0 else {
            throw ReplyError("ERR value is out of range, must be positive")
        }
        count = Int(value)
    }
    let key = ctx.args.bytes(1)
    guard let (list, old) = try ctx.keyspace.loadList(key) else {
        if count != nil { ctx.connection.replyNullArray() } else { ctx.connection.replyNull() }
        return
    }
    if count == 0 {
        ctx.connection.replyArrayHeader(0)
        return
    }
    let taken = list.pop(count ?? 1, fromHead: head)
    try ctx.keyspace.store(list, at: key, replacing: old)
    if count == nil { ctx.connection.replyBulk(taken[0]) } else { ctx.connection.replyBulkArray(taken) }
}

private func lrange(_ ctx: CommandContext) throws {
    let start = try long(ctx, 2), end = try long(ctx, 3)
    guard let (list, _) = try ctx.keyspace.loadList(ctx.args.bytes(1), read: true),
          let range = normalizedRange(start, end, count: list.count) else {
        ctx.connection.replyArrayHeader(0)
        return
    }
    ctx.connection.replyArrayHeader(range.count)
    for i in range { ctx.connection.replyBulk(list[i]) }
}

private func llen(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.loadList(ctx.args.bytes(1), read: true)?.value.count ?? 0)
}

/// An index into `count` elements, negative from the end; nil when out of range.
private func position(_ index: Int, count: Int) -> Int? {
    let i = index < 0 ? index + count : index
    return i >= 0 && i < count ? i : nil
}

private func lindex(_ ctx: CommandContext) throws {
    guard let (list, _) = try ctx.keyspace.loadList(ctx.args.bytes(1), read: true) else {
        ctx.connection.replyNull()
        return
    }
    let index = try long(ctx, 2)
    guard let at = position(index, count: list.count) else {
        ctx.connection.replyNull()
        return
    }
    ctx.connection.replyBulk(list[at])
}

private func lset(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    let index = try long(ctx, 2)
    guard let (list, old) = try ctx.keyspace.loadList(key) else { throw ReplyError.noSuchKey }
    guard let at = position(index, count: list.count) else { throw ReplyError("ERR index out of range") }
    list.set(ctx.args.bytes(3), at: at)
    try ctx.keyspace.store(list, at: key, replacing: old)
    ctx.connection.replyOK()
}

/// LREM key count element: count > 0 from the head, < 0 from the tail, 0 all.
private func lrem(_ ctx: CommandContext) throws {
    let toRemove = try ctx.integer(2)
    let key = ctx.args.bytes(1)
    guard let (list, old) = try ctx.keyspace.loadList(key) else {
        ctx.connection.replyInteger(0)
        return
    }
    let element = ctx.args[3]
    let limit = toRemove == 0 ? Int.max : Int(toRemove.magnitude)
    // The positions to remove: the first `limit` matches from the chosen end.
    var doomed = Set<Int>()
    let order = toRemove < 0 ? Array((0..<list.count).reversed()) : Array(0..<list.count)
    for i in order where doomed.count < limit && list[i] == element { doomed.insert(i) }
    if !doomed.isEmpty {
        list.removeAll { i, _ in doomed.contains(i) }
        try ctx.keyspace.store(list, at: key, replacing: old)
    }
    ctx.connection.replyInteger(doomed.count)
}

private func ltrim(_ ctx: CommandContext) throws {
    let start = try long(ctx, 2), end = try long(ctx, 3)
    let key = ctx.args.bytes(1)
    guard let (list, old) = try ctx.keyspace.loadList(key) else {
        ctx.connection.replyOK()
        return
    }
    // Stored even when nothing was trimmed: Redis counts LTRIM as a change (WATCH sees it).
    list.trim(to: normalizedRange(start, end, count: list.count))
    try ctx.keyspace.store(list, at: key, replacing: old)
    ctx.connection.replyOK()
}

/// LINSERT key BEFORE|AFTER pivot element
private func linsert(_ ctx: CommandContext) throws {
    let after: Bool
    switch ctx.option(2) {
    case "after": after = true
    case "before": after = false
    default: throw ReplyError.syntax
    }
    let key = ctx.args.bytes(1)
    guard let (list, old) = try ctx.keyspace.loadList(key) else {
        ctx.connection.replyInteger(0)
        return
    }
    let pivot = ctx.args[3]
    guard let at = list.items.firstIndex(where: { $0 == pivot }) else {
        ctx.connection.replyInteger(-1)
        return
    }
    list.insert(ctx.args.bytes(4), at: after ? at + 1 : at)
    try ctx.keyspace.store(list, at: key, replacing: old)
    ctx.connection.replyInteger(list.count)
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
private func lpos(_ ctx: CommandContext) throws {
    var rank = 1, count = -1, maxLength = 0
    var j = 3
    while j < ctx.args.count {
        let more = j + 1 < ctx.args.count
        switch ctx.option(j) {
        case "rank" where more:
            j += 1
            rank = try long(ctx, j)
            if rank == 0 {
                throw ReplyError("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
                    + "or use negative to start from the end of the list")
            }
        case "count" where more:
            j += 1
            count = try long(ctx, j)
            if count < 0 { throw ReplyError("ERR COUNT can't be negative") }
        case "maxlen" where more:
            j += 1
            maxLength = try long(ctx, j)
            if maxLength < 0 { throw ReplyError("ERR MAXLEN can't be negative") }
        default:
            throw ReplyError.syntax
        }
        j += 1
    }
    guard let (list, _) = try ctx.keyspace.loadList(ctx.args.bytes(1), read: true) else {
        if count != -1 { ctx.connection.replyArrayHeader(0) } else { ctx.connection.replyNull() }
        return
    }
    let element = ctx.args[2]
    let items = list.items
    let fromTail = rank < 0
    let wantedRank = rank == .min ? Int.max : abs(rank)
    var matches: [Int] = []
    var seen = 0
    var scanned = 0
    var i = fromTail ? items.count - 1 : 0
    while i >= 0 && i < items.count && (maxLength == 0 || scanned < maxLength) {
        if items[i] == element {
            seen += 1
            if seen >= wantedRank {
                matches.append(i)
                if count == -1 || (count > 0 && matches.count >= count) { break }
            }
        }
        scanned += 1
        i += fromTail ? -1 : 1
    }
    if count != -1 {
        ctx.connection.replyArrayHeader(matches.count)
        for m in matches { ctx.connection.replyInteger(m) }
    } else if let first = matches.first {
        ctx.connection.replyInteger(first)
    } else {
        ctx.connection.replyNull()
    }
}
