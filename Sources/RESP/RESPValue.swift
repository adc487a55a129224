/// A RESP2 reply as a client sees it. Payloads stay bytes.
public enum RESPValue: Equatable, Sendable, CustomStringConvertible {
    case simpleString(String)
    case error(String)
    case integer(Int64)
    /// A bulk string; nil is the null bulk (`$-1`).
    case bulk([UInt8]?)
    /// An array; nil is the null array (`*-1`).
    case array([RESPValue]?)

    /// The text of a simple or bulk string.
    public var string: String? {
        switch self {
        case .simpleString(let s): return s
        case .bulk(let bytes?): return String(decoding: bytes, as: UTF8.self)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .simpleString(let s): return "+\(s)"
        case .error(let s): return "-\(s)"
        case .integer(let n): return ":\(n)"
        case .bulk(nil): return "(nil)"
        case .bulk(let bytes?): return "\"\(String(decoding: bytes, as: UTF8.self))\""
        case .array(nil): return "(nil array)"
        case .array(let items?): return "[" + items.map(\.description).joined(separator: ", ") + "]"
        }
    }

    /// Encodes this value as RESP2.
    public func encode(into out: inout [UInt8]) {
        switch self {
        case .simpleString(let s): RESPEncoder.simpleString(s, into: &out)
        case .error(let s): RESPEncoder.error(s, into: &out)
        case .integer(let n): RESPEncoder.integer(n, into: &out)
        case .bulk(let bytes): RESPEncoder.optionalBulk(bytes, into: &out)
        case .array(nil): RESPEncoder.nullArray(into: &out)
        case .array(let items?):
            RESPEncoder.arrayHeader(items.count, into: &out)
            for item in items { item.encode(into: &out) }
        }
    }
}

/// Parses replies (for clients and tests). Returns nil for "need more bytes"
/// without moving the index; moves it past the value on success.
public enum ReplyParser {
    public struct Malformed: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    public static func parse(_ buffer: UnsafeRawBufferPointer, index: inout Int) throws(Malformed) -> RESPValue? {
        var cursor = index
        guard let value = try parseValue(buffer, &cursor) else { return nil }
        index = cursor
        return value
    }

    public static func parse(_ buffer: [UInt8], index: inout Int) throws(Malformed) -> RESPValue? {
        var cursor = index
        let result = buffer.withUnsafeBytes { raw in
            Result { () throws(Malformed) -> RESPValue? in try parse(raw, index: &cursor) }
        }
        index = cursor
        return try result.get()
    }

    private static func line(_ buffer: UnsafeRawBufferPointer, _ cursor: inout Int) -> UnsafeRawBufferPointer? {
        var i = cursor
        while i + 1 < buffer.count {
            if buffer[i] == 0x0d && buffer[i + 1] == 0x0a {
                let slice = UnsafeRawBufferPointer(rebasing: buffer[cursor..<i])
                cursor = i + 2
                return slice
            }
            i += 1
        }
        return nil
    }

    private static func parseValue(_ buffer: UnsafeRawBufferPointer, _ cursor: inout Int) throws(Malformed) -> RESPValue? {
        guard cursor < buffer.count else { return nil }
        let kind = buffer[cursor]
        var i = cursor + 1
        guard let body = line(buffer, &i) else { return nil }
        let text = String(decoding: body, as: UTF8.self)
        switch kind {
        case UInt8(ascii: "+"):
            cursor = i
            return .simpleString(text)
        case UInt8(ascii: "-"):
            cursor = i
            return .error(text)
        case UInt8(ascii: ":"):
            guard let n = Int64(text) else { throw Malformed(description: "bad integer \(text)") }
            cursor = i
            return .integer(n)
        case UInt8(ascii: "$"):
            guard let n = Int(text) else { throw Malformed(description: "bad bulk length \(text)") }
            if n < 0 { cursor = i; return .bulk(nil) }
            guard buffer.count - i >= n + 2 else { return nil }
            let bytes = [UInt8](UnsafeRawBufferPointer(rebasing: buffer[i..<(i + n)]))
            cursor = i + n + 2
            return .bulk(bytes)
        case UInt8(ascii: "*"):
            guard let n = Int(text) else { throw Malformed(description: "bad array length \(text)") }
            if n < 0 { cursor = i; return .array(nil) }
            var items: [RESPValue] = []
            for _ in 0..<n {
                guard let item = try parseValue(buffer, &i) else { return nil }
                items.append(item)
            }
            cursor = i
            return .array(items)
        default:
            throw Malformed(description: "unknown reply type \(kind)")
        }
    }
}
