import SQLiteKVCache

/// A hash: field-value pairs in `MemberSlots`, with a dictionary from
/// field to slot (O(1) get, set and delete). As a listpack (Redis's small
/// encoding) it keeps insertion order, and a delete closes the gap (O(n),
/// as in a listpack, bounded by hash-max-listpack-entries); as a hashtable
/// a delete leaves a hole (O(1)), so an HSCAN cursor survives changes. A
/// live value (see `LiveValue`), its encoded size kept as it changes.
final class HashValue: LiveValue {
    typealias Pair = (field: [UInt8], value: [UInt8])
    private var pairs = MemberSlots<Pair>()
    private var positions: [[UInt8]: Int] = [:]
    /// Whether Redis would hold it as a hashtable rather than a listpack (never undone).
    private(set) var large = false
    /// The bytes of the fields' and values' encoding (without the header).
    private var bodySize = 0
    var isFrozen = false
    var sizeAtLoad = 0

    init() {}

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.large = large
        pairs.reserveCapacity(count)
        positions.reserveCapacity(count)
        for _ in 0..<count {
            let field = try reader.element()
            guard positions.updateValue(pairs.end, forKey: field) == nil else { throw .corruptValue }
            let value = try reader.element()
            _ = pairs.append((field, value))
            bodySize += Self.cost(field) + Self.cost(value)
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    private init(copying other: HashValue) {
        pairs = other.pairs
        positions = other.positions
        large = other.large
        bodySize = other.bodySize
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: pairs.count, capacity: bodySize)
        pairs.forEach { pair in
            CollectionCodec.appendElement(pair.field, to: &out)
            CollectionCodec.appendElement(pair.value, to: &out)
        }
        return out
    }

    var encodedSize: Int { 1 + CollectionCodec.varintSize(pairs.count) + bodySize }
    var memoryCost: Int { bodySize + pairs.count * 120 + 64 }
    func copy() -> LiveValue { HashValue(copying: self) }

    /// Shares the pairs and takes the position dictionary, which encoding
    /// does not read.
    func thawed() -> LiveValue {
        let value = HashValue()
        value.pairs = pairs
        if positions.count == pairs.count {
            swap(&value.positions, &positions)
        } else {  // given away already (another entry held this frozen value): slots rebuilt
            value.pairs = MemberSlots(pairs.elements)
            value.positions = Dictionary(uniqueKeysWithValues: value.pairs.elements.enumerated().map { ($1.field, $0) })
        }
        value.large = large
        value.bodySize = bodySize
        return value
    }

    private static func cost(_ bytes: [UInt8]) -> Int { CollectionCodec.varintSize(bytes.count) + bytes.count }

    var count: Int { pairs.count }
    var isEmpty: Bool { pairs.isEmpty }

    subscript(field: [UInt8]) -> [UInt8]? {
        positions[field].map { pairs[$0]!.value }
    }

    /// Every field, value, and both, in the hash's order (a listpack's
    /// insertion order; none in particular for a hashtable).
    var fields: [[UInt8]] { pairs.elements.map(\.field) }
    var values: [[UInt8]] { pairs.elements.map(\.value) }
    var allPairs: [Pair] { pairs.elements }
    var lazyPairs: some Sequence<Pair> { pairs.lazyElements }

    /// Calls `body` on every field and its value, in the hash's order.
    func forEach(_ body: (Pair) throws -> Void) rethrows { try pairs.forEach(body) }

    /// A field and its value at random (the hash is not empty); `random(n)` picks one in 0..<n.
    func randomPair(_ random: (Int) -> Int) -> Pair { pairs[pairs.randomSlot(random)]! }

    /// `n` distinct fields at random with their values (all of them when `n` covers them).
    func distinctRandomPairs(_ n: Int, _ random: (Int) -> Int) -> [Pair] {
        pairs.distinctRandomSlots(n, random).map { pairs[$0]! }
    }

    /// One HSCAN step over a hashtable (see `MemberSlots.scan`).
    func scan(below cursor: Int, count: Int, _ body: (Pair) -> Void) -> Int {
        pairs.scan(below: cursor, count: count, body)
    }

    func contains(_ field: [UInt8]) -> Bool { positions[field] != nil }

    /// Sets a field. The encoding check is the caller's (`noteWrite`), made
    /// on the arguments as Redis's `hashTypeTryConversion` does.
    /// - Returns: whether the field was new.
    @discardableResult
    func set(_ field: [UInt8], _ value: [UInt8]) -> Bool {
        if let at = positions[field] {
            bodySize += Self.cost(value) - Self.cost(pairs[at]!.value)
            pairs.replace(at: at, with: (field, value))
            return false
        }
        positions[field] = pairs.append((field, value))
        bodySize += Self.cost(field) + Self.cost(value)
        return true
    }

    /// - Returns: whether the field was there.
    @discardableResult
    func remove(_ field: [UInt8]) -> Bool {
        guard let at = positions.removeValue(forKey: field) else { return false }
        bodySize -= Self.cost(field) + Self.cost(pairs[at]!.value)
        if large {
            pairs.remove(at: at) { moved, slot in positions[moved.field] = slot }
        } else {
            pairs.removeClosingGap(at: at) { moved, slot in positions[moved.field] = slot }
        }
        return true
    }

    /// Switches to the hashtable encoding when a written field or value is
    /// longer than hash-max-listpack-value, or there are more fields than
    /// hash-max-listpack-entries.
    /// - Parameter longestWritten: the length of the longest field or value written.
    func noteWrite(longestWritten: Int, limits: EncodingLimits) {
        if large { return }
        if longestWritten > limits.hashMaxListpackValue || count > limits.hashMaxListpackEntries {
            large = true
        }
    }

    /// Sets the encoding from the contents, as loading one from a DUMP does.
    func settleEncoding(limits: EncodingLimits) {
        large = count > limits.hashMaxListpackEntries
            || pairs.lazyElements.contains { $0.field.count > limits.hashMaxListpackValue || $0.value.count > limits.hashMaxListpackValue }
        if !large { pairs.closeHoles { moved, slot in positions[moved.field] = slot } }
    }

    var encodingName: String { large ? "hashtable" : "listpack" }
}
