import Foundation

/// A memory budget shared by the key tables of several caches (the
/// server's `memory-tier-size`): unapplied bytes (memtables) and clean
/// bytes (the tier) of every table count against `limit`. Past it, clean
/// slots are dropped: from the table that grows while it holds more than
/// its fair share, else from the table holding the most clean bytes, so a
/// hot cache takes more and an idle one gives back. Not thread-safe: the
/// tables' owner uses it.
public final class MemoryBudget: @unchecked Sendable {
    /// Bytes all tables may take; 0 keeps nothing clean.
    public var limit: Int {
        didSet { enforce(growing: nil) }
    }
    /// Bytes taken (clean and unapplied) over every table.
    public fileprivate(set) var used = 0
    private var tables: [Weak] = []

    private struct Weak {
        weak var table: KeyTable?
    }

    public init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// Clean bytes over every table.
    public var cleanBytes: Int { tables.reduce(0) { $0 + ($1.table?.cleanBytes ?? 0) } }
    /// Unapplied bytes over every table (the memtables' total), kept as
    /// the tables change: read before every write.
    public fileprivate(set) var unappliedBytes = 0
    /// Bytes sealed batches hold as copies of their puts until they
    /// complete (part of `used`): memory that comes and goes with each
    /// batch, so a watch for memory given up looks past it.
    public fileprivate(set) var sealedBytes = 0

    fileprivate func register(_ table: KeyTable) {
        tables.removeAll { $0.table == nil }
        tables.append(Weak(table: table))
    }

    fileprivate func unregister(_ table: KeyTable) {
        used -= table.cleanBytes + table.unappliedBytes + table.sealedBytes
        sealedBytes -= table.sealedBytes
        unappliedBytes -= table.unappliedBytes
        tables.removeAll { $0.table == nil || $0.table === table }
    }

    /// Drops clean slots until within the limit, each table's clock hand
    /// taking at most `steps` steps for each slot it drops: a table whose
    /// hand found none in that many is passed over, and the budget may
    /// stay over its limit until a later call (every write and read kept
    /// in memory calls, and the server's cron does: `enforce()`).
    fileprivate func enforce(growing: KeyTable?, steps: Int = KeyTable.clockSteps) {
        guard used > limit else { return }
        var live = tables.compactMap(\.table)
        let fair = limit / max(1, live.count)
        var growing = growing
        while used > limit {
            let victim: KeyTable?
            if let table = growing, table.cleanBytes > 0, table.cleanBytes + table.unappliedBytes > fair {
                victim = table
            } else {
                victim = live.filter { $0.cleanBytes > 0 }.max { $0.cleanBytes < $1.cleanBytes }
            }
            guard let victim else { return }
            if !victim.evictOne(steps: steps) {
                live.removeAll { $0 === victim }
                if growing === victim { growing = nil }
            }
        }
    }

    /// Drops clean slots until within the limit, the clock hands taking up
    /// to `steps` steps a slot (the server's cron: a budget lowered while
    /// idle, or left over its limit by the bounded calls of writes and reads).
    public func enforce(steps: Int = 16_384) {
        enforce(growing: nil, steps: steps)
    }
}

/// The keys a cache holds in memory: one table that is both the memory
/// tier (clean rows kept to spare SQLite a read, replaced by CLOCK within
/// a `MemoryBudget`) and the memtable (rows changed but not yet in the
/// file: never dropped, counted apart in `unappliedBytes`).
///
/// A slot found here is the key's current state, always: every write goes
/// through the table, so a lookup that finds nothing here must ask the
/// file. Not thread-safe: the engine's owner uses it; batches carry copies.
final class KeyTable {
    /// The budget this table shares (or has to itself).
    let budget: MemoryBudget
    private(set) var cleanBytes = 0 {
        didSet { budget.used += cleanBytes - oldValue }
    }
    /// Bytes of the slots not yet in the file (the memtable's size).
    private(set) var unappliedBytes = 0 {
        didSet {
            budget.used += unappliedBytes - oldValue
            budget.unappliedBytes += unappliedBytes - oldValue
        }
    }
    /// Bytes of the copies sealed batches hold of their puts, until each
    /// completes: memory the budget counts (clean slots make room for it),
    /// not the memtable's size.
    private(set) var sealedBytes = 0 {
        didSet {
            budget.used += sealedBytes - oldValue
            budget.sealedBytes += sealedBytes - oldValue
        }
    }
    private(set) var hits = 0
    private(set) var misses = 0

    private var slots = SlotIndex()
    /// The filter of the file's keys, told of every key given a row.
    var fileKeys: FileKeys?
    /// The clock's hand: a bucket of the index. The clock passes over the
    /// index itself (a referenced bit in each slot), not over a ring of
    /// clean slots beside it, which took 8 bytes a clean key (13 MiB at a
    /// million) and 4 in each slot for its place there.
    private var hand = 0
    /// Slots changed since the last seal, in the order they first changed.
    /// Not retained: the index holds every one of them, since it drops
    /// only clean slots (and all of them at once, with this list), and a
    /// slot listed here stays unapplied until the batch that seals the
    /// list completes. (Releasing 300,000 slots at a seal, each a cache
    /// miss, took 20 ms of the loop.)
    private var changed: [Unmanaged<KeySlot>] = []
    /// Whether some slot changed since the last seal.
    var hasChanges: Bool { !changed.isEmpty }
    /// How many of `changed` a batch not yet sealed has taken (`sealPart`).
    private var sealedUpTo = 0
    /// Unapplied slots by the top 12 bits of their digest, so a scan finds
    /// those in its digest range without sorting them all (allocated at the
    /// first change).
    private var unappliedIndex: [[KeySlot]] = []
    static let indexBits = 12
    private(set) var unappliedCount = 0
    /// Slots written blind (`KeySlot.assumedNew`) whose totals are not corrected yet.
    var assumedNewCount = 0

    /// Bookkeeping per slot beyond the room for its bytes: the block's
    /// object header, fields and malloc's word (92 bytes in the 208-byte
    /// chunk of a 16-byte key and a 100-byte value) and about two index
    /// buckets (16).
    static let overhead = 108

    /// A table with a budget of its own, of `budget` bytes.
    convenience init(budget: Int) {
        self.init(sharing: MemoryBudget(limit: budget))
    }

    /// A table counted against a shared budget.
    init(sharing budget: MemoryBudget) {
        self.budget = budget
        budget.register(self)
    }

    deinit { budget.unregister(self) }

    var count: Int { slots.count }

    /// What a slot costs: the room it has for its bytes (which may be more
    /// than it holds now: a slot keeps its room when its value shrinks),
    /// its live value's estimate, and the bookkeeping.
    static func cost(_ slot: KeySlot) -> Int {
        slot.countedBytes + overhead
    }

    /// The cost of a new slot holding `key` and `row`, from the values given
    /// (before a slot is made for them).
    @inline(__always)
    static func cost(key: [UInt8], row: Row?) -> Int {
        guard let row else { return key.count + overhead }
        return key.count + row.metadata.count + row.value.memoryCost + overhead
    }

    /// The slot for `digest`, without counting a hit.
    func slot(_ digest: KeyDigest) -> KeySlot? { slots[digest] }

    /// The slot of `digest`, counted as a hit or miss when `counting`.
    @inline(__always)
    func slot(digest: KeyDigest, counting: Bool) -> KeySlot? {
        counting ? lookup(digest) : slot(digest)
    }

    /// Asks for the cache line of `digest`'s index bucket (the first of
    /// two steps ahead of a lookup; see `CacheEngine.prefetch`).
    @inline(__always)
    func prefetchBucket(_ digest: KeyDigest) { slots.prefetchBucket(digest) }

    /// Asks for `digest`'s slot, when its bucket (asked for a step before)
    /// holds it.
    @inline(__always)
    func prefetchSlot(_ digest: KeyDigest) { slots.prefetchSlot(digest) }

    /// The slot for `digest`, counted as a hit or a miss, marked recently used.
    func lookup(_ digest: KeyDigest) -> KeySlot? {
        // Reads move a resize on too: lookups meanwhile look in two tables.
        if slots.resizing { slots.continueResize() }
        guard let slot = slots[digest] else {
            misses += 1
            return nil
        }
        hits += 1
        slot.referenced = true
        return slot
    }

    /// Keeps a row read from the file (or a miss, with `row` nil) as a
    /// clean slot, when the budget has room for it.
    /// - Returns: the slot kept, or nil when the budget keeps nothing.
    @discardableResult
    func cache(_ digest: KeyDigest, key: [UInt8], row: Row?) -> KeySlot? {
        precondition(slots[digest] == nil, "cache() of a key the table already holds")
        let cost = Self.cost(key: key, row: row)
        guard budget.limit > 0, cost <= budget.limit / 4 else { return nil }
        let slot = KeySlot.make(digest: digest, key: key, row: row)
        slot.countLive()
        slots[digest] = slot
        cleanBytes += Self.cost(slot)
        shrink()
        return slot
    }

    /// Makes room for `count` more slots at once (a replay knows how many
    /// records are coming: growing the index step by step rehashes every
    /// slot again at each doubling, and the unapplied index's buckets were
    /// copied seven times each on the way to 50 slots).
    func reserve(_ count: Int) {
        slots.reserveCapacity(slots.count + count)
        changed.reserveCapacity(changed.count + count)
        guard count > 0 else { return }
        allocateUnappliedIndexIfNeeded()
        let perBucket = (unappliedCount + count) >> Self.indexBits
        for bucket in unappliedIndex.indices {
            unappliedIndex[bucket].reserveCapacity(perBucket + perBucket / 4 + 4)
        }
    }

    /// Sets the current state of `digest` (a row, or nil for deleted) and
    /// marks it for the next batch.
    @discardableResult
    func write(_ digest: KeyDigest, key: [UInt8], row: Row?) -> KeySlot {
        write(digest, key: key, row: row, found: slots[digest])
    }

    /// `write`, given what `slot(digest)` returned just before (nil: the
    /// table does not hold the key), so the key is hashed and looked up once.
    @discardableResult
    func write(_ digest: KeyDigest, key: consuming [UInt8], row: consuming Row?, found: KeySlot?) -> KeySlot {
        // A key the table did not know to exist gets a row: the file may
        // hold it once a batch carries it (see FileKeys).
        if row != nil && (found == nil || !found!.hasRow) { fileKeys?.insert(digest) }
        let slot: KeySlot
        if let found {
            assert(slots[digest] === found, "write(found:) with a stale slot")
            slot = found
            detach(slot)
            slot.row = row
        } else {
            assert(slots[digest] == nil, "write(found: nil) of a key the table holds")
            slot = KeySlot.make(digest: digest, key: key, row: row)
            slots[digest] = slot
        }
        markChanged(slot, .row)
        attach(slot)
        return slot
    }

    /// `write(_:key:row:found:)` of a row given as bytes in place (a SET's
    /// key and value where they arrived): nothing is allocated for a key
    /// the table holds when the new bytes fit its slot.
    @discardableResult
    func write(_ digest: KeyDigest, key: UnsafeRawBufferPointer, head: RowHead, metadata: UnsafeRawBufferPointer,
               value: UnsafeRawBufferPointer, found: KeySlot?) -> KeySlot {
        if found == nil || !found!.hasRow { fileKeys?.insert(digest) }
        let slot: KeySlot
        if let found {
            assert(slots[digest] === found, "write(found:) with a stale slot")
            slot = found
            detach(slot)
        } else {
            assert(slots[digest] == nil, "write(found: nil) of a key the table holds")
            slot = KeySlot.make(digest: digest, key: key, metadata: metadata.count, value: value.count)
            slots[digest] = slot
        }
        slot.assign(head, metadata: metadata, value: value, live: nil)
        markChanged(slot, .row)
        attach(slot)
        return slot
    }

    /// Marks a slot whose row changed in place (its order, its live value,
    /// its expiry) for the next batch: `.touch` when only the order did.
    func noteChange(_ slot: KeySlot, _ change: KeySlot.Change) {
        detach(slot)
        markChanged(slot, change)
        attach(slot)
    }

    private func markChanged(_ slot: KeySlot, _ change: KeySlot.Change) {
        if slot.change == .none { changed.append(Unmanaged.passUnretained(slot)) }
        if change.rawValue > slot.change.rawValue { slot.change = change }
    }

    /// Takes a slot out of the accounting before it changes.
    private func detach(_ slot: KeySlot) {
        if slot.isUnapplied {
            unappliedBytes -= Self.cost(slot)
        } else {
            cleanBytes -= Self.cost(slot)
        }
    }

    /// Puts a slot back into the accounting after it changed.
    private func attach(_ slot: KeySlot) {
        slot.countLive()
        if slot.isUnapplied {
            unappliedBytes += Self.cost(slot)
            if !slot.indexed { index(slot) }
            if budget.used > budget.limit { shrink() }
        } else {
            cleanBytes += Self.cost(slot)
            shrink()
        }
    }

    /// What the clean and unapplied totals should be, counted slot by slot
    /// (a pass over every slot: for tests of the accounting).
    func recount() -> (clean: Int, unapplied: Int) {
        var clean = 0, unapplied = 0
        slots.forEachSlot { slot in
            if slot.isUnapplied { unapplied += Self.cost(slot) } else { clean += Self.cost(slot) }
            return true
        }
        return (clean, unapplied)
    }

    /// Gives `slot` (which holds a row) `value` as its live value in place
    /// of its value bytes, counted anew.
    func setLive(_ slot: KeySlot, _ value: LiveValue) {
        detach(slot)
        slot.setLive(value)
        attach(slot)
    }

    /// Forgets `slot`, one the table holds (a clean slot only: a changed
    /// one must reach the file).
    func forget(_ slot: KeySlot) {
        guard !slot.isUnapplied else { return }
        detach(slot)
        slots.remove(slot)
    }

    /// Forgets everything, changed slots too (a clear replaces them all).
    func removeAll() {
        slots.removeAll()
        changed.removeAll()
        sealedUpTo = 0
        unappliedIndex = []
        unappliedCount = 0
        assumedNewCount = 0
        hand = 0
        cleanBytes = 0
        unappliedBytes = 0
    }

    // MARK: Batches

    /// Hands every changed slot's state to batch `id`: each becomes in
    /// flight with it, its live value frozen until the batch completes.
    /// `writes` holds what parts of the same batch took before
    /// (`sealPart`), if any.
    func seal(_ id: UInt64, into writes: inout SealedWrites) {
        sealSlots(id, into: &writes, upTo: changed.count)
        // A large list goes (8 bytes a key: a million keys' fill left 8 MB
        // behind); a small one is kept for the next second's changes.
        changed.removeAll(keepingCapacity: changed.capacity <= 1 << 16)
        sealedUpTo = 0
    }

    /// Hands every changed slot's state to a new batch `id`.
    func seal(_ id: UInt64) -> SealedWrites {
        var writes = SealedWrites()
        seal(id, into: &writes)
        return writes
    }

    /// Hands the state of up to `limit` more changed slots to batch `id`,
    /// ahead of its seal, so no one step of the loop copies a whole
    /// memtable (sealing 280,000 keys at once stalled it for 100 ms).
    /// A slot changed again before the seal is handed over again then:
    /// the batch keeps its last state (`SealedWrites.mayRepeat`).
    /// - Returns: how many slots it took.
    @discardableResult
    func sealPart(_ id: UInt64, into writes: inout SealedWrites, limit: Int) -> Int {
        let start = sealedUpTo
        sealSlots(id, into: &writes, upTo: min(changed.count, start + max(0, limit)))
        return sealedUpTo - start
    }

    /// Changed slots not yet handed to a batch.
    var unsealedCount: Int { changed.count - sealedUpTo }

    /// Seals `changed[sealedUpTo..<end]` into batch `id`.
    private func sealSlots(_ id: UInt64, into writes: inout SealedWrites, upTo end: Int) {
        precondition(UInt16(truncatingIfNeeded: id) != 0, "a batch id whose low 16 bits are 0 (a slot's 'none')")
        guard sealedUpTo < end else { return }
        // Once, at the first part, with room for a quarter more changing
        // meanwhile: reserving exactly each time copied the whole list
        // again, and so did the list doubling (300,000 writes: 10-20 ms).
        if writes.isEmpty { writes.reserveCapacity((changed.count - sealedUpTo) * (end < changed.count ? 5 : 4) / 4) }
        let bytesBefore = writes.byteCount
        // A slot changed a second ago is out of the cache: the misses of
        // the slots ahead overlap with the copy of this one's bytes (at a
        // million keys overwritten, the seal took 11% of the loop's time
        // without them, 4% with).
        let ahead = 8
        for i in sealedUpTo..<end {
            if i + ahead < end { changed[i + ahead]._withUnsafeGuaranteedRef { $0.prefetch() } }
            let slot = changed[i].takeUnretainedValue()
            if slot.change == .none { continue }
            // Handed to this batch before, by an earlier part: this state replaces that one.
            let again = slot.isInFlight(in: id)
            if again { writes.mayRepeat = true }
            // A slot keeps only its digest's first two words: the batch needs all four.
            let digest = slot.digest()
            // A touch after a part took the row is written whole: only the last state is kept.
            switch (slot.change == .touch && !again, slot.hasRow) {
            case (true, true):
                writes.append(BatchWrite(digest: digest, op: .touch(seq: slot.seq), correct: slot.assumedNew))
            case (_, true):
                var write = BatchWrite(digest: digest, op: .put(RowHead(storageDate: slot.storageDate, seq: slot.seq,
                                                                               expiresAt: slot.expiresAt, kind: slot.kind)),
                                       correct: slot.assumedNew)
                if let live = slot.live {
                    live.isFrozen = true
                    write.live = live
                }
                slot.withKey { key in
                    slot.withMetadata { metadata in
                        slot.withValueBytes { value in writes.append(write, key: key, metadata: metadata, value: value) }
                    }
                }
            case (_, false):
                writes.append(BatchWrite(digest: digest, op: .delete, correct: slot.assumedNew))
            }
            slot.change = .none
            slot.setInFlight(id)
        }
        sealedUpTo = end
        sealedBytes += writes.byteCount - bytesBefore
        if budget.used > budget.limit { shrink() }
    }

    /// Lets go of a sealed batch's copy of its puts' bytes (it completed:
    /// applied, or failed and marked for the next batch).
    func release(_ writes: inout SealedWrites) {
        sealedBytes -= writes.byteCount
        writes.releaseBytes()
    }

    /// Takes back batch `id`'s slots once the writer is done with them: they
    /// are clean again, unless changed since; when the batch failed they
    /// are marked for the next one.
    func complete(_ id: UInt64, _ writes: SealedWrites, failed: Bool) {
        complete(id, writes, in: writes.indices, failed: failed)
    }

    /// Takes back the slots of `range` of batch `id`'s writes (a batch may
    /// be taken back a part at a time: until then a slot stays in flight).
    func complete(_ id: UInt64, _ writes: SealedWrites, in range: Range<Int>, failed: Bool) {
        // By index, not `for write in writes`: a copy of each write would
        // retain and release its key and row.
        for w in range {
            // The slots of a batch sealed a second ago are out of the cache:
            // their buckets and then the slots are asked for ahead.
            if w + 16 < range.upperBound { slots.prefetchBucket(writes[w + 16].digest) }
            if w + 8 < range.upperBound { slots.prefetchSlot(writes[w + 8].digest) }
            guard let slot = slots[writes[w].digest] else { continue }
            guard slot.isInFlight(in: id) else {
                // A later batch holds the slot, maybe only its order (an
                // LRU touch): the row this failed one wrote goes again, whole.
                if failed && slot.inFlight != 0 && !writes[w].op.isTouch { noteChange(slot, .row) }
                continue
            }
            detach(slot)
            slot.inFlight = 0
            if let value = writes[w].live, let current = slot.live, current === value {
                value.isFrozen = false  // nobody else holds it now
            }
            if failed {
                markChanged(slot, writes[w].op.isTouch ? .touch : .row)
            } else if writes[w].correct && slot.assumedNew {
                slot.assumedNew = false  // the writer found what the file held and corrected the totals
                assumedNewCount -= 1
            }
            if !slot.isUnapplied && budget.unappliedBytes + budget.sealedBytes >= budget.limit {
                // The memtable alone fills the budget: no clean slot can
                // stay, so the applied one goes now, not after a walk of
                // the clock's hand past unapplied slots to find it.
                if slot.indexed { unindex(slot) }
                slots.remove(slot)
                continue
            }
            attach(slot)
            if !slot.isUnapplied && slot.indexed { unindex(slot) }
        }
        // Drained: the index's 4,096 arrays keep the room their largest
        // memtable needed (8 bytes a key) unless they go.
        if unappliedCount == 0 && !unappliedIndex.isEmpty { unappliedIndex = [] }
    }

    // MARK: The unapplied slots, by digest range

    private static func bucket(_ digest: KeyDigest) -> Int { bucket(prefix: digest.w0) }
    private static func bucket(prefix: UInt64) -> Int { Int(prefix >> UInt64(64 - indexBits)) }

    private func allocateUnappliedIndexIfNeeded() {
        if unappliedIndex.isEmpty { unappliedIndex = Array(repeating: [], count: 1 << Self.indexBits) }
    }

    private func index(_ slot: KeySlot) {
        allocateUnappliedIndexIfNeeded()
        let bucket = Self.bucket(prefix: slot.digestPrefix)
        slot.indexPosition = unappliedIndex[bucket].count
        unappliedIndex[bucket].append(slot)
        unappliedCount += 1
    }

    private func unindex(_ slot: KeySlot) {
        let at = slot.indexPosition
        guard at >= 0, !unappliedIndex.isEmpty else { return }
        let bucket = Self.bucket(prefix: slot.digestPrefix)
        let last = unappliedIndex[bucket].removeLast()
        if last !== slot {
            unappliedIndex[bucket][at] = last
            last.indexPosition = at
        }
        slot.indexPosition = -1
        unappliedCount -= 1
    }

    /// The unapplied slots whose digest is at or after `start`, with their
    /// digests, in digest order, until `limit` are found and then to the
    /// end of that one's 12-bit bucket.
    func unapplied(from start: KeyDigest, limit: Int) -> [(digest: KeyDigest, slot: KeySlot)] {
        var found: [(digest: KeyDigest, slot: KeySlot)] = []
        guard unappliedCount > 0 else { return found }
        var bucket = Self.bucket(start)
        while bucket < unappliedIndex.count && found.count < limit {
            let slots = unappliedIndex[bucket]
            if !slots.isEmpty {
                found.append(contentsOf: slots.lazy.map { (digest: $0.digest(), slot: $0) }.filter { $0.digest >= start }
                    .sorted { $0.digest < $1.digest })
            }
            bucket += 1
        }
        return found
    }

    /// The draws of random sampling (eviction, RANDOMKEY): xorshift, as
    /// each `Int.random(in:)` of the system generator is a `getrandom(2)`
    /// (a fifth of a SET's time when every SET evicts).
    var random = FastRandom(seed: UInt64.random(in: 1...UInt64.max))

    /// A uniform draw in `0..<bound` (bound > 0).
    @inline(__always)
    func draw(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &random) }

    /// A slot picked at random among every slot the table holds (clean
    /// and unapplied, deletes too), or nil when it holds none: the first
    /// occupied bucket of the index from a random one, as Redis's
    /// `dictGetRandomKey` (a slot after a run of empty buckets is a little
    /// likelier). O(1): picking from the buckets of unapplied slots scanned
    /// empty ones while the writer kept up, a retain and a release each.
    func randomSlot() -> KeySlot? { slots.randomSlot(using: &random) }

    /// Calls `body` with the slots in memory while it returns true, for at
    /// most `limit` of them (a fallback when random samples found nothing).
    func visitSlots(limit: Int, _ body: (KeySlot) -> Bool) {
        var visited = 0
        slots.forEachSlot { slot in
            defer { visited += 1 }
            return visited < limit && body(slot)
        }
    }

    /// Every unapplied slot, in no order.
    var allUnapplied: [KeySlot] { unappliedIndex.flatMap { $0 } }

    /// The unapplied slots whose digests start with `bucket`'s top
    /// `indexBits` bits (0 ..< 1 << indexBits), in no order.
    func unapplied(inBucket bucket: Int) -> [KeySlot] {
        bucket < unappliedIndex.count ? unappliedIndex[bucket] : []
    }

    /// The digests of the unapplied slots that hold a row (not deletes),
    /// without listing the slots first.
    func unappliedDigestsWithRows() -> [KeyDigest] {
        var digests: [KeyDigest] = []
        digests.reserveCapacity(unappliedCount)
        for bucket in unappliedIndex.indices {
            for i in unappliedIndex[bucket].indices where unappliedIndex[bucket][i].hasRow {
                digests.append(unappliedIndex[bucket][i].digest())
            }
        }
        return digests
    }

    // MARK: The clock

    /// Drops clean slots until the shared budget is kept.
    private func shrink() {
        budget.enforce(growing: self)
    }

    /// Steps the hand takes at most to drop one slot, for a write or a read
    /// kept in memory (`MemoryBudget.enforce`).
    static let clockSteps = 1024

    /// Drops one clean slot, the clock hand's choice (a read slot gets a
    /// second chance; unapplied ones are passed), in at most `steps` buckets
    /// walked, of which at most an eighth hold unapplied slots (each a
    /// cache miss for nothing).
    /// Unbounded, a walk was the whole index: when unapplied slots fill the
    /// budget (the writer behind, a small tier) a clean one may be a whole
    /// turn away, and a walk to it for every slot made clean made a batch's
    /// completion quadratic (and at 1,024 such steps, a 2M-key memtable
    /// over a 32 MiB tier took 164 s to drain, not 60); and after a fill
    /// every slot is new, so referenced, and the first drop cleared all
    /// their bits. The next call goes on from where the hand stopped.
    /// - Returns: false when no slot was dropped.
    fileprivate func evictOne(steps: Int) -> Bool {
        guard cleanBytes > 0 else { return false }
        var walked = 0, passed = 0
        let passes = steps / 8
        while walked < steps && passed < passes {
            if hand >= slots.capacity { hand = 0 }
            slots.prefetchSlot(atBucket: hand + 8)
            walked += 1
            guard let slot = slots.slot(atBucket: hand) else {
                hand += 1
                continue
            }
            if slot.isUnapplied {
                hand += 1
                passed += 1
            } else if slot.referenced {
                slot.referenced = false
                hand += 1
            } else {
                // The hand stays: the run after it shifts back into this bucket.
                cleanBytes -= Self.cost(slot)
                slots.remove(atBucket: hand)
                return true
            }
        }
        return false
    }
}

extension BatchWrite.Op {
    var isTouch: Bool {
        if case .touch = self { return true }
        return false
    }
}
