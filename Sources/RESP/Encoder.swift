/// Appends RESP2 replies to a byte buffer. Integers are formatted without
/// going through `String`.
public enum RESPEncoder {
    public static let ok: [UInt8] = Array("+OK\r\n".utf8)
    public static let nullBulk: [UInt8] = Array("$-1\r\n".utf8)
    public static let nullArray: [UInt8] = Array("*-1\r\n".utf8)
    public static let emptyArray: [UInt8] = Array("*0\r\n".utf8)

    /// `+text\r\n`. The text must not contain \r or \n.
    @inlinable
    public static func simpleString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "+"))
        out.append(contentsOf: text.utf8)
        out.append(0x0d); out.append(0x0a)
    }

    /// `-text\r\n`: `text` includes the prefix (`ERR ...`, `WRONGTYPE ...`).
    /// Newlines in it are replaced by spaces, as Redis does; bytes kept in
    /// it (`String(keepingBytes:)`) go out as themselves.
    @inlinable
    public static func error(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "-"))
        let start = out.count
        text.appendKeptBytes(to: &out)
        for i in start..<out.count where out[i] == 0x0d || out[i] == 0x0a { out[i] = 0x20 }
        out.append(0x0d); out.append(0x0a)
    }

    /// `:n\r\n`.
    @inlinable
    public static func integer(_ value: Int64, into out: inout [UInt8]) {
        line(UInt8(ascii: ":"), value, into: &out)
    }

    @inlinable
    public static func integer(_ value: Int, into out: inout [UInt8]) {
        integer(Int64(value), into: &out)
    }

    /// `$len\r\nbytes\r\n`.
    @inlinable
    public static func bulk<C: Collection>(_ bytes: C, into out: inout [UInt8]) where C.Element == UInt8 {
        line(UInt8(ascii: "$"), Int64(bytes.count), into: &out)
        out.append(contentsOf: bytes)
        out.append(0x0d); out.append(0x0a)
    }

    /// `$len\r\nbytes\r\n` of bytes viewed in place (a GET's reply: three
    /// appends, the header built on the stack).
    @inlinable
    public static func bulk(_ bytes: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        line(UInt8(ascii: "$"), Int64(bytes.count), into: &out)
        out.append(contentsOf: bytes)
        withUnsafeBytes(of: UInt16(0x0a0d).littleEndian) { out.append(contentsOf: $0) }
    }

    /// `<prefix><n>\r\n` (a bulk string's or an aggregate's header, an
    /// integer), built on the stack and appended at once.
    @inlinable
    public static func line(_ prefix: UInt8, _ value: Int64, into out: inout [UInt8]) {
        var line: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // prefix, sign, up to 20 digits, CRLF
        withUnsafeMutableBytes(of: &line) { raw in
            raw[30] = 0x0d
            raw[31] = 0x0a
            var at = 30
            var n = value.magnitude
            repeat {
                at -= 1
                raw[at] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: n % 10)
                n /= 10
            } while n > 0
            if value < 0 {
                at -= 1
                raw[at] = UInt8(ascii: "-")
            }
            at -= 1
            raw[at] = prefix
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[at...]))
        }
    }

    /// `+OK\r\n` from the stack (no global array to reach).
    @inlinable
    public static func ok(into out: inout [UInt8]) {
        // "+OK\r\n" = 2B 4F 4B 0D 0A, as the low five bytes of a little-endian word.
        withUnsafeBytes(of: UInt64(0x0a0d_4b4f_2b).littleEndian) { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<5])) }
    }

    /// A bulk string of the UTF-8 of `text`.
    @inlinable
    public static func bulk(_ text: String, into out: inout [UInt8]) {
        bulk(Array(text.utf8), into: &out)
    }

    /// The null bulk string (distinct from the empty one): `$-1\r\n`, or `_\r\n` in RESP3.
    @inlinable
    public static func null(into out: inout [UInt8], version: Int = 2) {
        if version >= 3 { out.append(UInt8(ascii: "_")); out.append(0x0d); out.append(0x0a) }
        else { out.append(contentsOf: nullBulk) }
    }

    /// A bulk string, or the null bulk for nil.
    @inlinable
    public static func optionalBulk(_ bytes: [UInt8]?, into out: inout [UInt8]) {
        if let bytes { bulk(bytes, into: &out) } else { null(into: &out) }
    }

    /// `*count\r\n`; the elements follow.
    @inlinable
    public static func arrayHeader(_ count: Int, into out: inout [UInt8]) {
        line(UInt8(ascii: "*"), Int64(count), into: &out)
    }

    /// The null array: `*-1\r\n`, or `_\r\n` in RESP3.
    @inlinable
    public static func nullArray(into out: inout [UInt8], version: Int = 2) {
        if version >= 3 { out.append(UInt8(ascii: "_")); out.append(0x0d); out.append(0x0a) }
        else { out.append(contentsOf: nullArray) }
    }

    /// A map of `count` pairs: `%count` in RESP3, an array of 2×count in RESP2.
    @inlinable
    public static func mapHeader(_ count: Int, into out: inout [UInt8], version: Int) {
        if version >= 3 {
            line(UInt8(ascii: "%"), Int64(count), into: &out)
        } else {
            arrayHeader(count * 2, into: &out)
        }
    }

    /// A set of `count` elements: `~count` in RESP3, an array in RESP2.
    @inlinable
    public static func setHeader(_ count: Int, into out: inout [UInt8], version: Int) {
        if version >= 3 {
            line(UInt8(ascii: "~"), Int64(count), into: &out)
        } else {
            arrayHeader(count, into: &out)
        }
    }

    /// A verbatim string (`=len\r\nfmt:text\r\n`) in RESP3, a bulk string in RESP2.
    @inlinable
    public static func verbatim(_ bytes: [UInt8], format: String, into out: inout [UInt8], version: Int) {
        guard version >= 3 else { return bulk(bytes, into: &out) }
        out.append(UInt8(ascii: "="))
        appendDecimal(Int64(bytes.count + 4), into: &out)
        out.append(0x0d); out.append(0x0a)
        out.append(contentsOf: format.utf8.prefix(3))
        out.append(UInt8(ascii: ":"))
        out.append(contentsOf: bytes)
        out.append(0x0d); out.append(0x0a)
    }

    /// A double: `,value` in RESP3, a bulk string in RESP2 (Redis's `%.17g`).
    @inlinable
    public static func double(_ value: Double, into out: inout [UInt8], version: Int) {
        let text: String
        if value.isNaN { text = "nan" }
        else if value.isInfinite { text = value > 0 ? "inf" : "-inf" }
        else if value == value.rounded(), abs(value) < 1e17 { text = String(Int64(value)) }
        else { text = "\(value)" }
        if version >= 3 {
            out.append(UInt8(ascii: ","))
            out.append(contentsOf: text.utf8)
            out.append(0x0d); out.append(0x0a)
        } else {
            bulk(Array(text.utf8), into: &out)
        }
    }

    /// An array of bulk strings.
    @inlinable
    public static func bulkArray(_ items: [[UInt8]], into out: inout [UInt8]) {
        arrayHeader(items.count, into: &out)
        for item in items { bulk(item, into: &out) }
    }

    /// Appends the decimal digits of `value`.
    @inlinable
    public static func appendDecimal(_ value: Int64, into out: inout [UInt8]) {
        if value >= 0 && value < 10 {
            out.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat {
                raw[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            if value < 0 { out.append(UInt8(ascii: "-")) }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[(24 - count)...]))
        }
    }
}
