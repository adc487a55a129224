import Foundation
import CLinux
import RESP
import SQLiteKVCache

/// One named cache as the server sees it: the engine serving it and its
/// counters. The engine moves between names on SWAPDB (until the writer
/// has exchanged their files, an engine's own file may be another name's).
final class OpenCache {
    let name: String
    /// The engine serving the cache; nil when its file could not be opened.
    var engine: CacheEngine? { didSet { attachObserver() } }
    /// Told of the engine's changes (Server: keyspace events), whichever engine serves the cache.
    var onEngineEvent: ((OpenCache, CacheEvent) -> Void)? { didSet { attachObserver() } }

    private func attachObserver() {
        guard let engine else { return }
        guard let sink = onEngineEvent else { engine.onEvent = nil; return }
        engine.onEvent = { [unowned self] event in sink(self, event) }
        engine.reportsWrites = false  // the server hears of expiries and evictions only
    }
    /// Why the file could not be opened, if it could not; kept until reopened.
    var openError: SQLiteKVCache.Error?
    var hits = 0
    var misses = 0
    /// Keys evicted and expired outside the engine's counters: by engines
    /// closed before, less what the engine counted before CONFIG RESETSTAT.
    var earlierEvicted = 0
    var earlierExpired = 0
    /// True while the cache is over capacity after a capacity cut.
    var needsEviction = false

    init(name: String, engine: CacheEngine?, openError: SQLiteKVCache.Error?, databaseNames: [Int: String] = [:]) {
        self.name = name
        if let mapped = databaseNames.first(where: { $0.value == name }) {
            databaseIndex = mapped.key
        } else if let n = CacheRegistry.databaseIndex(ofName: name), databaseNames[n] == nil {
            databaseIndex = n
        } else {
            databaseIndex = nil
        }
        self.engine = engine
        self.openError = openError
    }

    /// The engine, or the reason there is none.
    func usableEngine() throws(ReplyError) -> CacheEngine {
        guard let engine else { throw ReplyError.engine(openError ?? .databaseUnavailable(reason: "cache '\(name)' is closed")) }
        return engine
    }

    /// The engine's statistics, with counters carried across reopenings.
    func statistics() -> SQLiteKVCache.Statistics? {
        guard var stats = engine?.statistics() else { return nil }
        stats.evicted += earlierEvicted
        stats.expired += earlierExpired
        return stats
    }

    /// Marks the cache for background eviction when it holds more than its
    /// capacity (its capacity was lowered between runs, or SWAPDB brought
    /// in a fuller cache).
    func checkCapacity() {
        guard let engine else { return }
        needsEviction = engine.capacity > 0 && engine.contentBytes > engine.capacity
    }

    /// Closes the engine's file, keeping its counters. Changes not applied are lost.
    func closeEngine() {
        guard let engine else { return }
        earlierEvicted += engine.evictedCount
        earlierExpired += engine.expiredCount
        engine.close()
        self.engine = nil
    }

    /// The Redis database index this cache stands for: `db3` → 3, or the
    /// index `database-name` maps to it; nil for a named cache, and for
    /// `db<n>` when n is mapped to another cache.
    let databaseIndex: Int?
}
