/// An encoded collection read in place, without copying its elements: the
/// count, and where each element's bytes lie. For the commands that touch
/// a few elements of a long collection (a push, a pop, an index, a range,
/// a count), so they cost a walk and a copy of bytes, not one array per element.
struct EncodedLayout {
    let bytes: [UInt8]
    let large: Bool
    let count: Int
    /// Where the first element starts.
    let body: Int

    /// Reads the header only.
    init(_ bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.bytes = bytes
        self.large = large
        self.count = count
        self.body = reader.index
    }

    /// The start of each list element's encoding and the range of its
    /// bytes, for the first `limit` elements.
    func listElements(limit: Int = .max) throws(ReplyError) -> (starts: [Int], payloads: [Range<Int>]) {
        var reader = ByteReader(bytes)
        reader.index = body
        let n = min(count, limit)
        var starts: [Int] = [], payloads: [Range<Int>] = []
        starts.reserveCapacity(n)
        payloads.reserveCapacity(n)
        for _ in 0..<n {
            let start = reader.index
            starts.append(start)
            let length = try reader.varint()
            let prefixLength = reader.index - start
            guard length <= bytes.count - reader.index - prefixLength else { throw .corruptValue }
            payloads.append(reader.index..<reader.index + length)
            reader.index += length + prefixLength
        }
        if n == count && reader.index != bytes.count { throw .corruptValue }
        return (starts, payloads)
    }

    /// The last `n` list elements, last first: their byte ranges, and where
    /// the earliest of them starts.
    func lastListElements(_ n: Int) throws(ReplyError) -> (payloads: [Range<Int>], start: Int) {
        let reader = ByteReader(bytes)
        var end = bytes.count
        var payloads: [Range<Int>] = []
        for _ in 0..<min(n, count) {
            let (payload, start) = try reader.listElement(endingAt: end)
            guard start >= body else { throw .corruptValue }
            payloads.append(payload)
            end = start
        }
        return (payloads, end)
    }

    /// The encoding of `count` elements whose encoded bytes are `parts`, in order.
    static func assemble(large: Bool, count: Int, _ parts: [ArraySlice<UInt8>]) -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: count, capacity: parts.reduce(0) { $0 + $1.count })
        for part in parts { out.append(contentsOf: part) }
        return out
    }
}
