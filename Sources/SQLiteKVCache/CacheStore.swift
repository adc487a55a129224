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
    static let schemaVersion: Int32 = 2

    let handle: String
    let path: String
    var capacity: Int
    var policy: EvictionPolicy {
        didSet { if policy == .lru { try? ensureRecencyIndex() } }
    }
    let clock: @Sendable () -> Date

    private let lock: FileLock

    /// Entries, content bytes and expiry totals, kept in memory and saved with every commit.
    var totals = Totals()
    var count: Int { totals.count }
    var bytes: Int { totals.bytes }
    /// Entries evicted and expired since this instance opened.
    var evictedCount = 0
    var expiredCount = 0
    /// No entry expires before this time (ms); a hint that spares the sweep a query.
    var earliestExpiry: Int64 = .max

    /// Recency updates not yet written (LRU): digest → new sequence number.
    var pendingTouches: [KeyDigest: Int64] = [:]
    static let maxPendingTouches = 1024

    var batchOpen = false
    var batchError: SQLiteKVCache.Error?
    /// Whether the open transaction has written (a batch may only have read).
    var transactionWrites = false
    /// Deferred writes (see CacheStore+Deferred): whether on, and what waits.
    var deferWrites = false
    var pending: [KeyDigest: PendingWrite] = [:]
    var pendingBytes = 0

    let db: SQLiteConnection
    let hasher = KeyHasher()
    /// Hot entries in memory, coherent with the file.
    let tier: MemoryTier

    // MARK: Opening

    /// Opens the cache file `<directory>/<handle>.sqlite`, taking its lock,
    /// checking WAL, recreating the schema on a version mismatch and
    /// vacuuming when the freelist is over a quarter of the file.
    /// - Throws: `SQLiteKVCache.Error` saying why the cache is unavailable.
    /// How opening failed when the file itself is damaged.
    enum OpenError: Swift.Error {
        case corrupt(path: String, reason: String)
    }

    /// Copies the WAL into the file off the owner's thread.
    let checkpointer: Checkpointer

    /// The settings the store was opened with (to reopen it alike).
    let configuration: SQLiteKVCache.Configuration

    init(handle: String, directory: String, configuration: SQLiteKVCache.Configuration) throws {
        self.configuration = configuration
        self.tier = MemoryTier(budget: configuration.memoryTierBytes)
        self.handle = handle
        self.capacity = max(0, configuration.diskCapacity)
        self.policy = configuration.evictionPolicy
        self.clock = configuration.clock
        let pageCacheBytes = configuration.pageCacheBytes
        let path = directory + "/" + handle + ".sqlite"
        self.path = path
        self.checkpointer = Checkpointer(path: path, threshold: Self.checkpointThresholdPages)

        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw SQLiteKVCache.Error.databaseUnavailable(reason: "cannot create directory \(directory): \(error.localizedDescription)")
        }
        let lockPath = path + "-lock"
        guard let lock = try FileLock(path: lockPath) else {
            throw SQLiteKVCache.Error.cacheLocked(handle: handle, lockPath: lockPath)
        }
        self.lock = lock

        let db: SQLiteConnection
        do {
            db = try SQLiteConnection(path: path)
        } catch let failure as SQLiteFailure {
            throw SQLiteKVCache.Error.databaseUnavailable(reason: "cannot open \(path): \(failure)")
        } catch {
            throw SQLiteKVCache.Error.databaseUnavailable(reason: "cannot open \(path): \(error)")
        }
        self.db = db
        do {
            try configure(pageCacheBytes: pageCacheBytes)
            try loadTotals()
            try vacuumIfFragmented()
            let checkpointer = self.checkpointer
            db.setWALHook { pages in checkpointer.walGrew(to: pages) }
            if policy == .lru { try ensureRecencyIndex() }
        } catch let failure as SQLiteFailure {
            db.close()
            if SQLiteKVCache.corruptionCodes.contains(failure.primaryCode) {
                throw OpenError.corrupt(path: path, reason: failure.description)
            }
            throw SQLiteKVCache.Error.databaseUnavailable(reason: "cannot open \(path): \(failure)")
        } catch let error as SQLiteKVCache.Error {
            db.close()
            throw error
        } catch {
            db.close()
            throw SQLiteKVCache.Error.databaseUnavailable(reason: "cannot open \(path): \(error)")
        }
    }

    /// WAL pages that start a background checkpoint. Each cycle ends with a
    /// short checkpoint on the owner's thread (two fsyncs: 5-30 ms during a
    /// mass expiry here). 4,000 pages made cycles rarer but each one longer:
    /// a mass expiry's p99 for other clients went from 42 to 88 ms.
    static let checkpointThresholdPages: Int32 = 1000

    private func configure(pageCacheBytes: Int) throws {
        try db.execute("PRAGMA page_size=4096")
        let mode = try db.scalarText("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw SQLiteKVCache.Error.databaseUnavailable(
                reason: "\(path) refuses WAL journaling (journal_mode is \(mode ?? "unknown"))")
        }
        try db.execute("PRAGMA synchronous=NORMAL")
        // Checkpoints (and their fsync) run on a background connection (Checkpointer).
        try db.execute("PRAGMA wal_autocheckpoint=0")
        // When the WAL starts over, cut the file back to 16 MiB.
        try db.execute("PRAGMA journal_size_limit=\(16 << 20)")
        try db.execute("PRAGMA cache_size=-\(max(1024, pageCacheBytes / 1024))")
        try db.execute("PRAGMA temp_store=MEMORY")
        if configuration.maxPageCount > 0 { try db.execute("PRAGMA max_page_count=\(configuration.maxPageCount)") }

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
                    value BLOB NOT NULL,
                    kind INTEGER NOT NULL DEFAULT 0
                ) WITHOUT ROWID;
                CREATE INDEX entries_by_age ON entries(storage_date, seq);
                CREATE INDEX entries_by_expiry ON entries(expires_at) WHERE expires_at IS NOT NULL;
                CREATE TABLE stats(
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    entries INTEGER NOT NULL,
                    bytes INTEGER NOT NULL,
                    next_seq INTEGER NOT NULL,
                    volatile INTEGER NOT NULL,
                    expires_sum REAL NOT NULL
                );
                INSERT INTO stats VALUES (1, 0, 0, 1, 0, 0);
                PRAGMA user_version=\(Self.schemaVersion);
                """)
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    func loadTotals() throws {
        let stmt = try db.statement("SELECT entries, bytes, next_seq, volatile, expires_sum FROM stats WHERE id = 1")
        defer { stmt.reset() }
        guard try stmt.step() else {
            throw SQLiteKVCache.Error.databaseUnavailable(reason: "\(path) has no stats row")
        }
        totals = Totals(count: Int(stmt.int64(0)), bytes: Int(stmt.int64(1)), nextSeq: stmt.int64(2),
                        volatile: Int(stmt.int64(3)), expiresSum: stmt.double(4))
        earliestExpiry = totals.volatile > 0 ? .min : .max
    }

    /// Runs VACUUM when free pages are over 25% of the file.
    /// - Returns: whether it vacuumed.
    @discardableResult
    private func vacuumIfFragmented() throws -> Bool {
        let free = try db.scalarInt("PRAGMA freelist_count") ?? 0
        let pages = try db.scalarInt("PRAGMA page_count") ?? 0
        guard pages > 0, free * 4 > pages else { return false }
        db.dropStatements()
        let progress = configuration.onProgress
        let path = self.path
        let started = Date()
        progress?("Vacuuming \(path): \(free) of \(pages) pages are free...")
        if let progress {
            var lastReport = started
            db.setProgressHandler(every: 200_000) {
                let now = Date()
                guard now.timeIntervalSince(lastReport) >= 1 else { return }
                lastReport = now
                progress("Vacuuming \(path): \(Int(now.timeIntervalSince(started)))s so far")
            }
        }
        defer { db.clearProgressHandler() }
        try db.execute("VACUUM")
        let after = try db.scalarInt("PRAGMA page_count") ?? 0
        progress?("Vacuumed \(path) in \(String(format: "%.2f", Date().timeIntervalSince(started)))s: \(pages) pages to \(after)")
        return true
    }

    /// LRU evicts by sequence number alone, which needs its own index.
    func ensureRecencyIndex() throws {
        try db.execute("CREATE INDEX IF NOT EXISTS entries_by_recency ON entries(seq)")
    }

    /// Checkpoints the WAL into the database file and closes everything.
    func close() {
        if batchOpen { try? commitBatch() }
        try? flushTouchesInOwnTransaction()
        checkpointer.stop()
        try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        lock.release()
    }

    // MARK: Transactions

    /// Runs `body` as part of the open batch, or in a transaction of its own.
    func write<R>(_ body: () throws -> R) throws(SQLiteKVCache.Error) -> R {
        if let batchError { throw batchError }
        let ownTransaction = !batchOpen
        do {
            if !db.isInTransaction { try db.execute("BEGIN IMMEDIATE") }
            transactionWrites = true
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
        defer { transactionWrites = false }
        if !transactionWrites && pending.isEmpty && pendingTouches.isEmpty {
            try db.execute("COMMIT")  // a batch that only read
            return
        }
        try applyPending()
        try flushTouches()
        let stmt = try db.statement(
            "UPDATE stats SET entries = ?, bytes = ?, next_seq = ?, volatile = ?, expires_sum = ? WHERE id = 1")
        stmt.bind(1, totals.count); stmt.bind(2, totals.bytes); stmt.bind(3, totals.nextSeq)
        stmt.bind(4, totals.volatile); stmt.bind(5, totals.expiresSum)
        defer { stmt.reset() }
        _ = try stmt.step()
        try db.execute("COMMIT")
        checkpointer.finishIfDue(on: db)
    }

    /// Rolls back whatever is open and reloads the totals it changed.
    private func abandonTransaction() {
        if db.isInTransaction { try? db.execute("ROLLBACK") }
        transactionWrites = false
        pendingTouches.removeAll()
        pending.removeAll()
        pendingBytes = 0
        tier.removeAll()
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
        guard db.isInTransaction || !pending.isEmpty else { return }
        do {
            if !db.isInTransaction { try db.execute("BEGIN IMMEDIATE") }
            try commitTransaction()
        } catch let failure as SQLiteFailure {
            abandonTransaction()
            throw failure.asWriteError
        } catch {
            abandonTransaction()
            throw .writeFailed(sqliteCode: 1)
        }
    }

    func nowMilliseconds() -> Int64 {
        Int64((clock().timeIntervalSince1970 * 1000).rounded(.down))
    }
}

/// The running totals a cache keeps beside its rows.
struct Totals {
    var count = 0
    var bytes = 0
    var nextSeq: Int64 = 1
    /// Entries with an expiry, and the sum of their expiry times (for INFO's avg_ttl).
    var volatile = 0
    var expiresSum: Double = 0

    /// Accounts for a row added (`sign` 1) or removed (`sign` -1).
    mutating func apply(size: Int, expiresAt: Int64?, sign: Int) {
        count += sign
        bytes += sign * size
        if let expiresAt {
            volatile += sign
            expiresSum += Double(sign) * Double(expiresAt)
            if volatile == 0 { expiresSum = 0 }
        }
    }

    /// Takes the next write sequence number.
    mutating func takeSeq() -> Int64 {
        defer { nextSeq += 1 }
        return nextSeq
    }
}
