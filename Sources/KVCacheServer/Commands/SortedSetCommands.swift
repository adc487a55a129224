#if canImport(Glibc)
import Glibc
#endif
import RESP
import SQLiteKVCache

/// Sorted-set commands, as Redis 7.0's t_zset.c. A sorted set that becomes
/// empty is deleted.
let sortedSetCommands: [Command] = [
    Command(name: "zadd", arity: -4, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Adds members to a sorted set, or updates their scores.", handler: { try zadd($0, incr: false) }),
    Command(name: "zincrby", arity: 4, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Increments the score of a member in a sorted set.", handler: { try zadd($0, incr: true) }),
    Command(name: "zscore", arity: 3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns the score of a member in a sorted set.", handler: zscore),
    Command(name: "zmscore", arity: -3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns the scores of several members in a sorted set.", handler: zmscore),
    Command(name: "zcard", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns the number of members in a sorted set.", handler: zcard),
    Command(name: "zrem", arity: -3, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Removes one or more members from a sorted set.", handler: zrem),
    Command(name: "zrank", arity: 3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns the rank of a member, scores ascending.", handler: { try zrank($0, reverse: false) }),
    Command(name: "zrevrank", arity: 3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns the rank of a member, scores descending.", handler: { try zrank($0, reverse: true) }),
    Command(name: "zcount", arity: 4, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Counts the members with scores within a range.", handler: zcount),
    Command(name: "zrange", arity: -4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns members in a range of ranks, scores or names.",
            handler: { try zrange($0, type: nil, reverse: nil) }),
    Command(name: "zrevrange", arity: -4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns members in a range of ranks, scores descending.",
            handler: { try zrange($0, type: .rank, reverse: true) }),
    Command(name: "zrangebyscore", arity: -4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns members within a range of scores.",
            handler: { try zrange($0, type: .score, reverse: false) }),
    Command(name: "zrevrangebyscore", arity: -4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns members within a range of scores, descending.",
            handler: { try zrange($0, type: .score, reverse: true) }),
    Command(name: "zrangebylex", arity: -4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns members within a lexicographical range.",
            handler: { try zrange($0, type: .lex, reverse: false) }),
    Command(name: "zrevrangebylex", arity: -4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns members within a lexicographical range, descending.",
            handler: { try zrange($0, type: .lex, reverse: true) }),
    Command(name: "zpopmin", arity: -2, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Removes and returns the members with the lowest scores.",
            handler: { try zpopMinMax($0, max: false) }),
    Command(name: "zpopmax", arity: -2, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Removes and returns the members with the highest scores.",
            handler: { try zpopMinMax($0, max: true) }),
    Command(name: "zmpop", arity: -4, flags: ["write", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "sorted-set", summary: "Removes and returns members from the first non-empty sorted set among several.",
            handler: zmpop),
    Command(name: "zrangestore", arity: -5, flags: ["write", "denyoom"], firstKey: 1, lastKey: 2, step: 1,
            group: "sorted-set", summary: "Stores a range of members from a sorted set in a key.",
            handler: { try zrange($0, type: nil, reverse: nil, store: true) }),
]

// MARK: Numbers

/// Parses a score as Redis's `getDoubleFromObject` does (`strtod` over the
/// whole argument, no leading space, no NaN, no overflow or underflow to 0).
func parseScore(_ bytes: some Collection<UInt8>) -> Double? {
    guard !bytes.isEmpty, !bytes.contains(0) else { return nil }
    if let first = bytes.first, first == 0x20 || (first >= 0x09 && first <= 0x0d) { return nil }
    return (Array(bytes) + [0]).withUnsafeBufferPointer { buffer -> Double? in
        let start = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
        var end: UnsafeMutablePointer<CChar>?
        errno = 0
        let value = strtod(start, &end)
        guard let end, end.pointee == 0 else { return nil }
        if errno == ERANGE && (value.isInfinite || value == 0) { return nil }
        return value.isNaN ? nil : value
    }
}

/// Parses a range bound as Redis's `zslParseRange`: `(` for exclusive, then
/// `strtod` to the end (spaces first are allowed, "" is 0), no NaN.
func parseScoreBound(_ bytes: some Collection<UInt8>) -> (value: Double, exclusive: Bool)? {
    var text = bytes[...]
    var exclusive = false
    if text.first == UInt8(ascii: "(") {
        exclusive = true
        text = text.dropFirst()
    }
    let value: Double? = (Array(text.prefix { $0 != 0 }) + [0]).withUnsafeBufferPointer { buffer in
        let start = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
        var end: UnsafeMutablePointer<CChar>?
        let value = strtod(start, &end)
        guard let end, end.pointee == 0, !value.isNaN else { return nil }
        return value
    }
    return value.map { ($0, exclusive) }
}

/// Formats a double as Redis 7.0 replies with one: `%.17g`, and `inf`/`-inf`.
func formatDouble(_ value: Double) -> [UInt8] {
    if value.isInfinite { return Array((value > 0 ? "inf" : "-inf").utf8) }
    var buffer = [CChar](repeating: 0, count: 64)
    let written = withVaList([value]) { args in
        buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, "%.17g", args) }
    }
    return buffer.prefix(Int(max(0, min(written, 63)))).map { UInt8(bitPattern: $0) }
}

extension Connection {
    /// A double as Redis sends one: RESP3's `,` type, or a bulk string in RESP2.
    func replyDouble(_ value: Double) {
        let text = formatDouble(value)
        if protocolVersion >= 3 {
            output.append(UInt8(ascii: ","))
            output.append(contentsOf: text)
            output.append(contentsOf: [0x0d, 0x0a])
        } else {
            replyBulk(text)
        }
    }
}

// MARK: Commands

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...];
/// ZINCRBY key increment member is ZADD with INCR. O(log n) per member.
private func zadd(_ ctx: CommandContext, incr incrCommand: Bool) throws {
    var nx = false, xx = false, gt = false, lt = false, ch = false, incr = incrCommand
    var scoreIndex = 2
    scanOptions: while scoreIndex < ctx.args.count {
        switch ctx.option(scoreIndex) {
        case "nx": nx = true
        case "xx": xx = true
        case "ch": ch = true
        case "incr": incr = true
        case "gt": gt = true
        case "lt": lt = true
        default: break scanOptions
        }
        scoreIndex += 1
    }
    let remaining = ctx.args.count - scoreIndex
    guard remaining > 0, remaining % 2 == 0 else { throw ReplyError.syntax }
    let elements = remaining / 2
    if nx && xx { throw ReplyError("ERR XX and NX options at the same time are not compatible") }
    if (gt && nx) || (lt && nx) || (gt && lt) {
        throw ReplyError("ERR GT, LT, and/or NX options at the same time are not compatible")
    }
    if incr && elements > 1 { throw ReplyError("ERR INCR option supports a single increment-element pair") }
    var scores: [Double] = []
    scores.reserveCapacity(elements)
    for j in 0..<elements {
        guard let score = parseScore(ctx.args[scoreIndex + 2 * j]) else { throw ReplyError.notFloat }
        scores.append(score)
    }
    let key = ctx.args.bytes(1)
    let loaded = try ctx.keyspace.loadZSet(key)
    if loaded == nil && xx {
        if incr { ctx.connection.replyNull() } else { ctx.connection.replyInteger(0) }
        return
    }
    let zset = loaded?.value ?? ZSetValue()
    if loaded == nil {
        // As Redis's zsetTypeCreate: a skiplist at once when the arguments would make one.
        let longest = (0..<elements).map { ctx.args[scoreIndex + 2 * $0 + 1].count }.max() ?? 0
        if elements > ctx.limits.zsetMaxListpackEntries || longest > ctx.limits.zsetMaxListpackValue { zset.large = true }
    }
    var added = 0, updated = 0, processed = 0
    var lastScore = 0.0
    for j in 0..<elements {
        let member = ctx.args.bytes(scoreIndex + 2 * j + 1)
        var score = scores[j]
        let current = zset.score(member)
        // A score of -0 stays in the small encoding as 0, as Redis's listpack
        // keeps a whole-number score as that integer (zzlInsertAt's double2ll):
        // ZSCORE answers "0". A member that makes the set large goes in as -0,
        // as Redis converts first. The reply of INCR is the score computed.
        let staysSmall = !zset.large && (current != nil || (zset.count < ctx.limits.zsetMaxListpackEntries
            && member.count <= ctx.limits.zsetMaxListpackValue))
        func stored(_ score: Double) -> Double { staysSmall && score == 0 ? 0 : score }
        if let current {
            if nx { continue }
            if incr {
                score += current
                if score.isNaN {
                    // Nothing was changed before: INCR takes one member.
                    throw ReplyError("ERR resulting score is not a number (NaN)")
                }
            }
            if (lt && score >= current) || (gt && score <= current) { continue }
            processed += 1
            lastScore = score
            if score != current {
                zset.set(member, score: stored(score))
                updated += 1
            }
        } else if !xx {
            zset.set(member, score: stored(score))
            zset.noteInsert(member, limits: ctx.limits)
            added += 1
            processed += 1
            lastScore = score
        }
    }
    if added > 0 || updated > 0 { try ctx.keyspace.store(zset, at: key, replacing: loaded?.entry) }
    if incr {
        if processed > 0 { ctx.connection.replyDouble(lastScore) } else { ctx.connection.replyNull() }
    } else {
        ctx.connection.replyInteger(ch ? added + updated : added)
    }
}

private func zscore(_ ctx: CommandContext) throws {
    guard let score = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true)?.value.score(ctx.args.bytes(2)) else {
        ctx.connection.replyNull()
        return
    }
    ctx.connection.replyDouble(score)
}

private func zmscore(_ ctx: CommandContext) throws {
    let zset = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true)?.value
    ctx.connection.replyArrayHeader(ctx.args.count - 2)
    for member in ctx.args[2...] {
        if let score = zset?.score(member.bytes) { ctx.connection.replyDouble(score) } else { ctx.connection.replyNull() }
    }
}

private func zcard(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.collectionCount(ctx.args.bytes(1), of: .zset))
}

private func zrem(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    guard let (zset, old) = try ctx.keyspace.loadZSet(key) else {
        ctx.connection.replyInteger(0)
        return
    }
    var removed = 0
    for member in ctx.args[2...] where zset.remove(member.bytes) {
        removed += 1
        if zset.isEmpty { break }
    }
    if removed > 0 { try ctx.keyspace.store(zset, at: key, replacing: old) }
    ctx.connection.replyInteger(removed)
}

private func zrank(_ ctx: CommandContext, reverse: Bool) throws {
    guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true),
          let rank = zset.rank(ctx.args.bytes(2)) else {
        ctx.connection.replyNull()
        return
    }
    ctx.connection.replyInteger(reverse ? zset.count - 1 - rank : rank)
}

/// A score interval, as Redis's `zrangespec`.
struct ScoreRange {
    var min: Double, max: Double
    var minExclusive: Bool, maxExclusive: Bool

    init?(_ min: some Collection<UInt8>, _ max: some Collection<UInt8>) {
        guard let low = parseScoreBound(min), let high = parseScoreBound(max) else { return nil }
        (self.min, minExclusive) = low
        (self.max, maxExclusive) = high
    }

    func aboveMin(_ score: Double) -> Bool { minExclusive ? score > min : score >= min }
    func belowMax(_ score: Double) -> Bool { maxExclusive ? score < max : score <= max }
    var isEmpty: Bool { min > max || (min == max && (minExclusive || maxExclusive)) }

    /// The ranks of `zset` whose scores are in the range: O(log n).
    func ranks(in zset: ZSetValue) -> Range<Int> {
        guard !isEmpty else { return 0..<0 }
        let low = zset.countBelow(min, orEqual: minExclusive)
        let high = zset.countBelow(max, orEqual: !maxExclusive)
        return low < high ? low..<high : 0..<0
    }
}

/// A lexicographical interval, as Redis's `zlexrangespec`: `-` and `+` are
/// below and above everything.
struct LexRange {
    enum Bound { case minusInfinity, plusInfinity, value([UInt8]) }
    var min: Bound, max: Bound
    var minExclusive: Bool, maxExclusive: Bool

    static func parse(_ bytes: some Collection<UInt8>) -> (Bound, Bool)? {
        guard let first = bytes.first else { return nil }
        switch first {
        case UInt8(ascii: "+"): return bytes.count == 1 ? (.plusInfinity, true) : nil
        case UInt8(ascii: "-"): return bytes.count == 1 ? (.minusInfinity, true) : nil
        case UInt8(ascii: "("): return (.value(Array(bytes.dropFirst())), true)
        case UInt8(ascii: "["): return (.value(Array(bytes.dropFirst())), false)
        default: return nil
        }
    }

    init?(_ min: some Collection<UInt8>, _ max: some Collection<UInt8>) {
        guard let low = Self.parse(min), let high = Self.parse(max) else { return nil }
        (self.min, minExclusive) = low
        (self.max, maxExclusive) = high
    }

    /// Redis's `sdscmplex`: -1, 0 or 1.
    static func compare(_ a: Bound, _ b: Bound) -> Int {
        switch (a, b) {
        case (.minusInfinity, .minusInfinity), (.plusInfinity, .plusInfinity): return 0
        case (.minusInfinity, _), (_, .plusInfinity): return -1
        case (.plusInfinity, _), (_, .minusInfinity): return 1
        case (.value(let x), .value(let y)):
            let c = compareBytes(x, y)
            return c == 0 ? 0 : c < 0 ? -1 : 1
        }
    }

    var isEmpty: Bool {
        let c = Self.compare(min, max)
        return c > 0 || (c == 0 && (minExclusive || maxExclusive))
    }

    func aboveMin(_ member: [UInt8]) -> Bool {
        let c = Self.compare(.value(member), min)
        return minExclusive ? c > 0 : c >= 0
    }

    func belowMax(_ member: [UInt8]) -> Bool {
        let c = Self.compare(.value(member), max)
        return maxExclusive ? c < 0 : c <= 0
    }

    /// How many members of `zset` come before `bound` (`through`: up to and including it).
    private static func position(_ bound: Bound, in zset: ZSetValue, through: Bool) -> Int {
        switch bound {
        case .minusInfinity: return 0
        case .plusInfinity: return zset.count
        case .value(let member): return zset.countMembersBelow(member, orEqual: through)
        }
    }

    /// The ranks a lexicographical range selects from `zset`, after skipping
    /// `offset` and taking `limit` (negative: all), ascending or
    /// descending (then the range's elements are to be walked in reverse).
    /// The range is meant for members of one score. As Redis: a skiplist
    /// (`large`) is searched by its members (O(log n)); a listpack is
    /// walked from its head (tail) to the first member past the min (below
    /// the max), `offset` members are skipped unchecked, then members are
    /// taken up to the first one past the max (below the min), which gives Redis's answer
    /// for mixed scores too.
    func window(in zset: ZSetValue, reverse: Bool, offset: Int, limit: Int) -> Range<Int> {
        let n = zset.count
        guard n > 0, !isEmpty, offset >= 0, limit != 0,
              aboveMin(zset.element(at: n - 1).member), belowMax(zset.element(at: 0).member) else { return 0..<0 }
        if zset.large {
            let low = Self.position(min, in: zset, through: minExclusive)
            let high = Self.position(max, in: zset, through: !maxExclusive)
            guard low + offset < high else { return 0..<0 }
            let available = high - low - offset
            let taken = limit < 0 ? available : Swift.min(limit, available)
            return reverse ? (high - offset - taken)..<(high - offset) : (low + offset)..<(low + offset + taken)
        }
        let members = zset.allElements.map(\.member)
        let order: [Int] = reverse ? Array((0..<n).reversed()) : Array(0..<n)
        guard let first = order.firstIndex(where: { reverse ? belowMax(members[$0]) : aboveMin(members[$0]) }),
              reverse ? aboveMin(members[order[first]]) : belowMax(members[order[first]]) else { return 0..<0 }
        var i = first + offset
        var taken = 0
        while i < n && (limit < 0 || taken < limit) && (reverse ? aboveMin(members[order[i]]) : belowMax(members[order[i]])) {
            taken += 1
            i += 1
        }
        guard taken > 0 else { return 0..<0 }
        let a = order[first + offset], b = order[first + offset + taken - 1]
        return Swift.min(a, b)..<(Swift.max(a, b) + 1)
    }
}

private func zcount(_ ctx: CommandContext) throws {
    guard let range = ScoreRange(ctx.args[2], ctx.args[3]) else { throw ReplyError("ERR min or max is not a float") }
    guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true) else {
        ctx.connection.replyInteger(0)
        return
    }
    ctx.connection.replyInteger(range.ranks(in: zset).count)
}

private enum RangeType { case rank, score, lex }

/// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES],
/// the older forms with the type and direction fixed, and (`store`)
/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count],
/// as Redis's `zrangeGenericCommand`: O(log n) to find the range, then O(1)
/// per element.
private func zrange(_ ctx: CommandContext, type fixedType: RangeType?, reverse fixedReverse: Bool?,
                    store: Bool = false) throws {
    let first = store ? 2 : 1  // the source key
    var type = fixedType
    var reverse = fixedReverse
    var withScores = false
    var offset = 0, limit = -1
    var j = first + 3
    while j < ctx.args.count {
        let left = ctx.args.count - j - 1
        switch ctx.option(j) {
        case "withscores" where !store: withScores = true
        case "limit" where left >= 2:
            offset = Int(try ctx.integer(j + 1))
            limit = Int(try ctx.integer(j + 2))
            j += 2
        // Each may appear once, and only where the command leaves it open.
        case "rev" where reverse == nil: reverse = true
        case "bylex" where type == nil: type = .lex
        case "byscore" where type == nil: type = .score
        default: throw ReplyError.syntax
        }
        j += 1
    }
    let rangeType = type ?? .rank
    let descending = reverse ?? false
    if limit != -1 && rangeType == .rank {
        throw ReplyError("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
    }
    if withScores && rangeType == .lex {
        throw ReplyError("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    }
    // Reversed score and lex ranges are given as max then min.
    let (minArg, maxArg) = descending && rangeType != .rank
        ? (ctx.args[first + 2], ctx.args[first + 1]) : (ctx.args[first + 1], ctx.args[first + 2])
    var rankBounds: (Int, Int) = (0, 0)
    var scoreRange: ScoreRange?
    var lexRange: LexRange?
    switch rangeType {
    case .rank: rankBounds = (Int(try ctx.integer(first + 1)), Int(try ctx.integer(first + 2)))
    case .score:
        guard let range = ScoreRange(minArg, maxArg) else { throw ReplyError("ERR min or max is not a float") }
        scoreRange = range
    case .lex:
        guard let range = LexRange(minArg, maxArg) else { throw ReplyError("ERR min or max not valid string range item") }
        lexRange = range
    }
    var selected: [(member: [UInt8], score: Double)] = []
    if let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(first), read: true) {
        let ranks: Range<Int>
        switch rangeType {
        case .rank:
            if let range = normalizedRange(rankBounds.0, rankBounds.1, count: zset.count) {
                // A reversed rank range counts from the end.
                ranks = descending ? (zset.count - 1 - range.upperBound)..<(zset.count - range.lowerBound)
                    : range.lowerBound..<(range.upperBound + 1)
            } else {
                ranks = 0..<0
            }
        case .score: ranks = scoreRange!.ranks(in: zset)
        case .lex: ranks = 0..<0
        }
        if let lexRange {
            selected = zset.elements(lexRange.window(in: zset, reverse: descending, offset: offset, limit: limit),
                                     reverse: descending)
        } else {
            selected = window(ranks, offset: offset, limit: limit, reverse: descending, of: zset)
        }
    }
    if store {
        try storeRange(ctx, selected, at: ctx.args.bytes(1))
    } else {
        replyElements(ctx, selected, withScores: withScores)
    }
}

/// The elements of `ranks` in the order asked, after skipping `offset` and
/// taking `limit` (a negative offset leaves nothing, a negative limit means all).
private func window(_ ranks: Range<Int>, offset: Int, limit: Int, reverse: Bool,
                    of zset: ZSetValue) -> [(member: [UInt8], score: Double)] {
    guard offset >= 0, offset < ranks.count, limit != 0 else { return [] }
    let available = ranks.count - offset
    let n = limit < 0 ? available : min(limit, available)
    let picked = reverse ? (ranks.upperBound - offset - n)..<(ranks.upperBound - offset)
        : (ranks.lowerBound + offset)..<(ranks.lowerBound + offset + n)
    return zset.elements(picked, reverse: reverse)
}

/// ZRANGESTORE's result: a new sorted set at `destination` (replacing
/// whatever was there), or the destination deleted when the range is empty.
private func storeRange(_ ctx: CommandContext, _ elements: [(member: [UInt8], score: Double)],
                        at destination: [UInt8]) throws {
    guard !elements.isEmpty else {
        try ctx.keyspace.delete(destination)
        ctx.connection.replyInteger(0)
        return
    }
    let zset = ZSetValue()
    zset.large = elements.count > ctx.limits.zsetMaxListpackEntries
    for (member, score) in elements {
        zset.set(member, score: score)
        zset.noteInsert(member, limits: ctx.limits)
    }
    try ctx.keyspace.storeNew(zset, of: .zset, at: destination)
    ctx.connection.replyInteger(elements.count)
}

/// Members with scores if asked: a flat array in RESP2, [member, score]
/// pairs in RESP3.
func replyElements(_ ctx: CommandContext, _ elements: [(member: [UInt8], score: Double)], withScores: Bool) {
    let c = ctx.connection
    let pairs = withScores && c.protocolVersion >= 3
    c.replyArrayHeader(withScores && !pairs ? elements.count * 2 : elements.count)
    for (member, score) in elements {
        if pairs { c.replyArrayHeader(2) }
        c.replyBulk(member)
        if withScores { c.replyDouble(score) }
    }
}

// MARK: Pops

/// How a pop replies, as Redis's genericZpopCommand: ZPOPMIN/ZPOPMAX a
/// flat array (pairs in RESP3 when a count was given), BZPOPMIN/BZPOPMAX
/// the key then a flat member and score, ZMPOP/BZMPOP [key, [[member, score] ...]].
enum ZPopReply { case plain, withKey, nested }

/// Pops up to `count` elements (-1: one, plain) from the first of `keys`
/// that exists (its type checked), lowest or highest first, and replies.
/// Logged as ZPOPMIN/ZPOPMAX key [count].
/// - Returns: whether a sorted set was found (nothing is replied otherwise).
func popFromFirstSortedSet(_ ctx: CommandContext, _ keys: [[UInt8]], max: Bool, count: Int, reply: ZPopReply) throws -> Bool {
    for key in keys {
        guard let (zset, old) = try ctx.keyspace.loadZSet(key) else { continue }
        let n = Swift.min(count < 0 ? 1 : count, zset.count)
        let popped = zset.removeRanks(max ? (zset.count - n)..<zset.count : 0..<n)
        let ordered = max ? Array(popped.reversed()) : popped
        var logged = [Array((max ? "ZPOPMAX" : "ZPOPMIN").utf8), key]
        if count >= 0 { logged.append(Array(String(n).utf8)) }
        ctx.server.persistence.logCommand(as: logged)
        try ctx.keyspace.store(zset, at: key, replacing: old)
        let c = ctx.connection
        switch reply {
        case .plain:
            let pairs = c.protocolVersion >= 3 && count >= 0
            c.replyArrayHeader(pairs ? ordered.count : ordered.count * 2)
            for (member, score) in ordered {
                if pairs { c.replyArrayHeader(2) }
                c.replyBulk(member)
                c.replyDouble(score)
            }
        case .withKey:
            c.replyArrayHeader(ordered.count * 2 + 1)
            c.replyBulk(key)
            for (member, score) in ordered {
                c.replyBulk(member)
                c.replyDouble(score)
            }
        case .nested:
            c.replyArrayHeader(2)
            c.replyBulk(key)
            c.replyArrayHeader(ordered.count)
            for (member, score) in ordered {
                c.replyArrayHeader(2)
                c.replyBulk(member)
                c.replyDouble(score)
            }
        }
        return true
    }
    return false
}

/// ZPOPMIN/ZPOPMAX key [count]
private func zpopMinMax(_ ctx: CommandContext, max: Bool) throws {
    guard ctx.args.count <= 3 else { throw ReplyError.syntax }
    var count = -1
    if ctx.args.count == 3 {
        guard let n = parseStrictInt64(ctx.args[2]) else { throw ReplyError.notInteger }
        guard n >= 0 else { throw ReplyError("ERR value is out of range, must be positive") }
        count = Int(n)
    }
    let key = ctx.args.bytes(1)
    if count == 0 {
        // Redis checks the key's type first, then answers an empty array.
        _ = try ctx.keyspace.loadZSet(key)
        ctx.connection.replyArrayHeader(0)
        return
    }
    if try !popFromFirstSortedSet(ctx, [key], max: max, count: count, reply: .plain) {
        ctx.connection.replyArrayHeader(0)
    }
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]
private func zmpop(_ ctx: CommandContext) throws {
    let parsed = try MultiPopArguments(ctx, numkeysAt: 1, ends: ("min", "max"))
    if try !popFromFirstSortedSet(ctx, parsed.keys, max: !parsed.firstEnd, count: Swift.max(parsed.count, 1), reply: .nested) {
        ctx.connection.replyNullArray()
    }
}
