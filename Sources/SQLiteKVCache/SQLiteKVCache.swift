import Foundation

/// A persistent key-value cache in one SQLite file, `<directory>/<handle>.sqlite`.
///
/// Entries are (key, storageDate, metadata, value), all bytes, with a
/// `ValueKind` saying what the value holds (a string unless told). The cache
/// keeps its content (key + value + metadata bytes) within `diskCapacity`,
/// evicting per its policy (oldest storage date first by default); 0 means
/// unbounded. The file opens lazily on first use and the outcome is kept:
/// if it failed, every call throws the same error. Safe to call from many
/// threads; calls are serialized.
public final class SQLiteKVCache: @unchecked Sendable {
    /// Settings beyond the reference initializer's.
    public struct Configuration: Sendable {
        /// Content bytes the cache may hold; 0 for unbounded.
        public var diskCapacity: Int
        public var evictionPolicy: EvictionPolicy
        /// SQLite's page cache for this file, in bytes.
        public var pageCacheBytes: Int
        /// Hot entries kept in memory to skip SQLite on reads, in bytes; 0 disables.
        public var memoryTierBytes: Int
        /// The time used for expiry, injectable for tests.
        public var clock: @Sendable () -> Date
        /// SQLite's `max_page_count` for the file (0: SQLite's default); a
        /// write past it fails as on a full disk.
        public var maxPageCount: Int = 0
        /// Told, in words, how a long open (a VACUUM) is going, about once a second.
        public var onProgress: (@Sendable (String) -> Void)?
        /// Told, in words, when a corrupted file was moved aside and replaced.
        public var onRecovery: (@Sendable (String) -> Void)?

        public init(diskCapacity: Int = 0, evictionPolicy: EvictionPolicy = .fifo,
                    pageCacheBytes: Int = 16 << 20, memoryTierBytes: Int = 16 << 20,
                    clock: @escaping @Sendable () -> Date = { Date() }) {
            self.diskCapacity = diskCapacity
            self.evictionPolicy = evictionPolicy
            self.pageCacheBytes = pageCacheBytes
            self.memoryTierBytes = memoryTierBytes
            self.clock = clock
        }
    }

    /// The cache's name as given.
    public let handle: String
    /// The directory holding the cache file.
    public let directory: String

    private enum State {
        case notOpened(Configuration)
        case open(CacheStore)
        case failed(Error)
    }

    /// Every access to the store goes through `withLock` (a pthread mutex,
    /// which ThreadSanitizer understands).
    private let state: Locked<State>

    /// Creates a cache; nothing touches the disk until the first call.
    public convenience init(handle: String, directory: URL, diskCapacity: Int) {
        self.init(handle: handle, directory: directory.path, configuration: Configuration(diskCapacity: diskCapacity))
    }

    /// Creates a cache; nothing touches the disk until the first call.
    public convenience init(handle: String, directory: String, diskCapacity: Int) {
        self.init(handle: handle, directory: directory, configuration: Configuration(diskCapacity: diskCapacity))
    }

    /// Creates a cache with full settings; nothing touches the disk until the first call.
    public init(handle: String, directory: String, configuration: Configuration) {
        self.handle = handle
        self.directory = directory
        self.state = Locked(.notOpened(configuration))
    }

    /// Runs `body` on the open store, opening it first if needed. A SQLite
    /// report of corruption (code 11 or 26) moves the file aside and starts
    /// a fresh one; the failing call still throws, the next one works.
    private func withStore<R: Sendable>(_ body: (CacheStore) throws(Error) -> R) throws(Error) -> R {
        try state.withLock { (state: inout State) throws(Error) -> R in
            let store: CacheStore
            switch state {
            case .open(let open):
                store = open
            case .failed(let error):
                throw error
            case .notOpened(let configuration):
                do throws(Error) {
                    store = try openStore(configuration)
                } catch {
                    state = .failed(error)
                    throw error
                }
                state = .open(store)
            }
            do throws(Error) {
                return try body(store)
            } catch {
                if let code = error.sqliteCode, Self.corruptionCodes.contains(code) {
                    store.close()
                    let configuration = store.configuration
                    quarantine(store.path, configuration, reason: "\(error)")
                    do throws(Error) {
                        state = .open(try openStore(configuration))
                    } catch let reopenError {
                        state = .failed(reopenError)
                    }
                }
                throw error
            }
        }
    }

    /// SQLite's codes for a damaged file: SQLITE_CORRUPT and SQLITE_NOTADB.
    static let corruptionCodes: Set<Int32> = [11, 26]

    /// Opens the store; a file found corrupted at open is moved aside and
    /// replaced by a fresh cache once.
    private func openStore(_ configuration: Configuration) throws(Error) -> CacheStore {
        let name = try SQLiteKVCache.canonicalHandle(handle)
        func attempt() throws -> CacheStore {
            try CacheStore(handle: name, directory: directory, configuration: configuration)
        }
        do {
            return try attempt()
        } catch CacheStore.OpenError.corrupt(let path, let reason) {
            quarantine(path, configuration, reason: reason)
            do {
                return try attempt()
            } catch CacheStore.OpenError.corrupt(_, let reason) {
                throw .databaseUnavailable(reason: "\(path) is still corrupt after recreation: \(reason)")
            } catch let error as Error {
                throw error
            } catch {
                throw .databaseUnavailable(reason: "\(error)")
            }
        } catch let error as Error {
            throw error
        } catch {
            throw .databaseUnavailable(reason: "\(error)")
        }
    }

    /// Moves a damaged cache file (and its -wal/-shm) aside as
    /// `<name>.sqlite.corrupt-<unix time>`.
    private func quarantine(_ path: String, _ configuration: Configuration, reason: String) {
        let stamp = Int(Date().timeIntervalSince1970)
        var target = "\(path).corrupt-\(stamp)"
        var n = 1
        while FileManager.default.fileExists(atPath: target) {
            target = "\(path).corrupt-\(stamp)-\(n)"
            n += 1
        }
        let fm = FileManager.default
        try? fm.moveItem(atPath: path, toPath: target)
        for suffix in ["-wal", "-shm"] where fm.fileExists(atPath: path + suffix) {
            try? fm.moveItem(atPath: path + suffix, toPath: target + suffix)
        }
        configuration.onRecovery?("Cache file \(path) is corrupt (\(reason)): moved aside as \(target), starting an empty cache")
    }

    /// Opens the cache file now rather than on first use.
    /// - Throws: why the cache is unavailable.
    public func open() throws(Error) {
        try withStore { _ in }
    }

    /// Returns the entry stored under `key`.
    /// - Returns: nil only for a genuine miss (absent or expired).
    /// - Throws: `readFailed` or the reason the cache is unavailable.
    public func get(key: [UInt8]) throws(Error) -> Entry? {
        try withStore { store throws(Error) in try store.get(key: key) }
    }

    /// Stores an entry, replacing any under the same key, then evicts per
    /// policy to stay within capacity.
    /// - Throws: `entryTooLarge` when the entry alone is over capacity,
    ///   `writeFailed` from SQLite, or the reason the cache is unavailable.
    public func put(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8], expiresAt: Int64? = nil) throws(Error) {
        let entry = Entry(key: key, storageDate: storageDate, metadata: metadata, value: value, expiresAt: expiresAt)
        try withStore { store throws(Error) in try store.put(entry) }
    }

    /// Stores a whole entry (its kind and expiry included), replacing any
    /// under the same key, then evicts per policy to stay within capacity.
    /// - Throws: as `put(key:storageDate:metadata:value:expiresAt:)`.
    public func put(_ entry: Entry) throws(Error) {
        try withStore { store throws(Error) in try store.put(entry) }
    }

    /// Removes the entry under `key`.
    /// - Returns: whether there was one.
    @discardableResult
    public func delete(key: [UInt8]) throws(Error) -> Bool {
        try withStore { store throws(Error) in try store.delete(key: key) }
    }

    /// Removes every entry.
    public func clear() throws(Error) {
        try withStore { store throws(Error) in try store.clear() }
    }

    /// True when a live (present, unexpired) entry exists for `key`.
    public func contains(key: [UInt8]) throws(Error) -> Bool {
        try withStore { store throws(Error) in try store.contains(key: key) }
    }

    /// Marks `key` as just used (for LRU) when it is live.
    /// - Returns: whether it is live.
    @discardableResult
    public func touch(key: [UInt8]) throws(Error) -> Bool {
        try withStore { store throws(Error) in try store.touch(key: key) }
    }

    /// Sets (milliseconds since 1970) or clears (nil) the expiry of a live entry.
    /// - Returns: whether there was a live entry.
    @discardableResult
    public func setExpiry(key: [UInt8], expiresAt: Int64?) throws(Error) -> Bool {
        try withStore { store throws(Error) in try store.setExpiry(key: key, expiresAt: expiresAt) }
    }

    /// True when some entry's expiry time has passed (cheap: no SQL).
    public func expiryDue() throws(Error) -> Bool {
        try withStore { store in store.totals.volatile > 0 && store.earliestExpiry <= store.nowMilliseconds() }
    }

    /// Removes up to `limit` expired entries, soonest first, in O(log n) each.
    /// - Returns: how many went; fewer than `limit` means none is left due.
    public func removeExpired(limit: Int) throws(Error) -> Int {
        try withStore { store throws(Error) in try store.expireStep(limit: limit) }
    }

    /// Evicts up to `limit` entries toward capacity (after a capacity cut).
    /// - Returns: true when the cache is within capacity.
    public func evict(limit: Int) throws(Error) -> Bool {
        try withStore { store throws(Error) in try store.evictStep(limit: limit) }
    }

    /// One step of a scan of the live keys: start at cursor 0, continue with
    /// the returned cursor until it is 0 again. A key present for the whole
    /// scan is returned exactly once.
    /// With `kind`, only keys holding that kind of value are returned; the
    /// cursor moves on as it would without it.
    public func scan(cursor: UInt64, count: Int, kind: ValueKind? = nil) throws(Error) -> (keys: [[UInt8]], next: UInt64) {
        try withStore { store throws(Error) in try store.scan(cursor: cursor, count: count, kind: kind) }
    }

    /// Every live key.
    public func keys() throws(Error) -> [[UInt8]] {
        try withStore { store throws(Error) in try store.allKeys() }
    }

    /// A live key chosen at random, or nil when there is none.
    public func randomKey() throws(Error) -> [UInt8]? {
        try withStore { store throws(Error) in try store.randomKey() }
    }

    /// Counters and settings, read in one call.
    public struct Statistics: Sendable, Equatable {
        public var entries: Int
        public var contentBytes: Int
        public var capacity: Int
        public var policy: EvictionPolicy
        /// Entries that have an expiry.
        public var volatileEntries: Int
        /// The mean expiry time of those, in milliseconds since 1970 (0 when none).
        public var meanExpiresAt: Int64
        /// Evicted and expired since this instance opened the file.
        public var evicted: Int
        public var expired: Int
        /// Reads served from the memory tier, reads that went to SQLite, and the tier's size.
        public var tierHits: Int
        public var tierMisses: Int
        public var tierBytes: Int
        public var tierEntries: Int
        /// WAL checkpoints run on the background connection.
        public var backgroundCheckpoints: Int
    }

    public func statistics() throws(Error) -> Statistics {
        try withStore { store in
            let t = store.totals
            return Statistics(entries: t.count, contentBytes: t.bytes, capacity: store.capacity, policy: store.policy,
                              volatileEntries: t.volatile,
                              meanExpiresAt: t.volatile > 0 ? Int64(t.expiresSum / Double(t.volatile)) : 0,
                              evicted: store.evictedCount, expired: store.expiredCount,
                              tierHits: store.tier.hits, tierMisses: store.tier.misses,
                              tierBytes: store.tier.bytes, tierEntries: store.tier.count,
                              backgroundCheckpoints: store.checkpointer.completed.withLock { $0 })
        }
    }

    /// The number of entries stored (expired ones not yet removed included).
    public func count() throws(Error) -> Int {
        try withStore { store in store.count }
    }

    /// The content bytes (key + value + metadata) stored.
    public func contentBytes() throws(Error) -> Int {
        try withStore { store in store.bytes }
    }

    /// Entries evicted since this instance opened the file.
    public func evictedCount() throws(Error) -> Int {
        try withStore { store in store.evictedCount }
    }

    /// The capacity in content bytes; 0 for unbounded.
    public func capacity() throws(Error) -> Int {
        try withStore { store in store.capacity }
    }

    /// Sets the capacity and evicts down to it, at most `batchLimit` entries
    /// now (the rest with `evict(limit:)`).
    /// - Returns: true when the cache is within the new capacity.
    @discardableResult
    public func setCapacity(_ capacity: Int, batchLimit: Int = .max) throws(Error) -> Bool {
        try withStore { store throws(Error) in try store.setCapacity(capacity, batchLimit: batchLimit) }
    }

    /// The eviction policy in force.
    public func evictionPolicy() throws(Error) -> EvictionPolicy {
        try withStore { store in store.policy }
    }

    /// Sets the eviction policy.
    public func setEvictionPolicy(_ policy: EvictionPolicy) throws(Error) {
        _ = try withStore { store in store.policy = policy }
    }

    /// Defers the writes of a batch (see `beginBatch`): puts and deletes are
    /// kept in memory, the latest per key, and applied to SQLite when the
    /// batch commits. For a server acknowledging writes before they commit.
    public func setDeferredWrites(_ enabled: Bool) throws(Error) {
        _ = try withStore { store in store.deferWrites = enabled }
    }

    /// Commits a small write (the stats row) to check that writes succeed
    /// again, for instance once a full disk has room.
    /// - Throws: `writeFailed` while they do not.
    public func probeWrite() throws(Error) {
        try withStore { store throws(Error) in try store.write {} }
    }

    /// Writes waiting for the batch to commit, and their content bytes.
    public func pendingWrites() throws(Error) -> (count: Int, bytes: Int) {
        try withStore { store in (store.pending.count, store.pendingBytes) }
    }

    /// Starts grouping writes into one transaction until `commitBatch()`.
    /// Meant for a single owner (the server's loop thread): writes from
    /// other threads meanwhile join the same batch.
    public func beginBatch() throws(Error) {
        try withStore { store in store.beginBatch() }
    }

    /// Commits the writes grouped since `beginBatch()`.
    /// - Throws: `writeFailed` when the batch could not be committed; then
    ///   none of its writes are kept.
    public func commitBatch() throws(Error) {
        try withStore { store throws(Error) in try store.commitBatch() }
    }

    /// Commits, checkpoints the WAL into the file and closes it, releasing
    /// the lock. Later calls throw `databaseUnavailable`.
    public func close() {
        state.withLock { state in
            if case .open(let store) = state { store.close() }
            state = .failed(.databaseUnavailable(reason: "cache '\(handle)' is closed"))
        }
    }

    deinit {
        close()
    }
}

/// A value behind a pthread mutex (NSLock).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R, E: Swift.Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
