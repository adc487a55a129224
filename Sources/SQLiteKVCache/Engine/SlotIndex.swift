#if canImport(Glibc)
import Glibc
#endif
import CPrefetch

/// The key table's slots by digest: open addressing with linear probing
/// over one array of 8-byte buckets. A bucket packs the slot's address
/// (48 bits, a retained reference), 16 bits of a seeded mix of the
/// digest's first word (the tag: a probe reads a slot only when its tag
/// matches, one time in 65,536 for another key) and how far the slot
/// sits from its home bucket (4 bits, 15 meaning "at least 15": then the
/// slot's digest gives it), so a removal shifts the run back without
/// reading the slots it moves. At a million keys the index takes 16 MiB
/// (2M buckets); with a 64-bit tag beside a reference it took 32, and a
/// `[KeyDigest: KeySlot]` 80. Growing reads each slot's digest for its new
/// home (asked for some slots ahead); a large index grows (or shrinks) a
/// few runs of buckets per change, as Redis rehashes its dict, not at
/// once (at 786,000 keys growing took the loop 36 ms). The seed is random per index, so a
/// client cannot aim keys at one run of buckets. Removal shifts the run
/// back (no tombstones). A slot is told apart by its digest's first 128
/// bits (`KeySlot.matches`), which is all of it a slot keeps.
struct SlotIndex: ~Copyable {
    /// One array of buckets: 0 empty; otherwise the slot's address | tag << 48 | distance.
    /// A large one is mapped from the kernel, whose pages come zeroed as
    /// they are first touched: `[UInt64](repeating: 0, ...)` cleared 64 MiB
    /// (8M buckets, at 3.4M keys) at once, a 45 ms stall of the loop.
    fileprivate final class Table {
        let buckets: UnsafeMutablePointer<UInt64>
        let mask: Int
        private let mapped: Bool
        var capacity: Int { mask + 1 }
        var all: UnsafeMutableBufferPointer<UInt64> { UnsafeMutableBufferPointer(start: buckets, count: capacity) }

        init(capacity: Int) {
            let bytes = capacity * MemoryLayout<UInt64>.stride
            mapped = bytes >= 1 << 20
            let memory = mapped ? mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                : calloc(capacity, MemoryLayout<UInt64>.stride)
            guard let memory, memory != MAP_FAILED else { fatalError("out of memory for an index of \(capacity) buckets") }
            buckets = memory.bindMemory(to: UInt64.self, capacity: capacity)
            mask = capacity - 1
        }

        deinit {
            if mapped { munmap(buckets, capacity * MemoryLayout<UInt64>.stride) } else { free(buckets) }
        }

        @inline(__always)
        func home(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash) & mask }
    }

    /// Where slots are put.
    private var table = Table(capacity: 16)
    /// While the index is being resized: the table it moves out of, a
    /// run of buckets at a time (its buckets from `moveStart` on, for
    /// `moved` buckets, are empty now), then nil. Lookups look in both.
    private var old: Table?
    private var moveStart = 0
    private var moved = 0
    private(set) var count = 0
    private let seed = UInt64.random(in: 0...UInt64.max)
    /// Tables of fewer buckets are resized at once (tests lower it).
    var resizeAtOnceBelow = 1 << 16
    /// Buckets of the old table moved per change of the index (and then
    /// to the end of their run), while a resize goes on.
    static let moveStep = 32

    private static let addressMask: UInt64 = 0x0000_FFFF_FFFF_FFF0
    private static let distanceMask: UInt64 = 0xF
    private static let tagShift: UInt64 = 48

    init() {}

    deinit {
        releaseAll(table)
        if let old { releaseAll(old) }
    }

    /// Buckets, counting both tables while a resize goes on (the clock's
    /// hand and random picks number them: the new table's first).
    var capacity: Int { table.capacity + (old?.capacity ?? 0) }
    /// Whether a resize is moving slots from an old table.
    var resizing: Bool { old != nil }

    // MARK: Buckets

    @inline(__always)
    private func hash(prefix: UInt64) -> UInt64 { Self.hash(prefix: prefix, seed: seed) }

    @inline(__always)
    private static func hash(prefix: UInt64, seed: UInt64) -> UInt64 {
        var h = prefix ^ seed
        h ^= h >> 33
        h &*= 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h &*= 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return h
    }

    @inline(__always)
    private static func tag(_ hash: UInt64) -> UInt64 { hash >> tagShift }

    @inline(__always)
    private static func reference(_ bucket: UInt64) -> Unmanaged<KeySlot> {
        Unmanaged<KeySlot>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(bucket & addressMask))!)
    }

    @inline(__always)
    private static func slot(_ bucket: UInt64) -> KeySlot { reference(bucket).takeUnretainedValue() }

    /// Asks for the first cache lines of the slot in a (non-empty) bucket
    /// from its address alone: making a `KeySlot` of it would retain the
    /// slot, an atomic write to the very line being asked for, which then
    /// waits for it (2.6% of SET -P 16 on 10K keys).
    @inline(__always)
    private static func prefetchSlot(inBucket bucket: UInt64) {
        kv_prefetch(UnsafeRawPointer(bitPattern: UInt(bucket & addressMask)), KeySlot.prefetchLines)
    }

    /// Gives back the reference a bucket holds.
    @inline(__always)
    private static func release(_ bucket: UInt64) { reference(bucket).release() }

    /// A bucket for `slot` (whose reference the caller passes retained) at
    /// `distance` from its home.
    @inline(__always)
    private static func bucket(_ address: UInt64, hash: UInt64, distance: Int) -> UInt64 {
        address | tag(hash) << tagShift | UInt64(min(distance, 15))
    }

    @inline(__always)
    private static func retainedAddress(_ slot: KeySlot) -> UInt64 {
        let address = UInt64(UInt(bitPattern: Unmanaged.passRetained(slot).toOpaque()))
        precondition(address & ~addressMask == 0, "a slot's address outside 48 bits")
        return address
    }

    /// The home in `t` of the slot in its bucket `i`: from its distance,
    /// or from its digest when it sits 15 or more buckets from home.
    @inline(__always)
    private static func home(ofBucket i: Int, in t: Table, seed: UInt64) -> Int {
        let distance = Int(t.buckets[i] & distanceMask)
        if distance < 15 { return (i - distance) & t.mask }
        return t.home(hash(prefix: slot(t.buckets[i]).digestPrefix, seed: seed))
    }

    /// The bucket of `t` holding `digest`, or the empty one where it would go.
    @inline(__always)
    private static func find(_ digest: KeyDigest, _ h: UInt64, in t: Table) -> (index: Int, found: Bool) {
        let tag = Self.tag(h)
        let b = t.buckets
        var i = t.home(h)
        while true {
            let here = b[i]
            if here == 0 { return (i, false) }
            if here >> Self.tagShift == tag, Self.slot(here).matches(digest) { return (i, true) }
            i = (i + 1) & t.mask
        }
    }

    // MARK: Lookups

    /// Asks for the cache line of `digest`'s home bucket (a pass over
    /// many digests calls this some steps ahead of its lookups).
    @inline(__always)
    func prefetchBucket(_ digest: KeyDigest) {
        let i = table.home(hash(prefix: digest.w0))
        kv_prefetch(UnsafeRawPointer(table.buckets + i), 1)
    }

    /// Asks for the slot in `digest`'s home bucket when its tag is
    /// `digest`'s (the bucket asked for by `prefetchBucket` steps before).
    @inline(__always)
    func prefetchSlot(_ digest: KeyDigest) {
        let h = hash(prefix: digest.w0)
        let here = table.buckets[table.home(h)]
        if here != 0 && here >> Self.tagShift == Self.tag(h) { Self.prefetchSlot(inBucket: here) }
    }

    subscript(digest: KeyDigest) -> KeySlot? {
        get {
            let h = hash(prefix: digest.w0)
            let (i, found) = Self.find(digest, h, in: table)
            if found { return Self.slot(table.buckets[i]) }
            guard let old else { return nil }
            let (j, foundOld) = Self.find(digest, h, in: old)
            return foundOld ? Self.slot(old.buckets[j]) : nil
        }
        set {
            let h = hash(prefix: digest.w0)
            let (i, found) = Self.find(digest, h, in: table)
            if !found, old != nil {
                let (j, foundOld) = Self.find(digest, h, in: old!)
                if foundOld {
                    if let newValue {
                        // Replaced where it is: it moves with its run.
                        let address = Self.retainedAddress(newValue)
                        Self.release(old!.buckets[j])
                        old!.buckets[j] = old!.buckets[j] & ~Self.addressMask | address
                    } else {
                        removeFromOld(at: j)
                    }
                    moveSome()
                    return
                }
            }
            if let newValue {
                let address = Self.retainedAddress(newValue)
                if found { Self.release(table.buckets[i]) }
                table.buckets[i] = Self.bucket(address, hash: h, distance: (i - table.home(h)) & table.mask)
                if !found {
                    count += 1
                    if count * 4 > table.capacity * 3 { resize(to: table.capacity * 2) }
                }
            } else if found {
                remove(at: i)
            }
            moveSome()
        }
    }

    /// The slot in bucket `i` (any index below `capacity`), if any: the
    /// clock's hand passes over the buckets.
    @inline(__always)
    func slot(atBucket i: Int) -> KeySlot? {
        let b = bucket(at: i)
        return b == 0 ? nil : Self.slot(b)
    }

    @inline(__always)
    private func bucket(at i: Int) -> UInt64 {
        i < table.capacity ? table.buckets[i] : old!.buckets[i - table.capacity]
    }

    /// Asks for the slot in bucket `i`, if any (none past the last bucket).
    @inline(__always)
    func prefetchSlot(atBucket i: Int) {
        guard i < capacity else { return }
        let b = bucket(at: i)
        if b != 0 { Self.prefetchSlot(inBucket: b) }
    }

    /// Takes out the slot in bucket `i` (which must hold one).
    mutating func remove(atBucket i: Int) {
        precondition(bucket(at: i) != 0, "remove(atBucket:) of an empty bucket")
        if i < table.capacity { remove(at: i) } else { removeFromOld(at: i - table.capacity) }
    }

    /// Takes `slot` out (it must be in the index): found by its digest's
    /// first word and its identity, so its digest need not be computed.
    mutating func remove(_ slot: KeySlot) {
        let address = UInt64(UInt(bitPattern: Unmanaged.passUnretained(slot).toOpaque()))
        let h = hash(prefix: slot.digestPrefix)
        if let i = Self.position(of: address, h, in: table) {
            remove(at: i)
        } else {
            let j = old.flatMap { Self.position(of: address, h, in: $0) }
            precondition(j != nil, "remove() of a slot the index does not hold")
            removeFromOld(at: j!)
        }
        moveSome()
    }

    /// The bucket of `t` holding the slot at `address` (whose hash is `h`), if any.
    private static func position(of address: UInt64, _ h: UInt64, in t: Table) -> Int? {
        var i = t.home(h)
        while t.buckets[i] != 0 {
            if t.buckets[i] & addressMask == address { return i }
            i = (i + 1) & t.mask
        }
        return nil
    }

    /// Empties bucket `i` (releasing its slot) and moves back the entries
    /// after it that would no longer be found past the gap.
    private mutating func remove(at index: Int) {
        Self.release(table.buckets[index])
        Self.shiftBack(from: index, in: table, seed: seed)
        count -= 1
        // Below 1/8 full, half the buckets (then 1/4 full): the memory goes
        // back, and a random probe finds a slot within a few buckets.
        if table.capacity > 16 && count * 8 < table.capacity && old == nil { resize(to: table.capacity / 2) }
    }

    /// `remove(at:)` in the old table during a resize (its run shifts back
    /// within itself: runs stay whole until moved).
    private mutating func removeFromOld(at index: Int) {
        Self.release(old!.buckets[index])
        Self.shiftBack(from: index, in: old!, seed: seed)
        count -= 1
    }

    /// Fills the gap at `index` of `t` with the entries after it that
    /// would no longer be found past it, and empties the last one moved.
    private static func shiftBack(from index: Int, in t: Table, seed: UInt64) {
        var gap = index
        var i = (index + 1) & t.mask
        while t.buckets[i] != 0 {
            let want = home(ofBucket: i, in: t, seed: seed)
            // The entry at i may fill the gap when its home is not in (gap, i].
            let distanceToGap = (gap - want) & t.mask
            let distanceToHere = (i - want) & t.mask
            if distanceToGap < distanceToHere {
                t.buckets[gap] = t.buckets[i] & ~distanceMask | UInt64(min(distanceToGap, 15))
                gap = i
            }
            i = (i + 1) & t.mask
        }
        t.buckets[gap] = 0
    }

    // MARK: Resizing

    /// Moves every slot to a table of `newCapacity` buckets: at once for a
    /// small table, else a few runs per change from now on (`moveSome`).
    private mutating func resize(to newCapacity: Int) {
        finishResize()
        let previous = table
        table = Table(capacity: newCapacity)
        // The moves start after an empty bucket, so they take whole runs
        // and never one that wraps past the end unmoved.
        moveStart = previous.all.firstIndex(of: 0) ?? 0
        moved = 0
        old = previous
        if previous.capacity < resizeAtOnceBelow { finishResize() }
    }

    /// Moves the old table's next `Self.moveStep` buckets, and the rest of
    /// the run the last of them is in, to the table.
    @inline(__always)
    private mutating func moveSome() {
        if old != nil { move(buckets: Self.moveStep) }
    }

    /// Moves a step of a resize on (a read's share).
    mutating func continueResize() { moveSome() }

    /// Moves what is left of the old table (before another resize, or at once).
    mutating func finishResize() {
        guard let old else { return }
        move(buckets: old.capacity)
    }

    private mutating func move(buckets wanted: Int) {
        guard let from = old else { return }
        let total = from.capacity, start = moveStart, seed = seed
        let src = from.buckets, out = table.buckets, mask = table.mask
        var done = moved, n = 0
        // Whole runs: past `wanted`, on to the next empty bucket.
        while done < total && (n < wanted || src[(start + done) & from.mask] != 0) {
            let j = (start + done) & from.mask
            let ahead = (j + 16) & from.mask
            if src[ahead] != 0 { Self.prefetchSlot(inBucket: src[ahead]) }
            done += 1
            n += 1
            let b = src[j]
            guard b != 0 else { continue }
            src[j] = 0
            let h = Self.hash(prefix: Self.slot(b).digestPrefix, seed: seed)
            let homeIndex = Int(truncatingIfNeeded: h) & mask
            var i = homeIndex
            while out[i] != 0 { i = (i + 1) & mask }
            out[i] = Self.bucket(b & Self.addressMask, hash: h, distance: (i - homeIndex) & mask)
        }
        moved = done
        if done == total { old = nil }
    }

    /// Makes room for `total` slots without growing step by step.
    mutating func reserveCapacity(_ total: Int) {
        var wanted = table.capacity
        while total * 4 > wanted * 3 { wanted *= 2 }
        if wanted > table.capacity { resize(to: wanted) }
    }

    private func releaseAll(_ t: Table) {
        for bucket in t.all where bucket != 0 { Self.release(bucket) }
    }

    mutating func removeAll() {
        releaseAll(table)
        if let old { releaseAll(old) }
        old = nil
        table = Table(capacity: 16)
        count = 0
    }

    // MARK: Passes

    /// The slot of the first occupied bucket at or after a random one, or
    /// nil when empty (past 16 buckets the index is at least 1/8 full, so
    /// a few probes find one).
    func randomSlot(using random: inout FastRandom) -> KeySlot? {
        guard count > 0 else { return nil }
        if let old {
            // While resizing: draws over the new table and the old one's
            // buckets not yet moved, a few buckets' walk each (the moved
            // ones are one long empty stretch: a walk across it would take
            // long and land on its end's slot far too often).
            let unmoved = old.capacity - moved, first = moveStart + moved
            for _ in 0..<64 {
                let r = Int(truncatingIfNeeded: random.next() & UInt64(Int.max)) % (table.capacity + unmoved)
                for k in 0..<8 {
                    if r < table.capacity {
                        let b = table.buckets[(r + k) & table.mask]
                        if b != 0 { return Self.slot(b) }
                    } else if r - table.capacity + k < unmoved {
                        let b = old.buckets[(first + r - table.capacity + k) & old.mask]
                        if b != 0 { return Self.slot(b) }
                    }
                }
            }
        }
        let all = capacity
        var i = Int(truncatingIfNeeded: random.next() & UInt64(Int.max)) % all
        while bucket(at: i) == 0 { i = i + 1 == all ? 0 : i + 1 }
        return Self.slot(bucket(at: i))
    }

    /// Calls `body` with the slots, in no order, while it returns true.
    func forEachSlot(_ body: (KeySlot) -> Bool) {
        for t in [table] + (old.map { [$0] } ?? []) {
            for bucket in t.all where bucket != 0 {
                if !body(Self.slot(bucket)) { return }
            }
        }
    }

    /// Slots 15 or more buckets from home (their home comes from their
    /// digest when the run shifts back): for tests.
    var farFromHomeCount: Int {
        table.all.count { $0 != 0 && $0 & Self.distanceMask == 15 }
            + (old?.all.count { $0 != 0 && $0 & Self.distanceMask == 15 } ?? 0)
    }

    /// Bytes the index takes.
    var memoryBytes: Int { capacity * MemoryLayout<UInt64>.stride }
}
