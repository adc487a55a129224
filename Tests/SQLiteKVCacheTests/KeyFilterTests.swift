import Foundation
import Testing
@testable import SQLiteKVCache

/// The Bloom filter of a file's keys: never "absent" for a key the file
/// holds, so the totals stay exact while new keys skip SQLite.
@Suite("Key filter")
struct KeyFilterTests {
    let dir = TemporaryDirectory()
    let hasher = KeyHasher()

    func engine(_ name: String = "f", tier: Int = 0) throws -> CacheEngine {
        var configuration = SQLiteKVCache.Configuration(memoryTierBytes: tier)
        configuration.durableCommits = true
        return try CacheEngine.open(handle: name, directory: dir.path, configuration: configuration)
    }

    func entry(_ key: String, _ value: String = "v") -> StoredEntry {
        StoredEntry(key: bytes(key), row: Row(storageDate: Date().timeIntervalSince1970, expiresAt: nil,
                                               kind: .string, metadata: [], value: .bytes(bytes(value))))
    }

    /// Leaves the cache file holding k0 … k4999, applied, and closed.
    func fileOf5000Keys(_ writer: BatchWriter) throws {
        let e = try engine()
        for i in 0..<5000 { try e.put(entry("k\(i)")) }
        flush(e, writer, lsn: 1)
        e.close()
    }

    @Test func insertedDigestsAreAlwaysFoundAndOthersRarely() {
        let filter = KeyFilter(capacity: 100_000)
        for i in 0..<100_000 { filter.insert(hasher.digest(bytes("in:\(i)"))) }
        for i in 0..<100_000 { #expect(filter.mightContain(hasher.digest(bytes("in:\(i)")))) }
        let falsePositives = (0..<100_000).filter { filter.mightContain(hasher.digest(bytes("out:\($0)"))) }.count
        #expect(falsePositives < 1_000, "false positives at capacity: \(falsePositives) of 100,000 (about 0.3% expected)")
        #expect(filter.isFull)
    }

    @Test func aUnionHoldsBothFilters() {
        let a = KeyFilter(capacity: 4096), b = KeyFilter(capacity: 4096)
        a.insert(hasher.digest(bytes("a")))
        b.insert(hasher.digest(bytes("b")))
        a.formUnion(b)
        #expect(a.mightContain(hasher.digest(bytes("a"))) && a.mightContain(hasher.digest(bytes("b"))))
    }

    @Test func layersGrowPastTheFirstOnesCapacity() {
        let keys = FileKeys()
        keys.reset()
        for i in 0..<200_000 { keys.insert(hasher.digest(bytes("k\(i)"))) }
        for i in 0..<200_000 { #expect(keys.mayHold(hasher.digest(bytes("k\(i)")))) }
        #expect(keys.memoryBytes > 200_000 * KeyFilter.bitsPerKey / 8)
    }

    @Test func anEmptyFileIsKnownAtOnceAndNewKeysSkipTheFile() throws {
        let e = try engine()
        #expect(e.keyFilterReady, "an empty file needs no scan")
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        for i in 0..<1000 { try e.put(entry("k\(i)")) }
        #expect(e.count == 1000)
        flush(e, writer, lsn: 1)
        // Memory keeps nothing clean (tier 0): old keys come from the file, new ones are known new.
        let spared = e.keyFilterSpared
        for i in 0..<1000 { try e.put(entry("k\(i)", "again")) }
        for i in 1000..<2000 { try e.put(entry("k\(i)")) }
        #expect(e.count == 2000, "overwrites of keys in the file are not counted as new")
        #expect(e.keyFilterSpared - spared >= 900, "new keys skip the file")
        flush(e, writer, lsn: 2)
        #expect(try e.get(bytes("k5"))?.row.value.bytes == bytes("again"))
    }

    @Test func aReopenedFileIsScannedAndTheTotalsStayExact() throws {
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        try fileOf5000Keys(writer)
        let e = try engine()
        // Writes while the scan runs: the filter takes them as well.
        for i in 0..<100 { try e.put(entry("k\(i)", "while scanning")) }
        for i in 5000..<5100 { try e.put(entry("k\(i)")) }
        e.waitForKeyFilter()
        #expect(e.keyFilterReady)
        #expect(e.count == 5100)
        flush(e, writer, lsn: 2)
        for i in 0..<5200 { try e.put(entry("k\(i)", "last")) }
        #expect(e.count == 5200, "every key of the file was found again")
        flush(e, writer, lsn: 3)
        e.close()
        let reopened = try engine()
        #expect(reopened.count == 5200)
        #expect(try reopened.get(bytes("k42"))?.row.value.bytes == bytes("last"))
    }

    /// As the server opens its caches while it replays its log: no scan
    /// until it is asked for, and then the keys written meanwhile (not yet
    /// in the file, handed to the scan's thread) are in the filter too.
    @Test func aHeldScanStartsWhenAskedAndTakesTheKeysWrittenMeanwhile() throws {
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        try fileOf5000Keys(writer)
        var configuration = SQLiteKVCache.Configuration(memoryTierBytes: 0)
        configuration.durableCommits = true
        configuration.scansKeysAtOpen = false
        let e = try CacheEngine.open(handle: "f", directory: dir.path, configuration: configuration)
        e.waitForKeyFilter()
        #expect(!e.keyFilterReady, "no scan before it is asked for")
        for i in 5000..<5100 { try e.put(entry("k\(i)")) }
        e.buildFileKeysIfWanted()
        e.waitForKeyFilter()
        #expect(try e.get(bytes("k1")) != nil)  // a lookup takes the finished scan
        #expect(e.keyFilterReady)
        flush(e, writer, lsn: 2)
        for i in 0..<5100 { try e.put(entry("k\(i)", "last")) }
        #expect(e.count == 5100, "the keys written before the scan started are known to be in the file")
        #expect(e.keyFilterSpared == 0, "no key of the file was ruled out")
    }

    @Test func aClearStartsTheFilterOver() throws {
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        let e = try engine()
        for i in 0..<300 { try e.put(entry("k\(i)")) }
        flush(e, writer, lsn: 1)
        e.clear()
        try e.put(entry("k1"))
        #expect(e.count == 1)
        flush(e, writer, lsn: 2)
        try e.put(entry("k1", "again"))
        try e.put(entry("k2"))
        #expect(e.count == 2, "k1 is in the file after the clear, k2 is new")
        #expect(try e.get(bytes("k3")) == nil)
    }
}

/// A slot not kept alive by the test.
struct WeakSlot {
    weak var slot: KeySlot?
}

/// The key table's open-addressing index against a Dictionary model.
@Suite("Slot index")
struct SlotIndexTests {
    let hasher = KeyHasher()

    /// Puts a slot for each of the keys `prefix`0 to `prefix`(count - 1)
    /// into `index`; returns their digests and slots, in key order.
    func fill(_ index: inout SlotIndex, prefix: String, count: Int) -> (digests: [KeyDigest], slots: [KeySlot]) {
        var digests: [KeyDigest] = [], slots: [KeySlot] = []
        for i in 0..<count {
            let key = bytes("\(prefix)\(i)")
            digests.append(hasher.digest(key))
            slots.append(KeySlot.make(digest: digests[i], key: key, row: nil))
            index[digests[i]] = slots[i]
        }
        return (digests, slots)
    }

    /// The index's slots, in no order.
    func contents(_ index: borrowing SlotIndex) -> Set<ObjectIdentifier> {
        var all = Set<ObjectIdentifier>()
        index.forEachSlot { all.insert(ObjectIdentifier($0)); return true }
        return all
    }

    @Test func randomInsertsAndRemovalsMatchADictionary() {
        var index = SlotIndex()
        var model: [KeyDigest: KeySlot] = [:]
        var random = FastRandom(seed: 42)
        for step in 0..<200_000 {
            let key = bytes("k\(random.next() % 20_000)")
            let digest = hasher.digest(key)
            switch random.next() % 3 {
            case 0, 1:
                let slot = KeySlot.make(digest: digest, key: key, row: nil)
                index[digest] = slot
                model[digest] = slot
            default:
                index[digest] = nil
                model[digest] = nil
            }
            if step % 20_000 == 0 {
                #expect(index.count == model.count)
                for (digest, slot) in model { #expect(index[digest] === slot) }
            }
        }
        #expect(index.count == model.count)
        for i in 0..<20_000 {
            let digest = hasher.digest(bytes("k\(i)"))
            #expect(index[digest] === model[digest])
        }
        #expect(contents(index) == Set(model.values.map(ObjectIdentifier.init)))
        index.removeAll()
        #expect(index.count == 0 && index[hasher.digest(bytes("k1"))] == nil)
    }

    /// A resize moves a few runs per change: meanwhile every way in (by
    /// digest, by slot, by bucket, random picks, passes) sees each slot
    /// once, through growth and shrinking alike.
    @Test func aResizeAPartAtATimeLosesNothing() {
        var index = SlotIndex()
        index.resizeAtOnceBelow = 64
        var model: [KeyDigest: KeySlot] = [:]
        var random = FastRandom(seed: 11)
        var sawResizing = 0
        let keys = (0..<12_000).map { bytes("m\($0)") }
        let digests = keys.map { hasher.digest($0) }
        for step in 0..<120_000 {
            // Grow to ~12,000 keys, shrink to ~300, grow again.
            let phase = step / 40_000
            let k = Int(random.next() % 12_000)
            let key = keys[k], digest = digests[k]
            let insert = phase == 1 ? random.next() % 8 == 0 : random.next() % 4 != 0
            if insert {
                let slot = KeySlot.make(digest: digest, key: key, row: nil)
                index[digest] = slot
                model[digest] = slot
            } else if let slot = model[digest] {
                switch random.next() % 3 {
                case 0: index[digest] = nil
                case 1: index.remove(slot)
                default:
                    var i = 0
                    while index.slot(atBucket: i) !== slot { i += 1 }
                    index.remove(atBucket: i)
                }
                model[digest] = nil
            }
            if index.resizing {
                sawResizing += 1
                for _ in 0..<8 {
                    let d = digests[Int(random.next() % 12_000)]
                    #expect(index[d] === model[d])
                }
            }
            if step % 997 == 0 || (index.resizing && step % 101 == 0) {
                #expect(index.count == model.count)
                for (digest, slot) in model { #expect(index[digest] === slot) }
                #expect(contents(index) == Set(model.values.map(ObjectIdentifier.init)))
                if let picked = index.randomSlot(using: &random) { #expect(model[picked.digest()] === picked) }
                if index.resizing && model.count >= 2_000 {
                    // Random picks spread over the slots, not onto the run after the moved buckets.
                    var picked = Set<ObjectIdentifier>()
                    for _ in 0..<200 { index.randomSlot(using: &random).map { picked.insert(ObjectIdentifier($0)) } }
                    #expect(picked.count >= 150, "\(picked.count) distinct of 200 picks over \(model.count) slots")
                }
                var byBucket = 0
                for i in 0..<index.capacity where index.slot(atBucket: i) != nil { byBucket += 1 }
                #expect(byBucket == model.count)
            }
        }
        #expect(sawResizing > 1_000, "the resizes went a part at a time")
        index.finishResize()
        #expect(!index.resizing && index.count == model.count)
        for (digest, slot) in model { #expect(index[digest] === slot) }
        // Every slot let go once: none kept alive by a moved bucket.
        let held = model.values.map { WeakSlot(slot: $0) }
        model = [:]
        #expect(held.allSatisfy { $0.slot != nil })
        index.removeAll()
        #expect(held.allSatisfy { $0.slot == nil })
    }

    @Test func aFullIndexShiftsRunsBackPastFifteenBucketsFromHome() {
        // At 3/4 load some runs are longer than the 4 bits a bucket keeps
        // for its distance from home: removals then take the home from the digest.
        var index = SlotIndex()
        var random = FastRandom(seed: 9)
        let (digests, slots) = fill(&index, prefix: "f", count: 24_000)
        #expect(index.capacity == 32_768)
        #expect(index.farFromHomeCount > 0, "no run reached 15 buckets")
        var present = Set(0..<digests.count)
        for _ in 0..<12_000 {
            let i = Int(random.next() % UInt64(digests.count))
            guard present.remove(i) != nil else { continue }
            if i % 2 == 0 { index[digests[i]] = nil } else { index.remove(slots[i]) }
        }
        #expect(index.count == present.count)
        for i in 0..<digests.count { #expect((index[digests[i]] === slots[i]) == present.contains(i)) }
    }

    @Test func theIndexHoldsItsSlotsUntilItLetsThemGo() {
        var index = SlotIndex()
        let digests = (0..<3).map { hasher.digest(bytes("w\($0)")) }
        weak var replaced: KeySlot?
        weak var removed: KeySlot?
        weak var cleared: KeySlot?
        do {
            let a = KeySlot.make(digest: digests[0], key: bytes("w0"), row: nil)
            let b = KeySlot.make(digest: digests[1], key: bytes("w1"), row: nil)
            let c = KeySlot.make(digest: digests[2], key: bytes("w2"), row: nil)
            replaced = a; removed = b; cleared = c
            index[digests[0]] = a
            index[digests[1]] = b
            index[digests[2]] = c
        }
        #expect(replaced != nil && removed != nil && cleared != nil, "the index keeps them")
        index[digests[0]] = KeySlot.make(digest: digests[0], key: bytes("w0"), row: nil)
        #expect(replaced == nil)
        index.remove(removed!)
        #expect(removed == nil)
        #expect(cleared != nil)
        index.removeAll()
        #expect(cleared == nil)
        // Through growth, removals that shift runs back, and the index's end.
        weak var last: KeySlot?
        do {
            var grown = SlotIndex()
            var weakSlots: [WeakSlot] = []
            for i in 0..<5_000 {
                let d = hasher.digest(bytes("g\(i)"))
                let slot = KeySlot.make(digest: d, key: bytes("g\(i)"), row: nil)
                weakSlots.append(WeakSlot(slot: slot))
                grown[d] = slot
            }
            for i in stride(from: 1, to: 5_000, by: 2) { grown[hasher.digest(bytes("g\(i)"))] = nil }
            #expect(weakSlots.enumerated().allSatisfy { ($0.element.slot != nil) == ($0.offset % 2 == 0) },
                    "removed slots are let go, kept ones held")
            last = weakSlots[4_998].slot
            #expect(last != nil)
        }
        #expect(last == nil, "the index's end lets its slots go")
    }

    @Test func reservingKeepsEverySlot() {
        var index = SlotIndex()
        let digests = fill(&index, prefix: "r", count: 1000).digests
        index.reserveCapacity(100_000)
        #expect(index.capacity >= 131_072)
        for digest in digests { #expect(index[digest]?.digest() == digest) }
    }

    @Test func removalsGiveBucketsBackAndRandomPicksFindEveryRemainingSlot() {
        var index = SlotIndex()
        var random = FastRandom(seed: 7)
        #expect(index.randomSlot(using: &random) == nil)
        let (digests, slots) = fill(&index, prefix: "s", count: 10_000)
        #expect(index.capacity >= 16_384)
        // Half by digest, half by the slot itself (eviction's way: no digest computed).
        for i in 10..<5_000 { index[digests[i]] = nil }
        for i in 5_000..<10_000 { index.remove(slots[i]) }
        #expect(index.count == 10 && index.capacity <= 128)
        for digest in digests.prefix(10) { #expect(index[digest]?.digest() == digest) }
        #expect(index[digests[10]] == nil && index[digests[9_999]] == nil)
        var picked = Set<KeyDigest>()
        for _ in 0..<1_000 {
            guard let slot = index.randomSlot(using: &random) else { break }
            picked.insert(slot.digest())
        }
        #expect(picked == Set(digests.prefix(10)))
    }
}
