import Foundation
import Testing
@testable import SQLiteKVCache

/// The engine as the server drives it: changes in memory, batches sealed
/// and applied on the writer thread, reads answering the current state all
/// along.
@Suite("Writer thread")
struct WriterTests {
    let dir = TemporaryDirectory()

    func engine(_ name: String = "w", capacity: Int = 0, tier: Int = 1 << 20,
                heldReads: HeldReads? = nil) throws -> CacheEngine {
        var configuration = SQLiteKVCache.Configuration(diskCapacity: capacity, memoryTierBytes: tier)
        configuration.durableCommits = true
        configuration.heldReads = heldReads
        return try CacheEngine.open(handle: name, directory: dir.path, configuration: configuration)
    }

    func entry(_ key: String, _ value: String, expiresAt: Int64? = nil) -> StoredEntry {
        StoredEntry(key: bytes(key), row: Row(storageDate: Date().timeIntervalSince1970, expiresAt: expiresAt,
                                               kind: .string, metadata: [], value: .bytes(bytes(value))))
    }

    /// The put of a replayed log record holding `entry`.
    func replayPut(_ engine: CacheEngine, _ entry: StoredEntry) throws {
        try entry.key.withUnsafeBytes { key in
            try entry.row.metadata.withUnsafeBytes { metadata in
                try entry.row.value.bytes.withUnsafeBytes { value in
                    try engine.replayPut(key: key, kind: entry.row.kind, storageDate: entry.row.storageDate,
                                         expiresAt: entry.row.expiresAt, metadata: metadata, value: value)
                }
            }
        }
    }

    func value(_ engine: CacheEngine, _ key: String) throws -> String? {
        try engine.get(bytes(key)).map { String(decoding: $0.row.value.bytes, as: UTF8.self) }
    }

    /// Keys looked up ahead (a pipeline's) are read and written as any
    /// others: each digest kept is used only for the bytes at its key's
    /// address, a key given elsewhere is hashed as usual, and after
    /// `endPrefetch()` nothing kept is used.
    @Test func keysLookedUpAheadAreReadAndWrittenAsOthers() throws {
        let e = try engine()
        for i in 0..<50 { try e.put(entry("k\(i)", "v\(i)")) }
        let keys = (0..<8).map { bytes("k\($0 * 7)") } + [bytes("new")]
        let views = keys.map { key in key.withUnsafeBytes { UnsafeRawBufferPointer(start: $0.baseAddress, count: $0.count) } }
        // The arrays outlive the views; their bytes do not move meanwhile.
        try withExtendedLifetime(keys) {
            e.prefetch(views)
            #expect(e.digestsAhead.count == keys.count)
            let none = UnsafeRawBufferPointer(start: nil, count: 0)
            // A shorter key at a kept key's address ("k1" in "k14") is its own key.
            let prefix = UnsafeRawBufferPointer(start: views[2].baseAddress, count: 2)
            #expect(try e.withValue(prefix) { _, view -> [UInt8] in
                if case .bytes(let b) = view { return Array(b) }
                return []
            } == bytes("v1"))
            // Out of order and with a key not looked up ahead in between.
            for index in [1, 0, 2, 8] {
                let found = try e.withValue(views[index]) { _, view -> [UInt8] in
                    switch view {
                    case .bytes(let b): return Array(b)
                    case .live: return []
                    }
                }
                #expect(found == (index == 8 ? nil : bytes("v\(index * 7)")))
            }
            let other = bytes("k3")
            try other.withUnsafeBytes { key in
                try bytes("changed").withUnsafeBytes { value in
                    try e.put(key: key, kind: .string, storageDate: 0, expiresAt: nil, metadata: none, value: value)
                }
            }
            try bytes("fresh").withUnsafeBytes { value in
                try e.put(key: views[8], kind: .string, storageDate: 0, expiresAt: nil, metadata: none, value: value)
            }
            e.endPrefetch()
            #expect(e.digestsAhead.isEmpty)
        }
        #expect(try value(e, "k3") == "changed")
        #expect(try value(e, "new") == "fresh")
        #expect(try value(e, "k7") == "v7")
        #expect(e.count == 51)
        // After endPrefetch() an address once looked up ahead is hashed
        // again: other bytes there ("x10", absent) are not taken for "k10".
        var buffer = bytes("k10")
        try buffer.withUnsafeMutableBytes { (raw) throws -> Void in
            let view = UnsafeRawBufferPointer(raw)
            e.prefetch([view])
            e.endPrefetch()
            raw[0] = UInt8(ascii: "x")
            #expect(try e.withValue(view) { _, _ in true } == nil)
        }
    }

    @Test func readsSeeTheCurrentStateWhileABatchIsInFlight() throws {
        let e = try engine(tier: 0)  // nothing clean kept: reads of applied keys go to the file
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        for i in 0..<100 { try e.put(entry("k\(i)", "v\(i)")) }
        writer.setPaused(true)
        let batch = try #require(e.seal(lsn: 1))
        writer.submit(WriterJob(lsn: 1, batches: [batch]))
        // In flight: the file does not have them yet, memory does.
        try e.put(entry("k0", "changed"))
        #expect(try e.delete(bytes("k1")))
        #expect(try value(e, "k0") == "changed")
        #expect(try value(e, "k1") == nil)
        #expect(try value(e, "k2") == "v2")
        #expect(e.count == 99)
        writer.setPaused(false)
        writer.waitUntilIdle()
        for job in writer.takeFinished() { e.complete(job.batches[0], onFailure: .retry) }
        #expect(e.appliedLSN == 1)
        // Applied: k2 is read back from the file, k0 and k1 still from memory.
        #expect(try value(e, "k2") == "v2")
        #expect(try value(e, "k0") == "changed")
        #expect(try value(e, "k1") == nil)
        flush(e, writer, lsn: 2)
        #expect(try value(e, "k0") == "changed" && value(e, "k1") == nil)
        #expect(e.unappliedBytes == 0)
        e.close()
        let reopened = try engine(tier: 0)
        #expect(reopened.count == 99 && reopened.appliedLSN == 2)
        #expect(try value(reopened, "k0") == "changed")
    }

    /// The SET and GET paths of bytes in place: a put of raw bytes
    /// overwrites its slot (growing past it and back), is read in place by
    /// `withValue`, travels through a batch whose slot changes meanwhile,
    /// and reads back from the file alone after a reopen.
    @Test func bytesInPlaceGoInAndOutThroughBatches() throws {
        let e = try engine(tier: 0)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        func put(_ key: String, _ value: String, expiresAt: Int64? = nil) throws {
            try Array(key.utf8).withUnsafeBytes { k in
                try Array(value.utf8).withUnsafeBytes { v in
                    try e.put(key: k, kind: .string, storageDate: 1_700_000_000, expiresAt: expiresAt,
                              metadata: UnsafeRawBufferPointer(start: nil, count: 0), value: v)
                }
            }
        }
        func read(_ key: String) throws -> String? {
            try Array(key.utf8).withUnsafeBytes { k in
                try e.withValue(k) { kind, view -> String in
                    guard kind == .string, case .bytes(let bytes) = view else { return "?" }
                    return String(decoding: bytes, as: UTF8.self)
                }
            }
        }
        let long = String(repeating: "L", count: 5000)
        for (i, value) in ["a", "bb", long, "ccc", "", long + "!", "d"].enumerated() {
            try put("k", value, expiresAt: i % 2 == 0 ? nil : Int64.max)
            #expect(try read("k") == value)
            #expect(e.count == 1 && e.contentBytes == 1 + value.utf8.count)
        }
        try put("other", long)
        writer.setPaused(true)
        let batch = try #require(e.seal(lsn: 1))
        writer.submit(WriterJob(lsn: 1, batches: [batch]))
        try put("k", "changed while in flight")  // the batch has its own copy of "d"
        try put("other", "short now")
        writer.setPaused(false)
        writer.waitUntilIdle()
        for job in writer.takeFinished() { e.complete(job.batches[0], onFailure: .retry) }
        #expect(try read("k") == "changed while in flight" && read("other") == "short now")
        flush(e, writer, lsn: 2)
        e.close()
        let reopened = try engine(tier: 0)
        let value = try Array("other".utf8).withUnsafeBytes { k in
            try reopened.withValue(k) { _, view -> [UInt8] in
                if case .bytes(let bytes) = view { return [UInt8](bytes) }
                return []
            }
        }
        #expect(value == Array("short now".utf8))
        #expect(try reopened.get(bytes("k"))?.row.value.bytes == bytes("changed while in flight"))
        #expect(try Array("absent".utf8).withUnsafeBytes { k in try reopened.withValue(k) { _, _ in 1 } } == nil)
    }

    @Test func aClearVoidsTheFileUntilItIsApplied() throws {
        let e = try engine()
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        for i in 0..<50 { try e.put(entry("k\(i)", "v")) }
        flush(e, writer, lsn: 1)
        e.setMemoryBudget(0)
        e.clear()
        try e.put(entry("after", "v"))
        #expect(try value(e, "k3") == nil && e.count == 1)
        #expect(try e.keys() == [bytes("after")])
        flush(e, writer, lsn: 2)
        #expect(try value(e, "k3") == nil && value(e, "after") == "v")
        #expect(try e.keys() == [bytes("after")])
    }

    @Test func aFailedBatchIsRetriedWithItsChanges() throws {
        let e = try engine()
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        try e.put(entry("a", "1"))
        let batch = try #require(e.seal(lsn: 1))
        batch.error = .writeFailed(sqliteCode: 13)  // as if the disk were full
        e.complete(batch, onFailure: .retry)
        #expect(e.lastFailure == .writeFailed(sqliteCode: 13) && e.appliedLSN == 0)
        try e.put(entry("b", "2"))
        flush(e, writer, lsn: 2)
        #expect(e.lastFailure == nil && e.appliedLSN == 2)
        e.close()
        let reopened = try engine(tier: 0)
        #expect(try value(reopened, "a") == "1" && value(reopened, "b") == "2")
    }

    @Test func batchesSealedWhileOthersAreInFlightApplyInOrder() throws {
        let e = try engine(tier: 0)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        writer.setPaused(true)
        for i in 0..<100 { try e.put(entry("k\(i)", "first")) }
        let first = try #require(e.seal(lsn: 1))
        writer.submit(WriterJob(lsn: 1, batches: [first]))
        for i in 50..<150 { try e.put(entry("k\(i)", "second")) }
        #expect(try e.delete(bytes("k0")))
        let second = try #require(e.seal(lsn: 2))
        writer.submit(WriterJob(lsn: 2, batches: [second]))
        #expect(e.batchesInFlight == 2)
        #expect(try value(e, "k60") == "second" && value(e, "k0") == nil && e.count == 149)
        writer.setPaused(false)
        writer.waitUntilIdle()
        for job in writer.takeFinished() { e.complete(job.batches[0], onFailure: .retry) }
        #expect(e.batchesInFlight == 0 && e.appliedLSN == 2 && e.unappliedBytes == 0)
        #expect(try value(e, "k10") == "first" && value(e, "k60") == "second" && value(e, "k0") == nil)
        e.close()
        let reopened = try engine(tier: 0)
        #expect(reopened.count == 149 && reopened.appliedLSN == 2)
        #expect(try value(reopened, "k149") == "second" && value(reopened, "k49") == "first")
    }

    @Test func aBatchSealedBehindAFailedOneIsNotApplied() throws {
        let e = try engine()
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        try e.put(entry("a", "1"))
        let first = try #require(e.seal(lsn: 1))
        try e.put(entry("b", "2"))
        let second = try #require(e.seal(lsn: 2))
        // The first fails as the writer would record it; the second, sealed
        // before the owner saw that, must not reach the file with position 2.
        first.error = .writeFailed(sqliteCode: 13)
        first.file.lastFailedBatch = (first.id, .writeFailed(sqliteCode: 13))
        second.apply()
        #expect(second.error == .writeFailed(sqliteCode: 13))
        e.complete(first, onFailure: .retry)
        e.complete(second, onFailure: .retry)
        #expect(e.appliedLSN == 0)
        flush(e, writer, lsn: 3)
        #expect(e.lastFailure == nil && e.appliedLSN == 3)
        e.close()
        let reopened = try engine(tier: 0)
        #expect(try value(reopened, "a") == "1" && value(reopened, "b") == "2")
    }

    @Test func capacityHoldsWithChangesInMemoryAndInTheFile() throws {
        let e = try engine(capacity: 100)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        // Ten entries of 2 + 8 bytes fill it; older ones in the file, newer in memory.
        for i in 0..<10 { try e.put(entry("a\(i)", "12345678")) }
        flush(e, writer, lsn: 1)
        for i in 0..<5 { try e.put(entry("b\(i)", "12345678")) }
        #expect(e.contentBytes <= 100 && e.count == 10)
        // The oldest went first: the a's written first.
        #expect(try value(e, "a0") == nil && value(e, "a4") == nil && value(e, "a5") != nil)
        flush(e, writer, lsn: 2)
        for i in 0..<5 { try e.put(entry("c\(i)", "12345678")) }
        #expect(try value(e, "a5") == nil && value(e, "b0") != nil)
        #expect(e.statistics().evicted == 10)
    }

    @Test func theSweepFindsExpiredKeysInMemoryAndInTheFile() throws {
        let e = try engine()
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        let past = Int64(Date().timeIntervalSince1970 * 1000) - 1
        for i in 0..<40 { try e.put(entry("old\(i)", "v", expiresAt: past + 1_000_000)) }
        flush(e, writer, lsn: 1)
        // Now expire the ones in the file, and add some expired in memory only.
        for i in 0..<40 where i % 2 == 0 { #expect(try e.setExpiry(bytes("old\(i)"), past + 50)) }
        flush(e, writer, lsn: 2)
        for i in 0..<10 { try e.put(entry("mem\(i)", "v", expiresAt: past + 50)) }
        usleep(100_000)
        #expect(e.expiryDue())
        var removed = 0
        while e.expiryDue() {
            let n = try e.removeExpired(limit: 7)
            removed += n
            if n < 7 { break }
        }
        #expect(removed == 30)
        #expect(e.count == 20 && e.statistics().expired == 30)
    }

    /// The sweep walks the file's expiry index alone and reads a row only
    /// for a key memory does not hold; a key memory holds goes by its
    /// state there: a newer state that does not expire (or not yet) or a
    /// delete keeps it, a newer state that has expired goes once.
    @Test func theSweepReadsARowOnlyForAKeyMemoryLacks() throws {
        for tier in [0, 1 << 20] {
            let e = try engine("sweep\(tier)", tier: tier)
            let writer = BatchWriter(onFinished: {})
            defer { writer.stop() }
            let past = Int64(Date().timeIntervalSince1970 * 1000) - 1
            for i in 0..<30 { try e.put(entry("k\(i)", "v", expiresAt: past + 1_000_000)) }
            flush(e, writer, lsn: 1)
            for i in 0..<30 { #expect(try e.setExpiry(bytes("k\(i)"), past + 50)) }
            flush(e, writer, lsn: 2)
            try e.put(entry("k0", "new"))
            try e.put(entry("k1", "later", expiresAt: past + 1_000_000))
            try e.put(entry("k2", "again", expiresAt: past + 60))
            #expect(try e.delete(bytes("k3")))
            usleep(100_000)
            var removed = 0
            while e.expiryDue() {
                let n = try e.removeExpired(limit: 7)
                removed += n
                if n < 7 { break }
            }
            #expect(removed == 27, "tier \(tier)")
            #expect(e.count == 2 && e.statistics().expired == 27, "tier \(tier)")
            #expect(try value(e, "k0") == "new" && value(e, "k1") == "later" && value(e, "k2") == nil)
            flush(e, writer, lsn: 3)
            #expect(e.count == 2 && e.statistics().expired == 27, "tier \(tier)")
        }
    }

    /// A step of the sweep passes over at most `expiryPassLimit` keys the
    /// file lists as due that memory holds newer, and says it has more to
    /// do (`expiryDue()`) when it stops there.
    @Test func aStepOfTheSweepPassesOverABoundedNumberOfKeys() throws {
        let e = try engine()
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        let past = Int64(Date().timeIntervalSince1970 * 1000) - 1
        let shadowed = CacheEngine.expiryPassLimit + 100
        for i in 0..<shadowed { try e.put(entry("s\(i)", "v", expiresAt: past + 50)) }
        for i in 0..<10 { try e.put(entry("d\(i)", "v", expiresAt: past + 60)) }
        flush(e, writer, lsn: 1)
        e.rebuildExpiryHeap()  // the heap keeps unapplied rows only: the walk finds these
        for i in 0..<shadowed { try e.put(entry("s\(i)", "kept")) }
        usleep(100_000)
        #expect(try e.removeExpired(limit: 7) == 0, "a step passes over the first keys listed")
        #expect(e.expiryDue(), "and has more to do")
        var removed = 0, steps = 1
        while e.expiryDue() && steps < 100 {
            removed += try e.removeExpired(limit: 7)
            steps += 1
        }
        #expect(removed == 10 && !e.expiryDue())
        #expect(e.count == shadowed && e.statistics().expired == 10)
        #expect(try value(e, "s0") == "kept" && value(e, "d0") == nil)
    }

    /// A heap grown past its bound (overwrites leave stale entries) while
    /// many rows wait for the file is rebuilt a step of the sweep at a
    /// time: a step looks at no more than
    /// `expiryRebuildStep` old entries, keys due meanwhile all go, and the
    /// heap ends with the current states of the unapplied rows only.
    @Test func theExpiryHeapIsRebuiltAStepAtATime() throws {
        let e = try engine()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let keys = 2 * CacheEngine.expiryRebuildStep, later = now + 3_600_000
        for round in 0..<3 {
            for i in 0..<keys {
                try e.put(entry("k\(i)", "v\(round)", expiresAt: round == 2 && i % 2 == 0 ? now + 50 : later + Int64(round)))
            }
        }
        #expect(e.expiry.heap.count == 3 * keys, "one entry a change")
        usleep(100_000)
        var removed = try e.removeExpired(limit: 10)
        #expect(removed == 10 && e.expiry.rebuilding.count > 2 * keys, "the rebuild starts once over the bound")
        let old = e.expiry.rebuilding.count
        removed += try e.removeExpired(limit: 10)
        #expect(e.expiry.rebuildNext == CacheEngine.expiryRebuildStep, "a step looks at a bounded number of entries")
        var steps = 2
        while e.expiryDue() && steps < 1000 {
            removed += try e.removeExpired(limit: 10)
            steps += 1
        }
        #expect(removed == keys / 2 && e.count == keys / 2 && e.statistics().expired == keys / 2)
        #expect(steps > old / CacheEngine.expiryRebuildStep)
        #expect(e.expiry.rebuilding.isEmpty && e.expiry.heap.count == keys / 2, "the current entries of the rest")
        #expect(e.expiry.heap.top?.expiresAt == later + 2)
        #expect(try value(e, "k1") == "v2" && value(e, "k0") == nil)
    }

    @Test func aReplayWritesBlindAndTheWriterCorrectsTheTotals() throws {
        let e = try engine(tier: 0)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        for i in 0..<10 { try e.put(entry("k\(i)", "12345", expiresAt: i < 3 ? 9_999_999_999_999 : nil)) }
        flush(e, writer, lsn: 1)
        #expect(e.count == 10 && e.contentBytes == 10 * 7)
        // A replay: k0-k4 exist in the file, n0-n2 do not; k5 deleted, k6 twice.
        for i in 0..<5 { try replayPut(e, entry("k\(i)", "1")) }
        for i in 0..<3 { try replayPut(e, entry("n\(i)", "1")) }
        try e.replayDelete(bytes("k5"))
        try e.replayDelete(bytes("gone"))
        try replayPut(e, entry("k6", "12"))
        try replayPut(e, entry("k6", "123"))
        #expect(e.count == 10 + 5 + 3 + 1)  // counted as new until applied
        #expect(e.totalsPending)
        flush(e, writer, lsn: 2)
        #expect(!e.totalsPending)
        #expect(e.count == 12)  // k0-k9, less k5, plus n0-n2
        let expected = 5 * 3 + 3 * 3 + 7 * 3 + 5 /* k6 */ + 0
        #expect(e.contentBytes == expected)
        #expect(e.statistics().volatileEntries == 0)  // k0-k2 were overwritten without an expiry
        e.close()
        let reopened = try engine(tier: 0)
        #expect(reopened.count == 12 && reopened.contentBytes == expected)
        #expect(try reopened.keys().count == 12)
    }

    @Test func aReplayIntoAnEmptyFileCountsExactlyAtOnce() throws {
        let e = try engine(tier: 0)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        // The filter of an empty file's keys rules every key out: no blind writes.
        for i in 0..<100 { try replayPut(e, entry("k\(i)", "1")) }
        try replayPut(e, entry("k7", "123"))
        try e.replayDelete(bytes("k8"))
        try e.replayDelete(bytes("absent"))
        #expect(!e.totalsPending)
        #expect(e.count == 99 && e.contentBytes == 10 * 3 + 90 * 4 + 2 - 3)  // k7 grew by 2, k8 went
        flush(e, writer, lsn: 1)
        #expect(e.count == 99 && e.contentBytes == 10 * 3 + 90 * 4 + 2 - 3)  // k7 grew by 2, k8 went
    }

    @Test func heldReadsSeeEveryBatchOnceItCompletes() throws {
        let held = HeldReads()
        let e = try engine(tier: 0, heldReads: held)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        try e.put(entry("k1", "one"))
        flush(e, writer, lsn: 1)
        #expect(held.isEmpty)
        #expect(try value(e, "k1") == "one")  // from the file: the read transaction stays open
        #expect(!held.isEmpty)
        try e.put(entry("k2", "two"))
        try e.put(entry("k1", "uno"))
        // Committed while the snapshot is held; completing the batch ends it,
        // so memory may let go of k2 and k1's new value.
        flush(e, writer, lsn: 2)
        #expect(try value(e, "k2") == "two")
        #expect(try value(e, "k1") == "uno")
        held.releaseAll()
        #expect(held.isEmpty)
        #expect(try value(e, "k2") == "two")
    }

    @Test func anAppliedBatchIsTakenBackAPartAtATime() throws {
        let e = try engine(tier: 0)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        for i in 0..<100 { try e.put(entry("k\(i)", "v\(i)")) }
        let batch = try #require(e.seal(lsn: 1))
        writer.submit(WriterJob(lsn: 1, batches: [batch]))
        writer.waitUntilIdle()
        _ = writer.takeFinished()
        e.complete(batch, onFailure: .retry, takeBackLimit: 30)
        #expect(e.takingBackPending)
        #expect(e.appliedLSN == 1 && e.count == 100)
        #expect(e.unappliedBytes > 0)  // 70 slots still in flight
        // Rewritten while its old write waits to be taken back: the new one stands.
        try e.put(entry("k99", "new"))
        #expect(try value(e, "k99") == "new" && value(e, "k50") == "v50")
        #expect(!e.continueTakingBack(limit: 40))
        e.finishTakingBack()  // the rest (a limit of .max)
        #expect(!e.takingBackPending)
        #expect(try value(e, "k99") == "new" && value(e, "k98") == "v98")
        flush(e, writer, lsn: 2)
        #expect(e.unappliedBytes == 0)
        #expect(try value(e, "k99") == "new")  // from the file now (no memory tier)
        e.close()
        let reopened = try engine(tier: 0)
        #expect(reopened.count == 100)
        #expect(try value(reopened, "k99") == "new" && value(reopened, "k0") == "v0")
    }

    @Test func resolvingTheTotalsLooksTheBlindWritesUp() throws {
        let e = try engine(tier: 0)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        for i in 0..<6 { try e.put(entry("k\(i)", "12345")) }
        flush(e, writer, lsn: 1)
        for i in 0..<4 { try replayPut(e, entry("k\(i)", "1")) }
        try replayPut(e, entry("new", "1"))
        try e.replayDelete(bytes("k5"))
        #expect(e.count == 11)
        try e.resolveTotals()
        #expect(!e.totalsPending && e.count == 6 && e.contentBytes == 4 * 3 + 7 + 4)
        flush(e, writer, lsn: 2)
        #expect(e.count == 6 && e.contentBytes == 4 * 3 + 7 + 4)
        e.close()
        #expect(try engine(tier: 0).count == 6)
    }

    @Test func theTotalsAreResolvedAPartAtATime() throws {
        let e = try engine(tier: 0)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        for i in 0..<60 { try e.put(entry("k\(i)", "12345")) }
        flush(e, writer, lsn: 1)
        for i in 0..<40 { try replayPut(e, entry("k\(i)", "1")) }  // blind: the file holds them
        try e.replayDelete(bytes("k50"))
        #expect(e.totalsPending && e.count == 100)
        var steps = 0
        while try !e.resolveTotalsStep(limit: 2) {
            steps += 1
            #expect(e.totalsPending)
            try #require(steps < 10_000)
        }
        #expect(steps >= 5)  // 41 blind writes, about 2 a step
        #expect(!e.totalsPending && e.count == 59 && e.contentBytes == 10 * (2 + 1) + 30 * (3 + 1) + 19 * (3 + 5))
        #expect(try e.resolveTotalsStep(limit: 2))
        flush(e, writer, lsn: 2)
        #expect(e.count == 59)
        e.close()
        #expect(try engine(tier: 0).count == 59)
    }

    @Test func liveValuesAreFrozenWhileABatchHoldsThem() throws {
        let e = try engine()
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        let list = TestList(["a"])
        try e.put(StoredEntry(key: bytes("l"), row: Row(storageDate: 0, expiresAt: nil, kind: .list, metadata: [],
                                                        value: .live(list))))
        writer.setPaused(true)
        let batch = try #require(e.seal(lsn: 1))
        writer.submit(WriterJob(lsn: 1, batches: [batch]))
        #expect(list.isFrozen)
        let changing = try #require(try e.liveValueForChange(bytes("l")) as? TestList)
        #expect(changing !== list, "a frozen value is copied before a change")
        let before = changing.encodedSize
        changing.items.append("b")
        try e.liveValueChanged(bytes("l"), oldEncodedSize: before, storageDate: 1)
        #expect(e.contentBytes == 1 + 2)
        writer.setPaused(false)
        writer.waitUntilIdle()
        for job in writer.takeFinished() { e.complete(job.batches[0], onFailure: .retry) }
        #expect(list.items == ["a"], "the batch wrote the value as it was sealed")
        flush(e, writer, lsn: 2)
        e.close()
        let reopened = try engine()
        #expect(try reopened.get(bytes("l"))?.row.value.bytes == bytes("ab"))
    }

    /// A seal in parts (`sealPart`, a part per iteration of the server's
    /// loop) gives the batch every key's state at the seal: keys changed
    /// after their part are taken again and only their last state is
    /// written; a touch after a part writes the row whole.
    @Test(arguments: [EvictionPolicy.fifo, .lru])
    func aBatchSealedInPartsHoldsEachKeysLastState(policy: EvictionPolicy) throws {
        var configuration = SQLiteKVCache.Configuration(diskCapacity: 0, evictionPolicy: policy, memoryTierBytes: 1 << 20)
        configuration.durableCommits = true
        let e = try CacheEngine.open(handle: "parts", directory: dir.path, configuration: configuration)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        for i in 0..<100 { try e.put(entry("k\(i)", "old\(i)")) }
        let list = TestList(["a"])
        try e.put(StoredEntry(key: bytes("l"), row: Row(storageDate: 0, expiresAt: nil, kind: .list, metadata: [],
                                                        value: .live(list))))
        #expect(e.unsealedCount == 101)
        #expect(e.sealPart(limit: 60) == 60)
        #expect(e.sealInProgress && e.unsealedCount == 41 && e.changedCount == 41)
        #expect(e.sealPart(limit: 60) == 41)
        #expect(e.unsealedCount == 0 && e.sealPart(limit: 60) == 0)
        #expect(list.isFrozen, "a part holds the live value as it was")
        // After their parts: overwrites, a delete, a new key, a changed list, and reads (LRU touches).
        for i in 0..<10 { try e.put(entry("k\(i)", "new\(i)")) }
        #expect(try e.delete(bytes("k10")))
        try e.put(entry("fresh", "f"))
        let changing = try #require(try e.liveValueForChange(bytes("l")) as? TestList)
        #expect(changing !== list)
        let before = changing.encodedSize
        changing.items.append("b")
        try e.liveValueChanged(bytes("l"), oldEncodedSize: before, storageDate: 1)
        for i in 50..<60 { _ = try e.get(bytes("k\(i)")) }
        #expect(e.unsealedCount == (policy == .lru ? 23 : 13))
        // Reads answer the current state meanwhile.
        #expect(try value(e, "k3") == "new3" && value(e, "k10") == nil && value(e, "k40") == "old40")
        flush(e, writer, lsn: 7)
        #expect(!e.sealInProgress && e.unsealedCount == 0 && e.batchesInFlight == 0)
        #expect(!changing.isFrozen, "the value the batch wrote is the slot's again, free to change")
        #expect(e.count == 101 && e.contentBytes == e.statistics().contentBytes)
        let expectedBytes = e.contentBytes
        e.close()
        let reopened = try engine("parts", tier: 0)
        #expect(reopened.count == 101 && reopened.contentBytes == expectedBytes)
        for i in 0..<100 where i != 10 {
            #expect(try value(reopened, "k\(i)") == (i < 10 ? "new\(i)" : "old\(i)"))
        }
        #expect(try value(reopened, "k10") == nil && value(reopened, "fresh") == "f")
        #expect(try reopened.get(bytes("l"))?.row.value.bytes == bytes("ab"))
        #expect(RawDatabase(path: reopened.path).scalar("SELECT count(*) FROM entries") == "101")
    }

    /// Under LRU a read is a touch: a part that took only a key's touch
    /// never stands for its row when a batch fails. The failed batch's
    /// retry writes the key's last row, and a row of an earlier failed
    /// batch goes again even when a later batch holds the key's touch.
    @Test func aFailedBatchSealedInPartsRetriesEachKeysRow() throws {
        var configuration = SQLiteKVCache.Configuration(diskCapacity: 0, evictionPolicy: .lru, memoryTierBytes: 1 << 20)
        configuration.durableCommits = true
        let e = try CacheEngine.open(handle: "lru-parts", directory: dir.path, configuration: configuration)
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        try e.put(entry("k", "v1"))
        flush(e, writer, lsn: 1)
        // Failed after parts: the touch the part took, then the overwrite.
        _ = try e.get(bytes("k"))
        #expect(e.sealPart(limit: 10) == 1)
        try e.put(entry("k", "v2"))
        let failed = try #require(e.seal(lsn: 2))
        #expect(failed.count == 2)
        failed.error = .writeFailed(sqliteCode: 13)
        e.complete(failed, onFailure: .retry)
        flush(e, writer, lsn: 3)
        // Failed while a later batch's part holds the key's touch.
        try e.put(entry("j", "w1"))
        let earlier = try #require(e.seal(lsn: 4))
        _ = try e.get(bytes("j"))
        #expect(e.sealPart(limit: 10) == 1)
        earlier.error = .writeFailed(sqliteCode: 13)
        e.complete(earlier, onFailure: .retry)
        flush(e, writer, lsn: 5)
        #expect(e.lastFailure == nil && e.appliedLSN == 5)
        e.close()
        var reopened = SQLiteKVCache.Configuration(diskCapacity: 0, evictionPolicy: .lru, memoryTierBytes: 0)
        reopened.durableCommits = true
        let again = try CacheEngine.open(handle: "lru-parts", directory: dir.path, configuration: reopened)
        #expect(try value(again, "k") == "v2" && value(again, "j") == "w1")
    }

    /// A clear after parts were taken drops what they took: the batch
    /// clears the file and writes only what came after.
    @Test func aClearDropsWhatPartsTook() throws {
        let e = try engine("cleared")
        let writer = BatchWriter(onFinished: {})
        defer { writer.stop() }
        for i in 0..<20 { try e.put(entry("a\(i)", "1")) }
        flush(e, writer, lsn: 1)
        for i in 0..<20 { try e.put(entry("b\(i)", "2")) }
        #expect(e.sealPart(limit: 15) == 15)
        e.clear()
        #expect(!e.sealInProgress)
        try e.put(entry("c", "3"))
        flush(e, writer, lsn: 2)
        e.close()
        let reopened = try engine("cleared", tier: 0)
        #expect(try reopened.count == 1 && value(reopened, "c") == "3")
        #expect(try value(reopened, "b1") == nil && value(reopened, "a1") == nil)
    }
}

/// A stand-in for a server's list: its bytes are its items, joined.
final class TestList: LiveValue {
    var items: [String]
    var isFrozen = false

    init(_ items: [String]) { self.items = items }

    var encodedSize: Int { items.reduce(0) { $0 + $1.utf8.count } }
    var memoryCost: Int { encodedSize + 64 }
    func encoded() -> [UInt8] { Array(items.joined().utf8) }
    func copy() -> LiveValue { TestList(items) }
}
