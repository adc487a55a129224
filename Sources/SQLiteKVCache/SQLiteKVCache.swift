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
        /// A budget shared with other caches, used instead of `memoryTierBytes` when set.
        public var sharedMemoryBudget: MemoryBudget?
        /// How accesses stamp keys (LRU clock, LFU counter), shared with other caches when set.
        public var accessTracking: AccessTracking?
        /// The time used for expiry, injectable for tests.
        public var clock: @Sendable () -> Date
        /// The same time in milliseconds since 1970, used instead of `clock`
        /// when set: the server's clock, cached per command, without a `Date`.
        public var millisecondClock: (@Sendable () -> Int64)?
        /// SQLite's `max_page_count` for the file (0: SQLite's default); a
        /// write past it fails as on a full disk.
        public var maxPageCount: Int = 0
        /// Whether each commit fsyncs the WAL (`synchronous=FULL`), so an
        /// applied batch survives a power loss; otherwise `NORMAL` (it
        /// survives a crash of the process; a checkpoint makes it durable).
        public var durableCommits = false
        /// When set, the reader's calls share one read transaction until the
        /// owner calls `heldReads.releaseAll()` (the server's loop, once per
        /// iteration): a point read then costs no file locking (two
        /// `fcntl`s and an `fstat` each, a fifth of a cold GET's time). The
        /// engine releases its own when a batch completes. Unset (each call
        /// its own transaction) for an owner that also applies batches on its
        /// own thread: a checkpoint there would wait on its own reader.
        public var heldReads: HeldReads?
        /// Whether opening the file starts the scan of its keys for the
        /// filter of what it holds; otherwise the owner starts it with
        /// `CacheEngine.buildFileKeysIfWanted` (the server, once its log is
        /// replayed: the scan would take the replay's time, and the replay
        /// does not need it).
        public var scansKeysAtOpen = true
        /// Told, in words, how a long open (a VACUUM) is going, about once a second.
        public var onProgress: (@Sendable (String) -> Void)?
        /// Told, in words, when a corrupted file was moved aside and replaced.
        public var onRecovery: (@Sendable (String) -> Void)?
        /// Told of every change as it happens, on the calling thread: a put,
        /// a delete, an expired entry removed (by a read or `removeExpired`),
        /// an eviction to capacity, a clear (the seed design's update hook,
        /// for embedded users; the server names its own events).
        public var onChange: (@Sendable (CacheEvent) -> Void)?

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
        case open(Store)
        case failed(Error)
    }

    /// The engine, and whether a batch groups the writes until `commitBatch`.
    /// Outside a batch every change is applied to the file before the call
    /// returns.
    private final class Store {
        let engine: CacheEngine
        let configuration: Configuration
        var batchOpen = false

        init(_ engine: CacheEngine, _ configuration: Configuration) {
            self.engine = engine
            self.configuration = configuration
        }

        /// Applies what changed, unless a batch is open; then eviction goes
        /// on if it waited for that batch to move rows in age order.
        func settle() throws(Error) {
            guard !batchOpen else { return }
            try apply()
            var rounds = 0
            while engine.overCapacity && engine.evictionResumesAfterBatch && rounds < 16 {
                rounds += 1
                _ = try engine.evict(limit: .max)
                try apply()
            }
        }

        /// Applies every change to the file in one transaction.
        /// - Throws: `writeFailed`; then none of them is kept.
        func apply() throws(Error) {
            guard let batch = engine.seal(lsn: engine.appliedLSN) else { return }
            do throws(Error) {
                try batch.file.apply(batch)
            } catch {
                batch.error = error
            }
            engine.complete(batch, onFailure: .rollBack)
            if let error = batch.error { throw error }
        }
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
    private func withStore<R>(_ body: (Store) throws(Error) -> R) throws(Error) -> R {
        try state.withLock { (state: inout State) throws(Error) -> R in
            let store: Store
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
                    store.engine.close()
                    let configuration = store.configuration
                    Self.quarantine(store.engine.path, configuration, reason: "\(error)")
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

    /// Runs `body` on the engine, then applies what it changed (outside a batch).
    private func changing<R>(_ body: (CacheEngine) throws(Error) -> R) throws(Error) -> R {
        try withStore { store throws(Error) in
            let result: R
            do throws(Error) {
                result = try body(store.engine)
            } catch {
                try? store.settle()  // what changed before the failure (an eviction, a lazy expiry)
                throw error
            }
            try store.settle()
            return result
        }
    }

    /// SQLite's codes for a damaged file: SQLITE_CORRUPT and SQLITE_NOTADB.
    static let corruptionCodes: Set<Int32> = [11, 26]

    /// Opens the store; a file found corrupted at open is moved aside and
    /// replaced by a fresh cache once.
    private func openStore(_ configuration: Configuration) throws(Error) -> Store {
        let name = try SQLiteKVCache.canonicalHandle(handle)
        let engine = try CacheEngine.open(handle: name, directory: directory, configuration: configuration)
        if let onChange = configuration.onChange { engine.onEvent = { onChange($0) } }
        return Store(engine, configuration)
    }

    /// Moves a damaged cache file (and its -wal/-shm) aside as
    /// `<name>.sqlite.corrupt-<unix time>`, telling `onRecovery`.
    static func quarantine(_ path: String, _ configuration: Configuration, reason: String) {
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
        try changing { engine throws(Error) in try engine.get(key)?.plain }
    }

    /// Stores an entry, replacing any under the same key, then evicts per
    /// policy to stay within capacity.
    /// - Throws: `entryTooLarge` when the entry alone is over capacity,
    ///   `writeFailed` from SQLite, or the reason the cache is unavailable.
    public func put(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8], expiresAt: Int64? = nil) throws(Error) {
        try put(Entry(key: key, storageDate: storageDate, metadata: metadata, value: value, expiresAt: expiresAt))
    }

    /// Stores a whole entry (its kind and expiry included), replacing any
    /// under the same key, then evicts per policy to stay within capacity.
    /// - Throws: as `put(key:storageDate:metadata:value:expiresAt:)`.
    public func put(_ entry: Entry) throws(Error) {
        try changing { engine throws(Error) in try engine.put(StoredEntry(key: entry.key, row: entry.row(seq: 0))) }
    }

    /// Removes the entry under `key`.
    /// - Returns: whether there was one.
    @discardableResult
    public func delete(key: [UInt8]) throws(Error) -> Bool {
        try changing { engine throws(Error) in try engine.delete(key) }
    }

    /// Removes every entry.
    public func clear() throws(Error) {
        try changing { engine in engine.clear() }
    }

    /// True when a live (present, unexpired) entry exists for `key`.
    public func contains(key: [UInt8]) throws(Error) -> Bool {
        try changing { engine throws(Error) in try engine.contains(key) }
    }

    /// Marks `key` as just used (for LRU) when it is live.
    /// - Returns: whether it is live.
    @discardableResult
    public func touch(key: [UInt8]) throws(Error) -> Bool {
        try changing { engine throws(Error) in try engine.touch(key) }
    }

    /// Sets (milliseconds since 1970) or clears (nil) the expiry of a live entry.
    /// - Returns: whether there was a live entry.
    @discardableResult
    public func setExpiry(key: [UInt8], expiresAt: Int64?) throws(Error) -> Bool {
        try changing { engine throws(Error) in try engine.setExpiry(key, expiresAt) }
    }

    /// True when some entry's expiry time may have passed (cheap: no SQL).
    public func expiryDue() throws(Error) -> Bool {
        try withStore { store in store.engine.expiryDue() }
    }

    /// Removes up to `limit` expired entries, soonest first, in O(log n) each.
    /// - Returns: how many went; fewer than `limit` means none is left due
    ///   for now, unless `expiryDue()` says more may be (a call passes over
    ///   a bounded number of keys not due).
    public func removeExpired(limit: Int) throws(Error) -> Int {
        try changing { engine throws(Error) in try engine.removeExpired(limit: limit) }
    }

    /// Evicts up to `limit` entries toward capacity (after a capacity cut).
    /// - Returns: true when the cache is within capacity.
    public func evict(limit: Int) throws(Error) -> Bool {
        _ = try changing { engine throws(Error) in try engine.evict(limit: limit) }
        return try withinCapacity()
    }

    /// One step of a scan of the live keys: start at cursor 0, continue with
    /// the returned cursor until it is 0 again. A key present for the whole
    /// scan is returned exactly once.
    /// With `kind`, only keys holding that kind of value are returned; the
    /// cursor moves on as it would without it.
    public func scan(cursor: UInt64, count: Int, kind: ValueKind? = nil) throws(Error) -> (keys: [[UInt8]], next: UInt64) {
        try withStore { store throws(Error) in try store.engine.scan(cursor: cursor, count: count, kind: kind) }
    }

    /// Every live key.
    public func keys() throws(Error) -> [[UInt8]] {
        try withStore { store throws(Error) in try store.engine.keys() }
    }

    /// A live key chosen at random, or nil when there is none.
    public func randomKey() throws(Error) -> [UInt8]? {
        try withStore { store throws(Error) in try store.engine.randomKey() }
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
        /// Reads answered from memory, reads that went to SQLite, and what memory holds.
        public var tierHits: Int
        public var tierMisses: Int
        public var tierBytes: Int
        public var tierEntries: Int
        /// WAL checkpoints run so far.
        public var backgroundCheckpoints: Int
        /// Bytes of changes not yet in the file.
        public var unappliedBytes: Int
        /// The log position the file holds.
        public var appliedLSN: UInt64
    }

    public func statistics() throws(Error) -> Statistics {
        try withStore { store in store.engine.statistics() }
    }

    /// The number of entries stored (expired ones not yet removed included).
    public func count() throws(Error) -> Int {
        try withStore { store in store.engine.count }
    }

    /// The content bytes (key + value + metadata) stored.
    public func contentBytes() throws(Error) -> Int {
        try withStore { store in store.engine.contentBytes }
    }

    /// Entries evicted since this instance opened the file.
    public func evictedCount() throws(Error) -> Int {
        try withStore { store in store.engine.evictedCount }
    }

    /// The capacity in content bytes; 0 for unbounded.
    public func capacity() throws(Error) -> Int {
        try withStore { store in store.engine.capacity }
    }

    /// Sets the capacity and evicts down to it, at most `batchLimit` entries
    /// now (the rest with `evict(limit:)`).
    /// - Returns: true when the cache is within the new capacity.
    @discardableResult
    public func setCapacity(_ capacity: Int, batchLimit: Int = .max) throws(Error) -> Bool {
        _ = try changing { engine throws(Error) in try engine.setCapacity(capacity, batchLimit: batchLimit) }
        return try withinCapacity()
    }

    /// Whether the cache is within its capacity, after the settle (which
    /// may have gone on evicting once a batch moved rows in age order).
    private func withinCapacity() throws(Error) -> Bool {
        try withStore { store in !store.engine.overCapacity }
    }

    /// The eviction policy in force.
    public func evictionPolicy() throws(Error) -> EvictionPolicy {
        try withStore { store in store.engine.policy }
    }

    /// Sets the eviction policy.
    public func setEvictionPolicy(_ policy: EvictionPolicy) throws(Error) {
        try changing { engine in engine.setPolicy(policy) }
    }

    /// Kept for callers of the former write-behind mode: changes made inside
    /// a batch always wait for `commitBatch()` now.
    public func setDeferredWrites(_ enabled: Bool) throws(Error) {
        try withStore { _ in }
    }

    /// Commits a small write (the stats row) to check that writes succeed
    /// again, for instance once a full disk has room.
    /// - Throws: `writeFailed` while they do not.
    public func probeWrite() throws(Error) {
        try withStore { store throws(Error) in
            let engine = store.engine
            let batch = CacheBatch(file: engine.file, id: 0, lsn: engine.appliedLSN, clear: false, writes: SealedWrites(),
                                   totals: engine.file.stored.totals)
            try engine.file.apply(batch)
        }
    }

    /// Changes waiting for the batch to commit, and their bytes in memory.
    public func pendingWrites() throws(Error) -> (count: Int, bytes: Int) {
        try withStore { store in (store.engine.changedCount, store.engine.unappliedBytes) }
    }

    /// Starts grouping changes until `commitBatch()`: they are applied to
    /// the file in one transaction then.
    public func beginBatch() throws(Error) {
        try withStore { store in store.batchOpen = true }
    }

    /// Applies the changes grouped since `beginBatch()`.
    /// - Throws: `writeFailed` when they could not be applied; then none of
    ///   them is kept.
    public func commitBatch() throws(Error) {
        try withStore { store throws(Error) in
            store.batchOpen = false
            try store.apply()
        }
    }

    /// Applies what is pending, checkpoints the WAL into the file and
    /// closes it, releasing the lock. Later calls throw `databaseUnavailable`.
    public func close() {
        state.withLock { state in
            if case .open(let store) = state {
                try? store.apply()
                store.engine.close()
            }
            state = .failed(.databaseUnavailable(reason: "cache '\(handle)' is closed"))
        }
    }

    deinit {
        close()
    }
}

/// A value behind a pthread mutex (NSLock), which ThreadSanitizer sees
/// (it does not see `Synchronization.Mutex`'s futex; docs/testing.md).
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    public func withLock<R, E: Swift.Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
