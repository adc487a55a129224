import Foundation

/// The engine's core: one open cache file, its prepared statements, running
/// totals and transaction state. Not thread-safe; `SQLiteKVCache` guards it.
///
/// Writes run inside a transaction. Outside a batch each write commits on its
/// own; inside a batch (`beginBatch`/`commitBatch`) every write joins one
/// transaction that commits once, which is how the server groups a loop
/// iteration's writes. If any write of a batch fails in SQLite the whole
/// batch is rolled back, and the failure is reported again by `commitBatch`.
final class CacheStore {
    static let schemaVersion: Int32 = 1

    let handle: String
    let path: String
    var capacity: Int
    var policy: EvictionPolicy {
        didSet { if policy == .lru { try? ensureRecencyIndex() } }
    }
    let clock: @Sendable () -> Date

    private let db: SQLiteConnection
    private let hasher = KeyHasher()
    private let lock: FileLock

    /// Entries and content bytes, kept in memory and saved with every commit.
    private(set) var count = 0
    private(set) var bytes = 0
    private var nextSeq: Int64 = 1
    /// Entries evicted since this instance opened.
    private(set) var evictedCount = 0

    /// Recency updates not yet written (LRU): digest → new sequence number.
    private var pendingTouches: [KeyDigest: Int64] = [:]
    private static let maxPendingTouches = 1024

    private var batchOpen = false
    private var batchError: SQLiteKVCache.Error?

    // MARK: Opening

    /// Opens the cache file `<directory>/<handle>.sqlite`, taking its lock,
    /// checking WAL, recreating the schema on a version mismatch and
    /// vacuuming when the freelist is over a quarter of the file.
    /// - Throws: `SQLiteKVCache.Error` saying why the cache is unavailable.
    init(handle: String, directory: String, capacity: Int, policy: EvictionPolicy,
         pageCacheBytes: Int, clock: @escaping @Sendable () -> Date) throws(SQLiteKVCache.Error) {
        self.handle = handle
        self.capacity = max(0, capacity)
        self.policy = policy
        self.clock = clock
        self.path = directory + "/" + handle + ".sqlite"

        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw .databaseUnavailable(reason: "cannot create directory \(directory): \(error.localizedDescription)")
        }
        let lockPath = path + "-lock"
        guard let lock = try FileLock(path: lockPath) else {
            throw .cacheLocked(handle: handle, lockPath: lockPath)
        }
        self.lock = lock

        let db: SQLiteConnection
        do {
            db = try SQLiteConnection(path: path)
        } catch let failure as SQLiteFailure {
            throw .databaseUnavailable(reason: "cannot open \(path): \(failure)")
        } catch {
            throw .databaseUnavailable(reason: "cannot open \(path): \(error)")
        }
        self.db = db
        do {
            try configure(pageCacheBytes: pageCacheBytes)
            try loadTotals()
            try vacuumIfFragmented()
            if policy == .lru { try ensureRecencyIndex() }
        } catch let failure as SQLiteFailure {
            db.close()
            throw .databaseUnavailable(reason: "cannot open \(path): \(failure)")
        } catch let error as SQLiteKVCache.Error {
            db.close()
            throw error
        } catch {
            db.close()
            throw .databaseUnavailable(reason: "cannot open \(path): \(error)")
        }
    }

    private func configure(pageCacheBytes: Int) throws {
        try db.execute("PRAGMA page_size=4096")
        let mode = try db.scalarText("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw SQLiteKVCache.Error.databaseUnavailable(
                reason: "\(path) refuses WAL journaling (journal_mode is \(mode ?? "unknown"))")
        }
        try db.execute("PRAGMA synchronous=NORMAL")
        try db.execute("PRAGMA cache_size=-\(max(1024, pageCacheBytes / 1024))")
        try db.execute("PRAGMA temp_store=MEMORY")

        let version = try db.scalarInt("PRAGMA user_version") ?? 0
        if version != Int64(Self.schemaVersion) {
            try recreateSchema()
        }
    }

    /// Drops every table and creates the current schema: a cache, not a store.
    private func recreateSchema() throws {
        db.dropStatements()
        try db.execute("BEGIN IMMEDIATE")
        do {
            var names: [String] = []
            let list = try db.statement("SELECT name FROM sqlite_schema WHERE type='table' AND name NOT LIKE 'sqlite_%'")
            while try list.step() { names.append(list.text(0)) }
            list.reset()
            db.dropStatements()
            for name in names {
                try db.execute("DROP TABLE IF EXISTS \"\(name.replacingOccurrences(of: "\"", with: "\"\""))\"")
            }
            try db.execute("""
                CREATE TABLE entries(
                    digest BLOB PRIMARY KEY NOT NULL,
                    size INTEGER NOT NULL,
                    storage_date REAL NOT NULL,
                    seq INTEGER NOT NULL,
                    expires_at INTEGER,
                    key BLOB NOT NULL,
                    metadata BLOB NOT NULL,
                    value BLOB NOT NULL
                ) WITHOUT ROWID;
                CREATE INDEX entries_by_age ON entries(storage_date, seq);
                CREATE INDEX entries_by_expiry ON entries(expires_at) WHERE expires_at IS NOT NULL;
                CREATE TABLE stats(
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    entries INTEGER NOT NULL,
                    bytes INTEGER NOT NULL,
                    next_seq INTEGER NOT NULL
                );
                INSERT INTO stats VALUES (1, 0, 0, 1);
                PRAGMA user_version=\(Self.schemaVersion);
                """)
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    private func loadTotals() throws {
        let stmt = try db.statement("SELECT entries, bytes, next_seq FROM stats WHERE id = 1")
        defer { stmt.reset() }
        guard try stmt.step() else {
            throw SQLiteKVCache.Error.databaseUnavailable(reason: "\(path) has no stats row")
        }
        count = Int(stmt.int64(0))
        bytes = Int(stmt.int64(1))
        nextSeq = stmt.int64(2)
    }

    /// Runs VACUUM when free pages are over 25% of the file.
    /// - Returns: whether it vacuumed.
    @discardableResult
    private func vacuumIfFragmented() throws -> Bool {
        let free = try db.scalarInt("PRAGMA freelist_count") ?? 0
        let pages = try db.scalarInt("PRAGMA page_count") ?? 0
        guard pages > 0, free * 4 > pages else { return false }
        db.dropStatements()
        try db.execute("VACUUM")
        return true
    }

    /// LRU evicts by sequence number alone, which needs its own index.
    private func ensureRecencyIndex() throws {
        try db.execute("CREATE INDEX IF NOT EXISTS entries_by_recency ON entries(seq)")
    }

    /// Checkpoints the WAL into the database file and closes everything.
    func close() {
        if batchOpen { try? commitBatch() }
        try? flushTouchesInOwnTransaction()
        try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        lock.release()
    }

    // MARK: Transactions

    /// Runs `body` as part of the open batch, or in a transaction of its own.
    private func write<R>(_ body: () throws -> R) throws(SQLiteKVCache.Error) -> R {
        if let batchError { throw batchError }
        let ownTransaction = !batchOpen
        do {
            if !db.isInTransaction { try db.execute("BEGIN IMMEDIATE") }
            let result = try body()
            if ownTransaction { try commitTransaction() }
            return result
        } catch let error as SQLiteKVCache.Error {
            // Our own refusal (too large, noeviction): statements already
            // run for this call are undone only when the call owns the transaction.
            if ownTransaction { abandonTransaction() }
            throw error
        } catch let failure as SQLiteFailure {
            abandonTransaction()
            let error = failure.asWriteError
            if !ownTransaction { batchError = error }
            throw error
        } catch {
            abandonTransaction()
            throw .writeFailed(sqliteCode: 1)
        }
    }

    private func commitTransaction() throws {
        try flushTouches()
        let stmt = try db.statement("UPDATE stats SET entries = ?, bytes = ?, next_seq = ? WHERE id = 1")
        stmt.bind(1, count); stmt.bind(2, bytes); stmt.bind(3, nextSeq)
        defer { stmt.reset() }
        _ = try stmt.step()
        try db.execute("COMMIT")
    }

    /// Rolls back whatever is open and reloads the totals it changed.
    private func abandonTransaction() {
        if db.isInTransaction { try? db.execute("ROLLBACK") }
        pendingTouches.removeAll()
        try? loadTotals()
    }

    /// Starts grouping writes into one transaction, committed by `commitBatch`.
    func beginBatch() {
        batchOpen = true
        batchError = nil
    }

    /// Commits the writes made since `beginBatch`.
    /// - Throws: `writeFailed` if the commit, or any write of the batch, failed;
    ///   then none of the batch's writes are kept.
    func commitBatch() throws(SQLiteKVCache.Error) {
        defer { batchOpen = false; batchError = nil }
        if let batchError { throw batchError }
        guard db.isInTransaction else { return }
        do {
            try commitTransaction()
        } catch let failure as SQLiteFailure {
            abandonTransaction()
            throw failure.asWriteError
        } catch {
            abandonTransaction()
            throw .writeFailed(sqliteCode: 1)
        }
    }

    // MARK: Reads

    func digest(_ key: [UInt8]) -> KeyDigest { hasher.digest(key) }

    /// Returns the live entry for `key`, or nil if absent or expired.
    func get(key: [UInt8]) throws(SQLiteKVCache.Error) -> SQLiteKVCache.Entry? {
        let digest = hasher.digest(key)
        do {
            let stmt = try db.statement(
                "SELECT key, storage_date, metadata, value, expires_at FROM entries WHERE digest = ?")
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            guard try stmt.step() else { return nil }
            let expiresAt: Int64? = stmt.isNull(4) ? nil : stmt.int64(4)
            if let expiresAt, expiresAt <= nowMilliseconds() { return nil }
            let entry = SQLiteKVCache.Entry(
                key: stmt.bytes(0), storageDate: Date(timeIntervalSince1970: stmt.double(1)),
                metadata: stmt.bytes(2), value: stmt.bytes(3), expiresAt: expiresAt)
            if policy == .lru { touch(digest) }
            return entry
        } catch let failure as SQLiteFailure {
            throw failure.asReadError
        } catch {
            throw .readFailed(sqliteCode: 1)
        }
    }

    func nowMilliseconds() -> Int64 {
        Int64((clock().timeIntervalSince1970 * 1000).rounded(.down))
    }

    // MARK: Writes

    /// Inserts or replaces the entry for `key`, then evicts per policy until
    /// the cache is back within capacity.
    /// - Throws: `entryTooLarge` if the entry alone exceeds capacity;
    ///   `capacityExceeded` under `noeviction`; `writeFailed` from SQLite.
    func put(_ entry: SQLiteKVCache.Entry) throws(SQLiteKVCache.Error) {
        let size = entry.contentSize
        if capacity > 0 && size > capacity {
            throw .entryTooLarge(size: size, capacity: capacity)
        }
        let digest = hasher.digest(entry.key)
        try write {
            let oldSize = try sizeOf(digest)
            if policy == .noeviction && capacity > 0 && bytes - (oldSize ?? 0) + size > capacity {
                throw SQLiteKVCache.Error.capacityExceeded(capacity: capacity)
            }
            let seq = nextSeq
            nextSeq += 1
            let stmt = try db.statement("""
                INSERT INTO entries(digest, size, storage_date, seq, expires_at, key, metadata, value)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(digest) DO UPDATE SET size = excluded.size, storage_date = excluded.storage_date,
                    seq = excluded.seq, expires_at = excluded.expires_at, key = excluded.key,
                    metadata = excluded.metadata, value = excluded.value
                """)
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            stmt.bind(2, size)
            stmt.bind(3, entry.storageDate.timeIntervalSince1970)
            stmt.bind(4, seq)
            if let expiresAt = entry.expiresAt { stmt.bind(5, expiresAt) } else { stmt.bindNull(5) }
            stmt.bind(6, entry.key)
            stmt.bind(7, entry.metadata)
            stmt.bind(8, entry.value)
            _ = try stmt.step()
            pendingTouches[digest] = nil
            if let oldSize {
                bytes += size - oldSize
            } else {
                count += 1
                bytes += size
            }
            try evictToCapacity()
        }
    }

    private func sizeOf(_ digest: KeyDigest) throws -> Int? {
        let stmt = try db.statement("SELECT size FROM entries WHERE digest = ?")
        defer { stmt.reset() }
        digest.withBytes { stmt.bind(1, $0) }
        return try stmt.step() ? Int(stmt.int64(0)) : nil
    }

    /// Removes the entry for `key`.
    /// - Returns: whether an entry was removed.
    @discardableResult
    func delete(key: [UInt8]) throws(SQLiteKVCache.Error) -> Bool {
        let digest = hasher.digest(key)
        return try write {
            let stmt = try db.statement("DELETE FROM entries WHERE digest = ? RETURNING size")
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            guard try stmt.step() else { return false }
            let size = Int(stmt.int64(0))
            while try stmt.step() {}
            count -= 1
            bytes -= size
            pendingTouches[digest] = nil
            return true
        }
    }

    /// Removes every entry.
    func clear() throws(SQLiteKVCache.Error) {
        try write {
            try db.execute("DELETE FROM entries")
            count = 0
            bytes = 0
            pendingTouches.removeAll()
        }
    }

    // MARK: Eviction

    private func evictionQuery() -> String {
        switch policy {
        case .fifo, .noeviction:
            return "DELETE FROM entries WHERE digest = (SELECT digest FROM entries ORDER BY storage_date, seq LIMIT 1) RETURNING size"
        case .lru:
            return "DELETE FROM entries WHERE digest = (SELECT digest FROM entries ORDER BY seq LIMIT 1) RETURNING size"
        case .volatileTTL:
            return """
                DELETE FROM entries WHERE digest = coalesce(
                    (SELECT digest FROM entries WHERE expires_at IS NOT NULL ORDER BY expires_at LIMIT 1),
                    (SELECT digest FROM entries ORDER BY storage_date, seq LIMIT 1)) RETURNING size
                """
        }
    }

    /// Evicts one entry at a time, O(log n) each, until within capacity.
    private func evictToCapacity() throws {
        guard capacity > 0, bytes > capacity else { return }
        if policy == .lru { try flushTouches() }
        let stmt = try db.statement(evictionQuery())
        while bytes > capacity {
            defer { stmt.reset() }
            guard try stmt.step() else { break }
            let size = Int(stmt.int64(0))
            while try stmt.step() {}
            count -= 1
            bytes -= size
            evictedCount += 1
        }
    }

    /// Changes capacity and evicts down to it, in batches of at most `batchLimit` entries.
    /// - Returns: true when the cache is within capacity.
    @discardableResult
    func setCapacity(_ newCapacity: Int, batchLimit: Int = .max) throws(SQLiteKVCache.Error) -> Bool {
        capacity = max(0, newCapacity)
        return try evictStep(limit: batchLimit)
    }

    /// Evicts up to `limit` entries toward capacity.
    /// - Returns: true when the cache is within capacity.
    func evictStep(limit: Int) throws(SQLiteKVCache.Error) -> Bool {
        guard capacity > 0, bytes > capacity else { return true }
        let saved = capacity
        return try write {
            let stmt = try db.statement(evictionQuery())
            var evicted = 0
            while bytes > saved && evicted < limit {
                defer { stmt.reset() }
                guard try stmt.step() else { break }
                let size = Int(stmt.int64(0))
                while try stmt.step() {}
                count -= 1
                bytes -= size
                evictedCount += 1
                evicted += 1
            }
            return bytes <= saved
        }
    }

    // MARK: Recency (LRU)

    private func touch(_ digest: KeyDigest) {
        pendingTouches[digest] = nextSeq
        nextSeq += 1
        if pendingTouches.count >= Self.maxPendingTouches && !batchOpen {
            try? flushTouchesInOwnTransaction()
        }
    }

    private func flushTouches() throws {
        guard !pendingTouches.isEmpty else { return }
        let stmt = try db.statement("UPDATE entries SET seq = ? WHERE digest = ?")
        for (digest, seq) in pendingTouches {
            defer { stmt.reset() }
            stmt.bind(1, seq)
            digest.withBytes { stmt.bind(2, $0) }
            _ = try stmt.step()
        }
        pendingTouches.removeAll()
    }

    private func flushTouchesInOwnTransaction() throws {
        guard !pendingTouches.isEmpty, !db.isInTransaction else { return }
        try write {}
    }
}
