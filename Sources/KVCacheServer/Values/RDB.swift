import RESP
import SQLiteKVCache

// Redis's DUMP format: one value in RDB encoding, then the RDB version (2
// bytes, little endian) and a CRC64 (Jones polynomial, as Redis's crc64.c)
// of everything before it (8 bytes, little endian).
//
// DUMP writes strings exactly as Redis 7.0 does (integers in 8, 16 or 32
// bits, strings over 20 bytes LZF-compressed when that helps), and
// collections in the plain RDB encodings every Redis since 2.x loads:
// RDB_TYPE_LIST, RDB_TYPE_SET, RDB_TYPE_HASH and RDB_TYPE_ZSET_2; streams
// as Redis 7.0 writes them (RDB+Stream.swift). RESTORE reads those, the
// compact ones Redis 7.0 writes (quicklists of listpacks, intsets, and
// hashes and sorted sets as listpacks), and those of older Redis that 7.0
// still reads (ziplists, quicklists of ziplists, zipmaps: Ziplist.swift).

enum RDB {
    static let version: UInt16 = 10

    enum ObjectType: UInt8 {
        case string = 0, list = 1, set = 2, zset = 3, hash = 4, zset2 = 5
        case hashZipmap = 9, listZiplist = 10, setIntset = 11, zsetZiplist = 12, hashZiplist = 13, listQuicklist = 14
        case streamListpacks = 15, hashListpack = 16, zsetListpack = 17, listQuicklist2 = 18
        case streamListpacks2 = 19

        /// Redis's `rdbReportCorruptRDB` text for a value of this type that
        /// fails its check, when no more precise one was given.
        var integrityFailure: String {
            switch self {
            case .string: "Unknown RDB string encoding"
            case .list, .listQuicklist: "Ziplist integrity check failed."
            case .listQuicklist2: "Listpack integrity check failed."
            case .listZiplist: "List ziplist integrity check failed."
            case .set: "Duplicate set members detected"
            case .setIntset: "Intset integrity check failed."
            case .zset, .zset2: "Duplicate zset fields detected"
            case .zsetZiplist: "Zset ziplist integrity check failed."
            case .zsetListpack: "Zset listpack integrity check failed."
            case .hash: "Duplicate hash fields detected"
            case .hashZipmap: "Zipmap integrity check failed."
            case .hashZiplist: "Hash ziplist integrity check failed."
            case .hashListpack: "Hash listpack integrity check failed."
            case .streamListpacks, .streamListpacks2: "Stream listpack integrity check failed."
            }
        }
    }

    /// A payload this server cannot read; `reason` is the line Redis logs
    /// for it ("Hash ziplist integrity check failed."), empty until known.
    struct BadFormat: Error {
        var reason = ""
        /// An empty collection (Redis refuses it in RESTORE and skips it
        /// in an RDB file, as "empty keys").
        var emptyKey = false
        /// The bytes ended before the value did.
        var shortRead = false
    }

    // MARK: CRC64

    private static let crcTable: [UInt64] = (0..<256).map { index in
        var crc = UInt64(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x95ac9329ac4bc9b5 : crc >> 1 }
        return crc
    }

    /// Redis's `crc64(0, …)`: Jones polynomial, reflected, no final xor.
    static func crc64(_ bytes: some Sequence<UInt8>, _ start: UInt64 = 0) -> UInt64 {
        var crc = start
        for byte in bytes { crc = crcTable[Int((crc ^ UInt64(byte)) & 0xff)] ^ (crc >> 8) }
        return crc
    }

    // MARK: The payload

    /// The DUMP payload of an entry.
    static func dump(_ entry: StoredEntry) throws(ReplyError) -> [UInt8] {
        var out: [UInt8] = []
        switch try collectionValue(of: entry) {
        case nil:
            out.append(ObjectType.string.rawValue)
            appendString(entry.row.value.bytes, to: &out)
        case let list as ListValue:
            out.append(ObjectType.list.rawValue)
            appendLength(list.count, to: &out)
            for item in list.items { appendString(item, to: &out) }
        case let set as SetValue:
            out.append(ObjectType.set.rawValue)
            appendLength(set.count, to: &out)
            set.forEach { appendString($0, to: &out) }
        case let hash as HashValue:
            out.append(ObjectType.hash.rawValue)
            appendLength(hash.count, to: &out)
            hash.forEach { pair in
                appendString(pair.field, to: &out)
                appendString(pair.value, to: &out)
            }
        case let zset as ZSetValue:
            out.append(ObjectType.zset2.rawValue)
            appendLength(zset.count, to: &out)
            // Greatest first, as Redis saves a skiplist.
            zset.forEach(fromRank: zset.count - 1, reverse: true) { member, score in
                appendString(member, to: &out)
                withUnsafeBytes(of: score.bitPattern.littleEndian) { out.append(contentsOf: $0) }
                return true
            }
        case let stream as StreamValue:
            out.append(ObjectType.streamListpacks2.rawValue)
            appendStream(stream, to: &out)
        default:
            throw ReplyError.corruptValue
        }
        out.append(UInt8(version & 0xff))
        out.append(UInt8(version >> 8))
        withUnsafeBytes(of: crc64(out).littleEndian) { out.append(contentsOf: $0) }
        return out
    }

    /// Whether a payload's footer holds a version this server reads and the right checksum.
    static func verify(_ payload: [UInt8], checksum: Bool = true) -> Bool {
        guard payload.count >= 10 else { return false }
        let footer = payload.count - 10
        let payloadVersion = UInt16(payload[footer]) | UInt16(payload[footer + 1]) << 8
        guard payloadVersion <= version else { return false }
        guard checksum else { return true }  // DEBUG SET-SKIP-CHECKSUM-VALIDATION 1
        var stored: UInt64 = 0
        for i in 0..<8 { stored |= UInt64(payload[footer + 2 + i]) << (8 * UInt64(i)) }
        return crc64(payload[..<(payload.count - 8)]) == stored
    }

    /// The value of a verified payload: its kind and value bytes in this
    /// server's encoding.
    /// - Throws: `BadFormat` for anything this server cannot read.
    static func load(_ payload: [UInt8], limits: EncodingLimits) throws(BadFormat) -> (ValueKind, [UInt8]) {
        var reader = RDBReader(bytes: payload, end: payload.count - 10)
        return try loadValue(&reader, type: try reader.byte(), limits: limits)
    }

    /// The value of RDB type `byte` at `reader` (a payload's, or a key's
    /// in an RDB file), in this server's encoding; the reader moves past it.
    /// - Throws: `BadFormat` with Redis's reason.
    static func loadValue(_ reader: inout RDBReader, type byte: UInt8, limits: EncodingLimits) throws(BadFormat) -> (ValueKind, [UInt8]) {
        guard let type = ObjectType(rawValue: byte) else { throw BadFormat(reason: "Unknown RDB encoding type \(byte)") }
        do {
            return try load(type, &reader, limits: limits)
        } catch {
            if error.emptyKey { throw error }
            throw BadFormat(reason: error.reason.isEmpty ? type.integrityFailure : error.reason, shortRead: error.shortRead)
        }
    }

    private static func load(_ type: ObjectType, _ reader: inout RDBReader, limits: EncodingLimits) throws(BadFormat) -> (ValueKind, [UInt8]) {
        switch type {
        case .string:
            return (.string, try reader.string())
        case .list:
            let count = try reader.nonEmptyLength()
            let list = ListValue()
            for _ in 0..<count { list.append(try reader.string()) }
            return (.list, list.encoded())
        case .listQuicklist2, .listQuicklist:
            let nodes = try reader.nonEmptyLength()
            let list = ListValue()
            for _ in 0..<nodes {
                let container = type == .listQuicklist ? 2 : try reader.length()
                let blob = try reader.string()
                guard !blob.isEmpty else { throw BadFormat() }
                switch container {
                case 1: list.append(blob)  // a plain node: one large element
                case 2:
                    // An empty node is skipped, as Redis skips it (an empty list is refused below).
                    for element in type == .listQuicklist ? try Ziplist.elements(blob) : try Listpack.elements(blob) {
                        list.append(element)
                    }
                default: throw BadFormat(reason: "Quicklist integrity check failed.")
                }
            }
            guard !list.isEmpty else { throw BadFormat(emptyKey: true) }
            return (.list, list.encoded())
        case .listZiplist:
            let list = ListValue()
            for element in try Ziplist.elements(try reader.string()) { list.append(element) }
            guard !list.isEmpty else { throw BadFormat(emptyKey: true) }
            return (.list, list.encoded())
        case .set, .setIntset:
            let members = type == .set ? try reader.strings(try reader.nonEmptyLength()) : try intsetMembers(try reader.string())
            // Built in the large encoding, then settled by its contents.
            var large = limits
            large.setMaxIntsetEntries = -1
            let set = SetValue()
            for member in members {
                guard set.add(member, limits: large) else { throw BadFormat() }
            }
            set.settleEncoding(limits: limits)
            return (.set, set.encoded())
        case .hash, .hashListpack, .hashZiplist, .hashZipmap:
            let items: [[UInt8]]
            switch type {
            case .hash: items = try reader.strings(2 * (try reader.nonEmptyLength()))
            case .hashZiplist: items = try Ziplist.elements(try reader.string())
            case .hashZipmap: items = try Zipmap.pairs(try reader.string())
            default: items = try Listpack.elements(try reader.string())
            }
            guard !items.isEmpty else { throw BadFormat(emptyKey: true) }
            guard items.count % 2 == 0 else { throw BadFormat() }
            let hash = HashValue()
            for i in stride(from: 0, to: items.count, by: 2) {
                guard hash.set(items[i], items[i + 1]) else {
                    throw BadFormat(reason: type == .hashZipmap ? "Hash zipmap with dup elements, or big length (\(items[i].count))" : "")
                }
            }
            hash.settleEncoding(limits: limits)
            return (.hash, hash.encoded())
        case .zset, .zset2, .zsetListpack, .zsetZiplist:
            let zset = ZSetValue()
            if type == .zsetListpack || type == .zsetZiplist {
                let blob = try reader.string()
                let items = type == .zsetZiplist ? try Ziplist.elements(blob) : try Listpack.elements(blob)
                guard !items.isEmpty else { throw BadFormat(emptyKey: true) }
                guard items.count % 2 == 0 else { throw BadFormat() }
                for i in stride(from: 0, to: items.count, by: 2) {
                    guard let score = parseScoreBound(items[i + 1]), !score.exclusive, zset.score(items[i]) == nil else {
                        throw BadFormat()
                    }
                    zset.set(items[i], score: score.value)
                }
            } else {
                let count = try reader.nonEmptyLength()
                for _ in 0..<count {
                    let member = try reader.string()
                    let score = type == .zset2 ? try reader.binaryDouble() : try reader.textDouble()
                    guard !score.isNaN else { throw BadFormat(reason: "Zset with NAN score detected") }
                    guard zset.score(member) == nil else { throw BadFormat() }
                    zset.set(member, score: score)
                }
            }
            zset.settleEncoding(limits: limits)
            return (.zset, zset.encoded())
        case .streamListpacks, .streamListpacks2:
            return (.stream, try loadStream(&reader, type: type.rawValue).encoded())
        }
    }

    // MARK: Lengths and strings

    /// Redis's `rdbSaveLen`: 6 bits, 14 bits, or a marker and 32 or 64 bits big endian.
    static func appendLength(_ length: Int, to out: inout [UInt8]) {
        if length < 1 << 6 {
            out.append(UInt8(length))
        } else if length < 1 << 14 {
            out.append(UInt8(length >> 8) | 0x40)
            out.append(UInt8(length & 0xff))
        } else if length <= Int(UInt32.max) {
            out.append(0x80)
            withUnsafeBytes(of: UInt32(length).bigEndian) { out.append(contentsOf: $0) }
        } else {
            out.append(0x81)
            withUnsafeBytes(of: UInt64(length).bigEndian) { out.append(contentsOf: $0) }
        }
    }

    /// Redis's `rdbSaveRawString`: an integer of up to 11 characters that
    /// fits 32 bits as 1, 2 or 4 bytes; over 20 bytes LZF when it shrinks
    /// the string; otherwise the length and the bytes.
    static func appendString(_ bytes: [UInt8], to out: inout [UInt8]) {
        if bytes.count <= 11, let value = parseStrictInt64(bytes) {
            if value >= Int64(Int8.min) && value <= Int64(Int8.max) {
                out.append(0xC0)
                out.append(UInt8(bitPattern: Int8(value)))
                return
            }
            if value >= Int64(Int16.min) && value <= Int64(Int16.max) {
                out.append(0xC1)
                withUnsafeBytes(of: Int16(value).littleEndian) { out.append(contentsOf: $0) }
                return
            }
            if value >= Int64(Int32.min) && value <= Int64(Int32.max) {
                out.append(0xC2)
                withUnsafeBytes(of: Int32(value).littleEndian) { out.append(contentsOf: $0) }
                return
            }
        }
        if bytes.count > 20, let compressed = LZF.compress(bytes, limit: bytes.count - 4) {
            out.append(0xC3)
            appendLength(compressed.count, to: &out)
            appendLength(bytes.count, to: &out)
            out.append(contentsOf: compressed)
            return
        }
        appendLength(bytes.count, to: &out)
        out.append(contentsOf: bytes)
    }

    /// The members of an intset blob: encoding (2, 4 or 8 bytes), count, then little-endian integers.
    private static func intsetMembers(_ blob: [UInt8]) throws(BadFormat) -> [[UInt8]] {
        guard blob.count >= 8 else { throw BadFormat() }
        func u32(_ at: Int) -> Int { Int(blob[at]) | Int(blob[at + 1]) << 8 | Int(blob[at + 2]) << 16 | Int(blob[at + 3]) << 24 }
        let width = u32(0), count = u32(4)
        guard [2, 4, 8].contains(width), count > 0, blob.count == 8 + width * count else { throw BadFormat() }
        var members: [[UInt8]] = []
        for i in 0..<count {
            var raw: UInt64 = 0
            for b in 0..<width { raw |= UInt64(blob[8 + i * width + b]) << (8 * UInt64(b)) }
            let value: Int64
            switch width {
            case 2: value = Int64(Int16(truncatingIfNeeded: raw))
            case 4: value = Int64(Int32(truncatingIfNeeded: raw))
            default: value = Int64(bitPattern: raw)
            }
            members.append(Array(String(value).utf8))
        }
        return members
    }
}

/// Reads the RDB encoding of one value, up to `end`.
struct RDBReader {
    let bytes: [UInt8]
    let end: Int
    var index = 0

    init(bytes: [UInt8], end: Int) {
        self.bytes = bytes
        self.end = end
    }

    mutating func byte() throws(RDB.BadFormat) -> UInt8 {
        guard index < end else { throw RDB.BadFormat(shortRead: true) }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func take(_ n: Int) throws(RDB.BadFormat) -> [UInt8] {
        guard n >= 0 else { throw RDB.BadFormat() }
        guard end - index >= n else { throw RDB.BadFormat(shortRead: true) }
        defer { index += n }
        return Array(bytes[index..<index + n])
    }

    /// A length, or for an encoded string the encoding (as a negative number - 1).
    private mutating func lengthOrEncoding() throws(RDB.BadFormat) -> (length: Int, encoded: Bool) {
        let first = try byte()
        switch first >> 6 {
        case 0: return (Int(first & 0x3f), false)
        case 1: return (Int(first & 0x3f) << 8 | Int(try byte()), false)
        case 3: return (Int(first & 0x3f), true)
        default:
            let width = first == 0x80 ? 4 : first == 0x81 ? 8 : 0
            guard width > 0 else { throw RDB.BadFormat() }
            var value: UInt64 = 0
            for b in try take(width) { value = value << 8 | UInt64(b) }
            guard value <= UInt64(Int32.max) * 4 else { throw RDB.BadFormat() }
            return (Int(value), false)
        }
    }

    mutating func length() throws(RDB.BadFormat) -> Int {
        let (length, encoded) = try lengthOrEncoding()
        guard !encoded else { throw RDB.BadFormat() }
        return length
    }

    /// A collection's length; an empty one is refused, as Redis refuses it.
    mutating func nonEmptyLength() throws(RDB.BadFormat) -> Int {
        let n = try length()
        guard n > 0 else { throw RDB.BadFormat(emptyKey: true) }
        guard n <= end - index else { throw RDB.BadFormat() }
        return n
    }

    /// A string: plain, an 8/16/32-bit integer, or LZF-compressed.
    mutating func string() throws(RDB.BadFormat) -> [UInt8] {
        let (length, encoded) = try lengthOrEncoding()
        guard encoded else { return try take(length) }
        switch length {
        case 0: return Array(String(Int8(bitPattern: try byte())).utf8)
        case 1:
            let raw = try take(2)
            return Array(String(Int16(bitPattern: UInt16(raw[0]) | UInt16(raw[1]) << 8)).utf8)
        case 2:
            let raw = try take(4)
            let bits = UInt32(raw[0]) | UInt32(raw[1]) << 8 | UInt32(raw[2]) << 16 | UInt32(raw[3]) << 24
            return Array(String(Int32(bitPattern: bits)).utf8)
        case 3:
            let compressedLength = try self.length()
            let originalLength = try self.length()
            let compressed = try take(compressedLength)
            guard originalLength > 0, let plain = LZF.decompress(compressed, length: originalLength) else {
                throw RDB.BadFormat()
            }
            return plain
        default:
            throw RDB.BadFormat()
        }
    }

    mutating func strings(_ count: Int) throws(RDB.BadFormat) -> [[UInt8]] {
        var result: [[UInt8]] = []
        for _ in 0..<count { result.append(try string()) }
        return result
    }

    /// An unsigned integer of `width` bytes, little endian.
    mutating func littleEndian(_ width: Int) throws(RDB.BadFormat) -> UInt64 {
        var value: UInt64 = 0
        for (i, b) in try take(width).enumerated() { value |= UInt64(b) << (8 * UInt64(i)) }
        return value
    }

    /// RDB_TYPE_ZSET_2's score: 8 bytes, little endian.
    mutating func binaryDouble() throws(RDB.BadFormat) -> Double {
        Double(bitPattern: try littleEndian(8))
    }

    /// RDB_TYPE_ZSET's score: a length byte (253 NaN, 254 +inf, 255 -inf) and text.
    mutating func textDouble() throws(RDB.BadFormat) -> Double {
        let n = try byte()
        switch n {
        case 253: return .nan
        case 254: return .infinity
        case 255: return -.infinity
        default:
            guard let value = parseScore(try take(Int(n))) else { throw RDB.BadFormat() }
            return value
        }
    }
}

/// LZF as liblzf 3.6 in Redis (HLOG 16, VERY_FAST), with a hash table that
/// starts empty.
enum LZF {
    private static let hashLog = 16
    private static let maxLiteral = 1 << 5
    private static let maxOffset = 1 << 13
    private static let maxReference = (1 << 8) + (1 << 3)

    @inline(__always)
    private static func slot(_ h: UInt32) -> Int {
        Int(((h >> UInt32(3 * 8 - hashLog)) &- (h &* 5)) & UInt32((1 << hashLog) - 1))
    }

    /// Compresses `input` into at most `limit` bytes; nil when it does not fit.
    static func compress(_ input: [UInt8], limit: Int) -> [UInt8]? {
        let inLength = input.count
        guard inLength > 0, limit > 0, inLength >= 3 else { return nil }
        var table = [Int](repeating: 0, count: 1 << hashLog)
        var out = [UInt8](repeating: 0, count: limit)
        var ip = 0, op = 0
        var lit = 0
        op += 1  // start run
        func first(_ p: Int) -> UInt32 { UInt32(input[p]) << 8 | UInt32(input[p + 1]) }
        func next(_ v: UInt32, _ p: Int) -> UInt32 { (v << 8) | UInt32(input[p + 2]) }
        var hval = first(ip)
        while ip < inLength - 2 {
            hval = next(hval, ip)
            let h = slot(hval)
            let ref = table[h]
            table[h] = ip
            let off = ip - ref - 1
            if ref > 0 && ref < ip && off < maxOffset && input[ref + 2] == input[ip + 2]
                && input[ref] == input[ip] && input[ref + 1] == input[ip + 1] {
                var len = 2
                let maxLength = min(inLength - ip - len, maxReference)
                if op + 3 + 1 >= limit && op - (lit == 0 ? 1 : 0) + 3 + 1 >= limit { return nil }
                out[op - lit - 1] = UInt8(truncatingIfNeeded: lit - 1)  // stop run
                op -= lit == 0 ? 1 : 0  // undo run if length is zero
                // liblzf's loop: 16 unchecked steps when far from the end, then one at a time.
                var mismatched = false
                if maxLength > 16 {
                    for _ in 0..<16 {
                        len += 1
                        if input[ref + len] != input[ip + len] { mismatched = true; break }
                    }
                }
                if !mismatched {
                    repeat { len += 1 } while len < maxLength && input[ref + len] == input[ip + len]
                }
                len -= 2  // now #octets - 1
                ip += 1
                if len < 7 {
                    out[op] = UInt8(truncatingIfNeeded: (off >> 8) + (len << 5)); op += 1
                } else {
                    out[op] = UInt8(truncatingIfNeeded: (off >> 8) + (7 << 5)); op += 1
                    out[op] = UInt8(truncatingIfNeeded: len - 7); op += 1
                }
                out[op] = UInt8(truncatingIfNeeded: off); op += 1
                lit = 0; op += 1  // start run
                ip += len + 1
                if ip >= inLength - 2 { break }
                ip -= 2
                hval = first(ip)
                hval = next(hval, ip)
                table[slot(hval)] = ip
                ip += 1
                hval = next(hval, ip)
                table[slot(hval)] = ip
                ip += 1
            } else {
                if op >= limit { return nil }
                lit += 1; out[op] = input[ip]; op += 1; ip += 1
                if lit == maxLiteral {
                    out[op - lit - 1] = UInt8(truncatingIfNeeded: lit - 1)
                    lit = 0; op += 1
                }
            }
        }
        if op + 3 > limit { return nil }
        while ip < inLength {
            lit += 1; out[op] = input[ip]; op += 1; ip += 1
            if lit == maxLiteral {
                out[op - lit - 1] = UInt8(truncatingIfNeeded: lit - 1)
                lit = 0; op += 1
            }
        }
        out[op - lit - 1] = UInt8(truncatingIfNeeded: lit - 1)  // end run
        op -= lit == 0 ? 1 : 0
        return Array(out[..<op])
    }

    /// Decompresses to exactly `length` bytes; nil when the data do not.
    static func decompress(_ input: [UInt8], length: Int) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(length)
        var ip = 0
        while ip < input.count {
            let ctrl = Int(input[ip]); ip += 1
            if ctrl < 1 << 5 {
                let n = ctrl + 1
                guard ip + n <= input.count, out.count + n <= length else { return nil }
                out.append(contentsOf: input[ip..<ip + n])
                ip += n
            } else {
                var len = ctrl >> 5
                if len == 7 {
                    guard ip < input.count else { return nil }
                    len += Int(input[ip]); ip += 1
                }
                guard ip < input.count else { return nil }
                let ref = out.count - ((ctrl & 0x1f) << 8) - 1 - Int(input[ip]); ip += 1
                len += 2
                guard ref >= 0, out.count + len <= length else { return nil }
                for k in 0..<len { out.append(out[ref + k]) }
            }
        }
        return out.count == length ? out : nil
    }
}
