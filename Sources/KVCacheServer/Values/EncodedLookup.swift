#if canImport(Glibc)
import Glibc
#endif
import SQLiteKVCache

/// Point lookups in an encoded set, hash or sorted set, without decoding
/// it: one walk noting where the elements lie, then byte comparisons.
struct EncodedLookup {
    let bytes: [UInt8]
    let kind: ValueKind
    /// A set's members; a hash's fields and values, alternating; a sorted
    /// set's members (each followed by its 8 score bytes).
    private var ranges: [Range<Int>] = []
    private let bodyStart: Int

    init(_ bytes: [UInt8], kind: ValueKind) throws(ReplyError) {
        self.bytes = bytes
        self.kind = kind
        var reader = ByteReader(bytes)
        let (_, count) = try reader.header()
        bodyStart = reader.index
        let perEntry = kind == .hash ? 2 : 1
        let trailing = kind == .zset ? 8 : 0
        ranges.reserveCapacity(count * perEntry)
        for _ in 0..<count * perEntry {
            let length = try reader.varint()
            guard length <= bytes.count - reader.index - trailing else { throw .corruptValue }
            ranges.append(reader.index..<reader.index + length)
            reader.index += length + trailing
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    private func matches(_ range: Range<Int>, _ target: some Collection<UInt8>) -> Bool {
        guard range.count == target.count else { return false }
        if target.isEmpty { return true }
        return bytes.withUnsafeBufferPointer { b in
            target.withContiguousStorageIfAvailable { t in
                memcmp(b.baseAddress! + range.lowerBound, t.baseAddress!, t.count) == 0
            } ?? b[range].elementsEqual(target)
        }
    }

    /// The position among the members (fields for a hash) of `target`.
    func find(_ target: some Collection<UInt8>) -> Int? {
        let step = kind == .hash ? 2 : 1
        var i = 0
        while i < ranges.count {
            if matches(ranges[i], target) { return i / step }
            i += step
        }
        return nil
    }

    func contains(_ member: some Collection<UInt8>) -> Bool { find(member) != nil }

    /// The number of members (fields of a hash).
    var count: Int { kind == .hash ? ranges.count / 2 : ranges.count }

    /// The bytes after the header, as they are.
    var body: ArraySlice<UInt8> { bytes[bodyStart...] }

    /// A hash's field and value at position `i`.
    func pair(_ i: Int) -> (field: ArraySlice<UInt8>, value: ArraySlice<UInt8>) {
        (bytes[ranges[2 * i]], bytes[ranges[2 * i + 1]])
    }

    /// A hash's value for `field`.
    func value(_ field: some Collection<UInt8>) -> ArraySlice<UInt8>? {
        find(field).map { bytes[ranges[2 * $0 + 1]] }
    }

    /// A sorted set's score for `member`.
    func score(_ member: some Collection<UInt8>) -> Double? {
        find(member).map(scoreAt)
    }

    /// The score of a sorted set's element at rank `i`.
    func scoreAt(_ i: Int) -> Double {
        var bits: UInt64 = 0
        let at = ranges[i].upperBound
        for b in 0..<8 { bits |= UInt64(bytes[at + b]) << (8 * UInt64(b)) }
        return Double(bitPattern: bits)
    }

    /// The member at rank `i` of a sorted set (or the `i`th member of a set).
    func member(_ i: Int) -> ArraySlice<UInt8> { bytes[ranges[i]] }

    /// How many elements of a sorted set precede (score, member): where it goes.
    func position(_ score: Double, _ member: [UInt8]) -> Int {
        var low = 0, high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            let s = scoreAt(mid)
            if s < score || (s == score && bytes[ranges[mid]].lexicographicallyPrecedes(member)) {
                low = mid + 1
            } else {
                high = mid
            }
        }
        return low
    }

    /// The encoded bytes of a sorted set's element at rank `i`, length prefix and score included.
    func zsetEntry(_ i: Int) -> ArraySlice<UInt8> {
        bytes[(i == 0 ? bodyStart : ranges[i - 1].upperBound + 8)..<(ranges[i].upperBound + 8)]
    }
}
