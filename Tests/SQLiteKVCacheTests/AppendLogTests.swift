#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import SQLiteKVCache

@Suite("Append-only log")
struct AppendLogTests {
    let dir = TemporaryDirectory()

    // Computed, not stored: LeakSanitizer cannot follow a pointer kept in a
    // multi-payload enum inside a global (Swift packs tag bits into it), so a
    // stored static reports its payloads as leaked at exit.
    static var ops: [LogOp] { [
        .command(cache: "db0", args: [bytes("SET"), bytes("k"), bytes("v"), []]),
        .put(cache: "sessions", key: bytes("user:1"), kind: .hash, storageDate: 1_700_000_000.25, expiresAt: 42,
             metadata: bytes("meta"), value: [0, 1, 2, 255]),
        .put(cache: "db3", key: [], kind: .string, storageDate: 0, expiresAt: nil, metadata: [], value: []),
        .delete(cache: "db1", key: bytes("gone")),
        .expire(cache: "db1", key: bytes("ttl"), at: 1_700_000_000_123),
        .expire(cache: "db1", key: bytes("persisted"), at: nil),
        .clear(cache: "db2"),
        .swap(a: "db0", b: "db1", fileA: 7, fileB: .max),
    ] }

    func open(loadTruncated: Bool = true) throws -> AppendLog {
        try AppendLog(directory: dir.file("log"), baseName: "appendonly.aof", loadTruncated: loadTruncated)
    }

    func replayed(_ log: AppendLog) throws -> [LogRecord] {
        var reader = log.makeReader()
        var records: [LogRecord] = []
        while let record = try reader.next() { records.append(record) }
        return records
    }

    /// Writes `count` records of one op each and closes the log without emptying it.
    func writeRecords(_ count: Int) throws -> [LogRecord] {
        let log = try open()
        var written: [LogRecord] = []
        for i in 0..<count {
            let ops = [Self.ops[i % Self.ops.count]]
            let lsn = log.append(time: Int64(1000 + i), ops: ops)
            written.append(LogRecord(lsn: lsn, time: Int64(1000 + i), ops: ops))
            if i % 3 == 0 { #expect(log.flush()) }
        }
        log.close(empty: false)
        return written
    }

    func segmentFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.file("log"))) ?? []).sorted()
    }

    @Test func everyOpRoundTrips() throws {
        let written = try writeRecords(12)
        let log = try open()
        #expect(try replayed(log) == written)
        #expect(log.recovery.records == 12 && log.recovery.warnings.isEmpty)
        #expect(log.recovery.firstLSN == 1 && log.recovery.lastLSN == 12)
        // Positions go on after those found.
        #expect(log.append(time: 0, ops: [Self.ops[0]]) == 13)
    }

    @Test func aTornLastRecordIsDroppedWithAWarning() throws {
        let written = try writeRecords(5)
        let path = dir.file("log/") + segmentFiles().first!
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        // Cut inside the last record, at several places: its header, its body.
        for cut in [size - 1, size - 9, size - 14] {
            let copy = dir.file("torn-\(cut)")
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
            let data = try Data(contentsOf: URL(fileURLWithPath: path)).prefix(cut)
            try data.write(to: URL(fileURLWithPath: copy + "/appendonly.aof.1.log"))
            let log = try AppendLog(directory: copy, baseName: "appendonly.aof")
            #expect(try replayed(log) == Array(written.prefix(4)), "cut at \(cut)")
            #expect(log.recovery.warnings.count == 1)
            #expect(log.append(time: 0, ops: []) == 5, "the torn record's position is taken again")
        }
    }

    @Test func aCutAtARecordBoundaryLosesNothingElse() throws {
        let written = try writeRecords(4)
        let path = dir.file("log/") + segmentFiles().first!
        // Find the boundary before the last record by replaying three.
        var boundary = AppendLog.headerSize
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        for _ in 0..<3 {
            boundary = try bytes.withUnsafeBytes { try LogCodec.decode($0, at: boundary).1 }
        }
        try Data(bytes.prefix(boundary)).write(to: URL(fileURLWithPath: path))
        let log = try open()
        #expect(try replayed(log) == Array(written.prefix(3)))
        #expect(log.recovery.warnings.isEmpty)
    }

    @Test func damageBeforeTheTailStopsTheStart() throws {
        _ = try writeRecords(6)
        let path = dir.file("log/") + segmentFiles().first!
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[AppendLog.headerSize + 12] ^= 0xff  // inside the first record's body
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect {
            try open()
        } throws: { error in
            guard case AppendLog.Failure.corrupt(_, let offset, let reason)? = error as? AppendLog.Failure else { return false }
            return offset == AppendLog.headerSize && reason.contains("checksum")
        }
    }

    @Test func aTornTailIsRefusedWhenLoadTruncatedIsOff() throws {
        _ = try writeRecords(3)
        let path = dir.file("log/") + segmentFiles().first!
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        _ = truncate(path, off_t(size - 3))
        #expect(throws: AppendLog.Failure.self) { try open(loadTruncated: false) }
        #expect(try open(loadTruncated: true).recovery.records == 2)
    }

    @Test func rotationAndRetirementKeepOnlyWhatIsNotApplied() throws {
        let log = try open()
        for i in 0..<3 { log.append(time: Int64(i), ops: [Self.ops[0]]) }
        try log.rotate()
        for i in 0..<2 { log.append(time: Int64(i), ops: [Self.ops[3]]) }
        try log.rotate()
        log.append(time: 9, ops: [Self.ops[4]])
        #expect(log.flush())
        #expect(log.segmentCount == 3)
        log.retire(upTo: 3)
        #expect(log.segmentCount == 2)
        log.retire(upTo: 4)  // the second segment holds 4 and 5: it stays
        #expect(log.segmentCount == 2)
        log.close(empty: false)
        let reopened = try open()
        #expect(try replayed(reopened).map(\.lsn) == [4, 5, 6])
        reopened.close(empty: true)
        // Emptied: one segment left, with no record, remembering the position.
        let again = try open()
        #expect(try replayed(again).isEmpty)
        #expect(again.append(time: 0, ops: []) == 7)
    }

    @Test func thePositionCanBeRaisedAboveWhatACacheFileHolds() throws {
        let log = try open()
        log.ensureNextLSN(above: 1000)
        #expect(log.append(time: 0, ops: [Self.ops[0]]) == 1001)
        log.close(empty: false)
        #expect(try replayed(try open()).map(\.lsn) == [1001])
    }

    @Test func theSyncerReportsWhatIsOnDisk() throws {
        let log = try open()
        log.append(time: 0, ops: [Self.ops[0]])
        #expect(log.flush())
        log.requestSync()
        for _ in 0..<200 where log.syncer.syncedLSN < 1 { usleep(5_000) }
        #expect(log.syncer.syncedLSN == 1)
        log.close(empty: false)
    }

    /// A round of requests (one per loop iteration that wrote while the
    /// last fsync ran) costs one fdatasync per file, on its last
    /// descriptor, covering the furthest position any of them asked for:
    /// dups of one segment are one file, another segment is another.
    @Test func aRoundSyncsEachFileOnce() throws {
        let a = Glibc.open(dir.file("a"), O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        let b = Glibc.open(dir.file("b"), O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        #expect(a >= 0 && b >= 0)
        defer { Glibc.close(a); Glibc.close(b) }
        let work = [LogSyncer.Request(fd: dup(a), upTo: 3), LogSyncer.Request(fd: dup(a), upTo: 5),
                    LogSyncer.Request(fd: a, upTo: 7), LogSyncer.Request(fd: dup(b), upTo: 8),
                    LogSyncer.Request(fd: dup(b), upTo: 9)]
        defer { for request in work where request.fd != a { Glibc.close(request.fd) } }
        let syncs = LogSyncer.syncsNeeded(work)
        #expect(syncs.map(\.last) == [2, 4] && syncs.map(\.upTo) == [7, 9])
        // A descriptor fstat cannot read is synced on its own.
        let bad = LogSyncer.syncsNeeded([LogSyncer.Request(fd: -1, upTo: 1), LogSyncer.Request(fd: -1, upTo: 2)])
        #expect(bad.map(\.last) == [0, 1])
    }
}

@Suite("CRC-32C")
struct CRC32CTests {
    @Test(arguments: [("", UInt32(0)), ("123456789", 0xE306_9283), ("The quick brown fox jumps over the lazy dog", 0x2262_0404)])
    func knownValues(text: String, crc: UInt32) {
        #expect(CRC32C.checksum(Array(text.utf8)) == crc)
        let portable = Array(text.utf8).withUnsafeBytes { CRC32C.portableChecksum($0) }
        #expect(portable == crc)
    }

    /// The crc32 instruction (where the CPU has it) and the portable
    /// tables agree at every length and alignment.
    @Test func hardwareAndPortableAgree() {
        let data = (0..<4099).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) }
        data.withUnsafeBytes { raw in
            for start in [0, 1, 3, 8] {
                for end in [start, start + 1, start + 7, start + 8, start + 63, 4099] {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[start..<end])
                    #expect(CRC32C.checksum(slice, continuing: 0x1234_5678)
                        == CRC32C.portableChecksum(slice, continuing: 0x1234_5678))
                }
            }
        }
    }

    @Test func slicedAndBytewiseAgree() {
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        for split in [0, 1, 7, 8, 9, 500, 999] {
            let first = data.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<split])) }
            let whole = data.withUnsafeBytes {
                CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[split...]), continuing: first)
            }
            #expect(whole == CRC32C.checksum(data))
        }
    }
}
