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
/// ZINCRBY key increment member is ZADD with INCR.
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
    for j in 0..<elements {
        guard let score = parseScore(ctx.args[scoreIndex + 2 * j]) else { throw ReplyError.notFloat }
        scores.append(score)
    }
    let key = ctx.args.bytes(1)
    let old = try ctx.keyspace.lookupWrite(key, as: .zset)
    if old == nil && xx {
        if incr { ctx.connection.replyNull() } else { ctx.connection.replyInteger(0) }
        return
    }
    let pairs = (0..<elements).map { (score: scores[$0], member: ctx.args.bytes(scoreIndex + 2 * $0 + 1)) }
    let outcome: ZAddOutcome
    // A few members into an existing sorted set: edit its bytes; otherwise decode it.
    if let old, elements <= 8 {
        var zset = try EncodedZSet(old.value)
        outcome = try apply(pairs, to: &zset, nx: nx, xx: xx, gt: gt, lt: lt, incr: incr, limits: ctx.limits)
        if outcome.added > 0 || outcome.updated > 0 {
            try ctx.keyspace.storeCollection(key, kind: .zset, zset.bytes, isEmpty: false, old: old)
        }
    } else {
        var zset = try old.map { try ZSetValue(decoding: $0.value) } ?? ZSetValue()
        outcome = try apply(pairs, to: &zset, nx: nx, xx: xx, gt: gt, lt: lt, incr: incr, limits: ctx.limits)
        if outcome.added > 0 || outcome.updated > 0 { try ctx.keyspace.store(zset, at: key, replacing: old) }
    }
    if let failure = outcome.failure { throw failure }
    if incr {
        if outcome.processed > 0 { ctx.connection.replyDouble(outcome.lastScore) } else { ctx.connection.replyNull() }
    } else {
        ctx.connection.replyInteger(ch ? outcome.added + outcome.updated : outcome.added)
    }
}

/// What ZADD did: its counts, the last score set (for INCR), and a NaN failure.
private struct ZAddOutcome {
    var added = 0, updated = 0, processed = 0
    var lastScore = 0.0
    var failure: ReplyError?
}

/// A sorted set ZADD can change: decoded, or edited on its bytes.
private protocol ZAddTarget {
    func score(_ member: [UInt8]) -> Double?
    mutating func set(_ member: [UInt8], score: Double) throws(ReplyError)
    mutating func noteInsert(_ member: [UInt8], limits: EncodingLimits)
}

extension ZSetValue: ZAddTarget {}
extension EncodedZSet: ZAddTarget {}

/// ZADD's rules, as Redis's `zsetAdd`, for each (score, member) in turn.
private func apply<Z: ZAddTarget>(_ pairs: [(score: Double, member: [UInt8])], to zset: inout Z,
                                  nx: Bool, xx: Bool, gt: Bool, lt: Bool, incr: Bool,
                                  limits: EncodingLimits) throws(ReplyError) -> ZAddOutcome {
    var outcome = ZAddOutcome()
    for (given, member) in pairs {
        var score = given
        if let current = zset.score(member) {
            if nx { continue }
            if incr {
                score += current
                if score.isNaN {
                    outcome.failure = ReplyError("ERR resulting score is not a number (NaN)")
                    break
                }
            }
            if (lt && score >= current) || (gt && score <= current) { continue }
            outcome.processed += 1
            outcome.lastScore = score
            if score != current {
                try zset.set(member, score: score)
                outcome.updated += 1
            }
        } else if !xx {
            try zset.set(member, score: score)
            zset.noteInsert(member, limits: limits)
            outcome.added += 1
            outcome.processed += 1
            outcome.lastScore = score
        }
    }
    return outcome
}

private func zscore(_ ctx: CommandContext) throws {
    guard let score = try ctx.keyspace.lookupEncoded(ctx.args.bytes(1), of: .zset)?.score(ctx.args[2]) else {
        ctx.connection.replyNull()
        return
    }
    ctx.connection.replyDouble(score)
}

private func zmscore(_ ctx: CommandContext) throws {
    let zset = try ctx.keyspace.lookupEncoded(ctx.args.bytes(1), of: .zset)
    ctx.connection.replyArrayHeader(ctx.args.count - 2)
    for member in ctx.args[2...] {
        if let score = zset?.score(member) { ctx.connection.replyDouble(score) } else { ctx.connection.replyNull() }
    }
}

private func zcard(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.collectionCount(ctx.args.bytes(1), of: .zset))
}

private func zrem(_ ctx: CommandContext) throws {
    guard let (found, old) = try ctx.keyspace.loadZSet(ctx.args.bytes(1)) else {
        ctx.connection.replyInteger(0)
        return
    }
    var zset = found
    var removed = 0
    for member in ctx.args[2...] where zset.remove(member.bytes) {
        removed += 1
        if zset.isEmpty { break }
    }
    if removed > 0 { try ctx.keyspace.store(zset, at: ctx.args.bytes(1), replacing: old) }
    ctx.connection.replyInteger(removed)
}

private func zrank(_ ctx: CommandContext, reverse: Bool) throws {
    guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true), let rank = zset.rank(ctx.args.bytes(2)) else {
        ctx.connection.replyNull()
        return
    }
    ctx.connection.replyInteger(reverse ? zset.count - 1 - rank : rank)
}

/// A score interval, as Redis's `zrangespec`.
private struct ScoreRange {
    var min: Double, max: Double
    var minExclusive: Bool, maxExclusive: Bool

    init?(_ min: Argument, _ max: Argument) {
        guard let low = parseScoreBound(min), let high = parseScoreBound(max) else { return nil }
        (self.min, minExclusive) = low
        (self.max, maxExclusive) = high
    }

    func aboveMin(_ score: Double) -> Bool { minExclusive ? score > min : score >= min }
    func belowMax(_ score: Double) -> Bool { maxExclusive ? score < max : score <= max }
    var isEmpty: Bool { min > max || (min == max && (minExclusive || maxExclusive)) }
}

/// A lexicographical interval, as Redis's `zlexrangespec`: `-` and `+` are
/// below and above everything.
private struct LexRange {
    enum Bound { case minusInfinity, plusInfinity, value([UInt8]) }
    var min: Bound, max: Bound
    var minExclusive: Bool, maxExclusive: Bool

    static func parse(_ bytes: Argument) -> (Bound, Bool)? {
        guard let first = bytes.first else { return nil }
        switch first {
        case UInt8(ascii: "+"): return bytes.count == 1 ? (.plusInfinity, true) : nil
        case UInt8(ascii: "-"): return bytes.count == 1 ? (.minusInfinity, true) : nil
        case UInt8(ascii: "("): return (.value(Array(bytes.dropFirst())), true)
        case UInt8(ascii: "["): return (.value(Array(bytes.dropFirst())), false)
        default: return nil
        }
    }

    init?(_ min: Argument, _ max: Argument) {
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
            return x == y ? 0 : x.lexicographicallyPrecedes(y) ? -1 : 1
        }
    }

    func aboveMin(_ member: [UInt8]) -> Bool {
        let c = Self.compare(.value(member), min)
        return minExclusive ? c > 0 : c >= 0
    }

    func belowMax(_ member: [UInt8]) -> Bool {
        let c = Self.compare(.value(member), max)
        return maxExclusive ? c < 0 : c <= 0
    }

    var isEmpty: Bool {
        let c = Self.compare(min, max)
        return c > 0 || (c == 0 && (minExclusive || maxExclusive))
    }
}

private func zcount(_ ctx: CommandContext) throws {
    guard let range = ScoreRange(ctx.args[2], ctx.args[3]) else { throw ReplyError("ERR min or max is not a float") }
    guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true), !range.isEmpty else {
        ctx.connection.replyInteger(0)
        return
    }
    ctx.connection.replyInteger(zset.scores.filter { range.aboveMin($0) && range.belowMax($0) }.count)
}

private enum RangeType { case rank, score, lex }

/// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES],
/// and the older forms with the type and direction fixed, as Redis's
/// `zrangeGenericCommand`.
private func zrange(_ ctx: CommandContext, type fixedType: RangeType?, reverse fixedReverse: Bool?) throws {
    var type = fixedType
    var reverse = fixedReverse
    var withScores = false
    var offset = 0, limit = -1
    var j = 4
    while j < ctx.args.count {
        let left = ctx.args.count - j - 1
        switch ctx.option(j) {
        case "withscores": withScores = true
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
    let (minArg, maxArg) = descending && rangeType != .rank ? (ctx.args[3], ctx.args[2]) : (ctx.args[2], ctx.args[3])
    var indices: [Int] = []
    switch rangeType {
    case .rank:
        let start = Int(try ctx.integer(2)), end = Int(try ctx.integer(3))
        guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true) else {
            ctx.connection.replyArrayHeader(0)
            return
        }
        if let range = normalizedRange(start, end, count: zset.count) {
            indices = range.map { descending ? zset.count - 1 - $0 : $0 }
        }
        reply(ctx, zset, indices, withScores: withScores)
    case .score:
        guard let range = ScoreRange(minArg, maxArg) else { throw ReplyError("ERR min or max is not a float") }
        guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true) else {
            ctx.connection.replyArrayHeader(0)
            return
        }
        if !range.isEmpty && !(offset > 0 && offset >= zset.count) {
            let order: [Int] = descending ? Array(zset.scores.indices.reversed()) : Array(zset.scores.indices)
            let matching = order.filter { range.aboveMin(zset.scores[$0]) && range.belowMax(zset.scores[$0]) }
            indices = window(matching, offset: offset, limit: limit)
        }
        reply(ctx, zset, indices, withScores: withScores)
    case .lex:
        guard let range = LexRange(minArg, maxArg) else { throw ReplyError("ERR min or max not valid string range item") }
        guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true) else {
            ctx.connection.replyArrayHeader(0)
            return
        }
        if !(offset > 0 && offset >= zset.count) { indices = lexRange(zset.members, range, descending, offset, limit) }
        reply(ctx, zset, indices, withScores: false)
    }
}

/// The ranks a lexicographical range selects, walked as Redis walks a
/// listpack (`zzlFirstInLexRange` and on): meant for members of one score,
/// it gives Redis's answer for mixed scores too. The range holds when the
/// last member is above its min and the first below its max; the walk starts
/// at the first member above the min (from the tail: below the max), skips
/// `offset` members, and stops at the first one past the other end.
private func lexRange(_ members: [[UInt8]], _ range: LexRange, _ descending: Bool, _ offset: Int, _ limit: Int) -> [Int] {
    guard let first = members.first, let last = members.last, !range.isEmpty,
          range.aboveMin(last), range.belowMax(first) else { return [] }
    let order: [Int] = descending ? Array(members.indices.reversed()) : Array(members.indices)
    guard let start = order.firstIndex(where: { descending ? range.belowMax(members[$0]) : range.aboveMin(members[$0]) }),
          descending ? range.aboveMin(members[order[start]]) : range.belowMax(members[order[start]]),
          offset >= 0 else { return [] }
    var result: [Int] = []
    var i = start + offset
    var left = limit
    while i < order.count && left != 0 {
        let member = members[order[i]]
        guard descending ? range.aboveMin(member) : range.belowMax(member) else { break }
        result.append(order[i])
        i += 1
        left -= 1
    }
    return result
}

/// LIMIT offset count over matches: a negative offset leaves nothing, a
/// negative count means all the rest.
private func window(_ matches: [Int], offset: Int, limit: Int) -> [Int] {
    guard offset >= 0 else { return [] }
    let rest = matches.dropFirst(offset)
    return Array(limit < 0 ? rest : rest.prefix(limit))
}

/// Members at `indices`, with scores if asked: a flat array in RESP2,
/// [member, score] pairs in RESP3.
private func reply(_ ctx: CommandContext, _ zset: ZSetValue, _ indices: [Int], withScores: Bool) {
    let c = ctx.connection
    let pairs = withScores && c.protocolVersion >= 3
    c.replyArrayHeader(withScores && !pairs ? indices.count * 2 : indices.count)
    for i in indices {
        if pairs { c.replyArrayHeader(2) }
        c.replyBulk(zset.members[i])
        if withScores { c.replyDouble(zset.scores[i]) }
    }
}
