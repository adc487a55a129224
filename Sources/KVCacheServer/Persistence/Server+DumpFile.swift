#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SQLiteKVCache

/// Redis loads its dataset from `dir`/`dbfilename` (dump.rdb) when it
/// starts. Here the data lives in the caches' SQLite files, so such a file
/// is imported: at start-up (after the append-only log's replay), when it
/// is there and is not the file imported last (its size, modification time
/// and inode, kept in `<dbfilename>.loaded`), the numbered caches are
/// emptied and filled with its keys (those already expired skipped), each
/// written as any write is, so the log and then SQLite hold them. A file
/// that cannot be read whole stops the start-up, as it stops Redis, and
/// changes nothing.
extension Server {
    func loadDumpFileIfNew() throws {
        let name = config.acceptedSettings["dbfilename"] ?? "dump.rdb"
        let path = config.dir + "/" + name
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        let stamp = "\(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(info.st_ino)\n"
        let marker = path + ".loaded"
        if (try? String(contentsOfFile: marker, encoding: .utf8)) == stamp {
            logger.verbose("\(name) is the file loaded at an earlier start: not loaded again")
            return
        }
        let started = Self.monotonicMicroseconds()
        guard let data = FileManager.default.contents(atPath: path) else {
            logger.warning("Fatal error loading the DB, check server logs. Exiting.")
            throw ConfigError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        let file: RDBFile
        do {
            file = try RDBFile(Array(data), limits: config.encodingLimits,
                               checksum: config.acceptedSettings["rdbchecksum"] != "no")
        } catch {
            for line in error.lines { logger.warning(line) }
            logger.warning("Terminating server after rdb file reading failure.")
            throw ConfigError("\(path) cannot be loaded: \(error.lines[0])")
        }
        let (loaded, expired) = try importRDB(file, source: path)
        // The marker says "loaded": only once SQLite holds every key (with
        // appendonly no a kill -9 would otherwise lose the keys and keep the
        // marker), and durably (a lost marker would load the file again,
        // over later writes).
        guard persistence.applyAll() else {
            throw ConfigError("the keys of \(path) could not all be written to SQLite: see the log")
        }
        let failure = Posix.replaceFile(marker, with: Array(stamp.utf8), temporary: marker + ".tmp", syncing: config.dir)
        if failure != 0 {
            logger.warning("Cannot write \(marker): \(String(cString: strerror(failure))); "
                + "the dump file will be loaded again at the next start")
        }
        logger.notice("Done loading RDB, keys loaded: \(loaded), keys expired: \(expired), "
            + "empty keys skipped: \(file.emptyKeys.count).")
        logger.notice("DB loaded from disk: \(String(format: "%.3f", Double(Self.monotonicMicroseconds() - started) / 1e6)) seconds")
    }

    /// Replaces the numbered caches' data with an RDB's keys (those already
    /// expired skipped), each written as any write is, so the log and then
    /// SQLite hold them: a dump file at start-up, a master's RDB on a replica.
    /// - Returns: the keys loaded and the keys skipped as expired.
    func importRDB(_ file: RDBFile, source path: String) throws -> (loaded: Int, expired: Int) {
        if let db = file.entries.map(\.db).max(), db >= config.databases {
            logger.warning("FATAL: Data file was created with a Redis server configured to handle more than "
                + "\(config.databases) databases. Exiting")
            throw ConfigError("\(path) names database \(db); databases is \(config.databases)")
        }
        for key in file.emptyKeys { logger.warning("rdbLoadObject skipping empty key: \(String(decoding: key, as: UTF8.self))") }
        // Its function libraries replace the server's, as they are part of
        // Redis's dataset (a failing one stops the load, nothing changed).
        do {
            try scripting.replaceLibraries(withCodes: file.functions)
        } catch {
            logger.warning("Failed loading library: \(error.text)")
            throw ConfigError("\(path) holds a function library that cannot be loaded: \(error.text)")
        }
        // The file is the whole dataset, as for Redis: the numbered caches start empty.
        for cache in registry.openAllKnown() where cache.openError == nil && CacheRegistry.databaseIndex(ofName: cache.name) != nil {
            try Keyspace(server: self, cache: cache).flush()
        }
        let now = Self.nowMilliseconds()
        var loaded = 0, expired = 0
        for entry in file.entries {
            // A replica keeps what expired for its master's DEL (Redis
            // skips expired keys only if it is a master).
            if replicaLink == nil, let at = entry.expiresAt, at <= now {
                expired += 1
                continue
            }
            let cache = try registry.cache(named: "db\(entry.db)")
            try Keyspace(server: self, cache: cache).store(
                SQLiteKVCache.Entry(key: entry.key, storageDate: Date(), metadata: [], value: entry.value,
                                    expiresAt: entry.expiresAt, kind: entry.kind))
            loaded += 1
            if loaded % 1000 == 0 { persistence.appendPending() }  // records of a bounded size
        }
        persistence.appendPending()
        return (loaded, expired)
    }
}
