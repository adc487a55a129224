#if canImport(Glibc)
import Glibc
#endif
import SQLiteKVCache

/// INFO's two views of the caches: `keyspace` exactly as Redis writes it,
/// for the numbered caches only (the lines every Redis tool parses), and
/// `caches`, this server's figures for every open cache, numbered and named.
extension Server {
    /// Redis's `# Keyspace` lines: `db<n>:keys=N,expires=N,avg_ttl=N` for
    /// each cache `db<n>` with `n < databases` that holds a key, by index.
    /// Named caches (a name that is not `db<n>` in range, `db16` with
    /// `databases 16` included) are never here: Redis tools (the Prometheus
    /// exporter among them) read any field whose name starts with `db` as a
    /// numbered database. They are in `# Caches`.
    func keyspaceLines(now: Int64, visible: (OpenCache) -> Bool = { _ in true }) -> [String] {
        var numbered: [(index: Int, cache: OpenCache)] = []
        for cache in registry.open.values where visible(cache) {
            guard let index = cache.databaseIndex, index < config.databases else { continue }
            numbered.append((index, cache))
        }
        var lines: [String] = []
        for (index, cache) in numbered.sorted(by: { $0.index < $1.index }) {
            try? makeTotalsExact(cache)
            guard let s = cache.statistics(), s.entries > 0 || s.volatileEntries > 0 else { continue }
            lines.append("db\(index):keys=\(s.entries),expires=\(s.volatileEntries),avg_ttl=\(averageTTL(s, now: now))")
        }
        return lines
    }

    /// `# Caches`: one line per open cache, numbered caches first (by
    /// index), then named ones (by name), each `cache_<name>:` and
    /// `field=value` pairs: Redis's three keyspace fields, then content
    /// bytes, capacity, policy, the cache's keyspace hits and misses,
    /// evictions and expiries, what memory holds of it, its file and WAL
    /// sizes, the bytes of its changes not yet in SQLite, and `available=1`.
    /// A cache whose file cannot be opened is `cache_<name>:available=0`.
    /// No field name starts with `db`.
    func cacheLines(now: Int64, visible: (OpenCache) -> Bool = { _ in true }) -> [String] {
        let databases = config.databases
        func index(_ cache: OpenCache) -> Int? { cache.databaseIndex.flatMap { $0 < databases ? $0 : nil } }
        let ordered = registry.open.values.filter(visible).sorted { a, b in
            switch (index(a), index(b)) {
            case let (x?, y?): return x < y
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a.name < b.name
            }
        }
        return ordered.map { cache in
            try? makeTotalsExact(cache)
            guard let engine = cache.engine, let s = cache.statistics() else {
                return "cache_\(cache.name):available=0"
            }
            let path = config.dir + "/" + engine.handle + ".sqlite"
            return "cache_\(cache.name):keys=\(s.entries),expires=\(s.volatileEntries),avg_ttl=\(averageTTL(s, now: now)),"
                + "bytes=\(s.contentBytes),capacity=\(s.capacity),policy=\(s.policy.rawValue),"
                + "hits=\(cache.hits),misses=\(cache.misses),evicted=\(s.evicted),expired=\(s.expired),"
                + "tier_entries=\(s.tierEntries),tier_bytes=\(s.tierBytes),"
                + "file_bytes=\(fileSize(path)),wal_bytes=\(fileSize(path + "-wal")),"
                + "unapplied_bytes=\(s.unappliedBytes),available=1"
        }
    }

    /// Redis's avg_ttl: milliseconds until the mean expiry of the keys that have one (0 when none).
    private func averageTTL(_ s: SQLiteKVCache.Statistics, now: Int64) -> Int64 {
        s.volatileEntries > 0 ? max(0, s.meanExpiresAt - now) : 0
    }
}

/// The size of a file in bytes, 0 when it does not exist.
func fileSize(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : 0
}
