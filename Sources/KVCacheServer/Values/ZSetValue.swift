import SQLiteKVCache

/// A sorted set: members ordered by score, then by their bytes (a
/// `ScoreTree`: O(log n) insert, remove, rank and range), and a dictionary
/// from member to score (O(1) ZSCORE), as Redis's skiplist and dict; the
/// members also sit in `MemberSlots`, for O(1) random picks and a ZSCAN
/// cursor that survives changes. A live value (see `LiveValue`): changed in place, encoded only
/// when the writer applies it, its encoded size kept as it changes.
final class ZSetValue: LiveValue {
    private(set) var tree = ScoreTree()
    private var entries: [[UInt8]: (score: Double, slot: Int)] = [:]
    /// Every member, in no order.
    private var slots = MemberSlots<[UInt8]>()
    /// Whether Redis would hold it as a skiplist rather than a listpack.
    var large = false
    /// The bytes of the elements' encoding (without the header).
    private var bodySize = 0
    var isFrozen = false
    var sizeAtLoad = 0

    init() {}

    /// Decodes this server's encoding (members in order, each with its score).
    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.large = large
        var elements: [(member: [UInt8], score: Double)] = []
        elements.reserveCapacity(count)
        entries.reserveCapacity(count)
        slots.reserveCapacity(count)
        for _ in 0..<count {
            let member = try reader.element()
            let score = try reader.double()
            guard !score.isNaN, entries.updateValue((score, slots.end), forKey: member) == nil else { throw .corruptValue }
            _ = slots.append(member)
            if let last = elements.last, !ScoreTree.precedes(last.score, last.member, score, member) {
                throw .corruptValue
            }
            elements.append((member, score))
            bodySize += Self.cost(member)
        }
        guard reader.atEnd else { throw .corruptValue }
        tree = ScoreTree(sorted: elements)
    }

    private init(copying other: ZSetValue) {
        tree = other.tree
        entries = other.entries
        slots = other.slots
        large = other.large
        bodySize = other.bodySize
    }

    // encoded(), encodedSize and memoryCost read the tree, never `entries`
    // or `slots`: a frozen value gives those away (`thawed()`).
    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: tree.count, capacity: bodySize)
        tree.forEach(fromRank: 0, reverse: false) { member, score in
            CollectionCodec.appendElement(member, to: &out)
            CollectionCodec.appendDouble(score, to: &out)
            return true
        }
        return out
    }

    var encodedSize: Int { 1 + CollectionCodec.varintSize(tree.count) + bodySize }
    var memoryCost: Int { bodySize + tree.count * 120 + 128 }
    func copy() -> LiveValue { ZSetValue(copying: self) }

    /// Shares the tree (copied on the first change, without a retain per
    /// node) and takes the member dictionary and slots: the frozen value
    /// keeps only what encoding reads.
    func thawed() -> LiveValue {
        let value = ZSetValue()
        value.tree = tree
        if slots.count == tree.count {
            swap(&value.entries, &entries)
            swap(&value.slots, &slots)
        } else {
            // Given away already (another entry held this frozen value): rebuilt from the tree.
            tree.forEach(fromRank: 0, reverse: false) { member, score in
                value.entries[member] = (score, value.slots.append(member))
                return true
            }
        }
        value.large = large
        value.bodySize = bodySize
        return value
    }

    private static func cost(_ member: [UInt8]) -> Int {
        CollectionCodec.varintSize(member.count) + member.count + 8
    }

    var count: Int { slots.count }
    var isEmpty: Bool { slots.isEmpty }

    func score(_ member: [UInt8]) -> Double? { entries[member]?.score }

    /// Redis's order: by score, then by member bytes (memcmp, shorter first on a tie).
    static func precedes(_ s1: Double, _ m1: [UInt8], _ s2: Double, _ m2: [UInt8]) -> Bool {
        ScoreTree.precedes(s1, m1, s2, m2)
    }

    /// The rank of `member`, from the lowest score.
    func rank(_ member: [UInt8]) -> Int? {
        guard let score = entries[member]?.score else { return nil }
        return tree.rank(member, score: score)
    }

    /// Inserts `member` at `score`, or moves it there. The caller checks the encoding (`noteInsert`).
    func set(_ member: [UInt8], score: Double) {
        if let old = entries[member] {
            if old.score == score { return }
            tree.remove(member, score: old.score)
            entries[member] = (score, old.slot)
        } else {
            bodySize += Self.cost(member)
            entries[member] = (score, slots.append(member))
        }
        tree.insert(member, score: score)
    }

    /// - Returns: whether it was there.
    @discardableResult
    func remove(_ member: [UInt8]) -> Bool {
        guard let old = entries.removeValue(forKey: member) else { return false }
        tree.remove(member, score: old.score)
        forget(member, slot: old.slot)
        return true
    }

    /// Takes `member` (already out of `entries`) out of the slots and the size.
    private func forget(_ member: [UInt8], slot: Int) {
        slots.remove(at: slot) { moved, to in entries[moved]?.slot = to }
        bodySize -= Self.cost(member)
    }

    /// Removes the elements at ranks `range` (ascending), returning them.
    @discardableResult
    func removeRanks(_ range: Range<Int>) -> [(member: [UInt8], score: Double)] {
        let removed = tree.removeRanks(range)
        for (member, _) in removed {
            guard let old = entries.removeValue(forKey: member) else { continue }
            forget(member, slot: old.slot)
        }
        return removed
    }

    /// The element at `rank`.
    func element(at rank: Int) -> (member: [UInt8], score: Double) { tree.element(at: rank) }

    /// Calls `body` on the elements from `rank`, ascending or descending, until it returns false.
    func forEach(fromRank rank: Int, reverse: Bool = false, _ body: ([UInt8], Double) throws -> Bool) rethrows {
        try tree.forEach(fromRank: rank, reverse: reverse, body)
    }

    /// The elements at ranks `range` (ascending), or in reverse.
    func elements(_ range: Range<Int>, reverse: Bool = false) -> [(member: [UInt8], score: Double)] {
        var out: [(member: [UInt8], score: Double)] = []
        guard !range.isEmpty else { return out }
        out.reserveCapacity(range.count)
        tree.forEach(fromRank: reverse ? range.upperBound - 1 : range.lowerBound, reverse: reverse) { member, score in
            out.append((member, score))
            return out.count < range.count
        }
        return out
    }

    /// Every element, in order.
    var allElements: [(member: [UInt8], score: Double)] { elements(0..<count) }

    /// Calls `body` on every member and its score, in no particular order, until it returns false.
    func forEachUnordered(_ body: ([UInt8], Double) -> Bool) {
        for slot in 0..<slots.end {
            if let member = slots[slot], !body(member, entries[member]!.score) { return }
        }
    }

    /// Every member, in no particular order.
    var unorderedMembers: [[UInt8]] { slots.elements }
    var lazyUnorderedMembers: some Sequence<[UInt8]> { slots.lazyElements }

    /// A member at random (the set is not empty); `random(n)` picks one in 0..<n.
    func randomMember(_ random: (Int) -> Int) -> [UInt8] { slots[slots.randomSlot(random)]! }

    /// A member at random and its score (the set is not empty).
    func randomElement(_ random: (Int) -> Int) -> (member: [UInt8], score: Double) {
        let member = randomMember(random)
        return (member, entries[member]!.score)
    }

    /// `n` distinct members at random with their scores (all of them when `n` covers them).
    func distinctRandomElements(_ n: Int, _ random: (Int) -> Int) -> [(member: [UInt8], score: Double)] {
        slots.distinctRandomSlots(n, random).map { slot in
            let member = slots[slot]!
            return (member, entries[member]!.score)
        }
    }

    /// One ZSCAN step over a skiplist (see `MemberSlots.scan`).
    func scan(below cursor: Int, count: Int, _ body: ([UInt8], Double) -> Void) -> Int {
        slots.scan(below: cursor, count: count) { member in body(member, entries[member]!.score) }
    }

    /// How many elements have a score below `score` (or equal to it, when `orEqual`).
    func countBelow(_ score: Double, orEqual: Bool) -> Int { tree.countBelow(score, orEqual: orEqual) }

    /// How many elements come before the first member at or after `member`
    /// (after, when `orEqual`), comparing members only (lexicographical ranges).
    func countMembersBelow(_ member: [UInt8], orEqual: Bool) -> Int {
        tree.countMembersBelow(member, orEqual: orEqual)
    }

    /// Switches to the skiplist encoding as Redis's `zsetAdd` does on an
    /// insertion: past zset-max-listpack-entries, or a member longer than
    /// zset-max-listpack-value.
    func noteInsert(_ member: [UInt8], limits: EncodingLimits) {
        if !large && (count > limits.zsetMaxListpackEntries || member.count > limits.zsetMaxListpackValue) { large = true }
    }

    /// Sets the encoding from the contents, as loading one from a DUMP does.
    func settleEncoding(limits: EncodingLimits) {
        large = count > limits.zsetMaxListpackEntries || slots.lazyElements.contains { $0.count > limits.zsetMaxListpackValue }
    }

    var encodingName: String { large ? "skiplist" : "listpack" }
}
