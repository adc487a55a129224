import Foundation
import CLinux
import RESP
import SQLiteKVCache

/// The caches of the data directory: opened on first use, bounded by `max-caches`.
final class CacheRegistry {
    private(set) var config: ServerConfig
    private let logger: Logger
    /// Caches opened so far, by canonical name.
    private(set) var open: [String: OpenCache] = [:]
    /// Names with a file in the directory, opened or not.
    private(set) var known: Set<String> = []

    /// The index of a numbered cache's own name (`db3`: 3), or nil for any
    /// other name (`db03`, `sessions`).
    static func databaseIndex(ofName name: String) -> Int? {
        guard name.hasPrefix("db"), let n = Int(name.dropFirst(2)), "db\(n)" == name else { return nil }
        return n
    }
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
        if config.rejoinPolicy == .flush { try Self.removeCachedData(config, logger: logger) }
        for file in (try? fm.contentsOfDirectory(atPath: config.dir)) ?? [] where file.hasSuffix(".sqlite") {
            let name = String(file.dropLast(".sqlite".count))
            if SQLiteKVCache.isValidHandle(name) && name == name.lowercased() { known.insert(name) }
        }
        for (index, name) in config.databaseNames.sorted(by: { $0.key < $1.key }) where known.contains("db\(index)") {
            logger.notice("Database \(index) is the cache '\(name)' (database-name); the file db\(index).sqlite "
                + "is left as it is and reached as SELECT db\(index)")
        }
    }

    /// The cache a `SELECT` argument names: a number n in `0..<databases` is
    /// `db<n>` (or the cache `database-name` maps n to, whatever its
    /// range), anything else a cache name.
    /// - Throws: `ReplyError` for an out-of-range index, an invalid name, or
    ///   a new cache past `max-caches`.
    func cache(selecting argument: some Collection<UInt8>) throws(ReplyError) -> OpenCache {
        try cache(named: cacheName(selecting: argument))
    }

    /// The name of the cache a SELECT argument means (`db3` for 3, a
    /// `database-name` mapping, or a name), without opening it.
    func cacheName(selecting argument: some Collection<UInt8>) throws(ReplyError) -> String {
        if let index = parseStrictInt64(argument) {
            guard index >= Int64(Int32.min) && index <= Int64(Int32.max) else { throw .intOutOfRange }
            if let mapped = config.databaseNames[Int(index)] { return mapped }
            guard index >= 0 && index < Int64(config.databases) else { throw .dbIndexOutOfRange }
            return "db\(index)"
        }
        if Self.looksNumeric(argument) { throw .notInteger }
        let text = String(decoding: argument, as: UTF8.self)
        guard let name = try? SQLiteKVCache.canonicalHandle(text) else {
            throw ReplyError("ERR invalid cache name '\(text.prefix(80))': use 1 to 64 of a-z 0-9 . _ - or a DB index")
        }
        return name
    }

    /// True for a sign and digits only ("01", "+1", "-0", 20 digits): such an
    /// argument is a malformed index, never a cache name.
    static func looksNumeric(_ bytes: some Collection<UInt8>) -> Bool {
        var digits = bytes[...]
        if let first = digits.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// `rejoin-policy flush`: every cache's file and the append-only log go
    /// before anything opens them, so the node starts empty (unlinking the
    /// files, not a DELETE over large tables). Other files stay.
    static func removeCachedData(_ config: ServerConfig, logger: Logger) throws {
        let fm = FileManager.default
        var removed = 0
        for file in (try? fm.contentsOfDirectory(atPath: config.dir)) ?? [] where file.contains(".sqlite") {
            guard unlink(config.dir + "/" + file) == 0 || errno == ENOENT else {
                throw ConfigError("rejoin-policy flush: can't remove \(config.dir)/\(file): \(String(cString: strerror(errno)))")
            }
            if file.hasSuffix(".sqlite") { removed += 1 }
        }
        let logDirectory = config.dir + "/" + config.appendDirName
        if fm.fileExists(atPath: logDirectory) {
            do { try fm.removeItem(atPath: logDirectory) } catch {
                throw ConfigError("rejoin-policy flush: can't remove \(logDirectory): \(error.localizedDescription)")
            }
        }
        logger.notice("rejoin-policy flush: started empty (removed \(removed) cache files and the append-only log)")
    }

    /// The cache every connection starts in (database 0, or its `database-name`).
    func firstCache() throws(ReplyError) -> OpenCache { try cache(named: config.cacheName(forIndex: 0)) }

    /// The cache with this canonical name, opening (and creating) it if needed.
    func cache(named name: String) throws(ReplyError) -> OpenCache {
        if let cache = open[name] { return cache }
        if !known.contains(name) && known.count >= config.maxCaches {
            throw ReplyError("ERR max-caches reached (\(config.maxCaches)): cannot create cache '\(name)'")
        }
        let (engine, openError) = openEngine(name)
        let cache = OpenCache(name: name, engine: engine, openError: openError, databaseNames: config.databaseNames)
        cache.onEngineEvent = onEngineEvent
        cache.checkCapacity()
        open[name] = cache
        known.insert(name)
        return cache
    }

    /// The memory every open cache's entries share (`memory-tier-size`).
    lazy var memoryBudget = MemoryBudget(limit: config.memoryTierBytes)
    /// The read transactions the caches' point reads share within one
    /// iteration of the loop (ended before it sleeps or waits on the writer).
    let heldReads = HeldReads()

    /// How accesses stamp keys (LRU clock, LFU counter), shared by every cache.
    lazy var accessTracking: AccessTracking = {
        let tracking = AccessTracking()
        tracking.lfuLogFactor = config.lfuLogFactor
        tracking.lfuDecayTime = config.lfuDecayTime
        return tracking
    }()

    /// Told when a cache's engine opens (the log must stay ahead of its file).
    var onOpen: ((CacheEngine) -> Void)?
    /// Whether a cache opened now leaves the scan of its file's keys for
    /// later (while the log is replayed; then `startKeyScans`).
    var holdsKeyScans = false
    /// Told of what each cache's engine reports (expiries and evictions for
    /// keyspace events); set on the caches already open too.
    var onEngineEvent: ((OpenCache, CacheEvent) -> Void)? {
        didSet { for cache in open.values { cache.onEngineEvent = onEngineEvent } }
    }
    /// Where a slow open (a VACUUM of a fragmented file) is reported, as LATENCY's `cache-open`.
    var latency: LatencyMonitor?

    /// Creates and opens the engine for `name` with its configured capacity and policy.
    private func openEngine(_ name: String) -> (CacheEngine?, SQLiteKVCache.Error?) {
        let settings = config.settings(forCache: name)
        var configuration = SQLiteKVCache.Configuration(
            diskCapacity: settings.capacity, evictionPolicy: settings.policy, pageCacheBytes: config.pageCacheBytes,
            memoryTierBytes: config.memoryTierBytes)
        configuration.maxPageCount = config.sqliteMaxPageCount
        configuration.durableCommits = true
        configuration.sharedMemoryBudget = memoryBudget
        configuration.heldReads = heldReads
        configuration.accessTracking = accessTracking
        configuration.scansKeysAtOpen = !holdsKeyScans
        // A replayed command sees its record's time (Server.clockOverride);
        // a running command, the time it started (Server.commandTime).
        configuration.millisecondClock = { Server.keyTime() }
        let logger = self.logger
        configuration.onRecovery = { message in logger.warning(message) }
        configuration.onProgress = { message in logger.notice(message) }
        let started = Server.nowMilliseconds()
        do {
            let engine = try CacheEngine.open(handle: name, directory: config.dir, configuration: configuration)
            let elapsed = Server.nowMilliseconds() - started
            latency?.addIfNeeded("cache-open", milliseconds: Int(elapsed))
            let line = "Opened cache '\(name)': \(engine.count) keys in \(elapsed) ms"
            if elapsed >= 1000 || engine.count >= 1_000_000 { logger.notice(line) } else { logger.verbose(line) }
            onOpen?(engine)
            return (engine, nil)
        } catch {
            logger.warning("Cache '\(name)' is unavailable: \(error)")
            return (nil, error)
        }
    }

    /// Lets caches scan their files' keys again, and starts the scans held.
    func startKeyScans() {
        holdsKeyScans = false
        for cache in open.values { cache.engine?.buildFileKeysIfWanted() }
    }

    /// Closes and reopens a cache's file (DEBUG RELOAD: what memory holds
    /// must have reached the file).
    func reopen(_ cache: OpenCache) {
        cache.closeEngine()
        (cache.engine, cache.openError) = openEngine(cache.name)
        cache.checkCapacity()
    }

    /// A cache whose file SQLite found damaged while serving: the file is
    /// moved aside and the cache starts empty; the other caches never notice.
    func recoverCorrupt(_ cache: OpenCache, reason: String) {
        guard let engine = cache.engine else { return }
        cache.earlierEvicted += engine.evictedCount
        cache.earlierExpired += engine.expiredCount
        engine.closeAndQuarantine(reason: reason)
        cache.engine = nil
        (cache.engine, cache.openError) = openEngine(cache.name)
    }

    /// Exchanges the engines of two caches (SWAPDB): every client that
    /// selected one now sees the other's contents, at once. Each engine
    /// takes its new name's capacity and policy. Their files are exchanged
    /// later (`exchangeMisplacedFiles`), once the writer has emptied their WALs.
    func swapEngines(_ a: OpenCache, _ b: OpenCache) {
        (a.engine, b.engine) = (b.engine, a.engine)
        (a.openError, b.openError) = (b.openError, a.openError)
        for cache in [a, b] {
            guard let engine = cache.engine else { continue }
            let settings = config.settings(forCache: cache.name)
            engine.setPolicy(settings.policy)
            if (try? engine.setCapacity(settings.capacity, batchLimit: 0)) == false { cache.needsEviction = true }
            cache.checkCapacity()
        }
    }

    /// Engines serving a name other than their file's (after SWAPDB).
    func misplacedEngines() -> [CacheEngine] {
        open.values.compactMap { cache in cache.engine.flatMap { $0.handle == cache.name ? nil : $0 } }
    }

    /// Moves every misplaced engine's file to the name it serves, by atomic
    /// exchanges of two files (renameat2 RENAME_EXCHANGE: a crash leaves
    /// either the old or the new names, and the log's swap record tells a
    /// replay which). The writer has emptied their WALs.
    func exchangeMisplacedFiles() {
        for cache in open.values.sorted(by: { $0.name < $1.name }) {
            guard let x = cache.engine, x.handle != cache.name else { continue }
            // x's file is at x.handle; the engine that owns the file at cache.name:
            guard let other = open.values.first(where: { $0.engine?.handle == cache.name }), let y = other.engine else {
                continue
            }
            let pathX = config.dir + "/" + x.handle + ".sqlite"
            let pathY = config.dir + "/" + y.handle + ".sqlite"
            let (nameX, nameY) = (x.handle, y.handle)
            x.closeFileForRename()
            y.closeFileForRename()
            let fm = FileManager.default
            for path in [pathX, pathY] {
                try? fm.removeItem(atPath: path + "-wal")
                try? fm.removeItem(atPath: path + "-shm")
            }
            if renameat2(kv_AT_FDCWD, pathX, kv_AT_FDCWD, pathY, kv_RENAME_EXCHANGE) != 0 {
                logger.warning("SWAPDB could not exchange \(pathX) and \(pathY): \(String(cString: strerror(errno)))")
                // Leave the names as they were: each engine reopens its own file.
                reopenOrFail(x, as: nameX, cache: cache)
                reopenOrFail(y, as: nameY, cache: other)
                continue
            }
            reopenOrFail(x, as: nameY, cache: cache)
            reopenOrFail(y, as: nameX, cache: other)
        }
    }

    private func reopenOrFail(_ engine: CacheEngine, as name: String, cache: OpenCache) {
        do {
            try engine.reopenFile(as: name, directory: config.dir)
        } catch {
            logger.warning("Reopening cache file '\(name)' failed: \(error)")
            if cache.engine === engine {
                cache.engine = nil
                cache.openError = error
            }
        }
    }

    /// Opens every cache with a file in the directory (for FLUSHALL).
    func openAllKnown() -> [OpenCache] {
        for name in known.sorted() where open[name] == nil {
            _ = try? cache(named: name)
        }
        return open.keys.sorted().compactMap { open[$0] }
    }

    /// Closes every cache: checkpoint, release the lock. What memory holds
    /// and was not applied is lost (the log keeps it, when there is one).
    func closeAll() {
        for cache in open.values { cache.closeEngine() }
        open.removeAll()
    }

    /// Applies changed capacity, policy and memory settings to the open caches.
    /// Caches over capacity evict in bounded batches from the server's loop.
    func apply(_ newConfig: ServerConfig) {
        config = newConfig
        memoryBudget.limit = config.memoryTierBytes
        accessTracking.lfuLogFactor = config.lfuLogFactor
        accessTracking.lfuDecayTime = config.lfuDecayTime
        for cache in open.values {
            guard let engine = cache.engine else { continue }
            let settings = config.settings(forCache: cache.name)
            engine.setPolicy(settings.policy)
            if let within = try? engine.setCapacity(settings.capacity, batchLimit: 0), !within {
                cache.needsEviction = true
            }
        }
    }
}
