// Lists, sets, hashes and sorted sets, serialized into an entry's value
// bytes (the entry's `ValueKind` says which): the form SQLite stores and the
// log's whole-entry records carry. In memory a collection is a live value
// (ListValue, SetValue, HashValue, ZSetValue) in its working form, encoded
// only when the writer applies it; each keeps the length of its encoding as
// it changes.
//
// The encoding: one flags byte, the element count as a LEB128 varint, then
// the elements, each a varint length and its bytes (a list's element is
// followed by its length again, the varint's bytes reversed, so a list
// reads from its tail too; a hash: field then value; a sorted set: member
// then its score as 8 little-endian bytes of an IEEE double, in score
// order). Flag bit 0 records that the collection has taken Redis's large
// encoding (hashtable, skiplist), which in Redis 7.0 is never undone, so
// OBJECT ENCODING answers as Redis would.

extension ReplyError {
    static let corruptValue = ReplyError("ERR the stored value is corrupt")
}

/// Appends and reads the pieces of the encoding.
enum CollectionCodec {
    static let largeFlag: UInt8 = 1

    /// The bytes `appendVarint` takes for `value`.
    static func varintSize(_ value: Int) -> Int {
        var v = UInt64(value), n = 1
        while v >= 0x80 {
            v >>= 7
            n += 1
        }
        return n
    }

    static func appendVarint(_ value: Int, to out: inout [UInt8]) {
        var v = UInt64(value)
        while v >= 0x80 {
            out.append(UInt8(v & 0x7f) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    static func appendElement(_ bytes: [UInt8], to out: inout [UInt8]) {
        appendVarint(bytes.count, to: &out)
        out.append(contentsOf: bytes)
    }

    static func appendElement(_ bytes: ArraySlice<UInt8>, to out: inout [UInt8]) {
        appendVarint(bytes.count, to: &out)
        out.append(contentsOf: bytes)
    }

    /// A list element: length, bytes, then the length's varint reversed.
    static func appendListElement(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        let start = out.count
        appendVarint(bytes.count, to: &out)
        // The reversed varint copied out first: a lazy view of `out` kept
        // across the appends made each one copy the whole buffer (O(n²) to
        // encode a list: a million elements took minutes).
        let prefix = Array(out[start...].reversed())
        out.append(contentsOf: bytes)
        out.append(contentsOf: prefix)
    }

    static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bitPattern.littleEndian) { out.append(contentsOf: $0) }
    }

    /// The header: flags and count.
    static func header(large: Bool, count: Int, capacity: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(capacity + 10)
        out.append(large ? largeFlag : 0)
        appendVarint(count, to: &out)
        return out
    }
}

/// Reads an encoded value, refusing anything malformed.
struct ByteReader {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func byte() throws(ReplyError) -> UInt8 {
        guard index < bytes.count else { throw .corruptValue }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func varint() throws(ReplyError) -> Int {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 63 else { throw .corruptValue }
            result |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { break }
            shift += 7
        }
        guard result <= UInt64(Int32.max) * 16 else { throw .corruptValue }
        return Int(result)
    }

    mutating func take(_ n: Int) throws(ReplyError) -> [UInt8] {
        guard n >= 0, bytes.count - index >= n else { throw .corruptValue }
        defer { index += n }
        return Array(bytes[index..<index + n])
    }

    mutating func element() throws(ReplyError) -> [UInt8] {
        try take(try varint())
    }

    /// A list element, checking the trailing length against the leading one.
    mutating func listElement() throws(ReplyError) -> [UInt8] {
        let start = index
        let element = try element()
        let prefixLength = index - element.count - start
        guard try take(prefixLength) == Array(bytes[start..<start + prefixLength].reversed()) else { throw .corruptValue }
        return element
    }

    /// Reads backwards the list element that ends at `end`.
    /// - Returns: the range of its bytes and where its encoding starts.
    func listElement(endingAt end: Int) throws(ReplyError) -> (payload: Range<Int>, start: Int) {
        var result = 0, shift = 0, i = end
        while true {
            guard i > 0, shift < 63 else { throw .corruptValue }
            i -= 1
            let b = bytes[i]
            result |= Int(b & 0x7f) << shift
            if b & 0x80 == 0 { break }
            shift += 7
        }
        let prefixLength = end - i
        guard result <= i - prefixLength else { throw .corruptValue }
        return ((i - result)..<i, i - result - prefixLength)
    }

    mutating func double() throws(ReplyError) -> Double {
        let raw = try take(8)
        var bits: UInt64 = 0
        for (i, b) in raw.enumerated() { bits |= UInt64(b) << (8 * UInt64(i)) }
        return Double(bitPattern: bits)
    }

    /// Flags and count; the count is checked against the bytes left (each element takes at least one).
    mutating func header() throws(ReplyError) -> (large: Bool, count: Int) {
        let flags = try byte()
        let count = try varint()
        guard count <= bytes.count - index else { throw .corruptValue }
        return (flags & CollectionCodec.largeFlag != 0, count)
    }
}
