/// A sorted set: members ordered by score, then by their bytes, with an
/// index from member to score.
struct ZSetValue {
    private(set) var members: [[UInt8]] = []
    private(set) var scores: [Double] = []
    private var scoreOf: [[UInt8]: Double] = [:]
    /// Whether Redis would hold it as a skiplist rather than a listpack.
    var large = false

    init() {}

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.large = large
        members.reserveCapacity(count)
        scores.reserveCapacity(count)
        for _ in 0..<count {
            let member = try reader.element()
            let score = try reader.double()
            guard !score.isNaN, scoreOf.updateValue(score, forKey: member) == nil else { throw .corruptValue }
            if let last = members.last, !Self.precedes(scores[scores.count - 1], last, score, member) {
                throw .corruptValue
            }
            members.append(member)
            scores.append(score)
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: members.count, capacity: members.reduce(0) { $0 + $1.count + 10 })
        for i in members.indices {
            CollectionCodec.appendElement(members[i], to: &out)
            CollectionCodec.appendDouble(scores[i], to: &out)
        }
        return out
    }

    var count: Int { members.count }
    var isEmpty: Bool { members.isEmpty }

    func score(_ member: [UInt8]) -> Double? { scoreOf[member] }

    /// Redis's order: by score, then by member bytes (memcmp, shorter first on a tie).
    static func precedes(_ s1: Double, _ m1: [UInt8], _ s2: Double, _ m2: [UInt8]) -> Bool {
        if s1 != s2 { return s1 < s2 }
        return m1.lexicographicallyPrecedes(m2)
    }

    /// Where (score, member) sits or would sit.
    func position(_ score: Double, _ member: [UInt8]) -> Int {
        var low = 0, high = members.count
        while low < high {
            let mid = (low + high) / 2
            if Self.precedes(scores[mid], members[mid], score, member) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The rank of `member`, from the lowest score.
    func rank(_ member: [UInt8]) -> Int? {
        guard let score = scoreOf[member] else { return nil }
        return position(score, member)
    }

    /// Inserts or moves `member` to `score`. The caller checks the encoding (`noteInsert`).
    mutating func set(_ member: [UInt8], score: Double) {
        if let old = scoreOf[member] {
            if old == score { return }
            let at = position(old, member)
            members.remove(at: at)
            scores.remove(at: at)
        }
        scoreOf[member] = score
        let at = position(score, member)
        members.insert(member, at: at)
        scores.insert(score, at: at)
    }

    @discardableResult
    mutating func remove(_ member: [UInt8]) -> Bool {
        guard let old = scoreOf.removeValue(forKey: member) else { return false }
        let at = position(old, member)
        members.remove(at: at)
        scores.remove(at: at)
        return true
    }

    /// Removes the elements at `range` (ranks).
    mutating func removeSubrange(_ range: Range<Int>) {
        for i in range { scoreOf[members[i]] = nil }
        members.removeSubrange(range)
        scores.removeSubrange(range)
    }

    /// Switches to the skiplist encoding as Redis's `zsetAdd` does on an
    /// insertion: past zset-max-listpack-entries, or a member longer than
    /// zset-max-listpack-value.
    mutating func noteInsert(_ member: [UInt8], limits: EncodingLimits) {
        if !large && (count > limits.zsetMaxListpackEntries || member.count > limits.zsetMaxListpackValue) { large = true }
    }

    mutating func settleEncoding(limits: EncodingLimits) {
        large = count > limits.zsetMaxListpackEntries || members.contains { $0.count > limits.zsetMaxListpackValue }
    }

    var encodingName: String { large ? "skiplist" : "listpack" }
}
