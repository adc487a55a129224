import Foundation

/// What the reader connection answers. Every call runs in its own read
/// transaction (autocommit), so it sees the file as of the last commit;
/// with `heldReads` set, calls share one until `releaseRead()`, and see
/// the file as of the first one's start.
extension CacheFile {
    /// A row's bookkeeping, without its value.
    struct RowInfo {
        var size: Int
        var expiresAt: Int64?
        var seq: Int64
        var storageDate: Double
        var kind: ValueKind
    }

    /// A row as a scan or a candidate query returns it.
    struct ListedRow {
        var digest: KeyDigest
        var key: [UInt8]
        var size: Int
        var expiresAt: Int64?
        var storageDate: Double
        var seq: Int64
        var kind: ValueKind
    }

    /// Runs a read, mapping SQLite's failures to `readFailed`.
    func read<R>(_ body: () throws -> R) throws(SQLiteKVCache.Error) -> R {
        do {
            if !readHeld, let held = configuration.heldReads {
                // Without it (it cannot fail short of a broken connection) each call is its own.
                readHeld = (try? reader.run("BEGIN")) != nil
                if readHeld { held.hold(self) }
            }
            return try body()
        } catch {
            releaseRead()
            switch error {
            case let failure as SQLiteFailure: throw failure.asReadError
            case let error as SQLiteKVCache.Error: throw error
            default: throw .readFailed(sqliteCode: 1)
            }
        }
    }

    /// Ends the read transaction the reader's calls share (`heldReads`):
    /// the next call sees the latest commit, and the writer's checkpoints
    /// need not wait on this snapshot.
    func releaseRead() {
        guard readHeld else { return }
        readHeld = false
        configuration.heldReads?.forget(self)
        if reader.isInTransaction { try? reader.run("COMMIT") }
    }

    /// The full row for `digest`, if the file has one (live or expired).
    func row(_ digest: KeyDigest) throws(SQLiteKVCache.Error) -> Row? {
        try read {
            let stmt = try reader.statement(
                "SELECT \(Self.writtenDate), \(Self.writtenSeq), expires_at, kind, metadata, value FROM entries WHERE digest = ?")
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            guard try stmt.step() else { return nil }
            return Row(storageDate: stmt.double(0), seq: stmt.int64(1), expiresAt: stmt.isNull(2) ? nil : stmt.int64(2),
                       kind: Self.kind(stmt.int64(3)), metadata: stmt.bytes(4), value: .bytes(stmt.bytes(5)))
        }
    }

    /// The bookkeeping of `digest`'s row, without reading its value.
    func rowInfo(_ digest: KeyDigest) throws(SQLiteKVCache.Error) -> RowInfo? {
        try read {
            let stmt = try reader.statement(
                "SELECT size, expires_at, \(Self.writtenSeq), \(Self.writtenDate), kind FROM entries WHERE digest = ?")
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            guard try stmt.step() else { return nil }
            return RowInfo(size: Int(stmt.int64(0)), expiresAt: stmt.isNull(1) ? nil : stmt.int64(1),
                           seq: stmt.int64(2), storageDate: stmt.double(3), kind: Self.kind(stmt.int64(4)))
        }
    }

    static func kind(_ raw: Int64) -> ValueKind {
        ValueKind(rawValue: UInt8(truncatingIfNeeded: raw)) ?? .string
    }

    /// A row's storage date and write order: `written_date` and
    /// `written_seq` once an overwrite left its place in the age index
    /// behind (`storage_date` and `seq`), which then lag until eviction
    /// reaches them (`requeue`).
    static let writtenDate = "coalesce(written_date, storage_date)", writtenSeq = "coalesce(written_seq, seq)"
    private static let listedColumns = "digest, key, size, expires_at, \(writtenDate), \(writtenSeq), kind"
    /// What the age index holds (a WITHOUT ROWID table's index holds its key,
    /// the digest): the row's place in age order, which may lag its writes.
    private static let indexedColumns = "digest, storage_date, seq"

    private func listed(_ stmt: SQLiteStatement) -> ListedRow {
        ListedRow(digest: stmt.digest(0), key: stmt.bytes(1), size: Int(stmt.int64(2)),
                  expiresAt: stmt.isNull(3) ? nil : stmt.int64(3), storageDate: stmt.double(4), seq: stmt.int64(5),
                  kind: Self.kind(stmt.int64(6)))
    }

    /// Rows in digest order from `start` (inclusive), at most `limit`,
    /// and then every further row sharing the last one's prefix: its first
    /// word with the low `prefixRest` bits cleared (a scan's cursor then
    /// skips past that prefix).
    /// - Returns: the rows and whether the table ended within them.
    func scanPage(from start: KeyDigest, limit: Int, prefixRest: UInt64) throws(SQLiteKVCache.Error)
        -> (rows: [ListedRow], ended: Bool)
    {
        try read {
            let stmt = try reader.statement(
                "SELECT \(Self.listedColumns) FROM entries WHERE digest >= ? ORDER BY digest LIMIT ?")
            defer { stmt.reset() }
            start.withBytes { stmt.bind(1, $0) }
            stmt.bind(2, max(1, limit))
            var rows: [ListedRow] = []
            while try stmt.step() { rows.append(listed(stmt)) }
            guard rows.count == max(1, limit), let last = rows.last else { return (rows, true) }
            // The rest of the rows sharing the last prefix, so a cursor can skip past it.
            let same = try reader.statement(
                "SELECT \(Self.listedColumns) FROM entries WHERE digest > ? AND digest < ? ORDER BY digest")
            defer { same.reset() }
            last.digest.withBytes { same.bind(1, $0) }
            let prefixEnd = last.digest.w0 | prefixRest
            if prefixEnd == .max {
                same.bind(2, [UInt8](repeating: 0xff, count: 33))  // above every 32-byte digest
            } else {
                KeyDigest(w0: prefixEnd + 1).withBytes { same.bind(2, $0) }
            }
            while try same.step() { rows.append(listed(same)) }
            return (rows, false)
        }
    }

    /// Every row's key, digest and expiry, in digest order.
    func allRows(_ body: (ListedRow) -> Void) throws(SQLiteKVCache.Error) {
        try read {
            let stmt = try reader.statement("SELECT \(Self.listedColumns) FROM entries ORDER BY digest")
            defer { stmt.reset() }
            while try stmt.step() { body(listed(stmt)) }
        }
    }

    /// The first row at or after `digest` in digest order, wrapping around.
    func row(atOrAfter digest: KeyDigest) throws(SQLiteKVCache.Error) -> ListedRow? {
        try read {
            let stmt = try reader.statement("""
                SELECT * FROM (SELECT \(Self.listedColumns) FROM entries WHERE digest >= ? ORDER BY digest LIMIT 1)
                UNION ALL SELECT * FROM (SELECT \(Self.listedColumns) FROM entries ORDER BY digest LIMIT 1)
                LIMIT 1
                """)
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            return try stmt.step() ? listed(stmt) : nil
        }
    }

    /// The keys whose expiry is at or before `now`, soonest first, after
    /// the position `after` (an expiry time and digest), at most `limit`:
    /// from the expiry index alone (it holds the digest), so a key memory
    /// holds costs no read of its row.
    func expiredKeys(now: Int64, after: (Int64, KeyDigest)?, limit: Int) throws(SQLiteKVCache.Error)
        -> [(expiresAt: Int64, digest: KeyDigest)] {
        try read {
            let stmt = try reader.statement("""
                SELECT expires_at, digest FROM entries
                WHERE expires_at <= ?1 AND (expires_at > ?2 OR (expires_at = ?2 AND digest > ?3))
                ORDER BY expires_at, digest LIMIT ?4
                """)
            defer { stmt.reset() }
            stmt.bind(1, now)
            stmt.bind(2, after?.0 ?? Int64.min)
            if let after { after.1.withBytes { stmt.bind(3, $0) } } else { stmt.bind(3, [UInt8]()) }  // empty: below every digest
            stmt.bind(4, limit)
            var keys: [(expiresAt: Int64, digest: KeyDigest)] = []
            while try stmt.step() { keys.append((stmt.int64(0), stmt.digest(1))) }
            return keys
        }
    }

    /// The row of `digest`, if the file holds one.
    func listedRow(_ digest: KeyDigest) throws(SQLiteKVCache.Error) -> ListedRow? {
        try read {
            let stmt = try reader.statement("SELECT \(Self.listedColumns) FROM entries WHERE digest = ?")
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            return try stmt.step() ? listed(stmt) : nil
        }
    }

    /// The earliest expiry time in the file after `time`, if any row has one.
    func earliestExpiry(after time: Int64) throws(SQLiteKVCache.Error) -> Int64? {
        try read {
            let stmt = try reader.statement("SELECT min(expires_at) FROM entries WHERE expires_at > ?")
            defer { stmt.reset() }
            stmt.bind(1, time)
            guard try stmt.step(), !stmt.isNull(0) else { return nil }
            return stmt.int64(0)
        }
    }

    /// Where an eviction walk has got to, in its policy's order.
    enum EvictionPosition {
        /// FIFO: storage date, then write order.
        case age(Double, Int64)
        /// LRU: recency.
        case recency(Int64)
        /// volatile-ttl: expiry time, then digest.
        case expiry(Int64, KeyDigest)
    }

    /// The next rows to evict in the order of `order`, after `position`.
    /// In age and recency order the rows come from the index alone (it
    /// holds the digest): `key` is empty and `size` is -1 until
    /// `evictionDetails` reads them, which the caller skips for a key
    /// memory holds. Reading them here cost a seek into the table per row,
    /// in digest order, so a page read per row: 70% of the loop's time
    /// during a capacity cut whose victims memory held anyway.
    func evictionCandidates(_ order: EvictionOrder, after position: EvictionPosition?, limit: Int)
        throws(SQLiteKVCache.Error) -> [ListedRow]
    {
        try read {
            let stmt: SQLiteStatement
            switch order {
            case .age:
                stmt = try reader.statement("""
                    SELECT \(Self.indexedColumns) FROM entries
                    WHERE storage_date > ?1 OR (storage_date = ?1 AND seq > ?2)
                    ORDER BY storage_date, seq LIMIT ?3
                    """)
                if case .age(let date, let seq)? = position {
                    stmt.bind(1, date)
                    stmt.bind(2, seq)
                } else {
                    stmt.bind(1, -Double.greatestFiniteMagnitude)
                    stmt.bind(2, Int64.min)
                }
                stmt.bind(3, limit)
            case .recency:
                stmt = try reader.statement(
                    "SELECT digest, 0.0, seq FROM entries WHERE seq > ?1 ORDER BY seq LIMIT ?2")  // its index has no date
                if case .recency(let seq)? = position { stmt.bind(1, seq) } else { stmt.bind(1, Int64.min) }
                stmt.bind(2, limit)
            case .expiry:
                stmt = try reader.statement("""
                    SELECT \(Self.listedColumns) FROM entries
                    WHERE expires_at IS NOT NULL AND (expires_at > ?1 OR (expires_at = ?1 AND digest > ?2))
                    ORDER BY expires_at, digest LIMIT ?3
                    """)
                if case .expiry(let at, let digest)? = position {
                    stmt.bind(1, at)
                    digest.withBytes { stmt.bind(2, $0) }
                } else {
                    stmt.bind(1, Int64.min)
                    stmt.bind(2, [UInt8]())
                }
                stmt.bind(3, limit)
            }
            defer { stmt.reset() }
            var rows: [ListedRow] = []
            if case .expiry = order {
                while try stmt.step() { rows.append(listed(stmt)) }
            } else {
                while try stmt.step() {
                    rows.append(ListedRow(digest: stmt.digest(0), key: [], size: -1, expiresAt: nil,
                                          storageDate: stmt.double(1), seq: stmt.int64(2), kind: .string))
                }
            }
            return rows
        }
    }

    /// The key, size and expiry of an eviction candidate listed from an
    /// index alone, and where its last write puts it in age order (nil
    /// when that is where the index has it); nil when the file no longer
    /// holds it.
    func evictionDetails(_ digest: KeyDigest) throws(SQLiteKVCache.Error)
        -> (key: [UInt8], size: Int, expiresAt: Int64?, written: (date: Double, seq: Int64)?)?
    {
        try read {
            let stmt = try reader.statement(
                "SELECT key, size, expires_at, written_date, written_seq FROM entries WHERE digest = ?")
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            guard try stmt.step() else { return nil }
            let written = stmt.isNull(4) ? nil : (date: stmt.isNull(3) ? 0 : stmt.double(3), seq: stmt.int64(4))
            return (stmt.bytes(0), Int(stmt.int64(1)), stmt.isNull(2) ? nil : stmt.int64(2), written)
        }
    }
}

/// The orders in which eviction walks the rows.
enum EvictionOrder: Equatable {
    case age, recency, expiry
}

extension KeyDigest {
    /// The digest whose first word is `w0` and the rest zero: the start of a prefix.
    init(w0: UInt64) {
        self.w0 = w0
        w1 = 0
        w2 = 0
        w3 = 0
    }
}

/// The files whose reader holds a read transaction its calls share, for
/// their owner to end them all before it waits or sleeps. Used by the
/// owner's thread only.
public final class HeldReads: @unchecked Sendable {
    /// Unretained: a file's configuration holds this object, so a strong
    /// list would keep a file alive after its engine let go. A file is in
    /// the list exactly while it holds a read transaction, and leaves it
    /// in `releaseRead()`, or in its `deinit` if let go while holding
    /// one. (Not `weak`: a weak
    /// reference's side table is reachable only through bits LeakSanitizer
    /// cannot read, so the fuzzer reported it as leaked.)
    private var files: [Unmanaged<CacheFile>] = []

    public init() {}

    /// Whether some file holds one.
    public var isEmpty: Bool { files.isEmpty }

    /// Notes that `file`'s reader holds a read transaction.
    func hold(_ file: CacheFile) {
        files.append(.passUnretained(file))
    }

    /// Notes that `file`'s reader no longer holds one.
    func forget(_ file: CacheFile) {
        files.removeAll { $0.toOpaque() == Unmanaged.passUnretained(file).toOpaque() }
    }

    /// Ends every held read transaction.
    public func releaseAll() {
        guard !files.isEmpty else { return }
        let held = files
        files.removeAll(keepingCapacity: true)
        for entry in held { entry.takeUnretainedValue().releaseRead() }
    }
}
