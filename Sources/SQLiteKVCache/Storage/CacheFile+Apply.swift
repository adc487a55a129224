import CSQLite
import Foundation

/// One key's change in a batch. A put's key, metadata and value lie in
/// the batch's bytes (`SealedWrites`), copied there at the seal; a live
/// value is held as is (frozen) and encoded by the writer.
struct BatchWrite {
    enum Op {
        /// Insert or replace the row.
        case put(RowHead)
        /// Remove the row, if there is one.
        case delete
        /// Only the row's write order changed (LRU recency).
        case touch(seq: Int64)
    }

    let digest: KeyDigest
    let op: Op
    /// A put's live value, if it has one (its bytes are not copied).
    var live: LiveValue?
    /// Where a put's key, metadata and value lie, one after the other: the
    /// chunk of the batch's bytes and the offset in it.
    var chunk: Int32 = 0
    var offset: UInt32 = 0
    var keyLength: UInt32 = 0
    var metadataLength: UInt32 = 0
    var valueLength: UInt32 = 0
    /// The totals counted this key as new (a blind write of a replay): the
    /// writer looks up what the file holds and corrects them.
    var correct = false

    init(digest: KeyDigest, op: Op, correct: Bool) {
        self.digest = digest
        self.op = op
        self.correct = correct
    }
}

/// A row whose place in age order (where the index has it) is behind its
/// last write, as eviction found it: the writer moves it there, if the
/// row still holds that write.
struct EvictionRequeue {
    let digest: KeyDigest
    let storageDate: Double
    let seq: Int64
}

/// The writes of a sealed batch, and the bytes of its puts in chunks of
/// up to a megabyte (one copy per key at the seal, no array per key;
/// chunks, so a seal of a million keys never copies what it gathered).
struct SealedWrites: RandomAccessCollection {
    var list: [BatchWrite] = []
    private var chunks: [[UInt8]] = []
    static let chunkSize = 1 << 20
    /// Bytes the chunks take (their capacity), which the memory budget counts
    /// from the seal until the batch completes.
    private(set) var byteCount = 0

    var startIndex: Int { 0 }
    var endIndex: Int { list.count }
    subscript(index: Int) -> BatchWrite { list[index] }

    /// Adds `write`, a put whose key, metadata and value are given.
    mutating func append(_ write: BatchWrite, key: UnsafeRawBufferPointer, metadata: UnsafeRawBufferPointer,
                         value: UnsafeRawBufferPointer) {
        var write = write
        let size = key.count + metadata.count + value.count
        if chunks.isEmpty || chunks[chunks.count - 1].count + size > chunks[chunks.count - 1].capacity {
            // Chunks double from 4 KiB up to a megabyte: a batch of a few
            // keys takes (and the budget counts) a few kilobytes.
            let next = Swift.min(Self.chunkSize, Swift.max(4096, 2 * (chunks.last?.capacity ?? 0)))
            var chunk: [UInt8] = []
            chunk.reserveCapacity(Swift.max(next, size))
            byteCount += chunk.capacity
            chunks.append(chunk)
        }
        let last = chunks.count - 1
        write.chunk = Int32(last)
        write.offset = UInt32(chunks[last].count)
        write.keyLength = UInt32(key.count)
        write.metadataLength = UInt32(metadata.count)
        write.valueLength = UInt32(value.count)
        chunks[last].append(contentsOf: key)
        chunks[last].append(contentsOf: metadata)
        chunks[last].append(contentsOf: value)
        list.append(write)
    }

    /// Adds `write`, a delete or a touch (no bytes).
    mutating func append(_ write: BatchWrite) {
        list.append(write)
    }

    mutating func reserveCapacity(_ count: Int) { list.reserveCapacity(count) }

    /// Lets the puts' bytes go (the file has applied them, or the batch
    /// failed and its slots go to the next one): what is left are the
    /// digests and operations that hand the slots back.
    mutating func releaseBytes() {
        chunks = []
        byteCount = 0
    }

    /// Whether a key may have more than one write (a batch sealed in
    /// parts took a slot changed again after its part): the last is its state.
    var mayRepeat = false

    /// Orders the writes by digest (the file applies them so: neighbouring
    /// keys share B-tree pages), keeping only the last write of a key.
    mutating func sortByDigest() {
        guard mayRepeat else { return list.sort { $0.digest < $1.digest } }
        let order = list.indices.sorted { list[$0].digest != list[$1].digest ? list[$0].digest < list[$1].digest : $0 < $1 }
        var kept: [BatchWrite] = []
        kept.reserveCapacity(order.count)
        for (n, i) in order.enumerated() where n + 1 == order.count || list[order[n + 1]].digest != list[i].digest {
            kept.append(list[i])
        }
        list = kept
        mayRepeat = false
    }

    /// Calls `body` with a put's key, metadata and value bytes (the value
    /// is empty for a live value).
    func withBytes<R>(of write: BatchWrite, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try chunks[Int(write.chunk)].withUnsafeBytes { all in
            let start = Int(write.offset), key = Int(write.keyLength), metadata = Int(write.metadataLength)
            return try body(UnsafeRawBufferPointer(rebasing: all[start..<(start + key)]),
                            UnsafeRawBufferPointer(rebasing: all[(start + key)..<(start + key + metadata)]),
                            UnsafeRawBufferPointer(rebasing: all[(start + key + metadata)..<(start + key + metadata + Int(write.valueLength))]))
        }
    }

    /// The row a put at `index` writes, as a copy (tests, diagnostics); nil for a delete or a touch.
    func row(at index: Int) -> Row? {
        guard case .put(let head) = list[index].op else { return nil }
        return withBytes(of: list[index]) { _, metadata, value in
            Row(storageDate: head.storageDate, seq: head.seq, expiresAt: head.expiresAt, kind: head.kind,
                metadata: [UInt8](metadata), value: list[index].live.map { .live($0) } ?? .bytes([UInt8](value)))
        }
    }
}

/// A change to a cache's totals.
public struct TotalsCorrection: Sendable, Equatable {
    public var count = 0
    public var bytes = 0
    public var volatile = 0
    public var expiresSum: Double = 0

    /// Takes a row the totals did not count out of them.
    mutating func remove(size: Int, expiresAt: Int64?) {
        count -= 1
        bytes -= size
        if let expiresAt {
            volatile -= 1
            expiresSum -= Double(expiresAt)
        }
    }
}

extension Totals {
    static func + (totals: Totals, correction: TotalsCorrection) -> Totals {
        var result = totals
        result.count += correction.count
        result.bytes += correction.bytes
        result.volatile += correction.volatile
        result.expiresSum += correction.expiresSum
        if result.volatile == 0 { result.expiresSum = 0 }
        return result
    }
}

/// What one cache's engine hands its file at a seal: every key changed
/// since the previous seal (its latest state), whether the cache was
/// cleared first, and the totals and log position the file holds once
/// this is applied. Built on the owner's thread, applied on the writer's,
/// then handed back to the owner: its live values are frozen meanwhile.
public final class CacheBatch: @unchecked Sendable {
    let file: CacheFile
    /// The engine's number for the batch (slots in flight carry it).
    let id: UInt64
    /// The log position the batch completes (0 without a log).
    let lsn: UInt64
    let clear: Bool
    var writes: SealedWrites
    let totals: Totals
    /// Set by `apply()` when the batch could not be applied.
    public internal(set) var error: SQLiteKVCache.Error?
    /// The cache's name.
    public var handle: String { file.handle }
    /// Keys the batch writes.
    public var count: Int { writes.count }
    /// Creates LRU's index on write order first.
    var createRecencyIndex = false
    /// Overwrites leave the row's place in the age index as it was (FIFO:
    /// moving it is most of an overwrite's cost in a large file) and
    /// record the write's date and order in the row; false under LRU,
    /// whose order moves with every read.
    var keepsAgeOrder = true
    /// Rows whose place in age order eviction found behind their last
    /// write: moved there first (`EvictionRequeue`).
    var requeues: [EvictionRequeue] = []
    /// What the writer found the totals got wrong (rows of blind writes that
    /// the file held); the owner adds it to its totals at completion.
    public internal(set) var correction = TotalsCorrection()
    /// The newest failed batch of this file the owner had seen when it
    /// sealed this one: a later failure means this batch was sealed on top
    /// of changes the file does not have, and it is not applied.
    var failuresSeen: UInt64 = 0

    init(file: CacheFile, id: UInt64, lsn: UInt64, clear: Bool, writes: SealedWrites, totals: Totals) {
        self.file = file
        self.id = id
        self.lsn = lsn
        self.clear = clear
        self.writes = writes
        self.totals = totals
    }
}

extension CacheBatch {
    /// Applies the batch to its file (on the thread that owns the file's
    /// writer connection), recording a failure in `error`.
    public func apply() {
        if let (failedID, failure) = file.lastFailedBatch, failedID > failuresSeen {
            // Sealed behind a batch that failed: its log position would
            // claim that batch's changes. It fails too; both are retried.
            error = failure
            return
        }
        do throws(SQLiteKVCache.Error) {
            try file.apply(self)
        } catch {
            self.error = error
            file.lastFailedBatch = (id, error)
        }
    }
}

/// Applying batches, on the writer connection.
extension CacheFile {
    /// Applies `batch` in one transaction, rows in digest order (neighbouring
    /// keys share B-tree pages), with the stats row and the log position;
    /// then checkpoints when the WAL has grown past its threshold.
    /// - Throws: `writeFailed`; then nothing of the batch is in the file.
    func apply(_ batch: CacheBatch) throws(SQLiteKVCache.Error) {
        do {
            if batch.createRecencyIndex { try ensureRecencyIndex() }
            try writer.execute("BEGIN IMMEDIATE")
            if batch.clear { try writer.execute("DELETE FROM entries") }
            if !batch.clear && !batch.requeues.isEmpty {
                let requeue = try writer.statement("""
                    UPDATE entries SET storage_date = ?1, seq = ?2, written_date = NULL, written_seq = NULL
                    WHERE digest = ?3 AND written_seq = ?2
                    """)
                for move in batch.requeues {
                    defer { requeue.reset() }
                    requeue.bind(1, move.storageDate)
                    requeue.bind(2, move.seq)
                    move.digest.withBytes { requeue.bind(3, $0) }
                    _ = try requeue.step()
                }
            }
            batch.writes.sortByDigest()
            // A new row's place in age order is its write's; an overwrite
            // keeps the row's place when that is not later than the write
            // (the WHERE; otherwise nothing changes, and the full upsert
            // below moves it), so the age index is not touched.
            let upsertRow = """
                INSERT INTO entries(size, storage_date, seq, expires_at, key, metadata, value, kind, digest)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(digest) DO UPDATE SET size = excluded.size, expires_at = excluded.expires_at,
                    key = excluded.key, metadata = excluded.metadata, value = excluded.value, kind = excluded.kind
                """
            let keep = try writer.statement(upsertRow + """
                , written_date = excluded.storage_date, written_seq = excluded.seq
                WHERE storage_date <= excluded.storage_date
                """)
            let move = try writer.statement(upsertRow + """
                , storage_date = excluded.storage_date, seq = excluded.seq, written_date = NULL, written_seq = NULL
                """)
            let delete = try writer.statement("DELETE FROM entries WHERE digest = ?")
            let touch = try writer.statement("""
                UPDATE entries SET storage_date = \(Self.writtenDate), seq = ?, written_date = NULL, written_seq = NULL
                WHERE digest = ?
                """)
            let old = try writer.statement("SELECT size, expires_at FROM entries WHERE digest = ?")
            var correction = TotalsCorrection()
            for write in batch.writes {
                if write.correct && !batch.clear {
                    // The page the write is about to change: reading it costs little.
                    defer { old.reset() }
                    write.digest.withBytes { old.bind(1, $0) }
                    if try old.step() { correction.remove(size: Int(old.int64(0)), expiresAt: old.isNull(1) ? nil : old.int64(1)) }
                }
                switch write.op {
                case .put(let row):
                    var value: [UInt8]? = nil  // a live value's encoding, made once
                    func upsert(_ upsert: SQLiteStatement) throws {
                        defer { upsert.reset() }
                        upsert.bind(2, row.storageDate)
                        upsert.bind(3, row.seq)
                        if let expiresAt = row.expiresAt { upsert.bind(4, expiresAt) } else { upsert.bindNull(4) }
                        upsert.bind(8, Int64(row.kind.rawValue))
                        write.digest.withBytes { upsert.bind(9, $0) }
                        // Bound as copies (SQLITE_TRANSIENT), while the batch's bytes are in view.
                        batch.writes.withBytes(of: write) { key, metadata, bytes in
                            upsert.bind(5, key)
                            upsert.bind(6, metadata)
                            if let live = write.live {
                                if value == nil { value = live.encoded() }
                                upsert.bind(1, key.count + metadata.count + value!.count)
                                upsert.bind(7, value!)
                            } else {
                                upsert.bind(1, key.count + metadata.count + bytes.count)
                                upsert.bind(7, bytes)
                            }
                        }
                        _ = try upsert.step()
                    }
                    if batch.keepsAgeOrder { try upsert(keep) }
                    if !batch.keepsAgeOrder || writer.changes == 0 { try upsert(move) }
                case .delete:
                    defer { delete.reset() }
                    write.digest.withBytes { delete.bind(1, $0) }
                    _ = try delete.step()
                case .touch(let seq):
                    defer { touch.reset() }
                    touch.bind(1, seq)
                    write.digest.withBytes { touch.bind(2, $0) }
                    _ = try touch.step()
                }
            }
            let stats = try writer.statement("""
                UPDATE stats SET entries = ?, bytes = ?, next_seq = ?, volatile = ?, expires_sum = ?, applied_lsn = ?
                WHERE id = 1
                """)
            defer { stats.reset() }
            let totals = batch.totals + correction
            stats.bind(1, totals.count); stats.bind(2, totals.bytes); stats.bind(3, totals.nextSeq)
            stats.bind(4, totals.volatile); stats.bind(5, totals.expiresSum)
            stats.bind(6, Int64(bitPattern: batch.lsn))
            _ = try stats.step()
            try writer.execute("COMMIT")
            batch.correction = correction
        } catch {
            if writer.isInTransaction { try? writer.execute("ROLLBACK") }
            if let failure = error as? SQLiteFailure { throw failure.asWriteError }
            if let error = error as? SQLiteKVCache.Error { throw error }
            throw .writeFailed(sqliteCode: 1)
        }
        stored = StoredState(totals: batch.totals + batch.correction, appliedLSN: batch.lsn)
        checkpointIfDue()
    }

    /// Copies the WAL back into the file once it has passed its threshold,
    /// so it stays bounded. PASSIVE never waits for the reader; the next
    /// write starts the WAL over once a checkpoint has copied it all.
    func checkpointIfDue() {
        guard walPages.load() >= Self.checkpointThresholdPages else { return }
        var logFrames: Int32 = 0, copied: Int32 = 0
        // RESTART: after copying, wait (the busy timeout) for the reader's
        // short transactions to end, so the next batch writes the WAL from its
        // start. PASSIVE alone never got that chance under steady reads: the
        // WAL grew to 500 MiB beside a 600 MiB file during a sustained ingest.
        var rc = sqlite3_wal_checkpoint_v2(writer.handle, nil, SQLITE_CHECKPOINT_RESTART, &logFrames, &copied)
        if rc == SQLITE_BUSY {
            rc = sqlite3_wal_checkpoint_v2(writer.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copied)
        }
        if rc == SQLITE_OK && logFrames == copied { walPages.store(0) }
        checkpoints.add(1)
    }
}
