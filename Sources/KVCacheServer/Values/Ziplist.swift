// The encodings of Redis before 7.0 that RESTORE still takes (as Redis 7.0
// does): ziplists (lists, hashes and sorted sets up to Redis 6.2, and the
// nodes of 3.2-6.2 quicklists) and zipmaps (small hashes before 2.6).
// Each blob is checked whole, as Redis's deep sanitization checks it
// (ziplistValidateIntegrity, zipmapValidateIntegrity), before any element
// is used.

/// A ziplist: `zlbytes` (u32 LE), `zltail` (u32 LE, the last entry's
/// offset), `zllen` (u16 LE, 0xffff: count unknown), the entries, 0xff.
/// An entry is the previous entry's length (1 byte, or 0xfe and a u32 LE),
/// an encoding and the data: a string of 6, 14 or 32-bit length, or an
/// integer of 8, 16, 24, 32 or 64 bits, or 0-12 in the encoding byte.
enum Ziplist {
    private static let headerSize = 10

    /// The elements, integers as their decimal text.
    /// - Throws: `BadFormat` for any blob Redis's integrity check refuses.
    static func elements(_ zl: [UInt8]) throws(RDB.BadFormat) -> [[UInt8]] {
        let size = zl.count
        guard size >= headerSize + 1, u32(zl, 0) == size, zl[size - 1] == 0xff else { throw RDB.BadFormat() }
        let tail = u32(zl, 4)
        guard tail <= size - 1 else { throw RDB.BadFormat() }
        let headerCount = Int(zl[8]) | Int(zl[9]) << 8
        let last = size - 1  // the end marker; nothing of an entry may pass it
        var result: [[UInt8]] = []
        var p = headerSize
        var previousSize = 0
        var previous = -1
        while zl[p] != 0xff {
            // The previous entry's length.
            let prevSize: Int, prevLength: Int
            if zl[p] < 0xfe {
                (prevSize, prevLength) = (1, Int(zl[p]))
            } else {
                guard p + 5 <= last else { throw RDB.BadFormat() }
                (prevSize, prevLength) = (5, u32(zl, p + 1))
            }
            guard prevLength == previousSize, p + prevSize <= last else { throw RDB.BadFormat() }
            // The encoding.
            let e = p + prevSize
            let encoding = zl[e]
            var lengthSize = 1, dataLength = 0
            var integer: Int64?
            switch encoding >> 6 {
            case 0: dataLength = Int(encoding & 0x3f)
            case 1:
                lengthSize = 2
                guard e + 1 <= last else { throw RDB.BadFormat() }
                dataLength = Int(encoding & 0x3f) << 8 | Int(zl[e + 1])
            case 2:
                lengthSize = 5
                guard e + 4 <= last else { throw RDB.BadFormat() }
                dataLength = Int(zl[e + 1]) << 24 | Int(zl[e + 2]) << 16 | Int(zl[e + 3]) << 8 | Int(zl[e + 4])
            default:
                switch encoding {
                case 0xc0: dataLength = 2
                case 0xd0: dataLength = 4
                case 0xe0: dataLength = 8
                case 0xf0: dataLength = 3
                case 0xfe: dataLength = 1
                case 0xf1...0xfd: integer = Int64(encoding & 0x0f) - 1
                default: throw RDB.BadFormat()
                }
            }
            let data = e + lengthSize
            let end = data + dataLength
            guard end <= last else { throw RDB.BadFormat() }
            if encoding >> 6 == 3 {
                if integer == nil {
                    var raw: UInt64 = 0
                    for i in 0..<dataLength { raw |= UInt64(zl[data + i]) << (8 * UInt64(i)) }
                    let shift = UInt64(64 - 8 * dataLength)
                    integer = Int64(bitPattern: raw << shift) >> Int64(shift)  // sign-extended
                }
                result.append(Array(String(integer!).utf8))
            } else {
                result.append(Array(zl[data..<end]))
            }
            previousSize = end - p
            previous = p
            p = end
        }
        guard p == last, previous < 0 || previous == tail,
              headerCount == 0xffff || headerCount == result.count else { throw RDB.BadFormat() }
        return result
    }
}

/// The u32 at `at`, little endian (ziplist headers, zipmap lengths).
private func u32(_ bytes: [UInt8], _ at: Int) -> Int {
    Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
}

/// A zipmap: a count byte (254: unknown), then field and value pairs, each
/// a length (1 byte under 254, else 254 and a u32 LE), the value's free
/// bytes after its length, and the end marker 0xff.
enum Zipmap {
    /// The fields and values, in order (field, value, field, value...).
    /// - Throws: `BadFormat` for any blob Redis's integrity check refuses
    ///   (an empty zipmap among them).
    static func pairs(_ zm: [UInt8]) throws(RDB.BadFormat) -> [[UInt8]] {
        let size = zm.count
        guard size >= 2, zm[size - 1] == 0xff else { throw RDB.BadFormat() }
        func inRange(_ p: Int) -> Bool { p >= 2 && p <= size - 1 }
        func length(at p: Int) throws(RDB.BadFormat) -> (size: Int, length: Int) {
            let s = zm[p] < 254 ? 1 : 5
            guard inRange(p + s) else { throw RDB.BadFormat() }
            let l = s == 1 ? Int(zm[p]) : u32(zm, p + 1)
            guard l >= 254 || s == 1 else { throw RDB.BadFormat() }  // a small length in 5 bytes
            return (s, l)
        }
        var result: [[UInt8]] = []
        var p = 1
        while zm[p] != 0xff {
            let field = try length(at: p)
            let fieldStart = p + field.size
            p = fieldStart + field.length
            guard inRange(p) else { throw RDB.BadFormat() }
            let value = try length(at: p)
            p += value.size
            let free = Int(zm[p])
            let valueStart = p + 1
            p = valueStart + value.length + free
            guard inRange(p) else { throw RDB.BadFormat() }
            result.append(Array(zm[fieldStart..<fieldStart + field.length]))
            result.append(Array(zm[valueStart..<valueStart + value.length]))
        }
        let count = result.count / 2
        guard count > 0, zm[0] == 254 || Int(zm[0]) == count else { throw RDB.BadFormat() }
        return result
    }
}
