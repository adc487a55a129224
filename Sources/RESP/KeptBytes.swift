/// Text made of bytes a client or a script gave, which need not be UTF-8
/// (an error a script raises with `redis.error_reply`, a command name in an
/// "unknown command" error), kept in a `String` without loss: each byte
/// that is not part of valid UTF-8 becomes the private-use scalar
/// U+F700 + byte (U+F780...U+F7FF), and `keptBytes` turns it back, so the
/// reply carries the very bytes Redis would send (`-\xff\xfeBAD oops`, and
/// `errorstat_\xff\xfeBAD` in INFO), where `String(decoding:as:)` put
/// U+FFFD in their place. Valid UTF-8 is kept as it is, except the
/// encodings of those 128 private-use scalars, whose three bytes are kept
/// one by one: every byte string comes back whole. Text quoting a client's
/// bytes is made with this initializer: one made by `String(decoding:as:)`
/// that holds such a scalar would go out with a byte in its place.
extension String {
    public init(keepingBytes bytes: some Collection<UInt8>) {
        if let text = String(validating: bytes, as: UTF8.self), !text.utf8.contains(0xEF) {
            self = text
            return
        }
        let bytes = Array(bytes)
        var scalars = String.UnicodeScalarView()
        var i = 0
        while i < bytes.count {
            let length = Self.validSequenceLength(bytes, at: i)
            if length == 0 {
                scalars.append(Unicode.Scalar(Self.keptByteBase + UInt32(bytes[i]))!)
                i += 1
            } else {
                scalars.append(contentsOf: String(decoding: bytes[i..<i + length], as: UTF8.self).unicodeScalars)
                i += length
            }
        }
        self = String(scalars)
    }

    /// The length of the valid UTF-8 sequence at `i` (RFC 3629's table), 0 if none starts there.
    private static func validSequenceLength(_ b: [UInt8], at i: Int) -> Int {
        let lead = b[i]
        if lead < 0x80 { return 1 }
        let length: Int, second: ClosedRange<UInt8>
        switch lead {
        case 0xC2...0xDF: (length, second) = (2, 0x80...0xBF)
        case 0xE0: (length, second) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, second) = (3, 0x80...0xBF)
        case 0xED: (length, second) = (3, 0x80...0x9F)
        case 0xF0: (length, second) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, second) = (4, 0x80...0xBF)
        case 0xF4: (length, second) = (4, 0x80...0x8F)
        default: return 0
        }
        guard i + length <= b.count, second.contains(b[i + 1]) else { return 0 }
        if lead == 0xEF && (b[i + 1] == 0x9E || b[i + 1] == 0x9F) { return 0 }  // U+F780...U+F7FF: kept bytes
        for k in 2..<length where !(0x80...0xBF).contains(b[i + k]) { return 0 }
        return length
    }

    /// The bytes this text stands for: its UTF-8, with each kept byte
    /// (U+F780...U+F7FF) as the byte itself.
    public var keptBytes: [UInt8] {
        var out: [UInt8] = []
        appendKeptBytes(to: &out)
        return out
    }

    /// Appends `keptBytes` to `out`.
    public func appendKeptBytes(to out: inout [UInt8]) {
        // U+F780...U+F7FF are EF 9E xx and EF 9F xx in UTF-8.
        guard utf8.contains(0xEF) else {
            out.append(contentsOf: utf8)
            return
        }
        for scalar in unicodeScalars {
            if (Self.keptByteBase + 0x80...Self.keptByteBase + 0xFF).contains(scalar.value) {
                out.append(UInt8(scalar.value - Self.keptByteBase))
            } else {
                out.append(contentsOf: UTF8.encode(scalar)!)
            }
        }
    }

    private static let keptByteBase: UInt32 = 0xF700
}
