/// A reply as a client sees it, RESP2 or RESP3. Payloads stay bytes.
public enum RESPValue: Equatable, Sendable, CustomStringConvertible {
    case simpleString(String)
    case error(String)
    case integer(Int64)
    /// A bulk string; nil is the null bulk (`$-1`, or `_` in RESP3).
    case bulk([UInt8]?)
    /// An array; nil is the null array (`*-1`, or `_` in RESP3).
    case array([RESPValue]?)
    /// RESP3 map (`%`); a flat array of keys and values in RESP2.
    case map([(RESPValue, RESPValue)])
    /// RESP3 set (`~`); an array in RESP2.
    case set([RESPValue])
    /// RESP3 double (`,`); a bulk string in RESP2.
    case double(Double)
    /// RESP3 boolean (`#`); the integer 1 or 0 in RESP2.
    case boolean(Bool)
    /// RESP3 verbatim string (`=`) with a three-letter format; a bulk string in RESP2.
    case verbatim(format: String, [UInt8])
    /// RESP3 null (`_`).
    case null

    public static func == (a: RESPValue, b: RESPValue) -> Bool {
        switch (a, b) {
        case (.simpleString(let x), .simpleString(let y)): return x == y
        case (.error(let x), .error(let y)): return x == y
        case (.integer(let x), .integer(let y)): return x == y
        case (.bulk(let x), .bulk(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.map(let x), .map(let y)): return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.set(let x), .set(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.boolean(let x), .boolean(let y)): return x == y
        case (.verbatim(let f, let x), .verbatim(let g, let y)): return f == g && x == y
        case (.null, .null): return true
        default: return false
        }
    }

    /// The text of a simple, bulk or verbatim string.
    public var string: String? {
        switch self {
        case .simpleString(let s): return s
        case .bulk(let bytes?): return String(decoding: bytes, as: UTF8.self)
        case .verbatim(_, let bytes): return String(decoding: bytes, as: UTF8.self)
        default: return nil
        }
    }

    /// True for every kind of null.
    public var isNull: Bool {
        switch self {
        case .null, .bulk(nil), .array(nil): return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .simpleString(let s): return "+\(s)"
        case .error(let s): return "-\(s)"
        case .integer(let n): return ":\(n)"
        case .bulk(nil), .array(nil), .null: return "(nil)"
        case .bulk(let bytes?): return "\"\(String(decoding: bytes, as: UTF8.self))\""
        case .array(let items?): return "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .set(let items): return "~[" + items.map(\.description).joined(separator: ", ") + "]"
        case .map(let pairs): return "{" + pairs.map { "\($0.0): \($0.1)" }.joined(separator: ", ") + "}"
        case .double(let d): return ",\(d)"
        case .boolean(let b): return "#\(b)"
        case .verbatim(_, let bytes): return "\"\(String(decoding: bytes, as: UTF8.self))\""
        }
    }

    /// Encodes this value for a client speaking protocol `version` (2 or 3);
    /// RESP3-only types degrade to their RESP2 forms for version 2.
    public func encode(into out: inout [UInt8], version: Int = 2) {
        switch self {
        case .simpleString(let s): RESPEncoder.simpleString(s, into: &out)
        case .error(let s): RESPEncoder.error(s, into: &out)
        case .integer(let n): RESPEncoder.integer(n, into: &out)
        case .bulk(let bytes?): RESPEncoder.bulk(bytes, into: &out)
        case .bulk(nil), .null: RESPEncoder.null(into: &out, version: version)
        case .array(nil): RESPEncoder.nullArray(into: &out, version: version)
        case .array(let items?):
            RESPEncoder.arrayHeader(items.count, into: &out)
            for item in items { item.encode(into: &out, version: version) }
        case .set(let items):
            RESPEncoder.setHeader(items.count, into: &out, version: version)
            for item in items { item.encode(into: &out, version: version) }
        case .map(let pairs):
            RESPEncoder.mapHeader(pairs.count, into: &out, version: version)
            for (key, value) in pairs {
                key.encode(into: &out, version: version)
                value.encode(into: &out, version: version)
            }
        case .double(let d): RESPEncoder.double(d, into: &out, version: version)
        case .boolean(let b):
            if version >= 3 { out.append(contentsOf: Array((b ? "#t\r\n" : "#f\r\n").utf8)) }
            else { RESPEncoder.integer(b ? 1 : 0, into: &out) }
        case .verbatim(let format, let bytes): RESPEncoder.verbatim(bytes, format: format, into: &out, version: version)
        }
    }
}
