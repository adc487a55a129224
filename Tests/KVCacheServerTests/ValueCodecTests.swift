import SQLiteKVCache
import Testing
@testable import KVCacheServer

private func w(_ list: String...) -> [[UInt8]] { list.map { Array($0.utf8) } }
private func b(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A small deterministic generator, so a failing sequence can be replayed.
private struct Generator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state ^ (state >> 29)
    }
}

/// The live values (lists, sets, hashes, sorted sets), their encoding, and
/// the size each keeps of its encoding: `encodedSize == encoded().count`
/// after every operation.
@Suite("Value codec")
struct ValueCodecTests {
    static let lists: [[[UInt8]]] = [
        [], w(""), w("a"), w("a", "b", "c"), [[UInt8](repeating: 7, count: 200), [], [0, 255, 13, 10]],
        (0..<300).map { Array("element-\($0)".utf8) },
    ]

    @Test(arguments: lists)
    func listRoundTrips(items: [[UInt8]]) throws {
        let list = ListValue(items)
        let bytes = list.encoded()
        #expect(bytes.count == list.encodedSize)
        #expect(Array(try ListValue(decoding: bytes).items) == items)
    }

    /// Encoding is linear in the list's size: it once copied the whole
    /// output per element (a million-element list took minutes to encode,
    /// and the writer held shutdown that long). 200,000 elements take well
    /// under a second even in a debug build; quadratic, hours.
    @Test func aLargeListEncodesInLinearTime() throws {
        let list = ListValue((0..<200_000).map { Array("element:\($0)".utf8) })
        let started = ContinuousClock.now
        let bytes = list.encoded()
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(bytes.count == list.encodedSize)
        #expect(try ListValue(decoding: bytes).count == 200_000)
    }

    @Test func listKeepsItsEncodedSizeThroughEveryChange() throws {
        var random = Generator(state: 1)
        let list = ListValue()
        var model: [[UInt8]] = []
        for step in 0..<3000 {
            let element = [UInt8](repeating: UInt8(step & 0xff), count: Int.random(in: 0...300, using: &random))
            switch Int.random(in: 0..<8, using: &random) {
            case 0: list.append(element); model.append(element)
            case 1: list.prepend(element); model.insert(element, at: 0)
            case 2: _ = list.pop(2, fromHead: true); model.removeFirst(min(2, model.count))
            case 3: _ = list.pop(1, fromHead: false); if !model.isEmpty { model.removeLast() }
            case 4 where !model.isEmpty:
                let i = Int.random(in: 0..<model.count, using: &random)
                list.set(element, at: i); model[i] = element
            case 5:
                let i = Int.random(in: 0...model.count, using: &random)
                list.insert(element, at: i); model.insert(element, at: i)
            case 6 where model.count > 4:
                list.trim(to: 1...(model.count - 2)); model = Array(model[1...(model.count - 2)])
            default:
                list.removeAll { i, _ in i % 7 == 3 }
                model = model.enumerated().filter { $0.offset % 7 != 3 }.map(\.element)
            }
            #expect(list.encodedSize == list.encoded().count)
        }
        #expect(Array(list.items) == model)
        #expect(Array(try ListValue(decoding: list.encoded()).items) == model)
    }

    @Test func setKeepsIntsetOrderUntilLarge() throws {
        let limits = EncodingLimits()
        let set = SetValue()
        for member in w("10", "-3", "7", "10") { set.add(member, limits: limits) }
        #expect(set.allMembers == w("-3", "7", "10"))
        #expect(set.encodingName == "intset")
        #expect(set.contains(b("7")) && !set.contains(b("8")) && !set.contains(b("x")))
        set.add(b("x"), limits: limits)
        #expect(set.encodingName == "hashtable")
        #expect(set.allMembers == w("-3", "7", "10", "x"))
        let decoded = try SetValue(decoding: set.encoded())
        #expect(decoded.allMembers == set.allMembers && decoded.large)
        #expect(decoded.count == 4 && decoded.contains(b("7")))
    }

    @Test func setTakesTheHashtableEncodingPastTheIntsetLimit() {
        var limits = EncodingLimits()
        limits.setMaxIntsetEntries = 3
        let set = SetValue()
        for i in 0..<3 { set.add(b(String(i)), limits: limits) }
        #expect(set.encodingName == "intset")
        set.add(b("3"), limits: limits)
        #expect(set.encodingName == "hashtable")
        set.remove(b("3"))
        #expect(set.encodingName == "hashtable")  // never undone, as in Redis
        set.settleEncoding(limits: limits)      // but a reload settles it
        #expect(set.encodingName == "intset")
    }

    @Test(arguments: [0, 20])
    func setKeepsItsEncodedSizeThroughEveryChange(intsetLimit: Int) throws {
        var random = Generator(state: UInt64(intsetLimit) + 7)
        var limits = EncodingLimits()
        limits.setMaxIntsetEntries = intsetLimit
        let set = SetValue()
        var model = Set<[UInt8]>()
        for _ in 0..<4000 {
            let member = Bool.random(using: &random) ? b(String(Int.random(in: -50...50, using: &random)))
                : b("m\(Int.random(in: 0..<60, using: &random))")
            if Int.random(in: 0..<3, using: &random) == 0 {
                #expect(set.remove(member) == (model.remove(member) != nil))
            } else {
                #expect(set.add(member, limits: limits) == model.insert(member).inserted)
            }
            #expect(set.encodedSize == set.encoded().count)
            #expect(set.count == model.count)
        }
        #expect(Set(set.allMembers) == model)
        for member in model { #expect(set.contains(member)) }
        let decoded = try SetValue(decoding: set.encoded())
        #expect(Set(decoded.allMembers) == model && decoded.encodedSize == set.encodedSize)
    }

    @Test func hashRoundTripsInOrder() throws {
        let hash = HashValue()
        let added = [hash.set(b("f"), b("1")), hash.set(b("g"), b("2")), hash.set(b("f"), b("3"))]
        #expect(added == [true, true, false])
        #expect(hash.remove(b("g")))
        hash.set(b("h"), [])
        let decoded = try HashValue(decoding: hash.encoded())
        #expect(decoded.fields == w("f", "h") && decoded.values == w("3", ""))
        #expect(decoded[b("f")] == b("3") && decoded[b("h")] == [] && decoded[b("g")] == nil)
    }

    @Test func hashTakesTheLargeEncodingByRedisThresholds() {
        var limits = EncodingLimits()
        limits.hashMaxListpackValue = 4
        let hash = HashValue()
        hash.set(b("f"), b("1234"))
        hash.noteWrite(longestWritten: 4, limits: limits)
        #expect(hash.encodingName == "listpack")
        hash.noteWrite(longestWritten: 5, limits: limits)
        #expect(hash.encodingName == "hashtable")
    }

    @Test(arguments: [false, true])
    func hashKeepsItsEncodedSizeThroughEveryChange(large: Bool) throws {
        var random = Generator(state: large ? 3 : 4)
        var limits = EncodingLimits()
        if large { limits.hashMaxListpackEntries = 0 }
        let hash = HashValue()
        var model: [[UInt8]: [UInt8]] = [:]
        var order: [[UInt8]] = []
        for _ in 0..<4000 {
            let field = b("f\(Int.random(in: 0..<80, using: &random))")
            if Int.random(in: 0..<3, using: &random) == 0 {
                #expect(hash.remove(field) == (model.removeValue(forKey: field) != nil))
                order.removeAll { $0 == field }
            } else {
                let value = [UInt8](repeating: 65, count: Int.random(in: 0...200, using: &random))
                #expect(hash.set(field, value) == (model.updateValue(value, forKey: field) == nil))
                if !order.contains(field) { order.append(field) }
                hash.noteWrite(longestWritten: 0, limits: limits)
            }
            #expect(hash.encodedSize == hash.encoded().count)
        }
        #expect(hash.count == model.count)
        for (field, value) in model { #expect(hash[field] == value) }
        if !large { #expect(hash.fields == order) }  // a listpack keeps insertion order
        let decoded = try HashValue(decoding: hash.encoded())
        #expect(decoded.fields == hash.fields && decoded.values == hash.values)
    }

    @Test func sortedSetOrdersByScoreThenBytes() throws {
        let zset = ZSetValue()
        zset.set(b("b"), score: 1)
        zset.set(b("a"), score: 1)
        zset.set(b("c"), score: -2.5)
        zset.set(b("b"), score: 0)
        #expect(zset.allElements.map(\.member) == w("c", "b", "a"))
        #expect(zset.allElements.map(\.score) == [-2.5, 0, 1])
        #expect(zset.rank(b("a")) == 2)
        let decoded = try ZSetValue(decoding: zset.encoded())
        #expect(decoded.allElements.map(\.member) == w("c", "b", "a"))
        #expect(decoded.score(b("b")) == 0)
        // Shorter first on a common prefix, bytes compared unsigned.
        zset.set(b("ab"), score: 1)
        zset.set([0xff], score: 1)
        #expect(zset.allElements.map(\.member) == [b("c"), b("b"), b("a"), b("ab"), [0xff]])
    }

    @Test func sortedSetRangesByScoreAndByMember() {
        let zset = ZSetValue()
        for (i, name) in ["a", "b", "c", "d", "e"].enumerated() { zset.set(b(name), score: Double(i)) }
        #expect(zset.countBelow(2, orEqual: false) == 2 && zset.countBelow(2, orEqual: true) == 3)
        #expect(zset.countBelow(-1, orEqual: true) == 0 && zset.countBelow(10, orEqual: false) == 5)
        #expect(zset.elements(1..<4).map(\.member) == w("b", "c", "d"))
        #expect(zset.elements(1..<4, reverse: true).map(\.member) == w("d", "c", "b"))
        let same = ZSetValue()
        for name in ["alpha", "bar", "cool", "down"] { same.set(b(name), score: 0) }
        #expect(same.countMembersBelow(b("bar"), orEqual: false) == 1)
        #expect(same.countMembersBelow(b("bar"), orEqual: true) == 2)
        #expect(same.countMembersBelow(b("c"), orEqual: false) == 2)
        let removed = zset.removeRanks(1..<3)
        #expect(removed.map(\.member) == w("b", "c"))
        #expect(zset.allElements.map(\.member) == w("a", "d", "e") && zset.score(b("b")) == nil)
        #expect(zset.encodedSize == zset.encoded().count)
    }

    @Test(arguments: [1, 2, 3])
    func sortedSetMatchesAModelAndKeepsItsTreeSound(seed: UInt64) throws {
        var random = Generator(state: seed)
        let zset = ZSetValue()
        var model: [[UInt8]: Double] = [:]
        func sorted() -> [(member: [UInt8], score: Double)] {
            model.map { ($0.key, $0.value) }.sorted { ZSetValue.precedes($0.score, $0.member, $1.score, $1.member) }
        }
        for step in 0..<6000 {
            let member = b("m\(Int.random(in: 0..<400, using: &random))")
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                let score = Double(Int.random(in: -20...20, using: &random)) / 2
                zset.set(member, score: score)
                model[member] = score
            case 5..<8:
                #expect(zset.remove(member) == (model.removeValue(forKey: member) != nil))
            case 8 where zset.count > 10:
                let start = Int.random(in: 0..<(zset.count - 5), using: &random)
                let expected = sorted()[start..<(start + 3)]
                let removed = zset.removeRanks(start..<(start + 3))
                #expect(removed.map(\.member) == expected.map(\.member))
                for (m, _) in removed { model[m] = nil }
            default:
                if let score = model[member] {
                    #expect(zset.rank(member) == sorted().firstIndex { $0.member == member })
                    #expect(zset.score(member) == score)
                } else {
                    #expect(zset.rank(member) == nil)
                }
            }
            #expect(zset.encodedSize == zset.encoded().count)
            if step % 500 == 0 {
                let check = zset.tree.checkInvariants()
                #expect(check.ok)
            }
        }
        let expected = sorted()
        #expect(zset.allElements.map(\.member) == expected.map(\.member))
        #expect(zset.allElements.map(\.score) == expected.map(\.score))
        for (rank, element) in expected.enumerated() where rank % 17 == 0 {
            #expect(zset.element(at: rank).member == element.member)
        }
        let decoded = try ZSetValue(decoding: zset.encoded())
        #expect(decoded.allElements.map(\.member) == expected.map(\.member))
        #expect(decoded.tree.checkInvariants().ok)
    }

    @Test func aLargeSortedSetStaysShallow() throws {
        let zset = ZSetValue()
        for i in 0..<100_000 { zset.set(b("member:\(i)"), score: Double(i % 1000)) }
        let check = zset.tree.checkInvariants()
        #expect(check.ok)
        #expect(check.depth < 60, "a treap of 100,000 elements \(check.depth) deep")
        // Built from its encoding (balanced), then changed at random: still shallow.
        let decoded = try ZSetValue(decoding: zset.encoded())
        #expect(decoded.tree.checkInvariants().depth <= 18)
        for i in 0..<20_000 { decoded.remove(b("member:\(i * 5)")) }
        for i in 0..<20_000 { decoded.set(b("new:\(i)"), score: Double(i)) }
        let after = decoded.tree.checkInvariants()
        #expect(after.ok && after.depth < 60)
        #expect(decoded.count == 100_000)
    }

    @Test(arguments: [ValueKind.list, .set, .hash, .zset])
    func truncatedValuesAreRefusedNotTrusted(kind: ValueKind) throws {
        let bytes: [UInt8]
        switch kind {
        case .list: bytes = ListValue(w("one", "two")).encoded()
        case .set: bytes = { let s = SetValue(); s.add(b("x"), limits: EncodingLimits()); s.add(b("yy"), limits: EncodingLimits()); return s.encoded() }()
        case .hash: bytes = { let h = HashValue(); h.set(b("f"), b("v")); return h.encoded() }()
        default: bytes = { let z = ZSetValue(); z.set(b("m"), score: 1); return z.encoded() }()
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
        #expect(ValueKind.allCases.map(\.typeName) == ["string", "list", "set", "hash", "zset", "stream"])
        #expect(ValueKind(typeName: "zset") == .zset && ValueKind(typeName: "stream") == .stream)
        #expect(ValueKind(typeName: "module") == nil)
        #expect(stringEncodingName(b("12345")) == "int")
        #expect(stringEncodingName(b(String(repeating: "a", count: 44))) == "embstr")
        #expect(stringEncodingName(b(String(repeating: "a", count: 45))) == "raw")
        func entry(_ kind: ValueKind, _ value: LiveValue) -> StoredEntry {
            StoredEntry(key: [], row: Row(storageDate: 0, expiresAt: nil, kind: kind, metadata: [], value: .live(value)))
        }
        let set = SetValue()
        set.add(b("1"), limits: EncodingLimits())
        #expect(encodingName(of: entry(.set, set)) == "intset")
        let bytes = StoredEntry(key: [], row: Row(storageDate: 0, expiresAt: nil, kind: .set, metadata: [],
                                                  value: .bytes(set.encoded())))
        #expect(encodingName(of: bytes) == "intset")
        set.add(b("x"), limits: EncodingLimits())
        #expect(encodingName(of: entry(.set, set)) == "hashtable")
        #expect(encodingName(of: entry(.zset, ZSetValue())) == "listpack")
        #expect(encodingName(of: entry(.list, ListValue())) == "quicklist")
    }
}
