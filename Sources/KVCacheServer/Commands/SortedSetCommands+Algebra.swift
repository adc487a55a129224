import RESP
import SQLiteKVCache

/// Sorted-set commands over ranges and several keys, as Redis 7.0's
/// t_zset.c: ZREMRANGEBYRANK/SCORE/LEX, ZLEXCOUNT, ZRANDMEMBER, and
/// ZUNION/ZINTER/ZDIFF (and their STORE forms), ZINTERCARD, where a set
/// counts as a sorted set whose scores are all 1.
let sortedSetAlgebraCommands: [Command] = [
    Command(name: "zremrangebyrank", arity: 4, flags: ["write"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Removes the members within a range of ranks.",
            handler: { try zremrange($0, by: .rank) }),
    Command(name: "zremrangebyscore", arity: 4, flags: ["write"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Removes the members within a range of scores.",
            handler: { try zremrange($0, by: .score) }),
    Command(name: "zremrangebylex", arity: 4, flags: ["write"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Removes the members within a lexicographical range.",
            handler: { try zremrange($0, by: .lex) }),
    Command(name: "zlexcount", arity: 4, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Counts the members within a lexicographical range.", handler: zlexcount),
    Command(name: "zrandmember", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Returns one or more random members of a sorted set.", handler: zrandmember),
    Command(name: "zunion", arity: -3, flags: ["readonly", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "sorted-set", summary: "Returns the union of sorted sets.",
            handler: { try zsetAlgebra($0, .union, store: false) }),
    Command(name: "zinter", arity: -3, flags: ["readonly", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "sorted-set", summary: "Returns the intersection of sorted sets.",
            handler: { try zsetAlgebra($0, .inter, store: false) }),
    Command(name: "zdiff", arity: -3, flags: ["readonly", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "sorted-set", summary: "Returns the difference of the first sorted set and the others.",
            handler: { try zsetAlgebra($0, .diff, store: false) }),
    Command(name: "zunionstore", arity: -4, flags: ["write", "denyoom", "movablekeys"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Stores the union of sorted sets in a key.",
            handler: { try zsetAlgebra($0, .union, store: true) }),
    Command(name: "zinterstore", arity: -4, flags: ["write", "denyoom", "movablekeys"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Stores the intersection of sorted sets in a key.",
            handler: { try zsetAlgebra($0, .inter, store: true) }),
    Command(name: "zdiffstore", arity: -4, flags: ["write", "denyoom", "movablekeys"], firstKey: 1, lastKey: 1, step: 1,
            group: "sorted-set", summary: "Stores the difference of sorted sets in a key.",
            handler: { try zsetAlgebra($0, .diff, store: true) }),
    Command(name: "zintercard", arity: -3, flags: ["readonly", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "sorted-set", summary: "Returns the number of members in the intersection of sorted sets.",
            handler: { try zsetAlgebra($0, .inter, store: false, cardinalityOnly: true) }),
]

private enum RemoveRange { case rank, score, lex }

/// ZREMRANGEBYRANK key start stop, ZREMRANGEBYSCORE key min max,
/// ZREMRANGEBYLEX key min max: O(log n) to find the range, then O(1) per
/// member removed.
private func zremrange(_ ctx: CommandContext, by type: RemoveRange) throws {
    var rankBounds = (0, 0)
    var scoreRange: ScoreRange?
    var lexRange: LexRange?
    switch type {
    case .rank: rankBounds = (Int(try ctx.integer(2)), Int(try ctx.integer(3)))
    case .score:
        guard let range = ScoreRange(ctx.args[2], ctx.args[3]) else { throw ReplyError("ERR min or max is not a float") }
        scoreRange = range
    case .lex:
        guard let range = LexRange(ctx.args[2], ctx.args[3]) else {
            throw ReplyError("ERR min or max not valid string range item")
        }
        lexRange = range
    }
    let key = ctx.args.bytes(1)
    guard let (zset, old) = try ctx.keyspace.loadZSet(key) else {
        ctx.connection.replyInteger(0)
        return
    }
    let ranks: Range<Int>
    switch type {
    case .rank:
        ranks = normalizedRange(rankBounds.0, rankBounds.1, count: zset.count).map { $0.lowerBound..<($0.upperBound + 1) } ?? 0..<0
    case .score: ranks = scoreRange!.ranks(in: zset)
    case .lex: ranks = lexRange!.window(in: zset, reverse: false, offset: 0, limit: -1)
    }
    if !ranks.isEmpty {
        zset.removeRanks(ranks)
        try ctx.keyspace.store(zset, at: key, replacing: old)
    }
    ctx.connection.replyInteger(ranks.count)
}

/// ZLEXCOUNT key min max
private func zlexcount(_ ctx: CommandContext) throws {
    guard let range = LexRange(ctx.args[2], ctx.args[3]) else {
        throw ReplyError("ERR min or max not valid string range item")
    }
    guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true) else {
        ctx.connection.replyInteger(0)
        return
    }
    ctx.connection.replyInteger(range.window(in: zset, reverse: false, offset: 0, limit: -1).count)
}

/// The count argument of SRANDMEMBER-like commands: between -LONG_MAX and
/// LONG_MAX, halved when pairs are returned (Redis's checks and texts).
func randomCount(_ ctx: CommandContext, _ index: Int, pairs: Bool) throws -> Int {
    let n = try ctx.integer(index)
    guard n != .min else {
        throw ReplyError("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    }
    if pairs && (n < -Int64.max / 2 || n > Int64.max / 2) { throw ReplyError("ERR value is out of range") }
    return Int(n)
}

/// ZRANDMEMBER key [count [WITHSCORES]]: a positive count gives distinct
/// members, a negative one may repeat them; O(1) per member.
private func zrandmember(_ ctx: CommandContext) throws {
    guard ctx.args.count >= 3 else {
        guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true) else {
            ctx.connection.replyNull()
            return
        }
        ctx.connection.replyBulk(zset.randomMember(ctx.randomIndex))
        return
    }
    let requested = try randomCount(ctx, 2, pairs: ctx.args.count == 4)
    guard ctx.args.count == 3 || (ctx.args.count == 4 && ctx.option(3) == "withscores") else { throw ReplyError.syntax }
    let withScores = ctx.args.count == 4
    guard let (zset, _) = try ctx.keyspace.loadZSet(ctx.args.bytes(1), read: true), requested != 0 else {
        ctx.connection.replyArrayHeader(0)
        return
    }
    let elements = requested > 0 ? zset.distinctRandomElements(requested, ctx.randomIndex)
        : (0..<Int(requested.magnitude)).map { _ in zset.randomElement(ctx.randomIndex) }
    replyElements(ctx, elements, withScores: withScores)
}

enum SetOperation { case union, inter, diff }

/// A source of ZUNION and friends: a sorted set, or a set (scores of 1).
private enum ScoredSource {
    case zset(ZSetValue)
    case set(SetValue)

    var count: Int {
        switch self {
        case .zset(let z): return z.count
        case .set(let s): return s.count
        }
    }

    func score(_ member: [UInt8]) -> Double? {
        switch self {
        case .zset(let z): return z.score(member)
        case .set(let s): return s.contains(member) ? 1 : nil
        }
    }

    func forEach(_ body: ([UInt8], Double) -> Bool) {
        switch self {
        case .zset(let z):
            z.forEachUnordered(body)
        case .set(let s):
            for member in s.allMembers where !body(member, 1) { return }
        }
    }

    var identity: ObjectIdentifier {
        switch self {
        case .zset(let z): return ObjectIdentifier(z)
        case .set(let s): return ObjectIdentifier(s)
        }
    }
}

/// Redis's zunionInterAggregate: SUM (NaN from inf + -inf becomes 0), MIN, MAX.
private enum Aggregate {
    case sum, min, max

    func combine(_ target: Double, _ value: Double) -> Double {
        switch self {
        case .sum:
            let total = target + value
            return total.isNaN ? 0 : total
        case .min: return value < target ? value : target
        case .max: return value > target ? value : target
        }
    }
}

/// ZUNION/ZINTER/ZDIFF numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE
/// SUM|MIN|MAX] [WITHSCORES], their STORE forms (destination first, no
/// WITHSCORES), and ZINTERCARD numkeys key [key ...] [LIMIT limit], as
/// Redis's zunionInterDiffGenericCommand.
private func zsetAlgebra(_ ctx: CommandContext, _ op: SetOperation, store: Bool, cardinalityOnly: Bool = false) throws {
    let numkeysIndex = store ? 2 : 1
    let setnum = try ctx.integer(numkeysIndex)
    guard setnum >= 1 else {
        throw ReplyError("ERR at least 1 input key is needed for '\(ctx.commandName)' command")
    }
    guard setnum <= Int64(ctx.args.count - numkeysIndex - 1) else { throw ReplyError.syntax }
    let n = Int(setnum)
    var sources: [ScoredSource?] = []
    for i in 0..<n {
        guard let entry = try ctx.keyspace.lookupStored(ctx.args.bytes(numkeysIndex + 1 + i), read: true) else {
            sources.append(nil)
            continue
        }
        switch try collectionValue(of: entry) {
        case let z as ZSetValue: sources.append(.zset(z))
        case let s as SetValue: sources.append(.set(s))
        default: throw ReplyError.wrongType
        }
    }
    var weights = [Double](repeating: 1, count: n)
    var aggregate = Aggregate.sum
    var withScores = false
    var limit = 0
    var j = numkeysIndex + 1 + n
    while j < ctx.args.count {
        let remaining = ctx.args.count - j
        let option = ctx.option(j)
        if op != .diff && !cardinalityOnly && remaining >= n + 1 && option == "weights" {
            for i in 0..<n {
                guard let weight = parseScore(ctx.args[j + 1 + i]) else { throw ReplyError("ERR weight value is not a float") }
                weights[i] = weight
            }
            j += n + 1
        } else if op != .diff && !cardinalityOnly && remaining >= 2 && option == "aggregate" {
            switch ctx.option(j + 1) {
            case "sum": aggregate = .sum
            case "min": aggregate = .min
            case "max": aggregate = .max
            default: throw ReplyError.syntax
            }
            j += 2
        } else if !store && !cardinalityOnly && option == "withscores" {
            withScores = true
            j += 1
        } else if cardinalityOnly && remaining >= 2 && option == "limit" {
            // Redis's getPositiveLongFromObjectOrReply: one text for both.
            guard let value = parseStrictInt64(ctx.args[j + 1]), value >= 0 else {
                throw ReplyError("ERR LIMIT can't be negative")
            }
            limit = Int(value)
            j += 2
        } else {
            throw ReplyError.syntax
        }
    }
    var inputs = sources.enumerated().map { (source: $0.element, weight: weights[$0.offset]) }
    if op != .diff { inputs.sort { ($0.source?.count ?? 0) < ($1.source?.count ?? 0) } }
    var result: [[UInt8]: Double] = [:]
    var cardinality = 0
    switch op {
    case .inter:
        guard let first = inputs[0].source, first.count > 0 else { break }
        first.forEach { member, rawScore in
            var score = inputs[0].weight * rawScore
            if score.isNaN { score = 0 }
            for input in inputs.dropFirst() {
                guard let source = input.source else { return true }
                let value: Double
                if source.identity == first.identity {
                    value = rawScore * input.weight
                } else if let found = source.score(member) {
                    value = found * input.weight
                } else {
                    return true
                }
                score = aggregate.combine(score, value)
            }
            if cardinalityOnly {
                cardinality += 1
                return limit == 0 || cardinality < limit
            }
            result[member] = score
            return true
        }
    case .union:
        for input in inputs {
            guard let source = input.source else { continue }
            source.forEach { member, rawScore in
                var score = input.weight * rawScore
                if score.isNaN { score = 0 }
                if let existing = result[member] {
                    result[member] = aggregate.combine(existing, score)
                } else {
                    result[member] = score
                }
                return true
            }
        }
    case .diff:
        guard let first = inputs[0].source else { break }
        let others = inputs.dropFirst().compactMap(\.source)
        if others.contains(where: { $0.identity == first.identity }) { break }
        first.forEach { member, score in
            if !others.contains(where: { $0.score(member) != nil }) { result[member] = score }
            return true
        }
    }
    if cardinalityOnly {
        ctx.connection.replyInteger(cardinality)
        return
    }
    let zset = ZSetValue()
    for (member, score) in result { zset.set(member, score: score) }
    if store {
        zset.settleEncoding(limits: ctx.limits)
        try ctx.keyspace.storeNew(zset, of: .zset, at: ctx.args.bytes(1))
        ctx.connection.replyInteger(zset.count)
    } else {
        replyElements(ctx, zset.allElements, withScores: withScores)
    }
}
