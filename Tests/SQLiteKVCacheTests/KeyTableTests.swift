import CLinux
import Foundation
import Testing
@testable import SQLiteKVCache

/// The key table on its own: byte accounting of clean and unapplied slots,
/// the clock, sealing and completing batches, and digests that differ only
/// past their first word (which the dictionary hashes alone) never
/// answering for each other.
@Suite("Key table")
struct KeyTableTests {
    /// A made-up digest, for what never computes a slot's digest from its
    /// key (lookups, the clock); a batch's writes carry `digest(of:)`.
    func digest(_ w0: UInt64, _ w1: UInt64) -> KeyDigest {
        var words = (w0.bigEndian, w1.bigEndian, UInt64(0), UInt64(0))
        return withUnsafeBytes(of: &words) { KeyDigest(bytes: $0) }
    }

    /// The digest of `key`, as the engine computes it.
    func digest(of key: String) -> KeyDigest { bytes(key).withUnsafeBytes { KeyHasher.digest($0) } }

    /// A slot's cost is kept in 16-byte units.
    func row(_ value: String, seq: Int64 = 1) -> Row {
        Row(storageDate: 1_700_000_000, seq: seq, expiresAt: nil, kind: .string, metadata: [], value: .bytes(bytes(value)))
    }

    func value(_ slot: KeySlot?) -> [UInt8]? { slot?.row?.value.bytes }

    /// A slot is one heap block: its fields (68 bytes, ordered for it)
    /// and then its key and value. A key of 16 bytes with a value of 100,
    /// as redis-benchmark writes, takes one 208-byte chunk (224 with a
    /// pointer each for the live value and the spilled bytes and 32-bit
    /// lengths; 240 with a 64-bit LRU clock, a stored cost and its room;
    /// 288 with the whole digest and wider fields; the key, slot and value
    /// arrays of before took 368 in three). A field added or widened
    /// carelessly costs 16 MB a million keys and fails this.
    @Test func aSlotIsOneBlockWithItsBytes() {
        #expect(MemoryLayout<SlotFields>.size <= 68)
        let slot = KeySlot.make(digest: digest(1, 1), key: bytes("key:000000001234"),
                                row: row(String(repeating: "x", count: 100)))
        let usable = withExtendedLifetime(slot) { malloc_usable_size(Unmanaged.passUnretained(slot).toOpaque()) }
        #expect(usable <= 200)
        #expect(slot.key == bytes("key:000000001234"))
        #expect(value(slot) == bytes(String(repeating: "x", count: 100)))
    }

    /// A key of 32,767 bytes or more keeps its length beside it, and
    /// metadata keeps its own: key, metadata and value read back whole
    /// through every change of the row, in the slot's block and spilled.
    @Test func longKeysAndMetadataKeepTheirLengthsWithTheBytes() {
        for keyLength in [0, 1, 32_766, 32_767, 32_768, 100_000] {
            let key = (0..<keyLength).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let slot = KeySlot.make(digest: digest(9, UInt64(keyLength)), key: key, row: nil)
            #expect(slot.key == key && slot.keyCount == keyLength && slot.row == nil)
            for (metadata, value) in [([UInt8](), bytes("v")), (bytes("meta"), bytes("value")),
                                      ([UInt8](repeating: 1, count: 3000), [UInt8](repeating: 2, count: 40)),
                                      (bytes("m"), [UInt8](repeating: 3, count: 5000)), ([], [])] {
                let row = Row(storageDate: 5, seq: 6, expiresAt: 7, kind: .string, metadata: metadata, value: .bytes(value))
                slot.row = row
                #expect(slot.key == key)
                #expect(slot.row?.metadata == metadata && slot.row?.value.bytes == value)
                #expect(slot.contentSize == keyLength + metadata.count + value.count)
            }
            slot.row = nil
            #expect(slot.key == key && slot.row == nil && slot.contentSize == 0)
        }
    }

    /// The live value and the spilled bytes share a word: a live value
    /// stays through the bytes moving to a block of their own and back,
    /// and is released once, when it is replaced or the slot goes.
    @Test func aLiveValueStaysWhileTheBytesMove() {
        final class Watch { weak var list: TestList? }
        func watched(_ items: [String], by watch: Watch) -> TestList {
            let list = TestList(items)
            watch.list = list
            return list
        }
        func live(_ list: TestList, seq: Int64, metadata: [UInt8]) -> Row {
            Row(storageDate: 1, seq: seq, expiresAt: nil, kind: .list, metadata: metadata, value: .live(list))
        }
        let first = Watch(), second = Watch(), third = Watch()
        let long = [UInt8](repeating: 9, count: 2000)  // past the slot's room: the bytes spill
        do {
            let slot = KeySlot.make(digest: digest(4, 4), key: bytes("k"), row: nil)
            slot.row = live(watched(["a", "b"], by: first), seq: 1, metadata: long)
            #expect(slot.live === first.list && first.list != nil && slot.row?.metadata == long && slot.key == bytes("k"))
            slot.row = live(first.list!, seq: 2, metadata: bytes("m"))  // back into the slot's block
            #expect(slot.live === first.list && slot.row?.metadata == bytes("m") && slot.key == bytes("k"))
            slot.row = live(first.list!, seq: 3, metadata: long)
            #expect(slot.live === first.list && slot.row?.metadata == long)
            slot.row = row(String(repeating: "s", count: 3000))
            #expect(slot.live == nil && value(slot) == bytes(String(repeating: "s", count: 3000)))
            #expect(first.list == nil, "the live value is released when the row drops it")
            slot.row = live(watched(["c"], by: second), seq: 4, metadata: [])
            slot.setLive(TestList(["d"]))
            #expect(second.list == nil, "a live value replaced is released")
            slot.setLive(watched(["e"], by: third))
            #expect(slot.row?.value.bytes == bytes("e") && (slot.live as? TestList)?.items == ["e"] && third.list != nil)
        }
        #expect(third.list == nil, "the slot's end releases its live value")
    }

    /// Values overwrite in place while they fit, move to a block of their
    /// own when they outgrow the slot, and come back when they fit again;
    /// the key and the other fields stay through it all.
    @Test func aSlotsBytesGrowAndShrink() {
        let slot = KeySlot.make(digest: digest(2, 2), key: bytes("k"), row: row("small"))
        for size in [3, 10, 2000, 50, 5000, 4000, 0, 1] {
            let text = String(repeating: "v", count: size)
            slot.row = row(text, seq: Int64(size))
            #expect(value(slot) == bytes(text))
            #expect(slot.key == bytes("k") && slot.seq == Int64(size) && slot.contentSize == 1 + size)
        }
        slot.row = nil
        #expect(slot.row == nil && slot.key == bytes("k") && slot.contentSize == 0)
        let big = KeySlot.make(digest: digest(3, 3), key: bytes("big"), row: row(String(repeating: "b", count: 3000)))
        big.row = row("tiny")
        #expect(value(big) == bytes("tiny") && big.key == bytes("big"))
    }

    /// A slot keeps its digest's first two words, and the index tells
    /// slots apart by both.
    @Test func digestsSharingTheFirstWordNeverAnswerForEachOther() {
        let table = KeyTable(budget: 1 << 20)
        let a = digest(7, 1), b = digest(7, 2)
        table.cache(a, key: bytes("a"), row: row("value of a"))
        #expect(value(table.lookup(a)) == bytes("value of a"))
        #expect(table.lookup(b) == nil)
        table.write(b, key: bytes("b"), row: row("value of b"))
        #expect(value(table.lookup(a)) == bytes("value of a"))
        #expect(value(table.lookup(b)) == bytes("value of b"))
        guard let slotOfA = table.slot(a) else {
            Issue.record("the table should hold a")
            return
        }
        table.forget(slotOfA)
        #expect(table.slot(a) == nil && table.slot(b) != nil)
        // The last two words are not compared: the first 128 bits are the identity.
        var sameFirstHalf = b
        sameFirstHalf.w3 = 12345
        #expect(table.slot(sameFirstHalf) === table.slot(b))
    }

    /// The LFU clock counts minutes modulo 2^16 (as Redis's), and never
    /// shows a minute before one it showed: a replayed command runs at its
    /// record's time, and a step back would read as 2^16 minutes idle.
    @Test func theLFUClockWrapsAndNeverStepsBack() {
        let access = AccessTracking()
        let slot = KeySlot.make(digest: digest(of: "k"), key: bytes("k"), row: row("v"))
        let now: Int64 = 65_535 * 60_000 + 1  // the last minute before the 16-bit clock wraps
        access.stampWrite(slot, new: true, now: now)
        access.touch(slot, now: now)  // 5 -> 6: certain at the initial value
        #expect(slot.frequency == 6)
        #expect(access.decayed(slot, nowMinutes: access.minutes(now - 60_000)) == 6)
        // Three minutes on, across the wrap: three decay periods of a minute.
        #expect(access.decayed(slot, nowMinutes: access.minutes(now + 3 * 60_000)) == 3)
    }

    /// A slot keeps an LRU clock of 16 ms units modulo 2^32: idleness is
    /// counted in those units and across the clock's wrap.
    @Test func theLRUClockCountsAcrossItsWrap() {
        let t: Int64 = 1_700_000_000_000
        #expect(AccessTracking.idleMilliseconds(since: AccessTracking.clock(t), now: t + 2_500) == 2_496)
        let last = (Int64(3) << 32 | Int64(UInt32.max)) << AccessTracking.clockShift  // the clock's last unit
        #expect(AccessTracking.clock(last) == UInt32.max)
        #expect(AccessTracking.idleMilliseconds(since: AccessTracking.clock(last), now: last + 3_200) == 3_200)
        #expect(AccessTracking.clock((Int64(7) << 32) << AccessTracking.clockShift) == 1, "0 means never stamped")
        // A stamp after now (the wall clock stepped back) is not idle.
        #expect(AccessTracking.idleMilliseconds(since: AccessTracking.clock(t + 60_000), now: t) == 0)
    }

    @Test func aSlotKeepsItsKindAndExpiryBesideItsFlags() {
        let slot = KeySlot.make(digest: digest(1, 1), key: bytes("k"), row: row("v"))
        for kind in ValueKind.allCases {
            slot.row = Row(storageDate: 1, seq: 2, expiresAt: 1_000, kind: kind, metadata: [], value: .bytes(bytes("v")))
            slot.change = .touch
            slot.referenced = true
            #expect(slot.kind == kind && slot.expiresAt == 1_000 && slot.hasRow && slot.change == .touch && slot.referenced)
        }
        slot.expiresAt = nil
        #expect(slot.expiresAt == nil && !slot.isExpired(at: .max))
        slot.expiresAt = -5  // in the past: expired, not "none"
        #expect(slot.expiresAt == -5 && slot.isExpired(at: 0))
        slot.row = nil
        #expect(slot.expiresAt == nil && !slot.hasRow)
    }

    /// What a fresh slot of `key` and `value` costs (its room is what it
    /// holds and what the allocator gave past that).
    func slotCost(_ key: String, _ value: String?) -> Int {
        let table = KeyTable(budget: 1 << 20)
        table.cache(digest(of: key), key: bytes(key), row: value.map { row($0) })
        return table.cleanBytes
    }

    @Test func cleanAndUnappliedBytesAreCountedApart() {
        let table = KeyTable(budget: 1 << 20)
        let d = digest(of: "k"), e = digest(of: "kk")
        table.cache(d, key: bytes("k"), row: row("12345"))
        let kept = table.cleanBytes
        // Its room: what it holds, and what the allocator gave past that
        // (glibc: up to 23 bytes; a sanitizer's gives exactly what was asked).
        #expect((1 + 5 + KeyTable.overhead...1 + 5 + 23 + KeyTable.overhead).contains(kept)
                && table.unappliedBytes == 0)
        // A smaller value keeps the slot's room, and the slot is counted for it.
        table.write(d, key: bytes("k"), row: row("123"))
        #expect(table.cleanBytes == 0 && table.unappliedBytes == kept)
        let deleted = slotCost("kk", nil)
        #expect((2 + KeyTable.overhead...2 + 23 + KeyTable.overhead).contains(deleted))
        table.write(e, key: bytes("kk"), row: nil)  // a delete: key and bookkeeping only
        #expect(table.unappliedBytes == kept + deleted)
        var writes = table.seal(1)
        #expect(writes.count == 2 && !table.hasChanges)
        // In flight: still unapplied, never dropped by the clock; the
        // batch's copy of the put's bytes counts against the budget too.
        #expect(table.unappliedBytes == kept + deleted)
        #expect(table.sealedBytes >= 4096 && table.sealedBytes < 8192)  // the first chunk
        #expect(table.budget.used == kept + deleted + table.sealedBytes)
        table.release(&writes)
        #expect(table.sealedBytes == 0 && table.budget.used == kept + deleted)
        table.complete(1, writes, failed: false)
        #expect(table.unappliedBytes == 0 && table.cleanBytes == kept + deleted)
        table.removeAll()
        #expect(table.cleanBytes == 0 && table.count == 0)
    }

    /// A slot whose value shrank is counted for the room it keeps: a
    /// value of a few kilobytes overwritten with a few bytes still costs
    /// its block until a smaller one replaces it.
    @Test func aSlotIsCountedForTheRoomItKeeps() {
        let table = KeyTable(budget: 1 << 30)
        let d = digest(of: "k")
        table.write(d, key: bytes("k"), row: row(String(repeating: "x", count: 4000)))
        let big = table.unappliedBytes
        #expect(big >= 1 + 4000 + KeyTable.overhead)
        table.write(d, key: bytes("k"), row: row(String(repeating: "y", count: 1500)))
        #expect(table.unappliedBytes == big)  // the 4000-byte block is kept for 1500 bytes
        table.write(d, key: bytes("k"), row: row("z"))
        #expect(table.unappliedBytes < 64 + KeyTable.overhead)  // a block of its size now
    }

    @Test func aSlotChangedWhileInFlightStaysForTheNextBatch() {
        let table = KeyTable(budget: 1 << 20)
        let d = digest(of: "k")
        table.write(d, key: bytes("k"), row: row("one", seq: 1))
        let first = table.seal(1)
        table.write(d, key: bytes("k"), row: row("two", seq: 2))
        table.complete(1, first, failed: false)
        #expect(table.slot(d)?.isUnapplied == true)
        let second = table.seal(2)
        guard let written = second.row(at: 0) else {
            Issue.record("the second batch should write the key")
            return
        }
        #expect(written.value.bytes == bytes("two"))
    }

    @Test func aFailedBatchIsMarkedForTheNextOne() {
        let table = KeyTable(budget: 1 << 20)
        let d = digest(of: "k")
        table.write(d, key: bytes("k"), row: row("v"))
        let writes = table.seal(1)
        table.complete(1, writes, failed: true)
        #expect(table.unsealedCount == 1 && table.slot(d)?.change == .row)
    }

    @Test func theClockKeepsWhatWasReadAndStaysWithinBudget() {
        let cost = slotCost("k0", "v")
        var random = FastRandom(seed: 3)
        // The hand passes over the index in bucket order, which differs from
        // table to table (a random seed each): many tables.
        for round in 0..<50 {
            let table = KeyTable(budget: 4 * cost + cost / 2)  // room for four entries
            for i in 0..<5 { table.cache(digest(UInt64(10 + i), UInt64(round)), key: bytes("k\(i)"), row: row("v")) }
            // Every entry was new, so the fifth's arrival went round clearing
            // them all, then dropped one.
            #expect(table.count == 4 && table.cleanBytes <= table.budget.limit)
            let held = (0..<5).map { digest(UInt64(10 + $0), UInt64(round)) }.filter { table.slot($0) != nil }
            #expect(held.count == 4)
            let read = held[Int(random.next() % 4)]
            #expect(table.lookup(read) != nil)
            let new = digest(99, UInt64(round))
            table.cache(new, key: bytes("n"), row: row("v"))
            #expect(table.count == 4 && table.cleanBytes <= table.budget.limit)
            #expect(table.slot(read) != nil, "a read entry gets a second chance")
            #expect(table.slot(new) != nil, "a new entry is not dropped unread at once")
        }
    }

    /// A written key is never dropped while unapplied; once applied, the
    /// clock drops it like any other.
    @Test func aCleanSlotWrittenStaysUntilAppliedAndThenGoesRoundOnce() {
        let cost = slotCost("k0", "v")
        let table = KeyTable(budget: 4 * cost + cost / 2)  // room for four entries
        for i in 0..<4 { table.cache(digest(of: "k\(i)"), key: bytes("k\(i)"), row: row("v")) }
        table.write(digest(of: "k1"), key: bytes("k1"), row: row("w"))
        for i in 4..<12 { table.cache(digest(of: "k\(i)"), key: bytes("k\(i)"), row: row("v")) }
        #expect(table.slot(digest(of: "k1"))?.isUnapplied == true, "an unapplied slot is never dropped")
        #expect(table.count == 4 && table.cleanBytes + table.unappliedBytes <= table.budget.limit)
        var writes = table.seal(1)
        table.release(&writes)  // as the engine does when the batch completes
        table.complete(1, writes, failed: false)
        #expect(table.slot(digest(of: "k1"))?.isUnapplied == false)
        // (The batch's copy of k1, counted from the seal, made room by dropping others.)
        #expect(table.count <= 4 && table.cleanBytes <= table.budget.limit)
        for i in 12..<40 { table.cache(digest(of: "k\(i)"), key: bytes("k\(i)"), row: row("v")) }
        #expect(table.slot(digest(of: "k1")) == nil, "k1, applied and never read again, went round and was dropped")
        #expect(table.count == 4 && table.cleanBytes <= table.budget.limit)
    }

    /// A memtable far over the budget, applied: its slots become clean one
    /// by one, and the clock (which passes unapplied slots only a bounded
    /// number at a time) brings the table back within the budget.
    @Test func aMemtableOverTheBudgetComesBackWithinItOnceApplied() {
        let cost = slotCost("k0", "v")
        let table = KeyTable(budget: 4 * cost + cost / 2)
        for i in 0..<5_000 { table.write(digest(of: "m\(i)"), key: bytes("m\(i)"), row: row("v")) }
        #expect(table.count == 5_000 && table.cleanBytes == 0)
        var writes = table.seal(1)
        table.release(&writes)
        table.complete(1, writes, failed: false)
        #expect(table.unappliedBytes == 0)
        // While the memtable alone filled the budget, each applied slot went at once.
        #expect(table.count <= 4 && table.cleanBytes <= table.budget.limit)
        table.cache(digest(of: "late"), key: bytes("late"), row: row("v"))
        #expect(table.count <= 4 && table.cleanBytes <= table.budget.limit)
    }

    /// A slot's cost is not stored: it is read from its blocks' room and a
    /// live value's estimate recorded when it was last counted. Whatever
    /// happens to the slots (writes that grow and shrink, deletes, live
    /// values set and grown in place, batches sealed and completed, reads
    /// cached, the clock's drops), the totals stay what the slots add up to.
    @Test func theTotalsAreWhatTheSlotsAddUpTo() {
        let table = KeyTable(budget: 40 * slotCost("k0", "v"))
        var random = FastRandom(seed: 11)
        var lists: [KeyDigest: TestList] = [:]
        var batch: (id: UInt64, writes: SealedWrites)?
        var nextID: UInt64 = 1
        for step in 0..<20_000 {
            let i = Int(random.next() % 60)
            let key = "k\(i)", d = digest(of: key)
            switch random.next() % 8 {
            case 0, 1:
                let size = Int(random.next() % 3) == 0 ? 1500 : Int(random.next() % 40)
                table.write(d, key: bytes(key), row: row(String(repeating: "v", count: size)))
                lists[d] = nil
            case 2:
                table.write(d, key: bytes(key), row: nil)
                lists[d] = nil
            case 3:
                if let slot = table.slot(d), slot.hasRow {
                    let list = TestList(["a"])
                    table.setLive(slot, list)
                    lists[d] = list
                    #expect(KeyTable.cost(slot) >= list.memoryCost + KeyTable.overhead, "the live value is counted")
                }
            case 4:
                if let list = lists[d], let slot = table.slot(d), slot.live === list, !list.isFrozen {
                    list.items.append(String(repeating: "x", count: Int(random.next() % 200)))
                    table.noteChange(slot, .row)
                    #expect(KeyTable.cost(slot) >= list.memoryCost + KeyTable.overhead, "its growth is counted")
                }
            case 5:
                if table.slot(d) == nil { table.cache(d, key: bytes(key), row: row("c")) }
            case 6:
                if batch == nil {
                    batch = (nextID, table.seal(nextID))
                    nextID += 1
                }
            default:
                if var (id, writes) = batch {
                    table.release(&writes)
                    table.complete(id, writes, failed: false)
                    batch = nil
                }
            }
            let counted = table.recount()
            #expect(table.cleanBytes == counted.clean && table.unappliedBytes == counted.unapplied, "step \(step)")
            if table.cleanBytes != counted.clean || table.unappliedBytes != counted.unapplied { return }
        }
    }

    /// After a fill every slot is new, so referenced: the first drop is a
    /// whole turn of the clock. A write or read takes bounded steps of it,
    /// and the cron's `enforce()` finishes it.
    @Test func aBudgetLoweredOverManyNewSlotsIsKeptInBoundedSteps() {
        let cost = slotCost("n0000", "v")
        let budget = MemoryBudget(limit: 1 << 24)
        let table = KeyTable(sharing: budget)
        for i in 0..<5_000 { table.cache(digest(of: String(format: "n%04d", i)), key: bytes(String(format: "n%04d", i)), row: row("v")) }
        #expect(table.count == 5_000)
        budget.limit = 100 * cost
        #expect(table.count == 5_000, "1,024 buckets walked clear bits but drop nothing")
        budget.enforce()
        #expect(budget.used <= budget.limit && table.count <= 100 && table.count >= 90)
    }

    @Test func unappliedSlotsOutliveTheBudget() {
        let table = KeyTable(budget: 0)
        table.cache(digest(of: "k"), key: bytes("k"), row: row("v"))
        #expect(table.count == 0)  // a zero budget keeps nothing clean
        table.write(digest(of: "w"), key: bytes("w"), row: row("v"))
        #expect(table.count == 1 && table.unappliedBytes > 0)
        let writes = table.seal(1)
        table.complete(1, writes, failed: false)
        #expect(table.count == 0 && table.unappliedBytes == 0)
    }

    @Test func unappliedSlotsAreFoundByDigestRange() {
        let table = KeyTable(budget: 1 << 20)
        // Two keys in one 12-bit bucket (a birthday search), and two others.
        let bucketOf = { (d: KeyDigest) in d.w0 >> 52 }
        var firstInBucket: [UInt64: String] = [:]
        var pair: (String, String)?
        for i in 0..<10_000 where pair == nil {
            let key = "k\(i)", bucket = bucketOf(digest(of: key))
            if let other = firstInBucket[bucket] { pair = (other, key) } else { firstInBucket[bucket] = key }
        }
        guard let (a, b) = pair else {
            Issue.record("no two keys share a bucket")
            return
        }
        let shared = bucketOf(digest(of: a))
        // One key in a bucket before the shared one and one after, when there are such.
        let before = firstInBucket.filter { $0.key < shared }.map(\.value).first
        let after = firstInBucket.filter { $0.key > shared }.min { $0.key < $1.key }.map(\.value)
        let keys = [a, b] + [before, after].compactMap { $0 }
        for key in keys { table.write(digest(of: key), key: bytes(key), row: row("v")) }
        let digests = keys.map { digest(of: $0) }.sorted()
        let all = table.unapplied(from: KeyDigest(w0: 0), limit: 10)
        #expect(all.map(\.digest) == digests && all.allSatisfy { $0.slot.digest() == $0.digest })
        // From the shared bucket's start: the limit is reached there, and the bucket is finished.
        let inShared = digests.filter { bucketOf($0) == shared }
        let later = digests.filter { bucketOf($0) > shared }
        #expect(table.unapplied(from: KeyDigest(w0: shared << 52), limit: 1).map(\.digest) == inShared)
        #expect(table.unapplied(from: KeyDigest(w0: shared << 52), limit: 3).map(\.digest)
                == inShared + later.prefix(1))
    }

    @Test func aSharedBudgetLetsAHotTableTakeWhatAnIdleOneGivesBack() {
        let cost = slotCost("i00", "v")  // keys of three bytes
        let budget = MemoryBudget(limit: 10 * cost)
        let idle = KeyTable(sharing: budget), hot = KeyTable(sharing: budget)
        for i in 0..<8 { idle.cache(digest(UInt64(100 + i), 0), key: bytes(String(format: "i%02d", i)), row: row("v")) }
        // A slot counts its block's room as malloc reports it: a reused, larger chunk counts more.
        #expect(idle.count == 8 && budget.used == idle.cleanBytes && budget.used >= 8 * cost)
        // The hot table grows to its fair share (half the budget: 5 slots, 4 when
        // some sit in larger reused chunks): the idle one, holding more, gives back.
        for i in 0..<6 { hot.cache(digest(UInt64(200 + i), 0), key: bytes(String(format: "h%02d", i)), row: row("v")) }
        #expect(budget.used <= budget.limit)
        #expect((4...5).contains(hot.count) && (4...5).contains(idle.count))
        let idleKept = idle.count
        // Past its share, the hot table replaces its own entries.
        for i in 6..<12 { hot.cache(digest(UInt64(200 + i), 0), key: bytes(String(format: "h%02d", i)), row: row("v")) }
        #expect(budget.used <= budget.limit)
        #expect((4...5).contains(hot.count))
        #expect(idle.count == idleKept)
        // Unapplied bytes count too, and push clean ones out.
        for i in 0..<4 { hot.write(digest(UInt64(300 + i), 0), key: bytes(String(format: "w%02d", i)), row: row("v")) }
        #expect(budget.used <= budget.limit && hot.unappliedBytes >= 4 * cost)
        let unapplied = hot.unappliedBytes
        budget.limit = unapplied
        #expect(idle.count + hot.count == 4 && hot.unappliedBytes == unapplied)
    }
}
