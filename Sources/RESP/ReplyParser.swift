/// Parses replies (for clients and tests), RESP2 and RESP3. Returns nil for
/// "need more bytes" without moving the index; moves it past the value on success.
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

        func count() throws(Malformed) -> Int {
            guard let n = Int(text) else { throw Malformed(description: "bad length \(text)") }
            return n
        }
        func items(_ n: Int) throws(Malformed) -> [RESPValue]? {
            var result: [RESPValue] = []
            for _ in 0..<max(0, n) {
                guard let item = try parseValue(buffer, &i) else { return nil }
                result.append(item)
            }
            return result
        }
        func blob(_ n: Int) -> [UInt8]? {
            guard buffer.count - i >= n + 2 else { return nil }
            let bytes = [UInt8](UnsafeRawBufferPointer(rebasing: buffer[i..<(i + n)]))
            i += n + 2
            return bytes
        }

        let value: RESPValue
        switch kind {
        case UInt8(ascii: "+"): value = .simpleString(text)
        case UInt8(ascii: "-"): value = .error(text)
        case UInt8(ascii: ":"):
            guard let n = Int64(text) else { throw Malformed(description: "bad integer \(text)") }
            value = .integer(n)
        case UInt8(ascii: "$"):
            let n = try count()
            if n < 0 { value = .bulk(nil) } else {
                guard let bytes = blob(n) else { return nil }
                value = .bulk(bytes)
            }
        case UInt8(ascii: "="):
            guard let bytes = blob(try count()) else { return nil }
            guard bytes.count >= 4 else { throw Malformed(description: "short verbatim string") }
            value = .verbatim(format: String(decoding: bytes[..<3], as: UTF8.self), Array(bytes[4...]))
        case UInt8(ascii: "*"):
            let n = try count()
            if n < 0 { value = .array(nil) } else {
                guard let list = try items(n) else { return nil }
                value = .array(list)
            }
        case UInt8(ascii: "~"):
            guard let list = try items(try count()) else { return nil }
            value = .set(list)
        case UInt8(ascii: "%"):
            guard let list = try items(try count() * 2) else { return nil }
            value = .map(stride(from: 0, to: list.count, by: 2).map { (list[$0], list[$0 + 1]) })
        case UInt8(ascii: "_"): value = .null
        case UInt8(ascii: "#"): value = .boolean(text == "t")
        case UInt8(ascii: ","):
            switch text {
            case "inf": value = .double(.infinity)
            case "-inf": value = .double(-.infinity)
            case "nan": value = .double(.nan)
            default:
                guard let d = Double(text) else { throw Malformed(description: "bad double \(text)") }
                value = .double(d)
            }
        default:
            throw Malformed(description: "unknown reply type \(kind)")
        }
        cursor = i
        return value
    }
}
