import Foundation
import CLinux
import RESP
import SQLiteKVCache

/// One named cache as the server sees it: the engine instance, whether it
/// has joined this loop iteration's batch, and its counters.
final class OpenCache {
    let name: String
    /// The engine over the cache's file; replaced when SWAPDB swaps files.
    var engine: SQLiteKVCache
    /// Why the file could not be opened, if it could not; kept until reopened.
    var openError: SQLiteKVCache.Error?
    var inBatch = false
    var hits = 0
    var misses = 0
    /// Evictions and expiries counted by engines this cache had before its current one.
    var earlierEvicted = 0
    var earlierExpired = 0
    /// True while the cache is over capacity after a capacity cut.
    var needsEviction = false
    /// Under `durability everysec`, why the last commit failed: writes are
    /// refused with it until a probe write succeeds.
    var commitFailure: SQLiteKVCache.Error?

    init(name: String, engine: SQLiteKVCache, openError: SQLiteKVCache.Error?) {
        self.name = name
        self.engine = engine
        self.openError = openError
    }

    /// The engine's statistics, with counters carried across reopenings.
    func statistics() -> SQLiteKVCache.Statistics? {
        guard var stats = try? engine.statistics() else { return nil }
        stats.evicted += earlierEvicted
        stats.expired += earlierExpired
        return stats
    }

    /// Marks the cache for background eviction when it holds more than its
    /// capacity (its capacity was lowered between runs, or SWAPDB brought
    /// in a fuller file).
    func checkCapacity() {
        guard let stats = try? engine.statistics() else { return }
        needsEviction = stats.capacity > 0 && stats.contentBytes > stats.capacity
    }

    /// Closes the engine, keeping its counters.
    func closeEngine() {
        if let stats = try? engine.statistics() {
            earlierEvicted += stats.evicted
            earlierExpired += stats.expired
        }
        engine.close()
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
    /// The descriptor holding the data directory's lock for this server's life.
    private var directoryLock: Int32 = -1

    deinit { if directoryLock >= 0 { close(directoryLock) } }

    /// Takes `<dir>/kvcache-server.lock` (flock) and writes our pid into it,
    /// so a second server on the same directory fails at start-up.
    /// - Throws: `ConfigError` naming the owner when another server holds it.
    static func lockDirectory(_ dir: String) throws -> Int32 {
        let path = dir + "/kvcache-server.lock"
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ConfigError("can't create the lock file \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
            let owner = String(decoding: buffer.prefix(max(0, n)), as: UTF8.self).trimmingCharacters(in: " \n")
            close(fd)
            throw ConfigError("the data directory \(dir) is in use by another kvcache-server"
                + (owner.isEmpty ? "" : " (pid \(owner))"))
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }

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
        directoryLock = try Self.lockDirectory(config.dir)
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
            guard index >= Int64(Int32.min) && index <= Int64(Int32.max) else { throw .intOutOfRange }
            guard index >= 0 && index < Int64(config.databases) else { throw .dbIndexOutOfRange }
            return try cache(named: "db\(index)")
        }
        if Self.looksNumeric(argument) { throw .notInteger }
        let text = String(decoding: argument, as: UTF8.self)
        guard let name = try? SQLiteKVCache.canonicalHandle(text) else {
            throw ReplyError("ERR invalid cache name '\(text.prefix(80))': use 1 to 64 of a-z 0-9 . _ - or a DB index")
        }
        return try cache(named: name)
    }

    /// True for a sign and digits only ("01", "+1", "-0", 20 digits): such an
    /// argument is a malformed index, never a cache name.
    static func looksNumeric(_ bytes: [UInt8]) -> Bool {
        var digits = bytes[...]
        if let first = digits.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// The cache with this canonical name, opening (and creating) it if needed.
    func cache(named name: String) throws(ReplyError) -> OpenCache {
        if let cache = open[name] { return cache }
        if !known.contains(name) && known.count >= config.maxCaches {
            throw ReplyError("ERR max-caches reached (\(config.maxCaches)): cannot create cache '\(name)'")
        }
        let (engine, openError) = openEngine(name)
        let cache = OpenCache(name: name, engine: engine, openError: openError)
        cache.checkCapacity()
        open[name] = cache
        known.insert(name)
        return cache
    }

    /// Creates and opens the engine for `name` with its configured capacity and policy.
    private func openEngine(_ name: String) -> (SQLiteKVCache, SQLiteKVCache.Error?) {
        let settings = config.settings(forCache: name)
        var configuration = SQLiteKVCache.Configuration(
            diskCapacity: settings.capacity, evictionPolicy: settings.policy, pageCacheBytes: config.pageCacheBytes,
            memoryTierBytes: config.memoryTierBytes)
        configuration.maxPageCount = config.sqliteMaxPageCount
        let logger = self.logger
        configuration.onRecovery = { message in logger.warning(message) }
        configuration.onProgress = { message in logger.notice(message) }
        let engine = SQLiteKVCache(handle: name, directory: config.dir, configuration: configuration)
        let started = Server.nowMilliseconds()
        do {
            try engine.open()
            try engine.setDeferredWrites(config.durability == .everysec)
            let keys = (try? engine.count()) ?? 0
            let elapsed = Server.nowMilliseconds() - started
            let line = "Opened cache '\(name)': \(keys) keys in \(elapsed) ms"
            if elapsed >= 1000 || keys >= 1_000_000 { logger.notice(line) } else { logger.verbose(line) }
            return (engine, nil)
        } catch {
            logger.warning("Cache '\(name)' is unavailable: \(error)")
            return (engine, error)
        }
    }

    /// Closes and reopens a cache's file (after its file changed under it).
    func reopen(_ cache: OpenCache) {
        cache.closeEngine()
        (cache.engine, cache.openError) = openEngine(cache.name)
        cache.checkCapacity()
    }

    /// Swaps the files of two caches: both are closed (committed and
    /// checkpointed), their files exchanged in one atomic rename
    /// (renameat2 RENAME_EXCHANGE, so a crash leaves either the old or the
    /// new state), and both reopened: every client that selected one now
    /// sees the other's contents.
    /// - Throws: `ReplyError` when the files cannot be exchanged; then
    ///   nothing has changed.
    func swap(_ a: OpenCache, _ b: OpenCache) throws(ReplyError) {
        a.closeEngine()
        b.closeEngine()
        let fm = FileManager.default
        let pathA = config.dir + "/" + a.name + ".sqlite"
        let pathB = config.dir + "/" + b.name + ".sqlite"
        // A clean close leaves no -wal/-shm; remove any left so they cannot pair with the wrong file.
        for path in [pathA, pathB] {
            try? fm.removeItem(atPath: path + "-wal")
            try? fm.removeItem(atPath: path + "-shm")
        }
        var failure: String?
        switch (fm.fileExists(atPath: pathA), fm.fileExists(atPath: pathB)) {
        case (true, true):
            if renameat2(kv_AT_FDCWD, pathA, kv_AT_FDCWD, pathB, kv_RENAME_EXCHANGE) != 0 {
                failure = "\(pathA) and \(pathB): \(String(cString: strerror(errno)))"
            }
        case (true, false):
            if rename(pathA, pathB) != 0 { failure = "\(pathA): \(String(cString: strerror(errno)))" }
        case (false, true):
            if rename(pathB, pathA) != 0 { failure = "\(pathB): \(String(cString: strerror(errno)))" }
        case (false, false):
            break
        }
        reopen(a)
        reopen(b)
        if let failure { throw ReplyError("ERR SWAPDB could not exchange \(failure)") }
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
        for cache in open.values { cache.closeEngine() }
        open.removeAll()
    }

    /// Applies changed capacity and policy settings to the open caches.
    /// Caches over capacity evict in bounded batches from the server's loop.
    func apply(_ newConfig: ServerConfig) {
        config = newConfig
        for cache in open.values where cache.openError == nil {
            try? cache.engine.setDeferredWrites(config.durability == .everysec)
            let settings = config.settings(forCache: cache.name)
            try? cache.engine.setEvictionPolicy(settings.policy)
            if let within = try? cache.engine.setCapacity(settings.capacity, batchLimit: 0), !within {
                cache.needsEviction = true
            }
        }
    }
}
