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
/// home (asked for some slots ahead). The seed is random per index, so a
/// client cannot aim keys at one run of buckets. Removal shifts the run
/// back (no tombstones). A slot is told apart by its digest's first 128
/// bits (`KeySlot.matches`), which is all of it a slot keeps.
struct SlotIndex: ~Copyable {
    /// 0: empty; otherwise the slot's address | tag << 48 | distance.
    private var buckets: [UInt64]
    private var mask: Int
    private(set) var count = 0
    private let seed = UInt64.random(in: 0...UInt64.max)

    private static let addressMask: UInt64 = 0x0000_FFFF_FFFF_FFF0
    private static let distanceMask: UInt64 = 0xF
    private static let tagShift: UInt64 = 48

    init() {
        buckets = [UInt64](repeating: 0, count: 16)
        mask = 15
    }

    deinit { releaseAll() }

    var capacity: Int { mask + 1 }

    // MARK: Buckets

    @inline(__always)
    private func hash(prefix: UInt64) -> UInt64 {
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
    private func home(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash) & mask }

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

    /// The home of the slot in bucket `i`: from its distance, or from its
    /// digest when it sits 15 or more buckets from home.
    @inline(__always)
    private func home(ofBucket i: Int) -> Int {
        let distance = Int(buckets[i] & Self.distanceMask)
        if distance < 15 { return (i - distance) & mask }
        return home(hash(prefix: Self.slot(buckets[i]).digestPrefix))
    }

    /// The bucket holding `digest`, or the empty one where it would go.
    @inline(__always)
    private func find(_ digest: KeyDigest, _ h: UInt64) -> (index: Int, found: Bool) {
        let t = Self.tag(h)
        return buckets.withUnsafeBufferPointer { b in
            var i = home(h)
            while true {
                let here = b[i]
                if here == 0 { return (i, false) }
                if here >> Self.tagShift == t, Self.slot(here).matches(digest) { return (i, true) }
                i = (i + 1) & mask
            }
        }
    }

    // MARK: Lookups

    /// Asks for the cache line of `digest`'s home bucket (a pass over
    /// many digests calls this some steps ahead of its lookups).
    @inline(__always)
    func prefetchBucket(_ digest: KeyDigest) {
        let i = home(hash(prefix: digest.w0))
        buckets.withUnsafeBufferPointer { kv_prefetch(UnsafeRawPointer($0.baseAddress! + i), 1) }
    }

    /// Asks for the slot in `digest`'s home bucket when its tag is
    /// `digest`'s (the bucket asked for by `prefetchBucket` steps before).
    @inline(__always)
    func prefetchSlot(_ digest: KeyDigest) {
        let h = hash(prefix: digest.w0)
        let here = buckets[home(h)]
        if here != 0 && here >> Self.tagShift == Self.tag(h) { Self.prefetchSlot(inBucket: here) }
    }

    subscript(digest: KeyDigest) -> KeySlot? {
        get {
            let (i, found) = find(digest, hash(prefix: digest.w0))
            return found ? Self.slot(buckets[i]) : nil
        }
        set {
            let h = hash(prefix: digest.w0)
            let (i, found) = find(digest, h)
            if let newValue {
                let address = Self.retainedAddress(newValue)
                if found { Self.release(buckets[i]) }
                buckets[i] = Self.bucket(address, hash: h, distance: (i - home(h)) & mask)
                if !found {
                    count += 1
                    if count * 4 > capacity * 3 { resize(to: capacity * 2) }
                }
            } else if found {
                remove(at: i)
            }
        }
    }

    /// The slot in bucket `i` (any index below `capacity`), if any: the
    /// clock's hand passes over the buckets.
    @inline(__always)
    func slot(atBucket i: Int) -> KeySlot? {
        buckets[i] == 0 ? nil : Self.slot(buckets[i])
    }

    /// Asks for the slot in bucket `i`, if any (none past the last bucket).
    @inline(__always)
    func prefetchSlot(atBucket i: Int) {
        if i < buckets.count && buckets[i] != 0 { Self.prefetchSlot(inBucket: buckets[i]) }
    }

    /// Takes out the slot in bucket `i` (which must hold one).
    mutating func remove(atBucket i: Int) {
        precondition(buckets[i] != 0, "remove(atBucket:) of an empty bucket")
        remove(at: i)
    }

    /// Takes `slot` out (it must be in the index): found by its digest's
    /// first word and its identity, so its digest need not be computed.
    mutating func remove(_ slot: KeySlot) {
        let address = UInt64(UInt(bitPattern: Unmanaged.passUnretained(slot).toOpaque()))
        var i = home(hash(prefix: slot.digestPrefix))
        while buckets[i] & Self.addressMask != address {
            precondition(buckets[i] != 0, "remove() of a slot the index does not hold")
            i = (i + 1) & mask
        }
        remove(at: i)
    }

    /// Empties bucket `i` (releasing its slot) and moves back the entries
    /// after it that would no longer be found past the gap.
    private mutating func remove(at index: Int) {
        Self.release(buckets[index])
        var gap = index
        var i = (index + 1) & mask
        while buckets[i] != 0 {
            let want = home(ofBucket: i)
            // The entry at i may fill the gap when its home is not in (gap, i].
            let distanceToGap = (gap - want) & mask
            let distanceToHere = (i - want) & mask
            if distanceToGap < distanceToHere {
                buckets[gap] = buckets[i] & ~Self.distanceMask | UInt64(min(distanceToGap, 15))
                gap = i
            }
            i = (i + 1) & mask
        }
        buckets[gap] = 0
        count -= 1
        // Below 1/8 full, half the buckets (then 1/4 full): the memory goes
        // back, and a random probe finds a slot within a few buckets.
        if capacity > 16 && count * 8 < capacity { resize(to: capacity / 2) }
    }

    /// Rehashes into `newCapacity` buckets; the references move with their
    /// buckets (no retain or release). Each slot's digest gives its new
    /// home: the slots some buckets ahead are asked for first.
    private mutating func resize(to newCapacity: Int) {
        let old = buckets
        buckets = []
        var fresh = [UInt64](repeating: 0, count: newCapacity)
        let newMask = newCapacity - 1
        fresh.withUnsafeMutableBufferPointer { out in
            old.withUnsafeBufferPointer { from in
                for j in 0..<from.count {
                    // The slot 16 buckets ahead (about 12 occupied ones at
                    // the 3/4 load that grows the index) is asked for.
                    if j + 16 < from.count && from[j + 16] != 0 { Self.prefetchSlot(inBucket: from[j + 16]) }
                    guard from[j] != 0 else { continue }
                    let h = hash(prefix: Self.slot(from[j]).digestPrefix)
                    let homeIndex = Int(truncatingIfNeeded: h) & newMask
                    var i = homeIndex
                    while out[i] != 0 { i = (i + 1) & newMask }
                    out[i] = Self.bucket(from[j] & Self.addressMask, hash: h, distance: (i - homeIndex) & newMask)
                }
            }
        }
        buckets = fresh
        mask = newMask
    }

    /// Makes room for `total` slots without growing step by step.
    mutating func reserveCapacity(_ total: Int) {
        var wanted = capacity
        while total * 4 > wanted * 3 { wanted *= 2 }
        if wanted > capacity { resize(to: wanted) }
    }

    private func releaseAll() {
        for bucket in buckets where bucket != 0 { Self.release(bucket) }
    }

    mutating func removeAll() {
        releaseAll()
        buckets = [UInt64](repeating: 0, count: 16)
        mask = 15
        count = 0
    }

    // MARK: Passes

    /// The slot of the first occupied bucket at or after a random one, or
    /// nil when empty (past 16 buckets the index is at least 1/8 full, so
    /// a few probes find one).
    func randomSlot(using random: inout FastRandom) -> KeySlot? {
        guard count > 0 else { return nil }
        var i = Int(truncatingIfNeeded: random.next()) & mask
        while buckets[i] == 0 { i = (i + 1) & mask }
        return Self.slot(buckets[i])
    }

    /// Calls `body` with the slots, in no order, while it returns true.
    func forEachSlot(_ body: (KeySlot) -> Bool) {
        for bucket in buckets where bucket != 0 {
            if !body(Self.slot(bucket)) { return }
        }
    }

    /// Slots 15 or more buckets from home (their home comes from their
    /// digest when the run shifts back): for tests.
    var farFromHomeCount: Int { buckets.count { $0 != 0 && $0 & Self.distanceMask == 15 } }

    /// Bytes the index takes.
    var memoryBytes: Int { capacity * MemoryLayout<UInt64>.stride }
}
