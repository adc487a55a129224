/// A sorted set edited on its encoded bytes: each change copies the bytes
/// once around the element it moves, nothing is decoded. For ZADD of a few
/// members to a large sorted set.
struct EncodedZSet {
    private(set) var bytes: [UInt8]
    private var lookup: EncodedLookup
    private(set) var large: Bool

    init(_ bytes: [UInt8]) throws(ReplyError) {
        self.bytes = bytes
        lookup = try EncodedLookup(bytes, kind: .zset)
        large = try EncodedLayout(bytes).large
    }

    var count: Int { lookup.count }

    func score(_ member: [UInt8]) -> Double? { lookup.score(member) }

    /// Inserts `member` at `score`, or moves it there.
    mutating func set(_ member: [UInt8], score: Double) throws(ReplyError) {
        let existing = lookup.find(member)
        if let existing, lookup.scoreAt(existing) == score { return }
        let at = lookup.position(score, member)
        var entry: [UInt8] = []
        CollectionCodec.appendElement(member, to: &entry)
        CollectionCodec.appendDouble(score, to: &entry)
        var out = CollectionCodec.header(large: large, count: count + (existing == nil ? 1 : 0),
                                         capacity: bytes.count + entry.count)
        for i in 0..<count {
            if i == at { out.append(contentsOf: entry) }
            if i != existing { out.append(contentsOf: lookup.zsetEntry(i)) }
        }
        if at == count { out.append(contentsOf: entry) }
        bytes = out
        lookup = try EncodedLookup(out, kind: .zset)
    }

    /// As `ZSetValue.noteInsert`.
    mutating func noteInsert(_ member: [UInt8], limits: EncodingLimits) {
        if !large && (count > limits.zsetMaxListpackEntries || member.count > limits.zsetMaxListpackValue) {
            large = true
            bytes[0] |= CollectionCodec.largeFlag
        }
    }
}
