#if canImport(Glibc)
import Glibc
#endif
import CLinux
import RESP
import SQLiteKVCache

/// The loop's side of persistence (the log, the memtables and the writer
/// thread are `Persistence`): exact totals after a replay, recovering a
/// damaged cache file, and DEBUG RELOAD.
extension Server {
    /// Makes a cache's totals exact after a replay's blind writes: waits for
    /// the writer when it holds some (it corrects them), looks the rest up.
    func makeTotalsExact(_ cache: OpenCache) throws {
        guard let engine = cache.engine, engine.totalsPending else { return }
        if engine.totalsPendingInFlight {
            persistence.waitForWriter()
            persistence.collectFinished()
        }
        try engine.resolveTotals()
    }

    /// A cache whose file SQLite found damaged: once the writer is done
    /// with it, the file is moved aside and the cache starts empty.
    func recoverCorrupt(_ cache: OpenCache, reason: String) {
        if cache.engine?.inFlight != nil {
            persistence.waitForWriter()
            persistence.collectFinished()
        }
        registry.recoverCorrupt(cache, reason: reason)
    }

    /// Closes and reopens every open cache (DEBUG RELOAD), after applying
    /// everything memory holds to SQLite.
    func reloadCaches() {
        persistence.applyAll()
        for cache in registry.open.values { registry.reopen(cache) }
    }
}
