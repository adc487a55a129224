import CSQLite
import Foundation
@testable import SQLiteKVCache

/// A fresh temporary directory, removed when the value is released.
final class TemporaryDirectory {
    let path: String

    init() {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/sqlitekvcache-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Seals `engine` at `lsn`, applies the batch on `writer` and completes it.
func flush(_ engine: CacheEngine, _ writer: BatchWriter, lsn: UInt64) {
    guard let batch = engine.seal(lsn: lsn) else { return }
    writer.submit(WriterJob(lsn: lsn, batches: [batch]))
    writer.waitUntilIdle()
    for job in writer.takeFinished() {
        for batch in job.batches { engine.complete(batch, onFailure: .retry) }
    }
}

/// A second, raw SQLite connection to a cache file, for checks from outside the engine.
final class RawDatabase {
    private var db: OpaquePointer?

    init(path: String) {
        precondition(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK, "cannot open \(path)")
        sqlite3_busy_timeout(db, 100)
    }

    deinit { sqlite3_close_v2(db) }

    /// The first column of the first row, as text.
    func scalar(_ sql: String) -> String? {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { return nil }
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_ROW, let text = sqlite3_column_text(stmt, 0) else { return nil }
        return String(cString: text)
    }

    func execute(_ sql: String) {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        precondition(rc == SQLITE_OK, "\(sql) failed: \(String(cString: sqlite3_errmsg(db)))")
    }
}
