import Foundation
import RESP
import SQLiteKVCache

/// One named cache as the server sees it: the engine instance, whether it
/// has joined this loop iteration's batch, and its counters.
final class OpenCache {
    let name: String
    let engine: SQLiteKVCache
    /// Why the file could not be opened, if it could not; kept for the cache's life.
    let openError: SQLiteKVCache.Error?
    var inBatch = false
    var hits = 0
    var misses = 0

    init(name: String, engine: SQLiteKVCache, openError: SQLiteKVCache.Error?) {
        self.name = name
        self.engine = engine
        self.openError = openError
    }

    /// The Redis database index this cache stands for (`db3` → 3), if any.
    var databaseIndex: Int? {
        guard name.hasPrefix("db"), let n = Int(name.dropFirst(2)), "db\(n)" == name else { return nil }
        return n
    }
}

/// The caches of the data directory: opened on first use, bounded by `max-caches`.
final class CacheRegistry {
    private(set) var config: ServerConfig
    private let logger: Logger
    /// Caches opened so far, by canonical name.
    private(set) var open: [String: OpenCache] = [:]
    /// Names with a file in the directory, opened or not.
    private(set) var known: Set<String> = []

    init(config: ServerConfig, logger: Logger) throws {
        self.config = config
        self.logger = logger
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if !fm.fileExists(atPath: config.dir, isDirectory: &isDirectory) {
            do {
                try fm.createDirectory(atPath: config.dir, withIntermediateDirectories: true,
                                       attributes: [.posixPermissions: 0o700])
            } catch {
                throw ConfigError("can't create the data directory \(config.dir): \(error.localizedDescription)")
            }
        } else if !isDirectory.boolValue {
            throw ConfigError("the data directory \(config.dir) is not a directory")
        }
        guard access(config.dir, W_OK | X_OK) == 0 else {
            throw ConfigError("the data directory \(config.dir) is not writable: \(String(cString: strerror(errno)))")
        }
        for file in (try? fm.contentsOfDirectory(atPath: config.dir)) ?? [] where file.hasSuffix(".sqlite") {
            let name = String(file.dropLast(".sqlite".count))
            if SQLiteKVCache.isValidHandle(name) && name == name.lowercased() { known.insert(name) }
        }
    }

    /// The cache a `SELECT` argument names: a number n in `0..<databases` is
    /// `db<n>`, anything else a cache name.
    /// - Throws: `ReplyError` for an out-of-range index, an invalid name, or
    ///   a new cache past `max-caches`.
    func cache(selecting argument: [UInt8]) throws(ReplyError) -> OpenCache {
        if let index = parseStrictInt64(argument) {
            guard index >= 0 && index < Int64(config.databases) else { throw .dbIndexOutOfRange }
            return try cache(named: "db\(index)")
        }
        let text = String(decoding: argument, as: UTF8.self)
        guard let name = try? SQLiteKVCache.canonicalHandle(text) else {
            throw ReplyError("ERR invalid cache name '\(text.prefix(80))': use 1 to 64 of a-z 0-9 . _ - or a DB index")
        }
        return try cache(named: name)
    }

    /// The cache with this canonical name, opening (and creating) it if needed.
    func cache(named name: String) throws(ReplyError) -> OpenCache {
        if let cache = open[name] { return cache }
        if !known.contains(name) && known.count >= config.maxCaches {
            throw ReplyError("ERR max-caches reached (\(config.maxCaches)): cannot create cache '\(name)'")
        }
        let settings = config.settings(forCache: name)
        let engine = SQLiteKVCache(handle: name, directory: config.dir, configuration: .init(
            diskCapacity: settings.capacity, evictionPolicy: settings.policy, pageCacheBytes: config.pageCacheBytes))
        var openError: SQLiteKVCache.Error?
        do {
            try engine.open()
            logger.verbose("Opened cache '\(name)' (\((try? engine.count()) ?? 0) keys)")
        } catch {
            openError = error
            logger.warning("Cache '\(name)' is unavailable: \(error)")
        }
        let cache = OpenCache(name: name, engine: engine, openError: openError)
        open[name] = cache
        known.insert(name)
        return cache
    }

    /// Opens every cache with a file in the directory (for FLUSHALL).
    func openAllKnown() -> [OpenCache] {
        for name in known.sorted() where open[name] == nil {
            _ = try? cache(named: name)
        }
        return open.keys.sorted().compactMap { open[$0] }
    }

    /// Closes every cache cleanly: commit, checkpoint, release the lock.
    func closeAll() {
        for cache in open.values { cache.engine.close() }
        open.removeAll()
    }
}
