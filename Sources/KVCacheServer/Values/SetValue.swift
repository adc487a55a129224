import RESP
import SQLiteKVCache

/// A set, in Redis 7.0's two encodings: an intset (integers only, kept
/// sorted, at most set-max-intset-entries: O(log n) lookup and O(n)
/// insertion, as Redis's) and a hashtable (members in `MemberSlots` with a
/// dictionary from member to slot: O(1) add, remove, lookup and random
/// pick, and an SSCAN cursor that survives changes). A live value (see
/// `LiveValue`), its encoded size kept as it changes.
final class SetValue: LiveValue {
    /// The intset's members, ascending (while not `large`).
    private var ints: [Int64] = []
    /// The hashtable's members and each one's slot in `members` (once `large`).
    private var members = MemberSlots<[UInt8]>()
    private var positions: [[UInt8]: Int] = [:]
    /// Whether Redis would hold it as a hashtable rather than an intset (never undone).
    private(set) var large = false
    /// The bytes of the members' encoding (without the header).
    private var bodySize = 0
    var isFrozen = false
    var sizeAtLoad = 0

    init() {}

    /// Decodes this server's encoding: an intset's members in order, a
    /// hashtable's in its array's order.
    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        if large {
            convertToHashtable()
            members.reserveCapacity(count)
            positions.reserveCapacity(count)
            for _ in 0..<count {
                let member = try reader.element()
                guard positions.updateValue(members.end, forKey: member) == nil else { throw .corruptValue }
                _ = members.append(member)
                bodySize += Self.cost(member)
            }
        } else {
            ints.reserveCapacity(count)
            for _ in 0..<count {
                let member = try reader.element()
                guard let value = parseStrictInt64(member), ints.last.map({ $0 < value }) ?? true else {
                    throw .corruptValue
                }
                ints.append(value)
                bodySize += Self.cost(member)
            }
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    private init(copying other: SetValue) {
        ints = other.ints
        members = other.members
        positions = other.positions
        large = other.large
        bodySize = other.bodySize
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: count, capacity: bodySize)
        if large {
            members.forEach { CollectionCodec.appendElement($0, to: &out) }
        } else {
            for value in ints { CollectionCodec.appendElement(Self.text(value), to: &out) }
        }
        return out
    }

    var encodedSize: Int { 1 + CollectionCodec.varintSize(count) + bodySize }
    var memoryCost: Int { large ? bodySize + members.count * 96 + 64 : ints.count * 8 + 64 }
    func copy() -> LiveValue { SetValue(copying: self) }

    /// Shares the member arrays and takes the position dictionary, which
    /// encoding does not read.
    func thawed() -> LiveValue {
        let value = SetValue()
        value.ints = ints
        value.members = members
        if positions.count == members.count {
            swap(&value.positions, &positions)
        } else {  // given away already (another entry held this frozen value): slots rebuilt
            value.members = MemberSlots(members.elements)
            value.positions = Dictionary(uniqueKeysWithValues: value.members.elements.enumerated().map { ($1, $0) })
        }
        value.large = large
        value.bodySize = bodySize
        return value
    }

    private static func cost(_ member: [UInt8]) -> Int { CollectionCodec.varintSize(member.count) + member.count }
    private static func cost(_ value: Int64) -> Int { 1 + decimalLength(value) }
    static func text(_ value: Int64) -> [UInt8] { Array(String(value).utf8) }

    /// The length of `value` in decimal, sign included.
    static func decimalLength(_ value: Int64) -> Int {
        var n = value < 0 ? 2 : 1
        var v = value.magnitude
        while v >= 10 {
            v /= 10
            n += 1
        }
        return n
    }

    var count: Int { large ? members.count : ints.count }
    var isEmpty: Bool { count == 0 }

    private func intsetIndex(_ value: Int64) -> (found: Bool, at: Int) {
        let at = ints.partitioningIndex { $0 >= value }
        return (at < ints.count && ints[at] == value, at)
    }

    func contains(_ member: some Collection<UInt8>) -> Bool {
        if large {
            if let bytes = member as? [UInt8] { return positions[bytes] != nil }
            return positions[Array(member)] != nil
        }
        guard let value = parseStrictInt64(member) else { return false }
        return intsetIndex(value).found
    }

    /// A member at random (the set is not empty); `random(n)` picks one in 0..<n.
    func randomMember(_ random: (Int) -> Int) -> [UInt8] {
        large ? members[members.randomSlot(random)]! : Self.text(ints[random(ints.count)])
    }

    /// `n` distinct members at random (all of them when `n` covers them).
    func distinctRandomMembers(_ n: Int, _ random: (Int) -> Int) -> [[UInt8]] {
        if large { return members.distinctRandomSlots(n, random).map { members[$0]! } }
        return distinctRandomIndices(ints.count, n, random).map { Self.text(ints[$0]) }
    }

    /// Calls `body` on every member: an intset's ascending, a hashtable's in no particular order.
    func forEach(_ body: ([UInt8]) throws -> Void) rethrows {
        if large {
            try members.forEach(body)
        } else {
            for value in ints { try body(Self.text(value)) }
        }
    }

    /// A hashtable's members (none for an intset), without building an array.
    var hashtableMembers: some Sequence<[UInt8]> { members.lazyElements }

    /// Every member: an intset's ascending, a hashtable's in no particular order.
    var allMembers: [[UInt8]] { large ? members.elements : ints.map(Self.text) }

    /// One SSCAN step over a hashtable (see `MemberSlots.scan`).
    func scan(below cursor: Int, count: Int, _ body: ([UInt8]) -> Void) -> Int {
        members.scan(below: cursor, count: count, body)
    }

    /// Adds `member`, switching to the hashtable encoding as Redis's
    /// `setTypeAdd` does (a non-integer, or more than set-max-intset-entries).
    /// - Returns: whether it was new.
    @discardableResult
    func add(_ member: [UInt8], limits: EncodingLimits) -> Bool {
        if !large {
            if let value = parseStrictInt64(member) {
                let (found, at) = intsetIndex(value)
                if found { return false }
                ints.insert(value, at: at)
                bodySize += Self.cost(member)
                if ints.count > limits.setMaxIntsetEntries { convertToHashtable() }
                return true
            }
            convertToHashtable()
        }
        guard positions[member] == nil else { return false }
        positions[member] = members.append(member)
        bodySize += Self.cost(member)
        return true
    }

    /// - Returns: whether it was there.
    @discardableResult
    func remove(_ member: [UInt8]) -> Bool {
        if !large {
            guard let value = parseStrictInt64(member) else { return false }
            let (found, at) = intsetIndex(value)
            guard found else { return false }
            ints.remove(at: at)
            bodySize -= Self.cost(member)
            return true
        }
        guard let at = positions.removeValue(forKey: member) else { return false }
        members.remove(at: at) { moved, slot in positions[moved] = slot }
        bodySize -= Self.cost(member)
        return true
    }

    /// Moves to the hashtable encoding (members in the intset's order).
    private func convertToHashtable() {
        guard !large else { return }
        large = true
        let texts = ints.map(Self.text)
        members = MemberSlots(texts)
        positions = Dictionary(uniqueKeysWithValues: texts.enumerated().map { ($1, $0) })
        ints = []
    }

    /// Sets the encoding from the contents, as loading a set from a DUMP
    /// (or an RDB) does: an intset when every member is an integer and
    /// they are few enough.
    func settleEncoding(limits: EncodingLimits) {
        guard large else {
            if ints.count > limits.setMaxIntsetEntries { convertToHashtable() }
            return
        }
        guard members.count <= limits.setMaxIntsetEntries else { return }
        var values: [Int64] = []
        values.reserveCapacity(members.count)
        for member in members.lazyElements {
            guard let value = parseStrictInt64(member) else { return }
            values.append(value)
        }
        ints = values.sorted()
        members = MemberSlots()
        positions = [:]
        large = false
    }

    var encodingName: String { large ? "hashtable" : "intset" }
}

extension Array {
    /// The first index whose element satisfies `predicate`, for a predicate
    /// false then true along the array (binary search).
    func partitioningIndex(where predicate: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if predicate(self[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
