import SQLiteKVCache

/// A hash: fields and values in arrays, with a dictionary from field to
/// position (O(1) get, set and delete). As a listpack (Redis's small
/// encoding) it keeps insertion order, and a delete closes the gap (O(n),
/// as in a listpack, bounded by hash-max-listpack-entries); as a hashtable
/// a delete moves the last field into the hole (O(1)). A live value (see
/// `LiveValue`), its encoded size kept as it changes.
final class HashValue: LiveValue {
    private(set) var fields: [[UInt8]] = []
    private(set) var values: [[UInt8]] = []
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
        fields.reserveCapacity(count)
        values.reserveCapacity(count)
        positions.reserveCapacity(count)
        for _ in 0..<count {
            let field = try reader.element()
            guard positions.updateValue(fields.count, forKey: field) == nil else { throw .corruptValue }
            let value = try reader.element()
            fields.append(field)
            values.append(value)
            bodySize += Self.cost(field) + Self.cost(value)
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    private init(copying other: HashValue) {
        fields = other.fields
        values = other.values
        positions = other.positions
        large = other.large
        bodySize = other.bodySize
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: fields.count, capacity: bodySize)
        for i in fields.indices {
            CollectionCodec.appendElement(fields[i], to: &out)
            CollectionCodec.appendElement(values[i], to: &out)
        }
        return out
    }

    var encodedSize: Int { 1 + CollectionCodec.varintSize(fields.count) + bodySize }
    var memoryCost: Int { bodySize + fields.count * 120 + 64 }
    func copy() -> LiveValue { HashValue(copying: self) }

    /// Shares the field and value arrays and takes the position dictionary,
    /// which encoding does not read.
    func thawed() -> LiveValue {
        let value = HashValue()
        value.fields = fields
        value.values = values
        if positions.count == fields.count {
            swap(&value.positions, &positions)
        } else {  // given away already (another entry held this frozen value)
            value.positions = Dictionary(uniqueKeysWithValues: fields.enumerated().map { ($1, $0) })
        }
        value.large = large
        value.bodySize = bodySize
        return value
    }

    private static func cost(_ bytes: [UInt8]) -> Int { CollectionCodec.varintSize(bytes.count) + bytes.count }

    var count: Int { fields.count }
    var isEmpty: Bool { fields.isEmpty }

    subscript(field: [UInt8]) -> [UInt8]? {
        positions[field].map { values[$0] }
    }

    func contains(_ field: [UInt8]) -> Bool { positions[field] != nil }

    /// Sets a field. The encoding check is the caller's (`noteWrite`), made
    /// on the arguments as Redis's `hashTypeTryConversion` does.
    /// - Returns: whether the field was new.
    @discardableResult
    func set(_ field: [UInt8], _ value: [UInt8]) -> Bool {
        if let at = positions[field] {
            bodySize += Self.cost(value) - Self.cost(values[at])
            values[at] = value
            return false
        }
        positions[field] = fields.count
        fields.append(field)
        values.append(value)
        bodySize += Self.cost(field) + Self.cost(value)
        return true
    }

    /// - Returns: whether the field was there.
    @discardableResult
    func remove(_ field: [UInt8]) -> Bool {
        guard let at = positions.removeValue(forKey: field) else { return false }
        bodySize -= Self.cost(field) + Self.cost(values[at])
        if large {
            let lastField = fields.removeLast(), lastValue = values.removeLast()
            if at < fields.count {
                fields[at] = lastField
                values[at] = lastValue
                positions[lastField] = at
            }
        } else {
            fields.remove(at: at)
            values.remove(at: at)
            for i in at..<fields.count { positions[fields[i]] = i }
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
            || fields.contains { $0.count > limits.hashMaxListpackValue }
            || values.contains { $0.count > limits.hashMaxListpackValue }
    }

    var encodingName: String { large ? "hashtable" : "listpack" }
}
