import Foundation
import Synchronization
import Testing
@testable import SQLiteKVCache

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let now = Mutex<Double>(1_700_000_000)
    var date: Date { Date(timeIntervalSince1970: now.withLock { $0 }) }
    var milliseconds: Int64 { Int64(now.withLock { $0 } * 1000) }
    func advance(seconds: Double) { now.withLock { $0 += seconds } }
}

@Suite("Expiry with an injected clock")
struct ExpiryTests {
    let dir = TemporaryDirectory()
    let clock = ManualClock()

    func cache(_ name: String = "exp", capacity: Int = 0, policy: EvictionPolicy = .fifo) -> SQLiteKVCache {
        let clock = self.clock
        return SQLiteKVCache(handle: name, directory: dir.path, configuration: .init(
            diskCapacity: capacity, evictionPolicy: policy, clock: { clock.date }))
    }

    @Test func expiredEntryIsNeverReturned() throws {
        let c = cache()
        try c.put(key: bytes("k"), storageDate: clock.date, metadata: [], value: bytes("v"), expiresAt: clock.milliseconds + 1000)
        #expect(try c.get(key: bytes("k"))?.value == bytes("v"))
        clock.advance(seconds: 0.999)
        #expect(try c.contains(key: bytes("k")))
        clock.advance(seconds: 0.001)  // exactly at the expiry time: gone
        #expect(try c.count() == 1, "still stored until touched or swept")
        #expect(try c.contains(key: bytes("k")) == false)
        #expect(try c.count() == 0, "deleted on access, as Redis's lazy expiry")
        #expect(try c.statistics().expired == 1)
        #expect(try c.get(key: bytes("k")) == nil)
    }

    @Test func sweepRemovesDueEntriesInBoundedBatches() throws {
        let c = cache()
        for i in 0..<500 {
            try c.put(key: bytes("short\(i)"), storageDate: clock.date, metadata: [], value: bytes("v"),
                      expiresAt: clock.milliseconds + 1000)
        }
        for i in 0..<10 { try c.put(key: bytes("long\(i)"), storageDate: clock.date, metadata: [], value: bytes("v"), expiresAt: clock.milliseconds + 60_000) }
        try c.put(key: bytes("forever"), storageDate: clock.date, metadata: [], value: bytes("v"))
        #expect(try c.removeExpired(limit: 100) == 0, "nothing is due yet")
        clock.advance(seconds: 2)
        #expect(try c.removeExpired(limit: 200) == 200)
        #expect(try c.removeExpired(limit: 200) == 200)
        #expect(try c.removeExpired(limit: 200) == 100)
        #expect(try c.removeExpired(limit: 200) == 0)
        #expect(try c.count() == 11)
        let stats = try c.statistics()
        #expect(stats.expired == 500)
        #expect(stats.volatileEntries == 10)
        #expect(try c.get(key: bytes("long3")) != nil)
        #expect(try c.get(key: bytes("forever")) != nil)
    }

    @Test func expiryHoldsAcrossReopen() throws {
        do {
            let c = cache("reopen")
            try c.put(key: bytes("k"), storageDate: clock.date, metadata: [], value: bytes("v"), expiresAt: clock.milliseconds + 1000)
            try c.put(key: bytes("k2"), storageDate: clock.date, metadata: [], value: bytes("v"), expiresAt: clock.milliseconds + 1000)
            c.close()
        }
        clock.advance(seconds: 1.5)
        let c = cache("reopen")
        #expect(try c.get(key: bytes("k")) == nil)
        #expect(try c.removeExpired(limit: 10) == 1, "k went on access; the sweep takes k2")
        #expect(try c.count() == 0)
    }

    @Test func setExpiryAndPersistKeepTotals() throws {
        let c = cache()
        try c.put(key: bytes("k"), storageDate: clock.date, metadata: [], value: bytes("v"))
        #expect(try c.setExpiry(key: bytes("k"), expiresAt: clock.milliseconds + 10_000))
        var stats = try c.statistics()
        #expect(stats.volatileEntries == 1)
        #expect(stats.meanExpiresAt == clock.milliseconds + 10_000)
        #expect(try c.setExpiry(key: bytes("k"), expiresAt: nil))
        stats = try c.statistics()
        #expect(stats.volatileEntries == 0)
        #expect(try c.setExpiry(key: bytes("missing"), expiresAt: 5) == false)
        // An expired entry counts as missing.
        try c.put(key: bytes("old"), storageDate: clock.date, metadata: [], value: [], expiresAt: clock.milliseconds + 1)
        clock.advance(seconds: 1)
        #expect(try c.setExpiry(key: bytes("old"), expiresAt: clock.milliseconds + 1000) == false)
        #expect(try c.delete(key: bytes("old")) == false, "deleting an expired entry is not a deletion")
        #expect(try c.count() == 1)
    }
}

@Suite("Keyspace walks")
struct KeyspaceTests {
    let dir = TemporaryDirectory()

    @Test func scanReturnsEveryKeyOnce() throws {
        let c = SQLiteKVCache(handle: "scan", directory: dir.path, diskCapacity: 0)
        let all = Set((0..<1000).map { "key:\($0)" })
        for key in all { try c.put(key: bytes(key), storageDate: Date(), metadata: [], value: []) }
        var seen: [String] = []
        var cursor: UInt64 = 0
        var calls = 0
        repeat {
            let step = try c.scan(cursor: cursor, count: 37)
            seen += step.keys.map { String(decoding: $0, as: UTF8.self) }
            cursor = step.next
            calls += 1
        } while cursor != 0 && calls < 1000
        #expect(calls > 10)
        #expect(seen.count == all.count)
        #expect(Set(seen) == all)
    }

    @Test func scanKeepsKeysPresentThroughoutDespiteChanges() throws {
        let c = SQLiteKVCache(handle: "scan2", directory: dir.path, diskCapacity: 0)
        let stable = Set((0..<300).map { "stable:\($0)" })
        for key in stable { try c.put(key: bytes(key), storageDate: Date(), metadata: [], value: []) }
        var seen = Set<String>()
        var cursor: UInt64 = 0
        var round = 0
        repeat {
            let step = try c.scan(cursor: cursor, count: 20)
            seen.formUnion(step.keys.map { String(decoding: $0, as: UTF8.self) })
            cursor = step.next
            // Churn between calls: add and remove other keys.
            for i in 0..<20 { try c.put(key: bytes("churn:\(round):\(i)"), storageDate: Date(), metadata: [], value: []) }
            if round > 0 { for i in 0..<20 { _ = try c.delete(key: bytes("churn:\(round - 1):\(i)")) } }
            round += 1
        } while cursor != 0 && round < 10_000
        #expect(stable.isSubset(of: seen))
    }

    @Test func randomKeyComesFromTheCache() throws {
        let c = SQLiteKVCache(handle: "random", directory: dir.path, diskCapacity: 0)
        #expect(try c.randomKey() == nil)
        let keys = Set((0..<50).map { "r\($0)" })
        for key in keys { try c.put(key: bytes(key), storageDate: Date(), metadata: [], value: []) }
        var drawn = Set<String>()
        for _ in 0..<200 {
            let key = try #require(try c.randomKey())
            drawn.insert(String(decoding: key, as: UTF8.self))
        }
        #expect(drawn.isSubset(of: keys))
        #expect(drawn.count > 10, "draws spread over the keys")
        #expect(Set(try c.keys().map { String(decoding: $0, as: UTF8.self) }) == keys)
    }
}

@Suite("Eviction policies")
struct PolicyTests {
    let dir = TemporaryDirectory()
    let clock = ManualClock()

    func cache(_ policy: EvictionPolicy, capacity: Int = 500) -> SQLiteKVCache {
        let clock = self.clock
        return SQLiteKVCache(handle: policy.rawValue, directory: dir.path, configuration: .init(
            diskCapacity: capacity, evictionPolicy: policy, clock: { clock.date }))
    }

    /// Five 100-byte entries k0...k4 fill a 500-byte cache.
    func fill(_ c: SQLiteKVCache, expiries: [Int64?] = [nil, nil, nil, nil, nil]) throws {
        for i in 0..<5 {
            try c.put(key: bytes("k\(i)"), storageDate: Date(timeIntervalSince1970: Double(i)), metadata: [],
                      value: [UInt8](repeating: 1, count: 98), expiresAt: expiries[i])
        }
    }

    func present(_ c: SQLiteKVCache) throws -> [String] {
        try (0..<5).filter { try c.contains(key: bytes("k\($0)")) }.map { "k\($0)" }
    }

    @Test func lruKeepsWhatWasRead() throws {
        let c = cache(.lru)
        try fill(c)
        _ = try c.get(key: bytes("k0"))
        _ = try c.get(key: bytes("k1"))
        try c.put(key: bytes("new"), storageDate: Date(), metadata: [], value: [UInt8](repeating: 1, count: 97))
        try c.put(key: bytes("ne2"), storageDate: Date(), metadata: [], value: [UInt8](repeating: 1, count: 97))
        #expect(try present(c) == ["k0", "k1", "k4"])
        #expect(try c.contentBytes() <= 500)
    }

    @Test func volatileTTLDropsSoonestExpiryFirst() throws {
        let c = cache(.volatileTTL)
        let now = clock.milliseconds
        try fill(c, expiries: [nil, now + 50_000, now + 10_000, nil, now + 30_000])
        for n in 0..<3 {
            try c.put(key: bytes("n\(n)"), storageDate: Date(), metadata: [], value: [UInt8](repeating: 1, count: 98))
        }
        // k2, k4, k1 by expiry; then none volatile is left among the old.
        #expect(try present(c) == ["k0", "k3"])
        try c.put(key: bytes("n3"), storageDate: Date(), metadata: [], value: [UInt8](repeating: 1, count: 98))
        #expect(try present(c) == ["k3"], "then the oldest without an expiry")
    }

    @Test func noevictionRefusesAndKeepsEverything() throws {
        let c = cache(.noeviction)
        try fill(c)
        #expect(throws: SQLiteKVCache.Error.capacityExceeded(capacity: 500)) {
            try c.put(key: bytes("new"), storageDate: Date(), metadata: [], value: [UInt8](repeating: 1, count: 97))
        }
        #expect(try present(c).count == 5)
        // Overwriting in place within capacity is still allowed.
        try c.put(key: bytes("k0"), storageDate: Date(), metadata: [], value: [UInt8](repeating: 2, count: 90))
        #expect(try c.get(key: bytes("k0"))?.value.first == 2)
    }

    @Test func policyAndCapacityChangeAtRunTime() throws {
        let c = cache(.fifo, capacity: 0)
        try fill(c)
        try c.setEvictionPolicy(.lru)
        _ = try c.get(key: bytes("k0"))
        #expect(try c.setCapacity(300, batchLimit: 1) == false, "one eviction per batch: not there yet")
        #expect(try c.evict(limit: 10))
        #expect(try c.contentBytes() <= 300)
        #expect(try present(c) == ["k0", "k3", "k4"])
    }
}
