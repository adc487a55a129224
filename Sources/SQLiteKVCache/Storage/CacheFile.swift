import Foundation
import Synchronization

/// One cache's SQLite file, the store of record: its schema, its lock and
/// two connections to it.
///
/// - `reader` answers the engine's owner thread (the server's loop): point
///   reads, scans, and the candidates of eviction and expiry. It never writes.
/// - `writer` applies sealed batches of the engine's writes (`apply`), one
///   transaction per batch, and runs the checkpoints. In the server it is
///   used by the writer thread only; embedded, by the owner between reads.
///
/// Each connection is used by one thread at a time; SQLite's WAL lets the
/// reader see a consistent snapshot while the writer commits. The stats row
/// holds the totals and the log position (`applied_lsn`) of what the file
/// holds, written in the same transaction as the rows, so a replay of the
/// append-only log can skip exactly what the file already has.
final class CacheFile: @unchecked Sendable {
    static let schemaVersion: Int32 = 4

    let handle: String
    let path: String
    let configuration: SQLiteKVCache.Configuration
    private let lock: FileLock
    let reader: SQLiteConnection
    let writer: SQLiteConnection
    /// A random identity given to the file when its schema was created: it
    /// tells a replayed SWAPDB whether the files were already exchanged.
    private(set) var fileID: UInt64 = 0
    /// What the file holds as of its last commit: totals and log position.
    var stored = StoredState()
    /// Whether the reader holds a read transaction its calls share (`heldReads`).
    var readHeld = false
    /// The last batch that failed here, and why (the applying thread's own).
    var lastFailedBatch: (id: UInt64, error: SQLiteKVCache.Error)?

    /// What the stats row says.
    struct StoredState: Sendable, Equatable {
        var totals = Totals()
        var appliedLSN: UInt64 = 0
    }

    /// How opening failed when the file itself is damaged.
    enum OpenError: Swift.Error {
        case corrupt(path: String, reason: String)
    }

    /// WAL pages past which the writer checkpoints after a batch.
    static let checkpointThresholdPages: Int = 4000
    /// Frames in the WAL after the last commit (SQLite's WAL hook tells).
    let walPages = AtomicCounter()
    /// The most frames the WAL held since it was last truncated. A RESTART
    /// checkpoint resets `walPages` but leaves the frames in the file, and a
    /// restart after a crash reads every one of them to rebuild SQLite's
    /// WAL index (200 MiB after a large batch: 75 ms before the first reply).
    let walFramesSinceTruncate = AtomicCounter()
    /// Checkpoints run so far (for INFO and tests).
    let checkpoints = AtomicCounter()

    /// Opens (creating if needed) `<directory>/<handle>.sqlite`: takes its
    /// lock, checks WAL, creates, migrates or recreates the schema,
    /// vacuums when the freelist is over a quarter of the file.
    /// - Throws: `SQLiteKVCache.Error` saying why the cache is unavailable,
    ///   or `OpenError.corrupt` when SQLite reports the file damaged.
    init(handle: String, directory: String, configuration: SQLiteKVCache.Configuration) throws {
        self.handle = handle
        self.configuration = configuration
        let path = directory + "/" + handle + ".sqlite"
        self.path = path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw SQLiteKVCache.Error.databaseUnavailable(
                reason: "cannot create directory \(directory): \(error.localizedDescription)")
        }
        let lockPath = path + "-lock"
        guard let lock = try FileLock(path: lockPath) else {
            throw SQLiteKVCache.Error.cacheLocked(handle: handle, lockPath: lockPath)
        }
        self.lock = lock

        func connect() throws -> SQLiteConnection {
            do {
                return try SQLiteConnection(path: path)
            } catch let failure as SQLiteFailure {
                throw SQLiteKVCache.Error.databaseUnavailable(reason: "cannot open \(path): \(failure)")
            }
        }
        let writer = try connect()
        let reader: SQLiteConnection
        do {
            reader = try connect()
        } catch {
            writer.close()
            throw error
        }
        self.writer = writer
        self.reader = reader
        do {
            try configureWriter()
            try configureReader()
            let walPages = self.walPages, highWater = walFramesSinceTruncate
            writer.setWALHook { pages in
                walPages.store(Int(pages))
                if Int(pages) > highWater.load() { highWater.store(Int(pages)) }
            }
            try loadState()
            try vacuumIfFragmented()
            if configuration.evictionPolicy == .lru { try ensureRecencyIndex() }
        } catch {
            reader.close()
            writer.close()
            if let failure = error as? SQLiteFailure {
                if SQLiteKVCache.corruptionCodes.contains(failure.primaryCode) {
                    throw OpenError.corrupt(path: path, reason: failure.description)
                }
                throw SQLiteKVCache.Error.databaseUnavailable(reason: "cannot open \(path): \(failure)")
            }
            if error is SQLiteKVCache.Error { throw error }
            throw SQLiteKVCache.Error.databaseUnavailable(reason: "cannot open \(path): \(error)")
        }
    }

    /// A file let go while it holds a read leaves `heldReads`, which does
    /// not retain it.
    deinit {
        if readHeld { configuration.heldReads?.forget(self) }
    }

    private func configureWriter() throws {
        try writer.execute("PRAGMA page_size=4096")
        let mode = try writer.scalarText("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw SQLiteKVCache.Error.databaseUnavailable(
                reason: "\(path) refuses WAL journaling (journal_mode is \(mode ?? "unknown"))")
        }
        // The server's writer commits a large batch at a time, so an fsync
        // per commit is cheap, and a committed batch is durable: the log can
        // drop it. Embedded, a commit per put: NORMAL (safe from a crash).
        try writer.execute("PRAGMA synchronous=\(configuration.durableCommits ? "FULL" : "NORMAL")")
        try writer.execute("PRAGMA wal_autocheckpoint=0")
        // When the WAL starts over, cut the file back to 16 MiB.
        try writer.execute("PRAGMA journal_size_limit=\(16 << 20)")
        try writer.execute("PRAGMA cache_size=-\(max(1024, configuration.pageCacheBytes / 2048))")
        try writer.execute("PRAGMA temp_store=MEMORY")
        if configuration.maxPageCount > 0 { try writer.execute("PRAGMA max_page_count=\(configuration.maxPageCount)") }
        writer.setBusyTimeout(milliseconds: 5000)

        let version = try writer.scalarInt("PRAGMA user_version") ?? 0
        if version == 2 || version == 3 {
            try migrate(from: version)
        } else if version != Int64(Self.schemaVersion) {
            try recreateSchema()
        }
    }

    private func configureReader() throws {
        try reader.execute("PRAGMA cache_size=-\(max(1024, configuration.pageCacheBytes / 1024))")
        try reader.execute("PRAGMA temp_store=MEMORY")
        try reader.execute("PRAGMA query_only=1")
        reader.setBusyTimeout(milliseconds: 5000)
    }

    private static let createSchema = """
        CREATE TABLE entries(
            digest BLOB PRIMARY KEY NOT NULL,
            size INTEGER NOT NULL,
            storage_date REAL NOT NULL,
            seq INTEGER NOT NULL,
            expires_at INTEGER,
            key BLOB NOT NULL,
            metadata BLOB NOT NULL,
            value BLOB NOT NULL,
            kind INTEGER NOT NULL DEFAULT 0,
            written_date REAL,
            written_seq INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX entries_by_age ON entries(storage_date, seq);
        CREATE INDEX entries_by_expiry ON entries(expires_at) WHERE expires_at IS NOT NULL;
        """

    /// Drops every table and creates the current schema: a cache, not a store.
    private func recreateSchema() throws {
        writer.dropStatements()
        try writer.execute("BEGIN IMMEDIATE")
        do {
            var names: [String] = []
            let list = try writer.statement("SELECT name FROM sqlite_schema WHERE type='table' AND name NOT LIKE 'sqlite_%'")
            while try list.step() { names.append(list.text(0)) }
            list.reset()
            writer.dropStatements()
            for name in names {
                try writer.execute("DROP TABLE IF EXISTS \"\(name.replacingOccurrences(of: "\"", with: "\"\""))\"")
            }
            try writer.execute(Self.createSchema + """
                CREATE TABLE stats(
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    entries INTEGER NOT NULL,
                    bytes INTEGER NOT NULL,
                    next_seq INTEGER NOT NULL,
                    volatile INTEGER NOT NULL,
                    expires_sum REAL NOT NULL,
                    applied_lsn INTEGER NOT NULL DEFAULT 0,
                    file_id INTEGER NOT NULL DEFAULT 0
                );
                INSERT INTO stats VALUES (1, 0, 0, 1, 0, 0, 0, \(Self.newFileID()));
                PRAGMA user_version=\(Self.schemaVersion);
                """)
            try writer.execute("COMMIT")
        } catch {
            try? writer.execute("ROLLBACK")
            throw error
        }
    }

    /// Version 2 lacked the log position and the file's identity, and
    /// version 3 the row's own write position (`written_date`,
    /// `written_seq`, NULL: the same as its place in the age index): add
    /// them, keeping the entries. Adding a nullable column rewrites no row.
    private func migrate(from version: Int64) throws {
        try writer.execute("BEGIN IMMEDIATE")
        do {
            if version == 2 {
                try writer.execute("""
                    ALTER TABLE stats ADD COLUMN applied_lsn INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE stats ADD COLUMN file_id INTEGER NOT NULL DEFAULT 0;
                    UPDATE stats SET file_id = \(Self.newFileID());
                    """)
            }
            try writer.execute("""
                ALTER TABLE entries ADD COLUMN written_date REAL;
                ALTER TABLE entries ADD COLUMN written_seq INTEGER;
                PRAGMA user_version=\(Self.schemaVersion);
                """)
            try writer.execute("COMMIT")
        } catch {
            try? writer.execute("ROLLBACK")
            throw error
        }
        writer.dropStatements()
    }

    /// A random, nonzero, positive 63-bit file identity.
    private static func newFileID() -> Int64 { Int64.random(in: 1...Int64.max) }

    /// Reads the stats row again (after a batch failed).
    /// - Returns: what the file holds.
    func reloadState() throws -> StoredState {
        releaseRead()
        try loadState()
        return stored
    }

    /// Reads the stats row.
    private func loadState() throws {
        let stmt = try reader.statement(
            "SELECT entries, bytes, next_seq, volatile, expires_sum, applied_lsn, file_id FROM stats WHERE id = 1")
        defer { stmt.reset() }
        guard try stmt.step() else {
            throw SQLiteKVCache.Error.databaseUnavailable(reason: "\(path) has no stats row")
        }
        stored.totals = Totals(count: Int(stmt.int64(0)), bytes: Int(stmt.int64(1)), nextSeq: stmt.int64(2),
                               volatile: Int(stmt.int64(3)), expiresSum: stmt.double(4))
        stored.appliedLSN = UInt64(bitPattern: stmt.int64(5))
        fileID = UInt64(bitPattern: stmt.int64(6))
    }

    /// Runs VACUUM when free pages are over 25% of the file.
    private func vacuumIfFragmented() throws {
        let free = try writer.scalarInt("PRAGMA freelist_count") ?? 0
        let pages = try writer.scalarInt("PRAGMA page_count") ?? 0
        guard pages > 0, free * 4 > pages else { return }
        writer.dropStatements()
        let progress = configuration.onProgress
        let path = self.path
        let started = Date()
        progress?("Vacuuming \(path): \(free) of \(pages) pages are free...")
        if let progress {
            var lastReport = started
            writer.setProgressHandler(every: 200_000) {
                let now = Date()
                guard now.timeIntervalSince(lastReport) >= 1 else { return }
                lastReport = now
                progress("Vacuuming \(path): \(Int(now.timeIntervalSince(started)))s so far")
            }
        }
        defer { writer.clearProgressHandler() }
        try writer.execute("VACUUM")
        let after = try writer.scalarInt("PRAGMA page_count") ?? 0
        progress?("Vacuumed \(path) in \(String(format: "%.2f", Date().timeIntervalSince(started)))s: \(pages) pages to \(after)")
    }

    /// LRU evicts by sequence number alone, which needs its own index.
    /// Runs on the writer connection (it writes the schema).
    func ensureRecencyIndex() throws {
        try writer.execute("CREATE INDEX IF NOT EXISTS entries_by_recency ON entries(seq)")
    }

    private var closed = false

    /// Checkpoints the WAL into the file (truncating it) and closes both
    /// connections and the lock. The caller has applied what it meant to keep.
    func close() {
        guard !closed else { return }
        closed = true
        releaseRead()
        reader.close()
        try? writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        writer.close()
        lock.release()
    }
}

/// An integer shared between threads (a class, so a closure can hold it).
final class AtomicCounter: Sendable {
    private let value = Atomic<Int>(0)

    func load() -> Int { value.load(ordering: .relaxed) }
    func store(_ new: Int) { value.store(new, ordering: .relaxed) }
    func add(_ delta: Int) { value.add(delta, ordering: .relaxed) }
}
