/// A list: its elements in order. Redis 7.0 keeps every list as a quicklist.
struct ListValue {
    var items: [[UInt8]] = []

    init(items: [[UInt8]] = []) { self.items = items }

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (_, count) = try reader.header()
        items.reserveCapacity(count)
        for _ in 0..<count { items.append(try reader.listElement()) }
        guard reader.atEnd else { throw .corruptValue }
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: false, count: items.count, capacity: items.reduce(0) { $0 + $1.count + 4 })
        for item in items { CollectionCodec.appendListElement(item, to: &out) }
        return out
    }

    var encodingName: String { "quicklist" }
}
