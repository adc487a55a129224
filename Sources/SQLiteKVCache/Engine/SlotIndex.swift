/// The key table's slots by digest: open addressing with linear probing
/// over two arrays, a tag per bucket (a seeded mix of the digest's first
/// word) and the slot. A probe compares tags in one contiguous array and
/// touches a slot only when its tag matches, and a bucket takes 16 bytes,
/// where a `[KeyDigest: KeySlot]` bucket takes 40 (the whole digest beside
/// the reference): at a million keys, 32 MB instead of 80. The seed is
/// random per index, so a client cannot aim keys at one run of buckets.
/// Removal shifts the run back (no tombstones).
struct SlotIndex {
    /// 0: empty; otherwise `hash | 1` (a bucket's home is `tag >> 1`).
    private var tags: [UInt64]
    private var slots: [KeySlot?]
    private var mask: Int
    private(set) var count = 0
    private let seed = UInt64.random(in: 0...UInt64.max)

    init() {
        tags = [UInt64](repeating: 0, count: 16)
        slots = [KeySlot?](repeating: nil, count: 16)
        mask = 15
    }

    var capacity: Int { mask + 1 }

    @inline(__always)
    private func tag(_ digest: KeyDigest) -> UInt64 {
        var h = digest.w0 ^ seed
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
        var i = home(t)
        while true {
            let here = tags[i]
            if here == 0 { return (i, false) }
            if here == t, let slot = slots[i], slot.digest == digest { return (i, true) }
            i = (i + 1) & mask
        }
    }

    subscript(digest: KeyDigest) -> KeySlot? {
        get {
            let (i, found) = find(digest, tag(digest))
            return found ? slots[i] : nil
        }
        set {
            let t = tag(digest)
            let (i, found) = find(digest, t)
            if let newValue {
                slots[i] = newValue
                if !found {
                    tags[i] = t
                    count += 1
                    if count * 4 > capacity * 3 { resize(to: capacity * 2) }
                }
            } else if found {
                remove(at: i)
            }
        }
    }

    /// Empties bucket `i` and moves back the entries after it that would no
    /// longer be found past the gap.
    private mutating func remove(at index: Int) {
        var gap = index
        var i = (index + 1) & mask
        while tags[i] != 0 {
            let want = home(tags[i])
            // The entry at i may fill the gap when its home is not in (gap, i].
            let distanceToGap = (gap - want) & mask
            let distanceToHere = (i - want) & mask
            if distanceToGap < distanceToHere {
                tags[gap] = tags[i]
                slots[gap] = slots[i]
                gap = i
            }
            i = (i + 1) & mask
        }
        tags[gap] = 0
        slots[gap] = nil
        count -= 1
        // Below 1/8 full, half the buckets (then 1/4 full): the memory goes
        // back, and a random probe finds a slot within a few buckets.
        if capacity > 16 && count * 8 < capacity { resize(to: capacity / 2) }
    }

    /// Rehashes into `newCapacity` buckets from the tags alone; the slots
    /// are moved, not copied (a copy was a retain and a release per slot).
    private mutating func resize(to newCapacity: Int) {
        let oldTags = tags
        var oldSlots = slots
        slots = []
        var newTags = [UInt64](repeating: 0, count: newCapacity)
        var newSlots = [KeySlot?](repeating: nil, count: newCapacity)
        let newMask = newCapacity - 1
        newTags.withUnsafeMutableBufferPointer { tagsOut in
            newSlots.withUnsafeMutableBufferPointer { slotsOut in
                oldSlots.withUnsafeMutableBufferPointer { slotsIn in
                    for j in 0..<oldTags.count where oldTags[j] != 0 {
                        var i = Int(truncatingIfNeeded: oldTags[j] >> 1) & newMask
                        while tagsOut[i] != 0 { i = (i + 1) & newMask }
                        tagsOut[i] = oldTags[j]
                        slotsOut[i] = slotsIn[j].take()
                    }
                }
            }
        }
        tags = newTags
        slots = newSlots
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
        while tags[i] == 0 { i = (i + 1) & mask }
        return slots[i]
    }

    /// The slots, in no order.
    var values: [KeySlot] { slots.compactMap { $0 } }

    /// Calls `body` with the slots, in no order, while it returns true.
    func forEachSlot(_ body: (KeySlot) -> Bool) {
        for case let slot? in slots where !body(slot) { return }
    }

    /// Bytes the index takes.
    var memoryBytes: Int { capacity * 16 }
}
