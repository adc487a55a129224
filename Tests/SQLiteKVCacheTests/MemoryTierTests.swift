import Foundation
import Testing
@testable import SQLiteKVCache

/// The memory tier on its own: byte accounting, the clock, and digests that
/// differ only past their first word (which the dictionary hashes alone)
/// never answering for each other.
@Suite("Memory tier")
struct MemoryTierTests {
    func digest(_ w0: UInt64, _ w3: UInt64) -> KeyDigest {
        var words = (w0.bigEndian, UInt64(0), UInt64(0), w3.bigEndian)
        return withUnsafeBytes(of: &words) { KeyDigest(bytes: $0) }
    }

    func entry(_ key: String, _ value: String) -> SQLiteKVCache.Entry {
        SQLiteKVCache.Entry(key: bytes(key), storageDate: Date(timeIntervalSince1970: 1_700_000_000), metadata: [],
                            value: bytes(value))
    }

    @Test func digestsSharingTheFirstWordNeverAnswerForEachOther() {
        let tier = MemoryTier(budget: 1 << 20)
        let a = digest(7, 1), b = digest(7, 2)
        tier.set(a, entry("a", "value of a"))
        #expect(tier.get(a)?.value == bytes("value of a"))
        #expect(tier.get(b) == nil)
        #expect(tier.peek(b) == nil)

        tier.set(b, entry("b", "value of b"))
        #expect(tier.get(a)?.value == bytes("value of a"))
        #expect(tier.get(b)?.value == bytes("value of b"))

        // Removing or re-timing a leaves b alone.
        tier.remove(a)
        tier.setExpiry(a, 123)
        #expect(tier.get(a) == nil)
        #expect(tier.get(b)?.expiresAt == nil)
        #expect(tier.count == 1)
        tier.remove(b)
        #expect(tier.count == 0 && tier.bytes == 0)
    }

    @Test func bytesFollowSetsReplacesAndRemoves() {
        let tier = MemoryTier(budget: 1 << 20)
        let d = digest(1, 1)
        tier.set(d, entry("k", "12345"))
        #expect(tier.bytes == 1 + 5 + MemoryTier.overhead)
        tier.set(d, entry("k", "123"))
        #expect(tier.bytes == 1 + 3 + MemoryTier.overhead)
        tier.set(digest(1, 9), entry("kk", "1"))  // same first word, another key
        #expect(tier.bytes == 1 + 3 + 2 + 1 + 2 * MemoryTier.overhead)
        tier.removeAll()
        #expect(tier.bytes == 0 && tier.count == 0)
    }

    @Test func theClockKeepsWhatWasReadAndStaysWithinBudget() {
        let cost = 2 + 1 + MemoryTier.overhead
        let tier = MemoryTier(budget: 4 * cost + cost / 2)  // room for four entries
        for i in 0..<4 { tier.set(digest(UInt64(10 + i), 0), entry("k\(i)", "v")) }
        #expect(tier.count == 4)
        #expect(tier.get(digest(10, 0)) != nil)  // k0 read: it gets a second chance
        tier.set(digest(20, 0), entry("k4", "v"))
        #expect(tier.count == 4 && tier.bytes <= tier.budget)
        #expect(tier.peek(digest(10, 0)) != nil)
        #expect(tier.peek(digest(11, 0)) == nil)  // the oldest unread entry went
        #expect(tier.peek(digest(20, 0)) != nil)
    }

    @Test func aZeroBudgetHoldsNothing() {
        let tier = MemoryTier(budget: 0)
        tier.set(digest(1, 1), entry("k", "v"))
        #expect(tier.count == 0 && tier.get(digest(1, 1)) == nil)
    }
}
