import RESP
import SQLiteKVCache

/// Geo commands, as Redis 7.0's geo.c: points are members of a sorted set
/// whose scores are Redis's 52-bit geohashes (`GeoHash`), so a geo set
/// DUMPed here restores on Redis and answers the same.
///
/// The sorted set is reached through `GeoSet` alone (a member's score, the
/// members in a score range) and written through ZADD's own handler, so a
/// change of the sorted set's representation touches only `GeoSet`.
let geoCommands: [Command] = [
    Command(name: "geoadd", arity: -5, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1, group: "geo",
            summary: "Adds one or more members to a geospatial index.", handler: geoadd),
    Command(name: "geodist", arity: -4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1, group: "geo",
            summary: "Returns the distance between two members of a geospatial index.", handler: geodist),
    Command(name: "geohash", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1, group: "geo",
            summary: "Returns members from a geospatial index as geohash strings.", handler: geohash),
    Command(name: "geopos", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1, group: "geo",
            summary: "Returns the longitude and latitude of members from a geospatial index.", handler: geopos),
    Command(name: "georadius", arity: -6, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1, group: "geo",
            summary: "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.",
            handler: { try geoSearch($0, keyIndex: 1, [.coordinates]) }),
    Command(name: "georadius_ro", arity: -6, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1, group: "geo",
            summary: "Returns members from a geospatial index that are within a distance from a coordinate.",
            handler: { try geoSearch($0, keyIndex: 1, [.coordinates, .noStore]) }),
    Command(name: "georadiusbymember", arity: -5, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1, group: "geo",
            summary: "Queries a geospatial index for members within a distance from a member, optionally stores the result.",
            handler: { try geoSearch($0, keyIndex: 1, [.member]) }),
    Command(name: "georadiusbymember_ro", arity: -5, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1, group: "geo",
            summary: "Returns members from a geospatial index that are within a distance from a member.",
            handler: { try geoSearch($0, keyIndex: 1, [.member, .noStore]) }),
    Command(name: "geosearch", arity: -7, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1, group: "geo",
            summary: "Queries a geospatial index for members inside an area of a box or a circle.",
            handler: { try geoSearch($0, keyIndex: 1, [.search]) }),
    Command(name: "geosearchstore", arity: -8, flags: ["write", "denyoom"], firstKey: 1, lastKey: 2, step: 1, group: "geo",
            summary: "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.",
            handler: { try geoSearch($0, keyIndex: 2, [.search, .searchStore]) }),
]

// MARK: The sorted set, as geo reads and writes it

/// A geo set as the commands see it: scores of members, members by score.
/// The one place that knows the sorted set's representation.
struct GeoSet {
    private let zset: ZSetValue

    /// The sorted set at `key` (a counted read).
    /// - Throws: WRONGTYPE for a key of another type.
    static func load(_ ctx: CommandContext, _ key: [UInt8]) throws -> GeoSet? {
        try ctx.keyspace.loadZSet(key, read: true).map { GeoSet(zset: $0.value) }
    }

    func score(_ member: [UInt8]) -> Double? { zset.score(member) }

    /// Members with min <= score < max, in score order, until `body` returns false.
    func forEach(scoreFrom min: Double, below max: Double, _ body: ([UInt8], Double) -> Bool) {
        // The sorted set's tree: from the first rank at or past min, in order.
        zset.forEach(fromRank: zset.countBelow(min, orEqual: false)) { member, score in
            guard score < max else { return false }
            return score < min || body(member, score)
        }
    }

    /// Runs ZADD's handler with `arguments` (after the key) on `key`; its
    /// reply stays on the connection when `reply`.
    static func zadd(_ ctx: CommandContext, key: [UInt8], _ arguments: [[UInt8]], reply: Bool) throws {
        guard let zadd = CommandTable.standard.lookup(Array("zadd".utf8)) else { return }
        let mark = ctx.connection.output.count
        try Arguments.withCopy(of: [Array("zadd".utf8), key] + arguments) { args in
            try zadd.handler(CommandContext(server: ctx.server, connection: ctx.connection, args: args))
        }
        if !reply { ctx.connection.output.removeSubrange(mark...) }
    }

    /// Replaces `key` with a sorted set of these members and scores (Redis's setKey), or deletes it for none.
    static func store(_ ctx: CommandContext, key: [UInt8], _ items: [(member: [UInt8], score: Double)]) throws {
        try ctx.keyspace.delete(key)
        guard !items.isEmpty else { return }
        var arguments: [[UInt8]] = []
        arguments.reserveCapacity(items.count * 2)
        for item in items {
            arguments.append(formatDouble(item.score))
            arguments.append(item.member)
        }
        try zadd(ctx, key: key, arguments, reply: false)
    }
}

// MARK: Arguments

private func parseDouble(_ ctx: CommandContext, _ i: Int, error: ReplyError = .notFloat) throws(ReplyError) -> Double {
    guard let value = parseScore(ctx.args[i]) else { throw error }
    return value
}

/// A longitude and latitude at i, i+1, inside Redis's limits.
private func longitudeLatitude(_ ctx: CommandContext, _ i: Int) throws(ReplyError) -> (Double, Double) {
    let x = try parseDouble(ctx, i), y = try parseDouble(ctx, i + 1)
    if x < GeoHash.longitudeMin || x > GeoHash.longitudeMax || y < GeoHash.latitudeMin || y > GeoHash.latitudeMax {
        throw ReplyError("ERR invalid longitude,latitude pair " + String(format: "%f,%f", x, y))
    }
    return (x, y)
}

/// Meters per unit.
private func unit(_ ctx: CommandContext, _ i: Int) throws(ReplyError) -> Double {
    switch ctx.option(i) {
    case "m": return 1
    case "km": return 1000
    case "ft": return 0.3048
    case "mi": return 1609.34
    default: throw ReplyError("ERR unsupported unit provided. please use M, KM, FT, MI")
    }
}

private func radius(_ ctx: CommandContext, _ i: Int, into shape: inout GeoHash.Shape) throws(ReplyError) {
    let distance = try parseDouble(ctx, i, error: ReplyError("ERR need numeric radius"))
    if distance < 0 { throw ReplyError("ERR radius cannot be negative") }
    shape.conversion = try unit(ctx, i + 1)
    shape.kind = .radius(distance)
}

// MARK: Commands

/// GEOADD key [NX|XX] [CH] longitude latitude member [...]: ZADD with geohash scores.
private func geoadd(_ ctx: CommandContext) throws {
    var nx = false, xx = false
    var first = 2
    while first < ctx.args.count {
        let option = ctx.option(first)
        if option == "nx" {
            nx = true
        } else if option == "xx" {
            xx = true
        } else if option != "ch" {
            break
        }
        first += 1
    }
    if (ctx.args.count - first) % 3 != 0 || (xx && nx) { throw ReplyError.syntax }
    var arguments = (2..<first).map { ctx.args.bytes($0) }
    for i in stride(from: first, to: ctx.args.count, by: 3) {
        let (x, y) = try longitudeLatitude(ctx, i)
        guard let score = GeoHash.score(longitude: x, latitude: y) else { throw ReplyError.syntax }
        arguments.append(Array(String(score).utf8))
        arguments.append(ctx.args.bytes(i + 2))
    }
    try GeoSet.zadd(ctx, key: ctx.args.bytes(1), arguments, reply: true)
}

/// GEODIST key member1 member2 [unit].
private func geodist(_ ctx: CommandContext) throws {
    var toMeters = 1.0
    if ctx.args.count == 5 {
        toMeters = try unit(ctx, 4)
    } else if ctx.args.count > 5 {
        throw ReplyError.syntax
    }
    guard let set = try GeoSet.load(ctx, ctx.args.bytes(1)),
          let s1 = set.score(ctx.args.bytes(2)), let s2 = set.score(ctx.args.bytes(3)),
          let a = GeoHash.decode(score: s1), let b = GeoHash.decode(score: s2) else {
        ctx.connection.replyNull()
        return
    }
    ctx.connection.replyBulk(GeoHash.formatDistance(GeoHash.distance(a.longitude, a.latitude, b.longitude, b.latitude) / toMeters))
}

/// GEOHASH key [member ...].
private func geohash(_ ctx: CommandContext) throws {
    let set = try GeoSet.load(ctx, ctx.args.bytes(1))
    ctx.connection.replyArrayHeader(ctx.args.count - 2)
    for i in 2..<ctx.args.count {
        if let score = set?.score(ctx.args.bytes(i)), let text = GeoHash.standardHash(score: score) {
            ctx.connection.replyBulk(text)
        } else {
            ctx.connection.replyNull()
        }
    }
}

extension Connection {
    /// A coordinate as Redis replies with one (addReplyHumanLongDouble).
    func replyHumanDouble(_ value: Double) {
        let text = formatLongDouble(LongDouble(value))
        if protocolVersion >= 3 {
            output.append(UInt8(ascii: ","))
            output.append(contentsOf: text)
            output.append(contentsOf: [0x0d, 0x0a])
        } else {
            replyBulk(text)
        }
    }
}

/// GEOPOS key [member ...].
private func geopos(_ ctx: CommandContext) throws {
    let set = try GeoSet.load(ctx, ctx.args.bytes(1))
    ctx.connection.replyArrayHeader(ctx.args.count - 2)
    for i in 2..<ctx.args.count {
        if let score = set?.score(ctx.args.bytes(i)), let (x, y) = GeoHash.decode(score: score) {
            ctx.connection.replyArrayHeader(2)
            ctx.connection.replyHumanDouble(x)
            ctx.connection.replyHumanDouble(y)
        } else {
            ctx.connection.replyNullArray()
        }
    }
}

private struct SearchFlags: OptionSet {
    let rawValue: Int
    static let coordinates = SearchFlags(rawValue: 1)
    static let member = SearchFlags(rawValue: 2)
    static let noStore = SearchFlags(rawValue: 4)
    static let search = SearchFlags(rawValue: 8)
    static let searchStore = SearchFlags(rawValue: 16)
}

/// GEORADIUS, GEORADIUSBYMEMBER (and _RO), GEOSEARCH, GEOSEARCHSTORE (Redis's georadiusGeneric).
private func geoSearch(_ ctx: CommandContext, keyIndex: Int, _ flags: SearchFlags) throws {
    let set = try GeoSet.load(ctx, ctx.args.bytes(keyIndex))
    var shape = GeoHash.Shape()
    var base = 0
    var storeKey: [UInt8]?
    var storeDistances = false
    if flags.contains(.coordinates) {
        base = 6
        shape.center = try longitudeLatitude(ctx, 2)
        try radius(ctx, 4, into: &shape)
    } else if flags.contains(.member) && set == nil {
        base = 5
    } else if flags.contains(.member) {
        base = 5
        guard let score = set?.score(ctx.args.bytes(2)), let center = GeoHash.decode(score: score) else {
            throw ReplyError("ERR could not decode requested zset member")
        }
        shape.center = center
        try radius(ctx, 3, into: &shape)
    } else {
        base = 2
        if flags.contains(.searchStore) {
            base = 3
            storeKey = ctx.args.bytes(1)
        }
    }
    var withDistance = false, withHash = false, withCoordinates = false
    var fromMember = false, fromLocation = false, byRadius = false, byBox = false
    var ascending: Bool?
    var any = false
    var count: Int64 = 0
    let remaining = ctx.args.count - base
    var i = 0
    while i < remaining {
        let at = base + i
        let option = ctx.option(at)
        let search = flags.contains(.search)
        switch option {
        case "withdist": withDistance = true
        case "withhash": withHash = true
        case "withcoord": withCoordinates = true
        case "any": any = true
        case "asc": ascending = true
        case "desc": ascending = false
        case "count" where i + 1 < remaining:
            count = try ctx.integer(at + 1)
            if count <= 0 { throw ReplyError("ERR COUNT must be > 0") }
            i += 1
        case "store" where i + 1 < remaining && !flags.contains(.noStore) && !search,
             "storedist" where i + 1 < remaining && !flags.contains(.noStore) && !search:
            storeKey = ctx.args.bytes(at + 1)
            storeDistances = option == "storedist"
            i += 1
        case "storedist" where search && flags.contains(.searchStore):
            storeDistances = true
        case "frommember" where i + 1 < remaining && search && !fromLocation:
            if let set {
                guard let score = set.score(ctx.args.bytes(at + 1)), let center = GeoHash.decode(score: score) else {
                    throw ReplyError("ERR could not decode requested zset member")
                }
                shape.center = center
            }
            fromMember = true
            i += 1
        case "fromlonlat" where i + 2 < remaining && search && !fromMember:
            shape.center = try longitudeLatitude(ctx, at + 1)
            fromLocation = true
            i += 2
        case "byradius" where i + 2 < remaining && search && !byBox:
            try radius(ctx, at + 1, into: &shape)
            byRadius = true
            i += 2
        case "bybox" where i + 3 < remaining && search && !byRadius:
            let width = try parseDouble(ctx, at + 1, error: ReplyError("ERR need numeric width"))
            let height = try parseDouble(ctx, at + 2, error: ReplyError("ERR need numeric height"))
            if height < 0 || width < 0 { throw ReplyError("ERR height or width cannot be negative") }
            shape.conversion = try unit(ctx, at + 3)
            shape.kind = .box(width: width, height: height)
            byBox = true
            i += 3
        default:
            throw ReplyError.syntax
        }
        i += 1
    }
    if storeKey != nil && (withDistance || withHash || withCoordinates) {
        throw ReplyError("ERR \(flags.contains(.searchStore) ? "GEOSEARCHSTORE" : "STORE option in GEORADIUS") is not "
            + "compatible with WITHDIST, WITHHASH and WITHCOORD options")
    }
    if flags.contains(.search) && !(fromMember || fromLocation) {
        throw ReplyError("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for \(ctx.quoted(0))")
    }
    if flags.contains(.search) && !(byRadius || byBox) {
        throw ReplyError("ERR exactly one of BYRADIUS and BYBOX can be specified for \(ctx.quoted(0))")
    }
    if any && count == 0 { throw ReplyError("ERR the ANY argument requires COUNT argument") }
    guard let set else {
        if let storeKey {
            try ctx.keyspace.delete(storeKey)
            ctx.connection.replyInteger(0)
        } else {
            ctx.connection.replyArrayHeader(0)
        }
        return
    }
    if count != 0 && ascending == nil && !any { ascending = true }

    // The members in the boxes around the centre, inside the shape.
    var found: [(member: [UInt8], score: Double, x: Double, y: Double, distance: Double)] = []
    let limit = any ? Int(count) : 0
    var last: GeoHash.Bits?
    for box in GeoHash.searchBoxes(shape) where !box.isZero {
        if let last, last == box { continue }
        if !found.isEmpty && limit > 0 && found.count >= limit { break }
        let (min, max) = GeoHash.scoreRange(box)
        set.forEach(scoreFrom: Double(min), below: Double(max)) { member, score in
            if let (x, y) = GeoHash.decode(score: score), let distance = shape.contains(longitude: x, latitude: y) {
                found.append((member, score, x, y, distance))
            }
            return !(limit > 0 && found.count >= limit)
        }
        last = box
    }
    if found.isEmpty && storeKey == nil {
        ctx.connection.replyArrayHeader(0)
        return
    }
    let returned = count == 0 || found.count < Int(count) ? found.count : Int(count)
    if let ascending {
        // Stable, as the C library's qsort is for these sizes.
        found = found.enumerated().sorted { a, b in
            if a.element.distance != b.element.distance {
                return ascending ? a.element.distance < b.element.distance : a.element.distance > b.element.distance
            }
            return a.offset < b.offset
        }.map(\.element)
    }
    let results = found.prefix(returned)
    if let storeKey {
        try GeoSet.store(ctx, key: storeKey, results.map { ($0.member, storeDistances ? $0.distance / shape.conversion : $0.score) })
        ctx.connection.replyInteger(results.count)
        return
    }
    let options = (withDistance ? 1 : 0) + (withCoordinates ? 1 : 0) + (withHash ? 1 : 0)
    let c = ctx.connection
    c.replyArrayHeader(results.count)
    for point in results {
        if options > 0 { c.replyArrayHeader(options + 1) }
        c.replyBulk(point.member)
        if withDistance { c.replyBulk(GeoHash.formatDistance(point.distance / shape.conversion)) }
        if withHash { c.replyInteger(Int64(point.score)) }
        if withCoordinates {
            c.replyArrayHeader(2)
            c.replyHumanDouble(point.x)
            c.replyHumanDouble(point.y)
        }
    }
}
