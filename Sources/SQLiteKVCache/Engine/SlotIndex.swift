import CPrefetch

/// The key table's slots by digest: open addressing with linear probing
/// over one array of buckets, each a tag (a seeded mix of the digest's
/// first word) beside the slot, so a probe that finds the key reads the
/// slot from the line it read the tag from (two arrays cost a second cache
/// miss on every lookup of a key memory holds: at a million keys the
/// lookups of a log's replay were a quarter of its time). A bucket takes
/// 16 bytes, where a `[KeyDigest: KeySlot]` bucket takes 40 (the whole
/// digest beside the reference): at a million keys, 32 MB instead of 80.
/// The seed is random per index, so a client cannot aim keys at one run
/// of buckets. Removal shifts the run back (no tombstones). A slot is told
/// apart by its digest's first 128 bits (`KeySlot.matches`), which is all
/// of it a slot keeps.
struct SlotIndex {
    struct Bucket {
        /// 0: empty; otherwise `hash | 1` (a bucket's home is `tag >> 1`).
        var tag: UInt64 = 0
        var slot: KeySlot?
    }

    private var buckets: [Bucket]
    private var mask: Int
    private(set) var count = 0
    private let seed = UInt64.random(in: 0...UInt64.max)

    init() {
        buckets = [Bucket](repeating: Bucket(), count: 16)
        mask = 15
    }

    var capacity: Int { mask + 1 }

    @inline(__always)
    private func tag(_ digest: KeyDigest) -> UInt64 { tag(prefix: digest.w0) }

    @inline(__always)
    private func tag(prefix: UInt64) -> UInt64 {
        var h = prefix ^ seed
        h ^= h >> 33
        h &*= 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h &*= 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return h | 1
    }

    @inline(__always)
    private func home(_ tag: UInt64) -> Int { Int(truncatingIfNeeded: tag >> 1) & mask }

    /// The bucket holding `digest`, or the empty one where it would go.
    @inline(__always)
    private func find(_ digest: KeyDigest, _ t: UInt64) -> (index: Int, found: Bool) {
        buckets.withUnsafeBufferPointer { b in
            var i = home(t)
            while true {
                let here = b[i].tag
                if here == 0 { return (i, false) }
                if here == t, let slot = b[i].slot, slot.matches(digest) { return (i, true) }
                i = (i + 1) & mask
            }
        }
    }

    /// Asks for the cache line of `digest`'s home bucket (a pass over
    /// many digests calls this some steps ahead of its lookups).
    @inline(__always)
    func prefetchBucket(_ digest: KeyDigest) {
        let i = home(tag(digest))
        buckets.withUnsafeBufferPointer { kv_prefetch(UnsafeRawPointer($0.baseAddress! + i), 1) }
    }

    /// Asks for the slot in `digest`'s home bucket when its tag is
    /// `digest`'s (the bucket asked for by `prefetchBucket` steps before).
    @inline(__always)
    func prefetchSlot(_ digest: KeyDigest) {
        let t = tag(digest)
        buckets.withUnsafeBufferPointer { b in
            let i = home(t)
            if b[i].tag == t { b[i].slot?.prefetch() }
        }
    }

    subscript(digest: KeyDigest) -> KeySlot? {
        get {
            let (i, found) = find(digest, tag(digest))
            return found ? buckets[i].slot : nil
        }
        set {
            let t = tag(digest)
            let (i, found) = find(digest, t)
            if let newValue {
                buckets[i].slot = newValue
                if !found {
                    buckets[i].tag = t
                    count += 1
                    if count * 4 > capacity * 3 { resize(to: capacity * 2) }
                }
            } else if found {
                remove(at: i)
            }
        }
    }

    /// Takes `slot` out (it must be in the index): found by its digest's
    /// first word and its identity, so its digest need not be computed.
    mutating func remove(_ slot: KeySlot) {
        let t = tag(prefix: slot.digestPrefix)
        var i = home(t)
        while buckets[i].tag != t || buckets[i].slot !== slot {
            precondition(buckets[i].tag != 0, "remove() of a slot the index does not hold")
            i = (i + 1) & mask
        }
        remove(at: i)
    }

    /// Empties bucket `i` and moves back the entries after it that would no
    /// longer be found past the gap.
    private mutating func remove(at index: Int) {
        var gap = index
        var i = (index + 1) & mask
        while buckets[i].tag != 0 {
            let want = home(buckets[i].tag)
            // The entry at i may fill the gap when its home is not in (gap, i].
            let distanceToGap = (gap - want) & mask
            let distanceToHere = (i - want) & mask
            if distanceToGap < distanceToHere {
                buckets.swapAt(gap, i)
                gap = i
            }
            i = (i + 1) & mask
        }
        buckets[gap] = Bucket()
        count -= 1
        // Below 1/8 full, half the buckets (then 1/4 full): the memory goes
        // back, and a random probe finds a slot within a few buckets.
        if capacity > 16 && count * 8 < capacity { resize(to: capacity / 2) }
    }

    /// Rehashes into `newCapacity` buckets from the tags alone; the slots
    /// are moved, not copied (a copy was a retain and a release per slot).
    private mutating func resize(to newCapacity: Int) {
        var old = buckets
        buckets = []
        var fresh = [Bucket](repeating: Bucket(), count: newCapacity)
        let newMask = newCapacity - 1
        fresh.withUnsafeMutableBufferPointer { out in
            old.withUnsafeMutableBufferPointer { from in
                for j in 0..<from.count where from[j].tag != 0 {
                    var i = Int(truncatingIfNeeded: from[j].tag >> 1) & newMask
                    while out[i].tag != 0 { i = (i + 1) & newMask }
                    out[i].tag = from[j].tag
                    out[i].slot = from[j].slot.take()
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

    mutating func removeAll() {
        self = SlotIndex()
    }

    /// The slot of the first occupied bucket at or after a random one, or
    /// nil when empty (past 16 buckets the index is at least 1/8 full, so
    /// a few probes find one).
    func randomSlot(using random: inout FastRandom) -> KeySlot? {
        guard count > 0 else { return nil }
        var i = Int(truncatingIfNeeded: random.next()) & mask
        while buckets[i].tag == 0 { i = (i + 1) & mask }
        return buckets[i].slot
    }

    /// The slots, in no order.
    var values: [KeySlot] { buckets.compactMap(\.slot) }

    /// Calls `body` with the slots, in no order, while it returns true.
    func forEachSlot(_ body: (KeySlot) -> Bool) {
        for bucket in buckets {
            if let slot = bucket.slot, !body(slot) { return }
        }
    }

    /// Bytes the index takes.
    var memoryBytes: Int { capacity * MemoryLayout<Bucket>.stride }
}
