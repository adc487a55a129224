import SQLiteKVCache
import Testing
@testable import KVCacheServer

private func w(_ list: String...) -> [[UInt8]] { list.map { Array($0.utf8) } }

/// The encoding of collections in an entry's value, decoded and in place.
@Suite("Value codec")
struct ValueCodecTests {
    static let lists: [[[UInt8]]] = [
        [], w(""), w("a"), w("a", "b", "c"), [[UInt8](repeating: 7, count: 200), [], [0, 255, 13, 10]],
        (0..<300).map { Array("element-\($0)".utf8) },
    ]

    @Test(arguments: lists)
    func listRoundTripsAndReadsFromBothEnds(items: [[UInt8]]) throws {
        let bytes = ListValue(items).encoded()
        let decoded = try ListValue(decoding: bytes)
        #expect(Array(decoded.items) == items)
        #expect(decoded.encodedSize == bytes.count)
        let layout = try EncodedLayout(bytes)
        #expect(layout.count == items.count)
        #expect(try layout.listElements().payloads.map { Array(bytes[$0]) } == items)
        let fromTail = try layout.lastListElements(items.count).payloads.map { Array(bytes[$0]) }
        #expect(fromTail == items.reversed())
    }

    @Test func setKeepsIntsetOrderUntilLarge() throws {
        let limits = EncodingLimits()
        var set = SetValue()
        for member in w("10", "-3", "7", "10") { set.add(member, limits: limits) }
        #expect(set.members == w("-3", "7", "10"))
        #expect(set.encodingName == "intset")
        set.add(Array("x".utf8), limits: limits)
        #expect(set.encodingName == "hashtable")
        #expect(set.members == w("-3", "7", "10", "x"))
        let decoded = try SetValue(decoding: set.encoded())
        #expect(decoded.members == set.members && decoded.large)
        let lookup = try EncodedLookup(set.encoded(), kind: .set)
        #expect(lookup.contains(Array("7".utf8)) && !lookup.contains(Array("8".utf8)))
        #expect(lookup.count == 4)
    }

    @Test func hashRoundTripsInOrderAndLooksUpInPlace() throws {
        var hash = HashValue()
        let added = [hash.set(Array("f".utf8), Array("1".utf8)), hash.set(Array("g".utf8), Array("2".utf8)),
                     hash.set(Array("f".utf8), Array("3".utf8))]
        #expect(added == [true, true, false])
        let removed = hash.remove(Array("g".utf8))
        #expect(removed)
        hash.set(Array("h".utf8), [])
        let bytes = hash.encoded()
        let decoded = try HashValue(decoding: bytes)
        #expect(decoded.fields == w("f", "h") && decoded.values == w("3", ""))
        let lookup = try EncodedLookup(bytes, kind: .hash)
        #expect(lookup.value(Array("f".utf8)).map(Array.init) == Array("3".utf8))
        #expect(lookup.value(Array("h".utf8)).map(Array.init) == [])
        #expect(lookup.value(Array("g".utf8)) == nil)
    }

    @Test func hashTakesTheLargeEncodingByRedisThresholds() {
        var limits = EncodingLimits()
        limits.hashMaxListpackValue = 4
        var hash = HashValue()
        hash.set(Array("f".utf8), Array("1234".utf8))
        hash.noteWrite(longestWritten: 4, limits: limits)
        #expect(hash.encodingName == "listpack")
        hash.noteWrite(longestWritten: 5, limits: limits)
        #expect(hash.encodingName == "hashtable")
    }

    @Test func sortedSetOrdersByScoreThenBytes() throws {
        var zset = ZSetValue()
        zset.set(Array("b".utf8), score: 1)
        zset.set(Array("a".utf8), score: 1)
        zset.set(Array("c".utf8), score: -2.5)
        zset.set(Array("b".utf8), score: 0)
        #expect(zset.members == w("c", "b", "a"))
        #expect(zset.scores == [-2.5, 0, 1])
        #expect(zset.rank(Array("a".utf8)) == 2)
        let decoded = try ZSetValue(decoding: zset.encoded())
        #expect(decoded.members == zset.members && decoded.scores == zset.scores)
        let lookup = try EncodedLookup(zset.encoded(), kind: .zset)
        #expect(lookup.score(Array("b".utf8)) == 0)
        #expect(lookup.position(0.5, Array("z".utf8)) == 2)
    }

    @Test(arguments: [(1.5, "m"), (-1.0, "a"), (2.0, "b"), (0.0, "zz")])
    func editingInPlaceMatchesDecoding(score: Double, member: String) throws {
        // EncodedZSet (ZADD of a few members to a big set) and ZSetValue agree byte for byte.
        var decoded = ZSetValue()
        for (s, m) in [(1.0, "a"), (2.0, "b"), (2.0, "c"), (3.0, "d")] { decoded.set(Array(m.utf8), score: s) }
        var inPlace = try EncodedZSet(decoded.encoded())
        try inPlace.set(Array(member.utf8), score: score)
        decoded.set(Array(member.utf8), score: score)
        #expect(inPlace.bytes == decoded.encoded())
    }

    @Test(arguments: [ValueKind.list, .set, .hash, .zset])
    func truncatedValuesAreRefusedNotTrusted(kind: ValueKind) throws {
        let bytes: [UInt8]
        switch kind {
        case .list: bytes = ListValue(w("one", "two")).encoded()
        case .set: bytes = { var s = SetValue(); s.add(Array("x".utf8), limits: EncodingLimits()); s.add(Array("yy".utf8), limits: EncodingLimits()); return s.encoded() }()
        case .hash: bytes = { var h = HashValue(); h.set(Array("f".utf8), Array("v".utf8)); return h.encoded() }()
        default: bytes = { var z = ZSetValue(); z.set(Array("m".utf8), score: 1); return z.encoded() }()
        }
        for length in 0..<bytes.count {
            let cut = Array(bytes.prefix(length))
            #expect(throws: ReplyError.corruptValue) {
                switch kind {
                case .list: _ = try ListValue(decoding: cut)
                case .set: _ = try SetValue(decoding: cut)
                case .hash: _ = try HashValue(decoding: cut)
                default: _ = try ZSetValue(decoding: cut)
                }
            }
        }
    }

    @Test func typeAndEncodingNamesAreRedis() {
        #expect(ValueKind.allCases.map(\.typeName) == ["string", "list", "set", "hash", "zset"])
        #expect(ValueKind(typeName: "zset") == .zset && ValueKind(typeName: "stream") == nil)
        func entry(_ value: String) -> SQLiteKVCache.Entry {
            SQLiteKVCache.Entry(key: [], storageDate: .init(), metadata: [], value: Array(value.utf8))
        }
        #expect(encodingName(of: entry("12345")) == "int")
        #expect(encodingName(of: entry(String(repeating: "a", count: 44))) == "embstr")
        #expect(encodingName(of: entry(String(repeating: "a", count: 45))) == "raw")
    }
}
