/// A hash: fields and values in order of insertion, with an index.
struct HashValue {
    private(set) var fields: [[UInt8]] = []
    private(set) var values: [[UInt8]] = []
    private var positions: [[UInt8]: Int] = [:]
    /// Whether Redis would hold it as a hashtable rather than a listpack.
    var large = false

    init() {}

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.large = large
        fields.reserveCapacity(count)
        values.reserveCapacity(count)
        for _ in 0..<count {
            let field = try reader.element()
            guard positions.updateValue(fields.count, forKey: field) == nil else { throw .corruptValue }
            fields.append(field)
            values.append(try reader.element())
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    func encoded() -> [UInt8] {
        let size = fields.reduce(0) { $0 + $1.count + 2 } + values.reduce(0) { $0 + $1.count + 2 }
        var out = CollectionCodec.header(large: large, count: fields.count, capacity: size)
        for i in fields.indices {
            CollectionCodec.appendElement(fields[i], to: &out)
            CollectionCodec.appendElement(values[i], to: &out)
        }
        return out
    }

    var count: Int { fields.count }
    var isEmpty: Bool { fields.isEmpty }

    subscript(field: [UInt8]) -> [UInt8]? {
        positions[field].map { values[$0] }
    }

    /// Sets a field. The encoding check is the caller's (`noteWrite`), made
    /// on the arguments as Redis's `hashTypeTryConversion` does.
    /// - Returns: whether the field was new.
    @discardableResult
    mutating func set(_ field: [UInt8], _ value: [UInt8]) -> Bool {
        if let at = positions[field] {
            values[at] = value
            return false
        }
        positions[field] = fields.count
        fields.append(field)
        values.append(value)
        return true
    }

    @discardableResult
    mutating func remove(_ field: [UInt8]) -> Bool {
        guard let at = positions.removeValue(forKey: field) else { return false }
        fields.remove(at: at)
        values.remove(at: at)
        for i in at..<fields.count { positions[fields[i]] = i }
        return true
    }

    /// Switches to the hashtable encoding when a written field or value is
    /// longer than hash-max-listpack-value, or there are more fields than
    /// hash-max-listpack-entries.
    /// - Parameter longestWritten: the length of the longest field or value written.
    mutating func noteWrite(longestWritten: Int, limits: EncodingLimits) {
        if large { return }
        if longestWritten > limits.hashMaxListpackValue || count > limits.hashMaxListpackEntries {
            large = true
        }
    }

    mutating func settleEncoding(limits: EncodingLimits) {
        large = count > limits.hashMaxListpackEntries
            || fields.contains { $0.count > limits.hashMaxListpackValue }
            || values.contains { $0.count > limits.hashMaxListpackValue }
    }

    var encodingName: String { large ? "hashtable" : "listpack" }
}
