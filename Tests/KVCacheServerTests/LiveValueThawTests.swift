import SQLiteKVCache
import Testing
@testable import KVCacheServer

private func b(_ text: String) -> [UInt8] { Array(text.utf8) }

/// `thawed()`: the value a command changes in place of a frozen one (a
/// batch in flight holds it). The frozen one must still encode what it held
/// when the batch took it; the thawed one must answer every lookup (its
/// indexes moved over) and take changes; thawing the same frozen value
/// twice (two entries holding it) still gives a whole value.
@Suite("Live value thaw")
struct LiveValueThawTests {
    @Test func sortedSetThawKeepsTheFrozenEncodingAndMovesTheIndex() throws {
        let zset = ZSetValue()
        for i in 0..<300 { zset.set(b("m\(i)"), score: Double(i % 17)) }
        let before = zset.encoded()
        zset.isFrozen = true
        let thawed = try #require(zset.thawed() as? ZSetValue)
        #expect(!thawed.isFrozen)
        #expect(thawed.count == 300)
        #expect(thawed.score(b("m42")) == Double(42 % 17))
        #expect(thawed.rank(b("m0")) == 0)
        thawed.set(b("m42"), score: 1000)
        thawed.remove(b("m0"))
        thawed.set(b("new"), score: -1)
        // The frozen value encodes what the batch took, unchanged by the thawed one's changes.
        #expect(zset.encoded() == before)
        #expect(zset.encodedSize == before.count)
        #expect(thawed.encodedSize == thawed.encoded().count)
        let decoded = try ZSetValue(decoding: thawed.encoded())
        #expect(decoded.allElements.map(\.member) == thawed.allElements.map(\.member))
        #expect(thawed.element(at: 0).member == b("new"))
        #expect(thawed.element(at: thawed.count - 1) == (b("m42"), 1000))
        #expect(thawed.tree.checkInvariants().ok)
        #expect(zset.tree.checkInvariants().ok)
        // Thawed a second time: rebuilt from the tree the frozen value kept.
        let again = try #require(zset.thawed() as? ZSetValue)
        #expect(again.count == 300)
        #expect(again.score(b("m42")) == Double(42 % 17))
        #expect(Set(again.unorderedMembers) == Set((0..<300).map { b("m\($0)") }))
        #expect(again.encoded() == before)
    }

    @Test func hashThawKeepsTheFrozenEncodingAndMovesTheIndex() throws {
        let hash = HashValue()
        for i in 0..<200 { hash.set(b("f\(i)"), b("v\(i)")) }
        let before = hash.encoded()
        hash.isFrozen = true
        let thawed = try #require(hash.thawed() as? HashValue)
        #expect(thawed[b("f7")] == b("v7"))
        thawed.set(b("f7"), b("changed"))
        thawed.remove(b("f8"))
        #expect(hash.encoded() == before)
        #expect(thawed[b("f7")] == b("changed"))
        #expect(thawed[b("f8")] == nil)
        #expect(thawed.count == 199)
        #expect(thawed.encodedSize == thawed.encoded().count)
        let again = try #require(hash.thawed() as? HashValue)
        #expect(again[b("f8")] == b("v8"))
        #expect(again.count == 200)
    }

    @Test func setThawKeepsTheFrozenEncodingAndMovesTheIndex() throws {
        let limits = EncodingLimits()
        let set = SetValue()
        for i in 0..<200 { set.add(b("s\(i)"), limits: limits) }
        let before = set.encoded()
        set.isFrozen = true
        let thawed = try #require(set.thawed() as? SetValue)
        #expect(thawed.contains(b("s5")))
        thawed.remove(b("s5"))
        thawed.add(b("extra"), limits: limits)
        #expect(set.encoded() == before)
        #expect(!thawed.contains(b("s5")))
        #expect(thawed.contains(b("extra")))
        #expect(thawed.count == 200)
        #expect(thawed.encodedSize == thawed.encoded().count)
        let again = try #require(set.thawed() as? SetValue)
        #expect(again.contains(b("s5")))
        #expect(!again.contains(b("extra")))
    }
}
