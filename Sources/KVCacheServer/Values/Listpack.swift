import RESP

/// Redis 7.0's listpack (listpack.c) in a byte array: a 6-byte header
/// (total bytes as u32, element count as u16, both little endian; 65535
/// means "count them"), the elements, and 0xFF. An element is its
/// encoding (an integer in 7, 13, 16, 24, 32 or 64 bits, or a string after
/// a 1, 2 or 5 byte length) followed by its encoded length written
/// backwards (1 to 5 bytes), so the list walks both ways. A string that
/// reads as a 64-bit integer is stored as the integer, as Redis does.
///
/// Positions are byte offsets of an element's first byte. The functions
/// trust a listpack they built or one `isValid` accepted.
enum Listpack {
    static let headerSize = 6
    static let end: UInt8 = 0xFF
    static let unknownCount = 65535

    /// One element: an integer, or a string's bytes in the listpack.
    enum Element: Equatable {
        case int(Int64)
        case string(Range<Int>)
    }

    /// An empty listpack.
    static func empty() -> [UInt8] { [7, 0, 0, 0, 0, 0, end] }

    static func totalBytes(_ lp: [UInt8]) -> Int {
        Int(lp[0]) | Int(lp[1]) << 8 | Int(lp[2]) << 16 | Int(lp[3]) << 24
    }

    static func storedCount(_ lp: [UInt8]) -> Int { Int(lp[4]) | Int(lp[5]) << 8 }

    // MARK: Walking

    /// The bytes of the element at `p` without its back-length.
    static func encodedSize(_ lp: [UInt8], _ p: Int) -> Int {
        let b = lp[p]
        if b & 0x80 == 0 { return 1 }
        if b & 0xC0 == 0x80 { return 1 + Int(b & 0x3F) }
        if b & 0xE0 == 0xC0 { return 2 }
        switch b {
        case 0xF1: return 3
        case 0xF2: return 4
        case 0xF3: return 5
        case 0xF4: return 9
        case 0xF0: return 5 + (Int(lp[p + 1]) | Int(lp[p + 2]) << 8 | Int(lp[p + 3]) << 16 | Int(lp[p + 4]) << 24)
        default:
            if b & 0xF0 == 0xE0 { return 2 + (Int(b & 0x0F) << 8 | Int(lp[p + 1])) }
            return 1  // the end byte
        }
    }

    /// The bytes Redis's lpEncodeBacklen takes for an element of `l` bytes.
    static func backlenSize(_ l: Int) -> Int {
        l <= 127 ? 1 : l < 16383 ? 2 : l < 2_097_151 ? 3 : l < 268_435_455 ? 4 : 5
    }

    static func first(_ lp: [UInt8]) -> Int? { lp[headerSize] == end ? nil : headerSize }

    static func next(_ lp: [UInt8], _ p: Int) -> Int? {
        let size = encodedSize(lp, p)
        let q = p + size + backlenSize(size)
        return lp[q] == end ? nil : q
    }

    /// The element before the one at `p` (or before the end byte when `p` is it).
    static func prev(_ lp: [UInt8], _ p: Int) -> Int? {
        guard p > headerSize else { return nil }
        var i = p - 1, value = 0, shift = 0
        while true {
            value |= Int(lp[i] & 127) << shift
            if lp[i] & 128 == 0 { break }
            shift += 7
            i -= 1
        }
        return i - value
    }

    static func last(_ lp: [UInt8]) -> Int? { prev(lp, lp.count - 1) }

    static func element(_ lp: [UInt8], _ p: Int) -> Element {
        let b = lp[p]
        if b & 0x80 == 0 { return .int(Int64(b)) }
        if b & 0xC0 == 0x80 { return .string((p + 1)..<(p + 1 + Int(b & 0x3F))) }
        if b & 0xE0 == 0xC0 {
            var v = Int64(Int(b & 0x1F) << 8 | Int(lp[p + 1]))
            if v >= 1 << 12 { v -= 1 << 13 }
            return .int(v)
        }
        func signed(_ width: Int) -> Int64 {
            var raw: UInt64 = 0
            for k in 0..<width { raw |= UInt64(lp[p + 1 + k]) << (8 * UInt64(k)) }
            let shift = UInt64(64 - 8 * width)
            return Int64(bitPattern: raw << shift) >> Int64(shift)
        }
        switch b {
        case 0xF1: return .int(signed(2))
        case 0xF2: return .int(signed(3))
        case 0xF3: return .int(signed(4))
        case 0xF4: return .int(signed(8))
        case 0xF0:
            let n = Int(lp[p + 1]) | Int(lp[p + 2]) << 8 | Int(lp[p + 3]) << 16 | Int(lp[p + 4]) << 24
            return .string((p + 5)..<(p + 5 + n))
        default:
            let n = Int(b & 0x0F) << 8 | Int(lp[p + 1])
            return .string((p + 2)..<(p + 2 + n))
        }
    }

    /// The element at `p` as an integer (a string holding one is parsed,
    /// as Redis's lpGetInteger); 0 for a string that does not.
    static func integer(_ lp: [UInt8], _ p: Int) -> Int64 {
        switch element(lp, p) {
        case .int(let v): return v
        case .string(let r): return parseStrictInt64(lp[r]) ?? 0
        }
    }

    /// The element's bytes as a client sees them (an integer in decimal).
    static func bytes(_ lp: [UInt8], _ element: Element) -> [UInt8] {
        switch element {
        case .int(let v): return Array(String(v).utf8)
        case .string(let r): return Array(lp[r])
        }
    }

    static func bytes(_ lp: [UInt8], at p: Int) -> [UInt8] { bytes(lp, element(lp, p)) }

    /// Whether the element at `p` equals `value` as a client sees it.
    static func equals(_ lp: [UInt8], _ p: Int, _ value: [UInt8]) -> Bool {
        switch element(lp, p) {
        case .int(let v): return stringToInt64(value) == v
        case .string(let r): return lp[r].elementsEqual(value)
        }
    }

    // MARK: Encoding

    /// Redis's lpStringToInt64: the strict decimal form of a 64-bit integer.
    static func stringToInt64(_ s: [UInt8]) -> Int64? {
        guard !s.isEmpty, s.count < 21 else { return nil }
        return parseStrictInt64(s)
    }

    static func encodeInteger(_ v: Int64, into out: inout [UInt8]) {
        switch v {
        case 0...127:
            out.append(UInt8(v))
        case -4096...4095:
            let u = v < 0 ? (1 << 13) + v : v
            out.append(UInt8(u >> 8) | 0xC0)
            out.append(UInt8(u & 0xFF))
        case -32768...32767: appendLittleEndian(0xF1, v, width: 2, into: &out)
        case -8_388_608...8_388_607: appendLittleEndian(0xF2, v, width: 3, into: &out)
        case -2_147_483_648...2_147_483_647: appendLittleEndian(0xF3, v, width: 4, into: &out)
        default: appendLittleEndian(0xF4, v, width: 8, into: &out)
        }
    }

    private static func appendLittleEndian(_ tag: UInt8, _ v: Int64, width: Int, into out: inout [UInt8]) {
        out.append(tag)
        let u = UInt64(bitPattern: v)
        for k in 0..<width { out.append(UInt8(truncatingIfNeeded: u >> (8 * UInt64(k)))) }
    }

    /// An element's encoding for `bytes`: as an integer when it reads as one.
    static func encode(_ bytes: some Collection<UInt8>, into out: inout [UInt8]) {
        if bytes.count < 21, let v = parseStrictInt64(bytes) {
            encodeInteger(v, into: &out)
            return
        }
        let n = bytes.count
        if n < 64 {
            out.append(UInt8(n) | 0x80)
        } else if n < 4096 {
            out.append(UInt8(n >> 8) | 0xE0)
            out.append(UInt8(n & 0xFF))
        } else {
            out.append(0xF0)
            for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: n >> (8 * k))) }
        }
        out.append(contentsOf: bytes)
    }

    /// Redis's lpEncodeBacklen of `l`.
    static func appendBacklen(_ l: Int, into out: inout [UInt8]) {
        switch backlenSize(l) {
        case 1: out.append(UInt8(l))
        case 2: out += [UInt8(l >> 7), UInt8(l & 127) | 128]
        case 3: out += [UInt8(l >> 14), UInt8((l >> 7) & 127) | 128, UInt8(l & 127) | 128]
        case 4: out += [UInt8(l >> 21), UInt8((l >> 14) & 127) | 128, UInt8((l >> 7) & 127) | 128, UInt8(l & 127) | 128]
        default:
            out += [UInt8(truncatingIfNeeded: l >> 28), UInt8((l >> 21) & 127) | 128, UInt8((l >> 14) & 127) | 128,
                    UInt8((l >> 7) & 127) | 128, UInt8(l & 127) | 128]
        }
    }

    /// The bytes an element holding `bytes` takes, back-length included.
    static func entrySize(of bytes: some Collection<UInt8>) -> Int {
        var scratch: [UInt8] = []
        let size: Int
        if bytes.count < 21, let v = parseStrictInt64(bytes) {
            encodeInteger(v, into: &scratch)
            size = scratch.count
        } else {
            size = bytes.count + (bytes.count < 64 ? 1 : bytes.count < 4096 ? 2 : 5)
        }
        return size + backlenSize(size)
    }

    // MARK: Changing

    /// Appends a string element (an integer when it reads as one).
    static func append(_ lp: inout [UInt8], _ bytes: some Collection<UInt8>) {
        var encoded: [UInt8] = []
        encode(bytes, into: &encoded)
        appendEncoded(&lp, encoded)
    }

    static func append(_ lp: inout [UInt8], integer v: Int64) {
        var encoded: [UInt8] = []
        encodeInteger(v, into: &encoded)
        appendEncoded(&lp, encoded)
    }

    private static func appendEncoded(_ lp: inout [UInt8], _ encoded: [UInt8]) {
        lp.removeLast()  // the end byte
        lp.append(contentsOf: encoded)
        appendBacklen(encoded.count, into: &lp)
        lp.append(end)
        setTotalBytes(&lp)
        bumpCount(&lp, by: 1)
    }

    /// Replaces the element at `p` with the integer `v`.
    /// - Returns: how many bytes the listpack grew (negative: shrank).
    @discardableResult
    static func replaceInteger(_ lp: inout [UInt8], at p: Int, _ v: Int64) -> Int {
        var encoded: [UInt8] = []
        encodeInteger(v, into: &encoded)
        appendBacklen(encoded.count, into: &encoded)
        let oldSize = encodedSize(lp, p)
        let oldLength = oldSize + backlenSize(oldSize)
        if oldLength == encoded.count {
            for k in 0..<encoded.count { lp[p + k] = encoded[k] }
            return 0
        }
        lp.replaceSubrange(p..<(p + oldLength), with: encoded)
        setTotalBytes(&lp)
        return encoded.count - oldLength
    }

    private static func setTotalBytes(_ lp: inout [UInt8]) {
        let n = lp.count
        lp[0] = UInt8(n & 0xFF)
        lp[1] = UInt8((n >> 8) & 0xFF)
        lp[2] = UInt8((n >> 16) & 0xFF)
        lp[3] = UInt8((n >> 24) & 0xFF)
    }

    private static func bumpCount(_ lp: inout [UInt8], by delta: Int) {
        let n = storedCount(lp)
        guard n != unknownCount else { return }
        let updated = min(unknownCount, max(0, n + delta))
        lp[4] = UInt8(updated & 0xFF)
        lp[5] = UInt8(updated >> 8)
    }

    // MARK: Reading a payload

    /// Whether `blob` is a well-formed listpack (Redis's lpValidateIntegrity
    /// in its deep form): the header's size, every element inside the
    /// bytes with a back-length that matches it, the count, the end byte.
    static func isValid(_ blob: [UInt8]) -> Bool {
        guard blob.count >= 7, totalBytes(blob) == blob.count, blob[blob.count - 1] == end else { return false }
        var p = headerSize, count = 0
        while blob[p] != end {
            let b = blob[p]
            // The bytes that say how long the element is must be there first.
            let lengthBytes: Int
            if b & 0x80 == 0 || b & 0xC0 == 0x80 || b & 0xE0 == 0xC0 || (0xF1...0xF4).contains(b) { lengthBytes = 1 }
            else if b & 0xF0 == 0xE0 { lengthBytes = 2 }
            else if b == 0xF0 { lengthBytes = 5 }
            else { return false }
            guard p + lengthBytes <= blob.count - 1 else { return false }
            let size = encodedSize(blob, p)
            let entry = size + backlenSize(size)
            guard size > 0, p + entry <= blob.count - 1 else { return false }
            var i = p + entry - 1, value = 0, shift = 0
            while true {
                value |= Int(blob[i] & 127) << shift
                if blob[i] & 128 == 0 { break }
                shift += 7
                i -= 1
                guard shift <= 28, i >= p + size else { return false }
            }
            guard value == size, i == p + size else { return false }
            p += entry
            count += 1
        }
        guard p == blob.count - 1 else { return false }
        let stored = storedCount(blob)
        return stored == unknownCount || stored == count
    }

    /// Every element of a listpack blob, as a client sees it.
    /// - Throws: `BadFormat` for a malformed one.
    static func elements(_ blob: [UInt8]) throws(RDB.BadFormat) -> [[UInt8]] {
        guard isValid(blob) else { throw RDB.BadFormat() }
        var result: [[UInt8]] = []
        var p = first(blob)
        while let at = p {
            result.append(bytes(blob, at: at))
            p = next(blob, at)
        }
        return result
    }
}
