#if canImport(Glibc)
import Glibc
#endif
import CLinux
import RESP
import SQLiteKVCache

/// The loop's side of persistence (the log, the memtables and the writer
/// thread are `Persistence`): recovering a damaged cache file, and DEBUG
/// RELOAD.
extension Server {
    /// A cache whose file SQLite found damaged: once the writer is done
    /// with it, the file is moved aside and the cache starts empty.
    func recoverCorrupt(_ cache: OpenCache, reason: String) {
        if cache.engine?.inFlight != nil {
            persistence.writer.waitUntilIdle()
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
