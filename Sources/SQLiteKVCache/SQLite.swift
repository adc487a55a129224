import CSQLite
import Glibc

/// The thin layer over the SQLite C API. Every SQLite pointer lives in this
/// file; the rest of the engine sees `SQLiteConnection` and `SQLiteStatement`.

/// A failed SQLite call: its result code, the message SQLite gave, and the SQL.
struct SQLiteFailure: Swift.Error, CustomStringConvertible {
    let code: Int32
    let message: String
    let sql: String?
    /// The OS error behind an I/O failure (`sqlite3_system_errno`), or 0.
    var systemErrno: Int32 = 0

    /// The primary result code (the low byte of an extended code).
    var primaryCode: Int32 { code & 0xff }

    /// "disk I/O error (code 10)"; an I/O or open failure adds the extended
    /// code and the OS error ("code 10, extended 4618, errno 2: No such file
    /// or directory"), the only clue to a failure seen once.
    var description: String {
        var codes = "code \(primaryCode)"
        if systemErrno != 0 || (code != primaryCode && [SQLITE_IOERR, SQLITE_CANTOPEN].contains(primaryCode)) {
            codes += ", extended \(code)"
        }
        if systemErrno != 0 { codes += ", errno \(systemErrno): \(String(cString: strerror(systemErrno)))" }
        return "\(message) (\(codes))" + (sql.map { " in \($0)" } ?? "")
    }
}

/// SQLite's own text for a result code, through `sqlite3_errstr`.
func sqliteErrorString(_ code: Int32) -> String {
    String(cString: sqlite3_errstr(code))
}

/// Tells SQLite to copy bound blobs (the buffer does not outlive the call).
private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite database connection with a cache of prepared statements.
/// Not thread-safe: the engine guards it with its lock.
final class SQLiteConnection {
    private let db: OpaquePointer
    /// Objects C callbacks point at, kept alive as long as the connection.
    var retainedHooks: [AnyObject] = []
    var handle: OpaquePointer { db }
    private var statements: [SQLKey: SQLiteStatement] = [:]

    /// A statement cache key that hashes the SQL's length and its first and
    /// last eight bytes: hashing all of a long SQL text on every call was a
    /// visible share of a read. Equality still compares the whole text.
    struct SQLKey: Hashable {
        let sql: String

        static func == (a: SQLKey, b: SQLKey) -> Bool { a.sql == b.sql }

        func hash(into hasher: inout Hasher) {
            var sql = self.sql
            let sampled: UInt64? = sql.withUTF8 { bytes in
                guard bytes.count >= 16, let base = bytes.baseAddress else { return nil }
                let raw = UnsafeRawPointer(base)
                let head = raw.loadUnaligned(as: UInt64.self)
                let tail = raw.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self)
                return head ^ (tail &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(bytes.count)
            }
            if let sampled { hasher.combine(sampled) } else { hasher.combine(self.sql) }
        }
    }

    /// Opens (creating if missing, when `create`) the database at `path`.
    /// - Throws: `SQLiteFailure` when SQLite cannot open the file.
    init(path: String, create: Bool = true) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? sqliteErrorString(rc)
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteFailure(code: rc, message: message, sql: nil)
        }
        db = handle
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        close()
    }

    private var closed = false

    /// Finalizes every statement and closes the connection. Idempotent.
    func close() {
        guard !closed else { return }
        closed = true
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        sqlite3_close_v2(db)
    }

    private func failure(_ rc: Int32, sql: String?) -> SQLiteFailure {
        SQLiteFailure(code: rc, message: String(cString: sqlite3_errmsg(db)), sql: sql,
                      systemErrno: rc & 0xff == SQLITE_IOERR || rc & 0xff == SQLITE_CANTOPEN ? sqlite3_system_errno(db) : 0)
    }

    /// Runs one or more statements that return no rows of interest.
    func execute(_ sql: String) throws {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw failure(rc, sql: sql) }
    }

    /// Returns the prepared statement for `sql`, preparing it once and caching it.
    func statement(_ sql: String) throws -> SQLiteStatement {
        if let cached = statements[SQLKey(sql: sql)] { return cached }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw failure(rc, sql: sql) }
        let statement = SQLiteStatement(stmt: stmt, connection: self, sql: sql)
        statements[SQLKey(sql: sql)] = statement
        return statement
    }

    /// Runs `sql`, a statement that returns no rows, prepared once and cached
    /// (for one run often, as BEGIN and COMMIT).
    func run(_ sql: String) throws {
        let stmt = try statement(sql)
        defer { stmt.reset() }
        _ = try stmt.step()
    }

    /// Runs `sql` and returns the first column of its first row as an integer, or nil if no row.
    func scalarInt(_ sql: String) throws -> Int64? {
        let stmt = try statement(sql)
        defer { stmt.reset() }
        return try stmt.step() ? stmt.int64(0) : nil
    }

    /// Runs `sql` and returns the first column of its first row as text, or nil if no row.
    func scalarText(_ sql: String) throws -> String? {
        let stmt = try statement(sql)
        defer { stmt.reset() }
        return try stmt.step() ? stmt.text(0) : nil
    }

    /// Drops every cached prepared statement (needed before DROP TABLE / VACUUM).
    func dropStatements() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
    }

    var changes: Int { Int(sqlite3_changes(db)) }
    var isInTransaction: Bool { sqlite3_get_autocommit(db) == 0 }

    /// A closure SQLite calls every `instructions` VM steps of a long
    /// statement (VACUUM), until `clearProgressHandler`.
    private final class ProgressBox {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    private var progressBox: ProgressBox?

    func setProgressHandler(every instructions: Int32, _ body: @escaping () -> Void) {
        let box = ProgressBox(body)
        progressBox = box
        sqlite3_progress_handler(db, instructions, { context in
            Unmanaged<ProgressBox>.fromOpaque(context!).takeUnretainedValue().body()
            return 0
        }, Unmanaged.passUnretained(box).toOpaque())
    }

    func clearProgressHandler() {
        sqlite3_progress_handler(db, 0, nil, nil)
        progressBox = nil
    }

    /// Sets how long a call waits on a lock held by another connection.
    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(db, milliseconds)
    }

    fileprivate func makeFailure(_ rc: Int32, sql: String) -> SQLiteFailure { failure(rc, sql: sql) }
}

/// A prepared statement. Bindings and rows are valid until `reset()`.
final class SQLiteStatement {
    private var stmt: OpaquePointer?
    private unowned let connection: SQLiteConnection
    let sql: String

    fileprivate init(stmt: OpaquePointer, connection: SQLiteConnection, sql: String) {
        self.stmt = stmt
        self.connection = connection
        self.sql = sql
    }

    fileprivate func finalize() {
        if let stmt { sqlite3_finalize(stmt) }
        stmt = nil
    }

    /// Binds bytes to the 1-based parameter `index`. An empty buffer binds a
    /// zero-length blob, never NULL.
    func bind(_ index: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            if let base = raw.baseAddress, raw.count > 0 {
                _ = sqlite3_bind_blob(stmt, index, base, Int32(raw.count), SQLITE_TRANSIENT)
            } else {
                _ = sqlite3_bind_zeroblob(stmt, index, 0)
            }
        }
    }

    /// Binds raw bytes (copied) to the 1-based parameter `index`.
    func bind(_ index: Int32, _ raw: UnsafeRawBufferPointer) {
        if let base = raw.baseAddress, raw.count > 0 {
            _ = sqlite3_bind_blob(stmt, index, base, Int32(raw.count), SQLITE_TRANSIENT)
        } else {
            _ = sqlite3_bind_zeroblob(stmt, index, 0)
        }
    }

    func bind(_ index: Int32, _ value: Int64) { _ = sqlite3_bind_int64(stmt, index, value) }
    func bind(_ index: Int32, _ value: Int) { _ = sqlite3_bind_int64(stmt, index, Int64(value)) }
    func bind(_ index: Int32, _ value: Double) { _ = sqlite3_bind_double(stmt, index, value) }
    func bindNull(_ index: Int32) { _ = sqlite3_bind_null(stmt, index) }

    /// Advances the statement.
    /// - Returns: true when a row is available, false when done.
    /// - Throws: `SQLiteFailure`; the statement is reset before throwing.
    func step() throws -> Bool {
        let rc = sqlite3_step(stmt)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.makeFailure(rc, sql: sql)
            sqlite3_reset(stmt)
            throw error
        }
    }

    /// Resets the statement and clears its bindings, so blobs are not kept alive.
    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(stmt, column) }

    func text(_ column: Int32) -> String {
        guard let cString = sqlite3_column_text(stmt, column) else { return "" }
        return String(cString: cString)
    }

    /// The column as a key digest (a 32-byte blob).
    func digest(_ column: Int32) -> KeyDigest {
        let count = Int(sqlite3_column_bytes(stmt, column))
        guard count == 32, let base = sqlite3_column_blob(stmt, column) else {
            preconditionFailure("digest column of \(count) bytes")
        }
        return KeyDigest(bytes: UnsafeRawBufferPointer(start: base, count: 32))
    }

    /// The column's bytes, copied out.
    func bytes(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(stmt, column))
        guard count > 0, let base = sqlite3_column_blob(stmt, column) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: base, count: count))
    }
}

extension SQLiteConnection {
    /// Calls `body` with the WAL's page count after each commit.
    private final class WALHookBox {
        let body: (Int32) -> Void
        init(_ body: @escaping (Int32) -> Void) { self.body = body }
    }

    func setWALHook(_ body: @escaping (Int32) -> Void) {
        let box = WALHookBox(body)
        retainedHooks.append(box)
        sqlite3_wal_hook(handle, { context, _, _, pages in
            Unmanaged<WALHookBox>.fromOpaque(context!).takeUnretainedValue().body(pages)
            return SQLITE_OK
        }, Unmanaged.passUnretained(box).toOpaque())
    }
}
