import RESP

/// A set: members in order of insertion (an intset's in numeric order),
/// with an index for membership.
struct SetValue {
    private(set) var members: [[UInt8]] = []
    private var positions: [[UInt8]: Int] = [:]
    /// Whether Redis would hold it as a hashtable rather than an intset.
    var large = false

    init() {}

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.large = large
        members.reserveCapacity(count)
        positions.reserveCapacity(count)
        for _ in 0..<count {
            let member = try reader.element()
            guard positions.updateValue(members.count, forKey: member) == nil else { throw .corruptValue }
            members.append(member)
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: members.count, capacity: members.reduce(0) { $0 + $1.count + 2 })
        for member in members { CollectionCodec.appendElement(member, to: &out) }
        return out
    }

    var count: Int { members.count }
    var isEmpty: Bool { members.isEmpty }

    func contains(_ member: [UInt8]) -> Bool { positions[member] != nil }

    /// Adds `member`, switching to the hashtable encoding as Redis's
    /// `setTypeAdd` does (a non-integer, or more than set-max-intset-entries).
    /// - Returns: whether it was new.
    @discardableResult
    mutating func add(_ member: [UInt8], limits: EncodingLimits) -> Bool {
        guard positions[member] == nil else { return false }
        if !large {
            if let value = parseStrictInt64(member) {
                // An intset keeps its members sorted: insert in numeric order.
                let at = members.partitioningIndex { (parseStrictInt64($0) ?? .max) > value }
                members.insert(member, at: at)
                reindex(from: at)
                if members.count > limits.setMaxIntsetEntries { large = true }
                return true
            }
            large = true
        }
        positions[member] = members.count
        members.append(member)
        return true
    }

    /// - Returns: whether it was there.
    @discardableResult
    mutating func remove(_ member: [UInt8]) -> Bool {
        guard let at = positions.removeValue(forKey: member) else { return false }
        members.remove(at: at)
        reindex(from: at)
        return true
    }

    private mutating func reindex(from start: Int) {
        for i in start..<members.count { positions[members[i]] = i }
    }

    /// Sets the encoding from the contents, as loading one from a DUMP does.
    mutating func settleEncoding(limits: EncodingLimits) {
        if members.count > limits.setMaxIntsetEntries || members.contains(where: { parseStrictInt64($0) == nil }) {
            large = true
            return
        }
        members.sort { parseStrictInt64($0)! < parseStrictInt64($1)! }  // all integers here
        reindex(from: 0)
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
