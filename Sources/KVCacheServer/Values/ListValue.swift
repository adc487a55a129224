import SQLiteKVCache

/// A list: its elements in order, in a ring buffer (O(1) at both ends).
/// Redis 7.0 keeps every list as a quicklist. A live value: a list being
/// written stays in memory in this form, changed in place, and is encoded
/// only when the writer applies it to SQLite (see `LiveValue`).
final class ListValue: LiveValue {
    private(set) var items = Deque<[UInt8]>()
    /// The bytes of the elements' encoding (without the header).
    private var bodySize = 0
    var isFrozen = false
    /// The encoded size when loaded for a write (`Keyspace.store` reports the change).
    var sizeAtLoad = 0

    init() {}

    init<S: Sequence>(_ elements: S) where S.Element == [UInt8] {
        for element in elements { append(element) }
    }

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (_, count) = try reader.header()
        for _ in 0..<count { append(try reader.listElement()) }
        guard reader.atEnd else { throw .corruptValue }
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: false, count: items.count, capacity: bodySize)
        for item in items { CollectionCodec.appendListElement(item, to: &out) }
        return out
    }

    var encodedSize: Int { 1 + CollectionCodec.varintSize(items.count) + bodySize }
    var memoryCost: Int { bodySize + items.count * 48 + 64 }
    func copy() -> LiveValue { ListValue(items) }

    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }
    subscript(index: Int) -> [UInt8] { items[index] }

    private static func cost(_ element: [UInt8]) -> Int {
        element.count + 2 * CollectionCodec.varintSize(element.count)
    }

    func append(_ element: [UInt8]) {
        items.append(element)
        bodySize += Self.cost(element)
    }

    func prepend(_ element: [UInt8]) {
        items.prepend(element)
        bodySize += Self.cost(element)
    }

    /// Removes and returns up to `n` elements from the head (or the tail), in the order popped.
    func pop(_ n: Int, fromHead: Bool) -> [[UInt8]] {
        var taken: [[UInt8]] = []
        taken.reserveCapacity(min(n, items.count))
        while taken.count < n && !items.isEmpty {
            let element = fromHead ? items.removeFirst() : items.removeLast()
            bodySize -= Self.cost(element)
            taken.append(element)
        }
        return taken
    }

    func set(_ element: [UInt8], at index: Int) {
        bodySize += Self.cost(element) - Self.cost(items[index])
        items[index] = element
    }

    func insert(_ element: [UInt8], at index: Int) {
        items.insert(element, at: index)
        bodySize += Self.cost(element)
    }

    /// Removes the elements `remove` picks (given their position), in one pass.
    func removeAll(where remove: (Int, [UInt8]) -> Bool) {
        items.removeAll { i, element in
            guard remove(i, element) else { return false }
            bodySize -= Self.cost(element)
            return true
        }
    }

    /// Keeps only the elements in `range` (LTRIM), or none.
    func trim(to range: ClosedRange<Int>?) {
        guard let range else {
            items.removeAll()
            bodySize = 0
            return
        }
        for _ in 0..<(items.count - 1 - range.upperBound) { bodySize -= Self.cost(items.removeLast()) }
        for _ in 0..<range.lowerBound { bodySize -= Self.cost(items.removeFirst()) }
    }

    var encodingName: String { "quicklist" }
}
