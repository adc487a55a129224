import Foundation

/// One record of the append-only log: everything one command (or one
/// MULTI/EXEC transaction) changed, in every cache it touched, so a replay
/// applies it whole or not at all. Its position (`lsn`) orders it; `time`
/// is when it ran, so a replay of relative expiry times lands where the
/// original did.
public struct LogRecord: Equatable, Sendable {
    public var lsn: UInt64
    /// Milliseconds since 1970.
    public var time: Int64
    public var ops: [LogOp]

    public init(lsn: UInt64, time: Int64, ops: [LogOp]) {
        self.lsn = lsn
        self.time = time
        self.ops = ops
    }
}

/// A put op read where it lies in the log's bytes: the key, metadata and
/// value point into the record, valid only while the replay visits it (a
/// replay stores them as a SET stores its request's bytes, without arrays).
public struct LogPutView {
    public let cache: String
    public let key: UnsafeRawBufferPointer
    public let kind: ValueKind
    public let storageDate: Double
    public let expiresAt: Int64?
    public let metadata: UnsafeRawBufferPointer
    public let value: UnsafeRawBufferPointer

    public init(cache: String, key: UnsafeRawBufferPointer, kind: ValueKind, storageDate: Double, expiresAt: Int64?,
                metadata: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        self.cache = cache
        self.key = key
        self.kind = kind
        self.storageDate = storageDate
        self.expiresAt = expiresAt
        self.metadata = metadata
        self.value = value
    }

    /// The op with its bytes copied out.
    public var op: LogOp {
        .put(cache: cache, key: [UInt8](key), kind: kind, storageDate: storageDate, expiresAt: expiresAt,
             metadata: [UInt8](metadata), value: [UInt8](value))
    }
}

/// An op as a replay visits it: a put in place (nearly every record), any
/// other op decoded.
public enum LogOpView {
    case put(LogPutView)
    case other(LogOp)

    public var op: LogOp {
        switch self {
        case .put(let view): return view.op
        case .other(let op): return op
        }
    }
}

/// One change to one cache (two for a swap), in a record.
public enum LogOp: Equatable, Sendable {
    /// A command that changed `cache`, replayed as it was run: it is
    /// deterministic given the cache's state and the record's time.
    case command(cache: String, args: [[UInt8]])
    /// A whole entry stored in `cache` (MOVE and COPY into another cache).
    case put(cache: String, key: [UInt8], kind: ValueKind, storageDate: Double, expiresAt: Int64?,
             metadata: [UInt8], value: [UInt8])
    case delete(cache: String, key: [UInt8])
    /// The expiry of a live entry set (milliseconds since 1970) or cleared (nil).
    case expire(cache: String, key: [UInt8], at: Int64?)
    /// Every entry of `cache` removed (FLUSHDB, FLUSHALL).
    case clear(cache: String)
    /// The files of two caches exchanged (SWAPDB); the identities of the
    /// files that held `a` and `b` before tell a replay whether it happened.
    case swap(a: String, b: String, fileA: UInt64, fileB: UInt64)

    /// Appends the op's bytes to `out`, for `AppendLog.append(time:opCount:encodedOps:)`.
    public func encode(into out: inout [UInt8]) {
        LogCodec.append(self, to: &out)
    }

    /// Appends the bytes of `.put(…)` with these fields to `out`, without
    /// building the op (the log record of every SET).
    public static func encodePut(cache: String, key: [UInt8], kind: ValueKind, storageDate: Double, expiresAt: Int64?,
                                 metadata: [UInt8], value: [UInt8], into out: inout [UInt8]) {
        key.withUnsafeBytes { key in
            metadata.withUnsafeBytes { metadata in
                value.withUnsafeBytes { value in
                    LogCodec.appendPut(cache: cache, key: key, kind: kind, storageDate: storageDate, expiresAt: expiresAt,
                                       metadata: metadata, value: value, to: &out)
                }
            }
        }
    }

    /// `encodePut` of bytes viewed in place (a SET's key and value in its request).
    public static func encodePut(cache: String, key: UnsafeRawBufferPointer, kind: ValueKind, storageDate: Double,
                                 expiresAt: Int64?, metadata: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                                 into out: inout [UInt8]) {
        LogCodec.appendPut(cache: cache, key: key, kind: kind, storageDate: storageDate, expiresAt: expiresAt,
                           metadata: metadata, value: value, to: &out)
    }

    /// The caches the op changes.
    public var caches: [String] {
        switch self {
        case .command(let cache, _), .put(let cache, _, _, _, _, _, _), .delete(let cache, _), .expire(let cache, _, _),
             .clear(let cache):
            return [cache]
        case .swap(let a, let b, _, _):
            return [a, b]
        }
    }

    fileprivate var tag: UInt8 {
        switch self {
        case .command: return 1
        case .put: return 2
        case .delete: return 3
        case .clear: return 4
        case .swap: return 5
        case .expire: return 6
        }
    }
}

/// The bytes of records, little-endian:
///
///     record  = u32 bodyLength, u32 crc32c(body), body
///     body    = u64 lsn, i64 time, u32 opCount, op…
///     op      = u8 tag, cache (u8 length, bytes), then by tag:
///               command: u32 argc, (u32 length, bytes)…
///               put:     key, u8 kind, f64 storageDate, u8 hasExpiry, i64 expiresAt, metadata, value
///               delete:  key
///               expire:  key, u8 hasExpiry, i64 expiresAt
///               clear:   nothing
///               swap:    cache b, u64 fileA, u64 fileB
///     key, metadata, value = u32 length, bytes
enum LogCodec {
    static let headerSize = 8
    static let bodyHeaderSize = 20

    /// Encodes a record onto `out`.
    static func append(_ record: LogRecord, to out: inout [UInt8]) {
        var ops: [UInt8] = []
        for op in record.ops { append(op, to: &ops) }
        append(lsn: record.lsn, time: record.time, opCount: record.ops.count, encodedOps: ops, to: &out)
    }

    /// Encodes a record whose ops are already encoded (`append(_:to:)` each).
    static func append(lsn: UInt64, time: Int64, opCount: Int, encodedOps: [UInt8], to out: inout [UInt8]) {
        let start = out.count
        out.appendZeros(headerSize + bodyHeaderSize)
        out.append(contentsOf: encodedOps)
        out.withUnsafeMutableBytes { raw in
            var cursor = ByteCursor(raw.baseAddress! + start + headerSize)
            cursor.put(lsn)
            cursor.put(UInt64(bitPattern: time))
            cursor.put(UInt32(opCount))
        }
        seal(&out, recordStart: start)
    }

    /// Encodes one op onto `out`: its size first, then one pass of stores
    /// (a dozen `append(contentsOf:)` calls per op cost twice as much).
    static func append(_ op: LogOp, to out: inout [UInt8]) {
        switch op {
        case .put(let cache, let key, let kind, let storageDate, let expiresAt, let metadata, let value):
            LogOp.encodePut(cache: cache, key: key, kind: kind, storageDate: storageDate, expiresAt: expiresAt,
                            metadata: metadata, value: value, into: &out)
            return
        default:
            break
        }
        out.append(op.tag)
        switch op {
        case .command(let cache, _), .put(let cache, _, _, _, _, _, _), .delete(let cache, _), .expire(let cache, _, _),
             .clear(let cache), .swap(let cache, _, _, _):
            appendName(cache, to: &out)
        }
        switch op {
        case .command(_, let args):
            appendInteger(UInt32(args.count), to: &out)
            for arg in args { appendBytes(arg, to: &out) }
        case .put:
            preconditionFailure("encoded above")
        case .delete(_, let key):
            appendBytes(key, to: &out)
        case .expire(_, let key, let at):
            appendBytes(key, to: &out)
            out.append(at == nil ? 0 : 1)
            appendInteger(UInt64(bitPattern: at ?? 0), to: &out)
        case .clear:
            break
        case .swap(_, let b, let fileA, let fileB):
            appendName(b, to: &out)
            appendInteger(fileA, to: &out)
            appendInteger(fileB, to: &out)
        }
    }

    /// Encodes a put op (the op of every SET) onto `out`, as `append(_:to:)`.
    static func appendPut(cache: String, key: UnsafeRawBufferPointer, kind: ValueKind, storageDate: Double,
                          expiresAt: Int64?, metadata: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                          to out: inout [UInt8]) {
        var name = cache
        name.withUTF8 { nameBytes in
            precondition(nameBytes.count <= 255, "a cache name of \(nameBytes.count) bytes")
            let size = 2 + nameBytes.count + 4 + key.count + 1 + 8 + 1 + 8 + 4 + metadata.count + 4 + value.count
            let start = out.count
            out.appendZeros(size)
            out.withUnsafeMutableBytes { raw in
                var cursor = ByteCursor(raw.baseAddress! + start)
                cursor.put(UInt8(2))
                cursor.put(UInt8(nameBytes.count))
                cursor.put(UnsafeRawBufferPointer(nameBytes))
                cursor.put(UInt32(key.count))
                cursor.put(key)
                cursor.put(kind.rawValue)
                cursor.put(storageDate.bitPattern)
                cursor.put(UInt8(expiresAt == nil ? 0 : 1))
                cursor.put(UInt64(bitPattern: expiresAt ?? 0))
                cursor.put(UInt32(metadata.count))
                cursor.put(metadata)
                cursor.put(UInt32(value.count))
                cursor.put(value)
            }
        }
    }

    /// Writes the length and checksum of the record that starts at `recordStart`.
    static func seal(_ out: inout [UInt8], recordStart: Int) {
        let bodyStart = recordStart + headerSize
        let length = UInt32(out.count - bodyStart)
        out.withUnsafeMutableBytes { raw in
            let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[bodyStart...]))
            var cursor = ByteCursor(raw.baseAddress! + recordStart)
            cursor.put(length)
            cursor.put(crc)
        }
    }

    static func appendInteger<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    static func appendBytes(_ bytes: [UInt8], to out: inout [UInt8]) {
        appendInteger(UInt32(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }

    static func appendBytes(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        appendInteger(UInt32(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }

    /// A cache name: at most 64 bytes (a handle), so its length fits a byte.
    static func appendName(_ name: String, to out: inout [UInt8]) {
        let utf8 = name.utf8
        precondition(utf8.count <= 255, "a cache name of \(utf8.count) bytes")
        out.append(UInt8(utf8.count))
        out.append(contentsOf: utf8)
    }

    /// Why bytes are not a record.
    enum DecodeFailure: Swift.Error, Equatable {
        /// The bytes end inside the record.
        case truncated
        /// The checksum or the structure is wrong.
        case damaged(String)
    }

    /// Decodes the record at `offset` of `bytes`.
    /// - Returns: the record and the offset after it.
    static func decode(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(DecodeFailure) -> (LogRecord, Int) {
        var record = LogRecord(lsn: 0, time: 0, ops: [])
        let next = try visit(bytes, at: offset) { lsn, time, count in
            record = LogRecord(lsn: lsn, time: time, ops: [])
            record.ops.reserveCapacity(min(count, 1024))
        } op: { view in
            record.ops.append(view.op)
        }
        return (record, next)
    }

    /// Reads the record at `offset` of `bytes` and shows it to `start`
    /// (its position, time and op count), then each of its ops to `op`,
    /// in place: only once the whole record checked out, so a damaged
    /// record shows nothing.
    /// - Returns: the offset after the record.
    static func visit(_ bytes: UnsafeRawBufferPointer, at offset: Int,
                      start: (_ lsn: UInt64, _ time: Int64, _ opCount: Int) -> Void,
                      op: (LogOpView) -> Void) throws(DecodeFailure) -> Int {
        guard bytes.count - offset >= headerSize else { throw .truncated }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        let crc = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
        let bodyStart = offset + headerSize
        guard bytes.count - bodyStart >= length else { throw .truncated }
        let body = UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<bodyStart + length])
        guard length >= bodyHeaderSize else { throw .damaged("a record of \(length) bytes is too short") }
        guard CRC32C.checksum(body) == crc else { throw .damaged("checksum mismatch") }
        var reader = BodyReader(body: body)
        do throws(DecodeFailure) {
            let lsn = try reader.integer(UInt64.self)
            let time = Int64(bitPattern: try reader.integer(UInt64.self))
            let count = Int(try reader.integer(UInt32.self))
            if count == 1 {
                // Nearly every record: one op, shown without an array.
                let only = try reader.op()
                try reader.expectEnd()
                start(lsn, time, 1)
                op(only)
            } else {
                guard count <= body.count - reader.index else { throw .damaged("\(count) ops cannot fit") }
                var ops: [LogOpView] = []
                ops.reserveCapacity(count)
                for _ in 0..<count { ops.append(try reader.op()) }
                try reader.expectEnd()
                start(lsn, time, count)
                for each in ops { op(each) }
            }
            return bodyStart + length
        } catch .truncated {
            throw .damaged("an op runs past the end of its record")
        }
    }

    private struct BodyReader {
        let body: UnsafeRawBufferPointer
        var index = 0

        mutating func integer<T: FixedWidthInteger>(_: T.Type) throws(DecodeFailure) -> T {
            let size = MemoryLayout<T>.size
            guard body.count - index >= size else { throw .truncated }
            defer { index += size }
            return T(littleEndian: body.loadUnaligned(fromByteOffset: index, as: T.self))
        }

        mutating func byte() throws(DecodeFailure) -> UInt8 { try integer(UInt8.self) }

        mutating func bytes() throws(DecodeFailure) -> [UInt8] { [UInt8](try bytesInPlace()) }

        mutating func bytesInPlace() throws(DecodeFailure) -> UnsafeRawBufferPointer {
            let length = Int(try integer(UInt32.self))
            guard body.count - index >= length else { throw .truncated }
            defer { index += length }
            return UnsafeRawBufferPointer(rebasing: body[index..<index + length])
        }

        func expectEnd() throws(DecodeFailure) {
            guard index == body.count else { throw .damaged("\(body.count - index) bytes after the last op") }
        }

        mutating func name() throws(DecodeFailure) -> String {
            let length = Int(try byte())
            guard body.count - index >= length else { throw .truncated }
            defer { index += length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: body[index..<index + length]), as: UTF8.self)
        }

        mutating func op() throws(DecodeFailure) -> LogOpView {
            let tag = try byte()
            let cache = try name()
            switch tag {
            case 1:
                let argc = Int(try integer(UInt32.self))
                guard argc <= body.count - index else { throw .damaged("\(argc) arguments cannot fit") }
                var args: [[UInt8]] = []
                args.reserveCapacity(argc)
                for _ in 0..<argc { args.append(try bytes()) }
                return .other(.command(cache: cache, args: args))
            case 2:
                let key = try bytesInPlace()
                guard let kind = ValueKind(rawValue: try byte()) else { throw .damaged("unknown value kind") }
                let storageDate = Double(bitPattern: try integer(UInt64.self))
                let hasExpiry = try byte() != 0
                let expiresAt = Int64(bitPattern: try integer(UInt64.self))
                let metadata = try bytesInPlace()
                return .put(LogPutView(cache: cache, key: key, kind: kind, storageDate: storageDate,
                                       expiresAt: hasExpiry ? expiresAt : nil, metadata: metadata, value: try bytesInPlace()))
            case 3:
                return .other(.delete(cache: cache, key: try bytes()))
            case 4:
                return .other(.clear(cache: cache))
            case 6:
                let key = try bytes()
                let has = try byte() != 0
                let at = Int64(bitPattern: try integer(UInt64.self))
                return .other(.expire(cache: cache, key: key, at: has ? at : nil))
            case 5:
                let b = try name()
                return .other(.swap(a: cache, b: b, fileA: try integer(UInt64.self), fileB: try integer(UInt64.self)))
            default:
                throw .damaged("unknown op \(tag)")
            }
        }
    }
}
