import Foundation

extension SQLiteKVCache {
    /// Everything the engine can throw. `description` renders SQLite codes
    /// through `sqlite3_errstr`: "SQLite write failed: disk I/O error (code 10)".
    public enum Error: Swift.Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
        /// The cache could not be opened; every call on this instance throws this.
        case databaseUnavailable(reason: String)
        /// A read statement failed with this SQLite result code.
        case readFailed(sqliteCode: Int32)
        /// A write statement or its commit failed with this SQLite result code.
        case writeFailed(sqliteCode: Int32)
        /// The handle is not a valid cache name.
        case invalidHandle(String)
        /// Another instance or process owns the cache file.
        case cacheLocked(handle: String, lockPath: String)
        /// The entry's size (key + value + metadata) exceeds the cache's capacity.
        case entryTooLarge(size: Int, capacity: Int)
        /// The write would pass capacity and the eviction policy is `noeviction`.
        case capacityExceeded(capacity: Int)

        public var description: String {
            switch self {
            case .databaseUnavailable(let reason):
                return "cache unavailable: \(reason)"
            case .readFailed(let code):
                return "SQLite read failed: \(sqliteErrorString(code)) (code \(code))"
            case .writeFailed(let code):
                return "SQLite write failed: \(sqliteErrorString(code)) (code \(code))"
            case .invalidHandle(let handle):
                return "invalid cache name '\(handle)': use 1 to 64 of a-z 0-9 . _ - (not '.' or '..')"
            case .cacheLocked(let handle, let lockPath):
                return "cache '\(handle)' is already open in another instance or process (lock held on \(lockPath))"
            case .entryTooLarge(let size, let capacity):
                return "entry of \(size) bytes is larger than the cache capacity of \(capacity) bytes"
            case .capacityExceeded(let capacity):
                return "cache is at its capacity of \(capacity) bytes and its policy is noeviction"
            }
        }

        public var errorDescription: String? { description }

        /// The SQLite primary result code, when the error carries one.
        public var sqliteCode: Int32? {
            switch self {
            case .readFailed(let code), .writeFailed(let code): return code
            default: return nil
            }
        }
    }
}

extension SQLiteFailure {
    var asReadError: SQLiteKVCache.Error { .readFailed(sqliteCode: primaryCode) }
    var asWriteError: SQLiteKVCache.Error { .writeFailed(sqliteCode: primaryCode) }
}
