#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The append-only log: every change the owner acknowledges, written
/// before the acknowledgement, so a crash loses nothing acknowledged. It
/// holds only what the cache files may not hold yet: once a batch is
/// applied (and durable), the segments it covers are deleted.
///
/// The log is a directory of segments, `<base>.<n>.log`, each a 32-byte
/// header (magic, the first position it holds) and records (`LogCodec`).
/// The owner (the server's loop thread) encodes records into a buffer,
/// writes the buffer with one `write(2)` per loop iteration (`flush`),
/// starts a new segment at each seal (`rotate`), and asks `syncer` for the
/// fsyncs. Not thread-safe: one owner.
public final class AppendLog {
    public let directory: String
    public let baseName: String

    struct Segment {
        let sequence: Int
        let path: String
        let firstLSN: UInt64
        /// The last position it holds (firstLSN - 1 while empty).
        var lastLSN: UInt64
        /// Bytes of valid content, header included.
        var size: Int
    }

    /// Segments no longer written, oldest first; retired once applied.
    private(set) var closed: [Segment] = []
    private(set) var current: Segment
    private var fd: Int32
    /// Records encoded but not yet written.
    private var pending: [UInt8] = []
    private var pendingLast: UInt64 = 0
    /// The position the next record takes.
    public private(set) var nextLSN: UInt64
    /// The last position written to the file (in the page cache, not yet fsynced).
    public private(set) var writtenLSN: UInt64
    /// The errno of the last write that failed, until one succeeds.
    public private(set) var writeError: Int32?
    /// Bytes written to the log since it opened.
    public private(set) var bytesWritten = 0
    /// Fsyncs the log off the owner's thread.
    public let syncer: LogSyncer

    static let magic: [UInt8] = Array("KVCLOG01".utf8)
    static let headerSize = 32

    /// What opening found.
    public struct Recovery {
        /// Records to replay, in order, between these positions (0, 0 when none).
        public var firstLSN: UInt64
        public var lastLSN: UInt64
        public var records: Int
        /// Bytes of the segments holding them.
        public var bytes: Int
        /// Warnings about a torn tail that was cut.
        public var warnings: [String]
    }

    /// Why the log cannot be used.
    public enum Failure: Swift.Error, CustomStringConvertible {
        /// A record before the tail is damaged: replaying past it would lose
        /// what follows, so start-up stops.
        case corrupt(path: String, offset: Int, reason: String)
        case io(path: String, what: String, errno: Int32)

        public var description: String {
            switch self {
            case .corrupt(let path, let offset, let reason):
                return "Bad record in the append-only log \(path) at offset \(offset): \(reason)"
            case .io(let path, let what, let errno):
                return "Can't \(what) \(path): \(String(cString: strerror(errno)))"
            }
        }
    }

    /// Opens the log in `directory` (created if missing), checking every
    /// record. A torn last record (a crash in the middle of an append: it
    /// was never acknowledged) is cut off with a warning, unless
    /// `loadTruncated` is false. Writing then goes to a new segment.
    /// - Throws: `Failure.corrupt` for damage before the tail (or a torn tail
    ///   when `loadTruncated` is false), `Failure.io` when a file fails.
    public init(directory: String, baseName: String, loadTruncated: Bool = true,
                onSynced: @escaping @Sendable () -> Void = {}) throws(Failure) {
        self.directory = directory
        self.baseName = baseName
        var info = stat()
        if stat(directory, &info) != 0 {
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw .io(path: directory, what: "create the log directory", errno: errno)
            }
        }
        var found = try Self.listSegments(directory: directory, baseName: baseName)
        var warnings: [String] = []
        // Check every record; find where the valid log ends.
        var buffer: [UInt8] = []
        for index in found.indices {
            let laterHaveRecords = found[(index + 1)...].contains { $0.size > Self.headerSize }
            switch try Self.validate(&found[index], buffer: &buffer) {
            case .whole:
                break
            case .tornAt(let offset, let reason):
                if laterHaveRecords {
                    throw .corrupt(path: found[index].path, offset: offset, reason: reason)
                }
                guard loadTruncated else {
                    throw .corrupt(path: found[index].path, offset: offset,
                                   reason: reason + " (a torn last record; aof-load-truncated is no)")
                }
                guard truncate(found[index].path, off_t(offset)) == 0 else {
                    throw .io(path: found[index].path, what: "truncate", errno: errno)
                }
                found[index].size = offset
                warnings.append("!!! Warning: short read while loading the AOF file \(found[index].path)!!! "
                    + "(\(reason) at offset \(offset)); the torn last record was never acknowledged: "
                    + "it is dropped and the file truncated there")
            }
        }
        let last = found.last
        let lastLSN = found.reduce(UInt64(0)) { max($0, $1.lastLSN) }
        nextLSN = max(lastLSN, last.map { $0.firstLSN &- 1 } ?? 0) + 1
        writtenLSN = nextLSN - 1
        closed = found.map(\.asSegment)
        recovery = Recovery(firstLSN: found.first(where: { $0.lastLSN >= $0.firstLSN })?.firstLSN ?? 0,
                            lastLSN: lastLSN, records: found.reduce(0) { $0 + $1.records },
                            bytes: found.reduce(0) { $0 + $1.size }, warnings: warnings)
        syncer = LogSyncer(onSynced: onSynced)
        syncer.assumeSynced(upTo: writtenLSN)  // what was read back is on disk
        let sequence = (last?.sequence ?? 0) + 1
        (current, fd) = try Self.create(directory: directory, baseName: baseName, sequence: sequence, firstLSN: nextLSN)
        syncer.syncDirectory(directory)
    }

    /// What opening found to replay.
    public private(set) var recovery: Recovery

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    // MARK: Segments on disk

    private static func path(directory: String, baseName: String, sequence: Int) -> String {
        "\(directory)/\(baseName).\(sequence).log"
    }

    private static func listSegments(directory: String, baseName: String) throws(Failure) -> [FoundSegment] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw .io(path: directory, what: "list", errno: errno)
        }
        let prefix = baseName + "."
        var found: [FoundSegment] = []
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".log") {
            guard let sequence = Int(name.dropFirst(prefix.count).dropLast(4)), sequence > 0 else { continue }
            found.append(FoundSegment(sequence: sequence, path: directory + "/" + name))
        }
        return found.sorted { $0.sequence < $1.sequence }
    }

    /// A segment found at open, as checked.
    struct FoundSegment {
        let sequence: Int
        let path: String
        var firstLSN: UInt64 = 0
        var lastLSN: UInt64 = 0
        var size = 0
        var records = 0
    }

    enum Validation {
        case whole
        /// The valid records end at `offset`; what follows is a torn record.
        case tornAt(offset: Int, reason: String)
    }

    /// Reads a segment into `buffer` (reused from segment to segment),
    /// checking its header and every record.
    private static func validate(_ segment: inout FoundSegment, buffer: inout [UInt8]) throws(Failure) -> Validation {
        let count = try read(segment.path, into: &buffer)
        var checked = segment
        let outcome: Result<Validation, Failure> = buffer.withUnsafeBytes { raw in
            check(UnsafeRawBufferPointer(rebasing: raw[..<count]), &checked)
        }
        segment = checked
        return try outcome.get()
    }

    private static func check(_ raw: UnsafeRawBufferPointer, _ segment: inout FoundSegment) -> Result<Validation, Failure> {
        guard raw.count >= headerSize else {
            // A crash while creating the segment: nothing was ever written to it.
            segment.size = 0
            return .success(.tornAt(offset: 0, reason: "a segment header of \(raw.count) bytes"))
        }
        guard Array(raw[0..<8]) == magic,
              UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt32.self))
                == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<24])) else {
            return .failure(.corrupt(path: segment.path, offset: 0, reason: "not a kvcache-server log segment"))
        }
        segment.firstLSN = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        segment.lastLSN = segment.firstLSN &- 1
        var offset = headerSize
        while offset < raw.count {
            let failure: LogCodec.DecodeFailure
            switch LogCodec.validate(raw, at: offset) {
            case .success(let (lsn, next)):
                if lsn == segment.lastLSN &+ 1 {
                    segment.lastLSN = lsn
                    segment.records += 1
                    offset = next
                    continue
                }
                failure = .damaged("position \(lsn) follows \(segment.lastLSN)")
            case .failure(let error):
                failure = error
            }
            switch failure {
            case .truncated:
                segment.size = offset
                return .success(.tornAt(offset: offset, reason: "the last record is cut short"))
            case .damaged(let reason):
                // Damage is a torn tail only if nothing but zeros or the
                // damaged record itself follows (a crash mid-write).
                let length = raw.count - offset >= 4
                    ? Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) : 0
                let end = offset + LogCodec.headerSize + length
                if raw[offset...].allSatisfy({ $0 == 0 }) || end >= raw.count {
                    segment.size = offset
                    return .success(.tornAt(offset: offset, reason: reason))
                }
                return .failure(.corrupt(path: segment.path, offset: offset, reason: reason))
            }
        }
        segment.size = offset
        return .success(.whole)
    }

    /// Reads the file at `path`, at most `limit` bytes, into the start of
    /// `bytes` (whole segments, straight into the array: no copy through
    /// Data). `bytes` grows when too short and is otherwise reused (segment
    /// after segment of about the same size: fresh room for each cost a
    /// page fault every 4 KiB).
    /// - Returns: how many bytes were read.
    private static func read(_ path: String, limit: Int = .max, into bytes: inout [UInt8]) throws(Failure) -> Int {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: path, what: "read", errno: errno) }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io(path: path, what: "read", errno: errno) }
        let size = min(Int(info.st_size), limit)
        if bytes.count < size { bytes = [UInt8](repeating: 0, count: size) }
        var failure: Int32 = 0
        var count = 0
        bytes.withUnsafeMutableBytes { buffer in
            while count < size {
                let n = Glibc.pread(fd, buffer.baseAddress! + count, size - count, off_t(count))
                if n > 0 {
                    count += n
                } else if n == 0 || errno != EINTR {
                    failure = n == 0 ? 0 : errno
                    break
                }
            }
        }
        if failure != 0 { throw .io(path: path, what: "read", errno: failure) }
        return count
    }

    /// Creates segment `sequence` holding positions from `firstLSN`.
    private static func create(directory: String, baseName: String, sequence: Int, firstLSN: UInt64)
        throws(Failure) -> (Segment, Int32)
    {
        let path = path(directory: directory, baseName: baseName, sequence: sequence)
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path: path, what: "create", errno: errno) }
        var header = magic
        LogCodec.appendInteger(firstLSN, to: &header)
        LogCodec.appendInteger(UInt64(0), to: &header)
        LogCodec.appendInteger(CRC32C.checksum(header), to: &header)
        LogCodec.appendInteger(UInt32(0), to: &header)
        let written = header.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == headerSize else {
            let error = written < 0 ? errno : ENOSPC
            Glibc.close(fd)
            unlink(path)
            throw .io(path: path, what: "write the header of", errno: error)
        }
        return (Segment(sequence: sequence, path: path, firstLSN: firstLSN, lastLSN: firstLSN &- 1, size: headerSize), fd)
    }

    // MARK: Replay

    /// Reads the records found at open, in order, a segment at a time.
    public func makeReader() -> Reader {
        Reader(segments: closed.filter { $0.lastLSN >= $0.firstLSN }.map { ($0.path, $0.size) })
    }

    /// Decodes the records of the segments found at open.
    public struct Reader {
        private var segments: [(path: String, size: Int)]
        /// The segment being read, in its first `end` bytes.
        private var bytes: [UInt8] = []
        private var end = 0
        private var offset = 0
        private var path = ""

        fileprivate init(segments: [(String, Int)]) {
            self.segments = segments.map { (path: $0.0, size: $0.1) }
            self.segments.reverse()
        }

        /// The next record, or nil at the end.
        /// - Throws: `Failure` if a file changed since it was checked.
        public mutating func next() throws(Failure) -> LogRecord? {
            var record: LogRecord?
            let found = try step { raw, at throws(LogCodec.DecodeFailure) in
                let (decoded, next) = try LogCodec.decode(raw, at: at)
                record = decoded
                return next
            }
            return found ? record : nil
        }

        /// Shows the next record to `start` (its position, time and op
        /// count) and then each of its ops to `op`, a put in place (its
        /// bytes valid during the call only), as `LogCodec.visit`.
        /// - Returns: false at the end.
        /// - Throws: `Failure` if a file changed since it was checked.
        public mutating func next(start: (_ lsn: UInt64, _ time: Int64, _ opCount: Int) -> Void,
                                  op: (LogOpView) -> Void) throws(Failure) -> Bool {
            try step { raw, at throws(LogCodec.DecodeFailure) in try LogCodec.visit(raw, at: at, start: start, op: op) }
        }

        /// Reads the record at the current offset with `read` (given the
        /// segment's bytes and the offset, it returns the offset after the
        /// record), reading the next segment first when this one is done.
        /// - Returns: false at the end.
        private mutating func step(_ read: (UnsafeRawBufferPointer, Int) throws(LogCodec.DecodeFailure) -> Int)
            throws(Failure) -> Bool
        {
            while offset >= end {
                guard let segment = segments.popLast() else { return false }
                end = try AppendLog.read(segment.path, limit: segment.size, into: &bytes)
                path = segment.path
                offset = AppendLog.headerSize
            }
            let at = offset, end = end
            let stepped: Result<Int, LogCodec.DecodeFailure> = bytes.withUnsafeBytes { raw in
                Result { () throws(LogCodec.DecodeFailure) in try read(UnsafeRawBufferPointer(rebasing: raw[..<end]), at) }
            }
            switch stepped {
            case .success(let next):
                offset = next
                return true
            case .failure(let error):
                throw .corrupt(path: path, offset: offset, reason: "\(error)")
            }
        }
    }

    // MARK: Appending

    /// Appends `record` (its position is assigned here) to the buffer the
    /// next `flush` writes.
    /// - Returns: the record's position.
    @discardableResult
    public func append(time: Int64, ops: [LogOp]) -> UInt64 {
        let lsn = nextLSN
        nextLSN += 1
        LogCodec.append(LogRecord(lsn: lsn, time: time, ops: ops), to: &pending)
        pendingLast = lsn
        return lsn
    }

    /// Appends a record whose ops were encoded with `LogOp.encode(into:)`.
    /// - Returns: the record's position.
    public func append(time: Int64, opCount: Int, encodedOps: [UInt8]) -> UInt64 {
        let lsn = nextLSN
        nextLSN += 1
        LogCodec.append(lsn: lsn, time: time, opCount: opCount, encodedOps: encodedOps, to: &pending)
        pendingLast = lsn
        return lsn
    }

    /// Positions taken from now on are above `lsn` (a cache file already
    /// holds positions up to it).
    public func ensureNextLSN(above lsn: UInt64) {
        guard lsn >= nextLSN else { return }
        precondition(pending.isEmpty, "raising the log position with records buffered")
        nextLSN = lsn + 1
        writtenLSN = lsn
        syncer.assumeSynced(upTo: lsn)
        if current.lastLSN < current.firstLSN {
            // The empty segment's header names the old position: start a new one.
            try? rotate(force: true)
        }
    }

    /// Bytes waiting for `flush`.
    public var pendingBytes: Int { pending.count }

    /// The last position appended (buffered or written).
    public var lastLSN: UInt64 { nextLSN - 1 }

    /// Writes the buffered records to the current segment.
    /// - Returns: false when the write failed; the records stay buffered
    ///   (a partial write is cut from the file) and `writeError` says why.
    @discardableResult
    public func flush() -> Bool {
        guard !pending.isEmpty else { return true }
        var done = 0
        let failure: Int32? = pending.withUnsafeBytes { raw in
            while done < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                if n > 0 {
                    done += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return n < 0 ? errno : ENOSPC
                }
            }
            return nil
        }
        if let failure {
            // No partial record may stay in the file: cut it back.
            if done > 0 { _ = ftruncate(fd, off_t(current.size)) }
            writeError = failure
            return false
        }
        writeError = nil
        current.size += done
        current.lastLSN = pendingLast
        writtenLSN = pendingLast
        bytesWritten += done
        pending.removeAll(keepingCapacity: pending.capacity <= 1 << 20)
        return true
    }

    /// Asks the syncer to fsync what is written.
    public func requestSync() {
        syncer.request(fd: fd, upTo: writtenLSN)
    }

    /// Closes the current segment (after its last fsync) and starts a new
    /// one at the next position, so a batch sealed now covers whole
    /// segments. Writes what is buffered first.
    /// - Throws: `Failure.io` when the new segment cannot be created; the
    ///   current one stays in use.
    public func rotate(force: Bool = false) throws(Failure) {
        guard flush() else { throw .io(path: current.path, what: "write", errno: writeError ?? EIO) }
        guard force || current.lastLSN >= current.firstLSN else { return }  // nothing in it yet
        let (segment, newFD) = try Self.create(directory: directory, baseName: baseName,
                                               sequence: current.sequence + 1, firstLSN: nextLSN)
        syncer.request(fd: fd, upTo: writtenLSN, thenClose: true)
        syncer.syncDirectory(directory)
        closed.append(current)
        current = segment
        fd = newFD
    }

    /// Deletes the segments whose every record is at or below `lsn` (the
    /// cache files hold them durably).
    public func retire(upTo lsn: UInt64) {
        while let oldest = closed.first, oldest.lastLSN <= lsn || oldest.lastLSN < oldest.firstLSN {
            syncer.unlinkLater(oldest.path)
            closed.removeFirst()
        }
    }

    /// Bytes of the log on disk (segments not yet retired and the current one).
    public var size: Int { closed.reduce(current.size) { $0 + $1.size } }

    /// Segments on disk.
    public var segmentCount: Int { closed.count + 1 }

    /// Writes what is buffered, fsyncs and closes the current segment;
    /// deletes every segment when `empty` (the caches hold everything).
    public func close(empty: Bool) {
        _ = flush()
        _ = fsync(fd)
        Glibc.close(fd)
        fd = -1
        syncer.stop()
        if empty {
            for segment in closed where segment.lastLSN >= segment.firstLSN { unlink(segment.path) }
            // Keep the newest segment: its header remembers the position.
            if current.lastLSN >= current.firstLSN {
                unlink(current.path)
                if let (segment, newFD) = try? Self.create(directory: directory, baseName: baseName,
                                                           sequence: current.sequence + 1, firstLSN: nextLSN) {
                    _ = fsync(newFD)
                    Glibc.close(newFD)
                    current = segment
                }
            }
            for segment in closed where segment.lastLSN < segment.firstLSN { unlink(segment.path) }
            closed.removeAll()
            let dir = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if dir >= 0 {
                _ = fsync(dir)
                Glibc.close(dir)
            }
        }
    }
}

extension AppendLog.FoundSegment {
    fileprivate var asSegment: AppendLog.Segment {
        AppendLog.Segment(sequence: sequence, path: path, firstLSN: firstLSN, lastLSN: lastLSN, size: size)
    }
}

extension LogCodec {
    /// Checks the record at `offset`: its length and checksum, without
    /// decoding its ops (a replay decodes them, and a checksum that holds
    /// vouches for their bytes).
    /// - Returns: its position and the offset after it.
    static func validate(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Result<(UInt64, Int), DecodeFailure> {
        guard bytes.count - offset >= headerSize else { return .failure(.truncated) }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        let crc = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
        let bodyStart = offset + headerSize
        guard bytes.count - bodyStart >= length else { return .failure(.truncated) }
        guard length >= bodyHeaderSize else { return .failure(.damaged("a record of \(length) bytes is too short")) }
        let body = UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<bodyStart + length])
        guard CRC32C.checksum(body) == crc else { return .failure(.damaged("checksum mismatch")) }
        return .success((UInt64(littleEndian: body.loadUnaligned(as: UInt64.self)), bodyStart + length))
    }
}

// MARK: Checking and repairing (kvcache-server --check-aof)

extension AppendLog {
    /// What `check` found in one segment.
    public struct SegmentReport: Sendable {
        public let path: String
        public let records: Int
        public let firstLSN: UInt64
        public let lastLSN: UInt64
        /// Where the valid records end, and why the rest is not valid (nil when whole).
        public let problem: (offset: Int, reason: String, torn: Bool)?
    }

    /// Reads every segment of the log in `directory` (named `<base>.<n>.log`)
    /// and says how far each is valid, as redis-check-aof does.
    /// - Throws: `Failure.io` when the directory or a file cannot be read.
    public static func check(directory: String, baseName: String) throws(Failure) -> [SegmentReport] {
        var reports: [SegmentReport] = []
        var buffer: [UInt8] = []
        for var segment in try listSegments(directory: directory, baseName: baseName) {
            var problem: (Int, String, Bool)?
            do throws(Failure) {
                if case .tornAt(let offset, let reason) = try validate(&segment, buffer: &buffer) { problem = (offset, reason, true) }
            } catch {
                guard case .corrupt(_, let offset, let reason) = error else { throw error }
                problem = (offset, reason, false)
            }
            reports.append(SegmentReport(path: segment.path, records: segment.records, firstLSN: segment.firstLSN,
                                         lastLSN: segment.lastLSN, problem: problem))
        }
        return reports
    }

    /// Cuts the log at the first invalid record: that segment is truncated
    /// there and every later segment deleted (what follows a damaged record
    /// cannot be replayed in order).
    /// - Returns: what was done, in words, or nil when the log is whole.
    public static func fix(directory: String, baseName: String) throws(Failure) -> String? {
        let reports = try check(directory: directory, baseName: baseName)
        guard let index = reports.firstIndex(where: { $0.problem != nil }), let problem = reports[index].problem else {
            return nil
        }
        let path = reports[index].path
        guard truncate(path, off_t(problem.offset)) == 0 else { throw .io(path: path, what: "truncate", errno: errno) }
        var removed: [String] = []
        for later in reports[(index + 1)...] {
            unlink(later.path)
            removed.append(later.path)
        }
        return "Truncated \(path) at offset \(problem.offset) (\(problem.reason))"
            + (removed.isEmpty ? "" : "; removed the later segments \(removed.joined(separator: ", "))")
    }
}
