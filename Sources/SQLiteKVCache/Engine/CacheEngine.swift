import Foundation

/// One cache as its owner sees it: every key's current state at every
/// moment, exact totals, capacity and policy, expiry and eviction, while
/// the file beneath it lags behind by the batches not yet applied.
///
/// Reads look in the key table (memory tier and memtable in one), then in
/// the file. Writes change the table only; `seal()` hands what changed to
/// a batch, which someone applies to the file (the server's writer thread,
/// or `SQLiteKVCache` itself at once) and hands back with `complete(_:)`.
/// At most one batch is in flight at a time.
///
/// Not thread-safe: one owner (the server's loop thread, or
/// `SQLiteKVCache` under its lock). Only a sealed batch crosses threads.
public final class CacheEngine {
    public private(set) var handle: String
    private(set) var file: CacheFile
    let table: KeyTable
    let hasher = KeyHasher()
    /// Digests computed ahead for keys a pipeline is about to use, by the
    /// keys' addresses (`prefetch(_:)`), until `endPrefetch()`.
    var digestsAhead: [(base: UnsafeRawPointer, count: Int, digest: KeyDigest)] = []
    var nextAhead = 0
    /// Which keys the file may hold (a Bloom filter): a key it cannot hold
    /// is not looked up in SQLite.
    let fileKeys = FileKeys()
    private let clock: @Sendable () -> Int64

    /// Entries, content bytes and expiry sums of the current state.
    var totals: Totals
    public private(set) var capacity: Int
    public private(set) var policy: EvictionPolicy
    /// Evicted and expired since this engine opened.
    public internal(set) var evictedCount = 0
    public internal(set) var expiredCount = 0
    /// The log position the file holds (its last applied batch's).
    public private(set) var appliedLSN: UInt64
    /// Why the last batch failed, until one succeeds.
    public private(set) var lastFailure: SQLiteKVCache.Error?
    /// Told of every change, as it happens in memory.
    public var onEvent: ((CacheEvent) -> Void)?
    /// Whether `onEvent` hears of the owner's own writes (stored, deleted,
    /// cleared) besides the engine's (expired, evicted). An owner that
    /// knows its writes turns this off: a call per SET is measurable.
    public var reportsWrites = true

    /// The file's rows are void: a clear has not reached it yet.
    private(set) var fileVoid = false
    /// The next batch starts with a clear.
    private var clearPending = false
    /// The batch carrying the latest clear (0: none in flight).
    private var clearInFlight: UInt64 = 0
    private var nextBatchID: UInt64 = 1
    /// The batches the writer holds, oldest first: a new one may be sealed
    /// while others are in flight (each carries every change since the one
    /// before it), and they complete in order.
    private var inFlightBatches: [CacheBatch] = []
    /// The next batch while parts of it are taken ahead of its seal
    /// (`sealPart`; 0: none), and what they took.
    private var openBatchID: UInt64 = 0
    private var openWrites = SealedWrites()
    /// The oldest batch the writer holds.
    public var inFlight: CacheBatch? { inFlightBatches.first }
    /// How many batches the writer holds.
    public var batchesInFlight: Int { inFlightBatches.count }
    /// The newest batch that failed, as the owner has seen it: a batch
    /// sealed before the owner saw a failure is not applied after it (its
    /// file's position would claim the failed batch's changes).
    private var lastFailedBatch: UInt64 = 0
    /// The bucket of the unapplied index `resolveTotalsStep` looks at next.
    private var resolvingBucket = 0

    var eviction = EvictionWalk()
    var expiry = ExpiryWalk()
    /// How accesses stamp keys (shared by the owner's engines).
    let access: AccessTracking

    /// Opens the cache file `<directory>/<handle>.sqlite`.
    /// - Throws: `SQLiteKVCache.Error`, or `CacheFile.OpenError.corrupt`.
    init(handle: String, directory: String, configuration: SQLiteKVCache.Configuration) throws {
        self.handle = handle
        file = try CacheFile(handle: handle, directory: directory, configuration: configuration)
        table = configuration.sharedMemoryBudget.map { KeyTable(sharing: $0) }
            ?? KeyTable(budget: configuration.memoryTierBytes)
        clock = configuration.millisecondClock ?? { [clock = configuration.clock] in
            Int64((clock().timeIntervalSince1970 * 1000).rounded(.down))
        }
        access = configuration.accessTracking ?? AccessTracking()
        totals = file.stored.totals
        appliedLSN = file.stored.appliedLSN
        capacity = max(0, configuration.diskCapacity)
        policy = configuration.evictionPolicy
        expiry.fileHint = totals.volatile > 0 ? .min : .max
        eviction.reset(for: policy)
        table.fileKeys = fileKeys
        if configuration.scansKeysAtOpen { buildFileKeysIfWanted() }
    }

    /// Starts building the filter of the file's keys when there is none or
    /// it has gone stale (an empty file needs no scan).
    public func buildFileKeysIfWanted() {
        guard fileKeys.wantsBuild(keys: totals.count), !fileVoid else { return }
        if file.stored.totals.count == 0 && inFlight == nil && table.unappliedCount == 0 && totals.count == 0 {
            fileKeys.reset()
            return
        }
        // Not while memory holds far more changes than keys (the deletes of
        // a capacity cut, until the writer applies them): listing them took
        // the loop 114 ms at a seal after a cut of 1M keys to 100k. A stale
        // filter only sends more reads to the file meanwhile.
        guard table.unappliedCount <= 4 * max(totals.count, 1 << 16) else { return }
        let unapplied = table.unappliedDigestsWithRows()
        fileKeys.startBuild(path: file.path, fileID: file.fileID, keys: max(totals.count, file.stored.totals.count),
                            unapplied: unapplied)
    }

    /// Whether the file may hold `digest`: not while its rows are void, nor
    /// when the filter of its keys says it cannot.
    @inline(__always)
    func fileMayHold(_ digest: KeyDigest) -> Bool {
        !fileVoid && fileKeys.mayHold(digest)
    }

    /// Whether the filter of the file's keys is built (tests, INFO).
    public var keyFilterReady: Bool { fileKeys.isReady }
    /// Reads of the file the filter spared so far.
    public var keyFilterSpared: Int { fileKeys.spared }
    /// Bytes the filter takes.
    public var keyFilterBytes: Int { fileKeys.memoryBytes }
    /// Waits until a build of the filter in progress is done.
    public func waitForKeyFilter() { fileKeys.waitForBuild() }

    /// Opens the cache `handle` (already canonical) in `directory`. A file
    /// SQLite finds corrupt at open is moved aside (`onRecovery` is told)
    /// and a fresh cache started, once.
    /// - Throws: why the cache is unavailable.
    public static func open(handle: String, directory: String, configuration: SQLiteKVCache.Configuration)
        throws(SQLiteKVCache.Error) -> CacheEngine
    {
        func attempt() throws -> CacheEngine {
            try CacheEngine(handle: handle, directory: directory, configuration: configuration)
        }
        do {
            return try attempt()
        } catch CacheFile.OpenError.corrupt(let path, let reason) {
            SQLiteKVCache.quarantine(path, configuration, reason: reason)
            do {
                return try attempt()
            } catch CacheFile.OpenError.corrupt(_, let reason) {
                throw .databaseUnavailable(reason: "\(path) is still corrupt after recreation: \(reason)")
            } catch let error as SQLiteKVCache.Error {
                throw error
            } catch {
                throw .databaseUnavailable(reason: "\(error)")
            }
        } catch let error as SQLiteKVCache.Error {
            throw error
        } catch {
            throw .databaseUnavailable(reason: "\(error)")
        }
    }

    /// Whether `error` says the file is damaged (SQLite's codes 11 and 26):
    /// the owner should close the engine and `quarantine` the file.
    public static func isCorruption(_ error: SQLiteKVCache.Error) -> Bool {
        error.sqliteCode.map { SQLiteKVCache.corruptionCodes.contains($0) } ?? false
    }

    /// Closes the engine and moves its damaged file aside; open a new engine after.
    public func closeAndQuarantine(reason: String) {
        let configuration = file.configuration
        file.close()
        SQLiteKVCache.quarantine(file.path, configuration, reason: reason)
    }

    func nowMilliseconds() -> Int64 { clock() }

    /// The time a key's expiry is compared with: the clock's, or the
    /// earliest time while `expiryIgnored` is set (nothing expires).
    func expiryNow() -> Int64 { access.expiryIgnored ? .min : clock() }

    public var path: String { file.path }
    public var fileID: UInt64 { file.fileID }
    public var count: Int { totals.count }
    public var contentBytes: Int { totals.bytes }
    /// Bytes of changes not yet in the file (the memtable).
    public var unappliedBytes: Int { table.unappliedBytes }
    /// Keys changed since the last seal (and rows eviction asked to move).
    public var changedCount: Int { table.unsealedCount + pendingRequeues.count }

    // MARK: Reading

    /// The current state of `digest` (expired or not), from memory or the
    /// file; a row read from the file is kept in memory when the budget
    /// allows (then `slot` is set).
    func current(_ digest: KeyDigest, key: [UInt8], counted: Bool) throws(SQLiteKVCache.Error)
        -> (row: Row?, slot: KeySlot?)
    {
        if let slot = counted ? table.lookup(digest) : table.slot(digest) { return (slot.row, slot) }
        guard fileMayHold(digest) else { return (nil, nil) }
        let row = try file.row(digest)
        return (row, table.cache(digest, key: key, row: row))
    }

    /// The size and expiry of `digest`'s current row, without loading its value.
    func oldState(_ digest: KeyDigest) throws(SQLiteKVCache.Error) -> (size: Int, expiresAt: Int64?)? {
        try oldState(digest, found: table.slot(digest))
    }

    /// `oldState`, given the table's slot for `digest` (nil: none).
    func oldState(_ digest: KeyDigest, found: KeySlot?) throws(SQLiteKVCache.Error) -> (size: Int, expiresAt: Int64?)? {
        if let slot = found {
            guard slot.hasRow else { return nil }
            // The lengths are in the slot's fields (no array header is read).
            return (slot.contentSize, slot.expiresAt)
        }
        guard fileMayHold(digest) else { return nil }
        return try file.rowInfo(digest).map { ($0.size, $0.expiresAt) }
    }

    /// The live entry for `key`, or nil when absent or expired. An expired
    /// entry found here is removed (lazy expiry, as Redis). Under LRU, the
    /// read makes the entry the most recent.
    /// - Parameter touch: stamp the access (Redis's LRU clock and LFU
    ///   counter); false for reads that must not (TYPE, TTL, OBJECT).
    public func get(_ key: [UInt8], touch: Bool = true) throws(SQLiteKVCache.Error) -> StoredEntry? {
        try get(key, counted: true, touch: touch)
    }

    /// `get`, counting the memory tier's hit or miss only when `counted`
    /// (`getValue` has counted the miss that sent it here).
    private func get(_ key: [UInt8], counted: Bool, touch: Bool) throws(SQLiteKVCache.Error) -> StoredEntry? {
        try get(key, digest: hasher.digest(key), counted: counted, touch: touch)
    }

    /// `get` of a key whose digest is known.
    private func get(_ key: [UInt8], digest: KeyDigest, counted: Bool, touch: Bool) throws(SQLiteKVCache.Error)
        -> StoredEntry?
    {
        if let slot = counted ? table.lookup(digest) : table.slot(digest) {
            guard slot.hasRow else { return nil }
            if slot.isExpired(at: expiryNow()) {
                if !access.expiryHeld { expire(digest, key: key, size: slot.contentSize, expiresAt: slot.expiresAt) }
                return nil
            }
            if touch { access.touch(slot, now: nowMilliseconds()) }
            if policy == .lru {
                slot.seq = totals.takeSeq()
                table.noteChange(slot, .touch)
                noteUnapplied(slot, digest)
            }
            return StoredEntry(key: key, row: slot.row!)
        }
        guard fileMayHold(digest) else { return nil }
        return try getFromFile(key, digest: digest, touch: touch)
    }

    /// `get`'s second half: a key memory does not hold, which the file may.
    private func getFromFile(_ key: [UInt8], digest: KeyDigest, touch: Bool) throws(SQLiteKVCache.Error)
        -> StoredEntry?
    {
        guard var row = try file.row(digest) else {
            table.cache(digest, key: key, row: nil)
            return nil
        }
        if row.isExpired(at: expiryNow()) {
            table.cache(digest, key: key, row: row)
            if !access.expiryHeld { expire(digest, key: key, size: key.count + row.bodySize, expiresAt: row.expiresAt) }
            return nil
        }
        let slot = table.cache(digest, key: key, row: row)
        if touch, let slot { access.touch(slot, now: nowMilliseconds()) }
        if policy == .lru {
            row.seq = totals.takeSeq()
            if let slot {
                slot.seq = row.seq
                table.noteChange(slot, .touch)
                noteUnapplied(slot, digest)
            } else {
                noteUnapplied(table.write(digest, key: key, row: row), digest)
            }
        }
        return StoredEntry(key: key, row: row)
    }

    /// GET's path: the kind and value of `key`'s live entry, read in place
    /// from the memory tier when it is there (no entry is built, no key or
    /// metadata copied); otherwise as `get`. Same expiry, LRU and counting.
    public func getValue(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> (kind: ValueKind, value: StoredValue)? {
        let result = key.withUnsafeBytes { bytes in
            Result { () throws(SQLiteKVCache.Error) in
                try withValue(bytes) { kind, view in
                    switch view {
                    case .bytes(let bytes): (kind, StoredValue.bytes([UInt8](bytes)))
                    case .live(let value): (kind, StoredValue.live(value))
                    }
                }
            }
        }
        return try result.get()
    }

    /// A value seen in place: bytes valid only while the call that gives
    /// them runs, or a live value (never to be changed by the reader).
    public enum ValueView {
        case bytes(UnsafeRawBufferPointer)
        case live(LiveValue)
    }

    /// GET's path for a key viewed in place (GET's key in the request
    /// buffer): calls `body` with the kind and value of `key`'s live entry,
    /// its bytes where memory holds them (no copy); otherwise as `get`.
    /// Same expiry, LRU and counting. The key is copied only when the file
    /// must be read or an expired entry removed.
    /// - Returns: what `body` returned, or nil when the key has no live entry.
    public func withValue<R>(_ key: UnsafeRawBufferPointer, _ body: (ValueKind, ValueView) -> R)
        throws(SQLiteKVCache.Error) -> R?
    {
        let digest = self.digest(of: key)
        if policy != .lru, let slot = table.slot(digest: digest, counting: true) {
            // No row: a delete or a miss remembered.
            guard slot.hasRow else { return nil }
            let now = nowMilliseconds()
            if let expiresAt = slot.expiresAt, expiresAt <= now && !access.expiryIgnored {
                if !access.expiryHeld {
                    expire(digest, key: Array(key), size: slot.contentSize, expiresAt: expiresAt)
                }
                return nil
            }
            access.touch(slot, now: now)
            if let live = slot.live { return body(slot.kind, .live(live)) }
            return slot.withValueBytes { body(slot.kind, .bytes($0)) }
        }
        // A key memory does not hold (or LRU's path): its digest is not
        // computed again, and a key the file cannot hold is not copied.
        let found: StoredEntry?
        if policy == .lru {
            found = try get(Array(key), digest: digest, counted: true, touch: true)
        } else {
            guard fileMayHold(digest) else { return nil }
            found = try getFromFile(Array(key), digest: digest, touch: true)
        }
        guard let entry = found else { return nil }
        switch entry.row.value {
        case .bytes(let bytes): return bytes.withUnsafeBytes { body(entry.row.kind, .bytes($0)) }
        case .live(let value): return body(entry.row.kind, .live(value))
        }
    }

    /// The live entry for `key` without touching it (no LRU, no lazy delete).
    public func peek(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> StoredEntry? {
        guard let row = try current(hasher.digest(key), key: key, counted: false).row,
              !row.isExpired(at: expiryNow()) else { return nil }
        return StoredEntry(key: key, row: row)
    }

    /// The entry for `key` even when it has expired (and is not yet
    /// removed), untouched: what Redis's DEBUG OBJECT finds in its dict.
    public func peekIncludingExpired(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> StoredEntry? {
        guard let row = try current(hasher.digest(key), key: key, counted: false).row else { return nil }
        return StoredEntry(key: key, row: row)
    }

    /// Whether `key` has a live entry; an expired one is removed on the way.
    public func contains(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> Bool {
        let digest = hasher.digest(key)
        guard let state = try oldState(digest) else { return false }
        if let expiresAt = state.expiresAt, expiresAt <= expiryNow() {
            if !access.expiryHeld { expire(digest, key: key, size: state.size, expiresAt: expiresAt) }
            return false
        }
        return true
    }

    /// Marks `key` as used now (LRU) when it is live.
    /// - Returns: whether it is live.
    public func touch(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> Bool {
        guard policy == .lru else { return try contains(key) }
        return try get(key) != nil
    }

    // MARK: Writing

    /// Stores `entry` (its seq is assigned here), replacing any entry under
    /// its key, then evicts per policy to stay within capacity.
    /// - Throws: `entryTooLarge` when the entry alone is over capacity;
    ///   `capacityExceeded` under `noeviction`; `readFailed` from the file.
    public func put(_ entry: consuming StoredEntry) throws(SQLiteKVCache.Error) {
        let entry = entry
        let digest = hasher.digest(entry.key)
        try put(size: entry.contentSize, expiresAt: entry.row.expiresAt, digest: digest) { seq, found in
            var row = entry.row
            row.seq = seq
            return table.write(digest, key: entry.key, row: row, found: found)
        }
    }

    /// `put` of an entry given as bytes in place (a SET's key and value
    /// where they arrived in the request): no array is made, and a key
    /// memory holds is overwritten in its slot when the bytes fit.
    public func put(key: UnsafeRawBufferPointer, kind: ValueKind, storageDate: Double, expiresAt: Int64?,
                    metadata: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(SQLiteKVCache.Error) {
        let digest = self.digest(of: key)
        try put(size: key.count + metadata.count + value.count, expiresAt: expiresAt, digest: digest) { seq, found in
            let head = RowHead(storageDate: storageDate, seq: seq, expiresAt: expiresAt, kind: kind)
            return table.write(digest, key: key, head: head, metadata: metadata, value: value, found: found)
        }
    }

    /// What every put does around storing its row: refuse an entry over
    /// capacity (or past it under `noeviction`), take the old row out of
    /// the totals and put the new one in, stamp the access, note the row
    /// for eviction and expiry, and evict to capacity. `write` stores the
    /// row under the write order given, in the slot found (nil: none).
    @inline(__always)
    private func put(size: Int, expiresAt: Int64?, digest: KeyDigest,
                     write: (_ seq: Int64, _ found: KeySlot?) -> KeySlot) throws(SQLiteKVCache.Error) {
        if capacity > 0 && size > capacity { throw .entryTooLarge(size: size, capacity: capacity) }
        let found = table.slot(digest)
        let old = try oldState(digest, found: found)
        if policy == .noeviction && capacity > 0 && totals.bytes - (old?.size ?? 0) + size > capacity {
            throw .capacityExceeded(capacity: capacity)
        }
        if let old { totals.apply(size: old.size, expiresAt: old.expiresAt, sign: -1) }
        let seq = totals.takeSeq()
        totals.apply(size: size, expiresAt: expiresAt, sign: 1)
        let slot = write(seq, found)
        access.stampWrite(slot, new: old == nil, now: nowMilliseconds())
        noteUnapplied(slot, digest)
        if reportsWrites { onEvent?(.stored(key: slot.key)) }
        if capacity > 0 { _ = try evictToCapacity(limit: .max) }
    }

    // MARK: Replaying the log

    /// Makes room in memory for `records` more keys replayed from the log.
    public func reserveForReplay(_ records: Int) {
        table.reserve(records)
    }

    /// Stores an entry as a replay of the log does: when memory does not
    /// know the key, the file is not asked (a lookup per record would make
    /// a replay ten times slower); the totals count the entry as new, and
    /// the writer corrects them when it applies the key (it reads the
    /// page it changes anyway). A key the filter of the file's keys rules
    /// out (an empty file's are all ruled out) is stored as a plain put:
    /// its count is exact at once. Capacity is enforced once the replay is
    /// done. The bytes are where the log's record holds them, stored as a
    /// SET's are (`put(key:…value:)`).
    public func replayPut(key: UnsafeRawBufferPointer, kind: ValueKind, storageDate: Double, expiresAt: Int64?,
                          metadata: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(SQLiteKVCache.Error) {
        let digest = hasher.digest(key)
        guard fileMayHold(digest), table.slot(digest) == nil else {
            let saved = capacity
            capacity = 0
            defer { capacity = saved }
            return try put(key: key, kind: kind, storageDate: storageDate, expiresAt: expiresAt,
                           metadata: metadata, value: value)
        }
        let size = key.count + metadata.count + value.count
        let head = RowHead(storageDate: storageDate, seq: totals.takeSeq(), expiresAt: expiresAt, kind: kind)
        totals.apply(size: size, expiresAt: expiresAt, sign: 1)
        let slot = table.write(digest, key: key, head: head, metadata: metadata, value: value, found: nil)
        slot.assumedNew = true
        table.assumedNewCount += 1
        noteUnapplied(slot, digest)
    }

    /// Deletes `key` as a replay of the log does (see `replayPut`): a key
    /// memory does not know is taken as absent, and the writer corrects
    /// the totals if the file held it.
    public func replayDelete(_ key: [UInt8]) throws(SQLiteKVCache.Error) {
        let digest = hasher.digest(key)
        guard fileMayHold(digest), table.slot(digest) == nil else {
            _ = try delete(key)
            return
        }
        table.write(digest, key: key, row: nil).assumedNew = true
        table.assumedNewCount += 1
    }

    /// Whether the totals still count some blind writes of a replay as new
    /// (until the writer applies them, or `resolveTotals` looks them up).
    public var totalsPending: Bool { table.assumedNewCount > 0 }

    /// Whether some of those are in the batch in flight (the writer corrects them).
    public var totalsPendingInFlight: Bool {
        guard table.assumedNewCount > 0, inFlight != nil else { return false }
        return table.allUnapplied.contains { $0.assumedNew && $0.inFlight != 0 }
    }

    /// Makes the totals exact now: every blind write not in flight is
    /// looked up in the file, in digest order. Blind writes in flight are
    /// left to the writer (the owner waits for that batch first).
    public func resolveTotals() throws(SQLiteKVCache.Error) {
        guard table.assumedNewCount > 0 else { return }
        finishTakingBack()  // an applied batch's blind writes are corrected as their slots come back
        let blind = table.allUnapplied.lazy.filter { $0.assumedNew && $0.inFlight == 0 }.map { ($0.digest(), $0) }
        for (digest, slot) in blind.sorted(by: { $0.0 < $1.0 }) { try correctBlind(slot, digest) }
    }

    /// Takes out of the totals what the file held for a blind write's key.
    private func correctBlind(_ slot: KeySlot, _ digest: KeyDigest) throws(SQLiteKVCache.Error) {
        if fileMayHold(digest), let old = try file.rowInfo(digest) {
            totals.apply(size: old.size, expiresAt: old.expiresAt, sign: -1)
        }
        slot.assumedNew = false
        table.assumedNewCount -= 1
    }

    /// Makes the totals exact a part at a time, for an owner that must not
    /// stall: looks up blind writes not in flight, in digest order (a bucket
    /// of the unapplied index at a time, sorted), until it has looked up
    /// `limit`; those in flight or being taken back are left to the
    /// writer's corrections. (Listing and sorting 200,000 at once took
    /// 60 ms.)
    /// - Returns: whether the totals are exact.
    public func resolveTotalsStep(limit: Int) throws(SQLiteKVCache.Error) -> Bool {
        guard table.assumedNewCount > 0 else {
            resolvingBucket = 0
            return true
        }
        let buckets = 1 << KeyTable.indexBits
        var looked = 0
        var visited = 0
        while looked < limit && visited < buckets {
            let blind = table.unapplied(inBucket: resolvingBucket).lazy.filter { $0.assumedNew && $0.inFlight == 0 }
                .map { ($0.digest(), $0) }
            for (digest, slot) in blind.sorted(by: { $0.0 < $1.0 }) {
                try correctBlind(slot, digest)
                looked += 1
            }
            resolvingBucket = (resolvingBucket + 1) % buckets
            visited += 1
        }
        return table.assumedNewCount == 0
    }

    /// Whether the cache holds more than its capacity (eviction has work to do).
    public var overCapacity: Bool { capacity > 0 && totals.bytes > capacity }

    /// Removes the entry for `key`.
    /// - Returns: whether a live entry was removed (an expired one is
    ///   removed too, but counts as expired).
    @discardableResult
    public func delete(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> Bool {
        let digest = hasher.digest(key)
        guard let old = try oldState(digest) else { return false }
        if let expiresAt = old.expiresAt, expiresAt <= nowMilliseconds() {
            expire(digest, key: key, size: old.size, expiresAt: expiresAt)
            return false
        }
        totals.apply(size: old.size, expiresAt: old.expiresAt, sign: -1)
        table.write(digest, key: key, row: nil)
        if reportsWrites { onEvent?(.deleted(key: key)) }
        return true
    }

    /// Sets (milliseconds since 1970) or clears (nil) the expiry of the live entry for `key`.
    /// - Returns: whether there was a live entry.
    public func setExpiry(_ key: [UInt8], _ expiresAt: Int64?) throws(SQLiteKVCache.Error) -> Bool {
        let digest = hasher.digest(key)
        if let slot = table.slot(digest) {
            // In place: the value is not copied out and back.
            guard slot.hasRow else { return false }
            let size = slot.contentSize
            if slot.isExpired(at: expiryNow()) {
                expire(digest, key: key, size: size, expiresAt: slot.expiresAt)
                return false
            }
            totals.apply(size: size, expiresAt: slot.expiresAt, sign: -1)
            totals.apply(size: size, expiresAt: expiresAt, sign: 1)
            slot.expiresAt = expiresAt
            table.noteChange(slot, .row)
            noteUnapplied(slot, digest)
            return true
        }
        guard let row = try current(digest, key: key, counted: false).row else { return false }
        let size = key.count + row.bodySize
        if row.isExpired(at: expiryNow()) {
            expire(digest, key: key, size: size, expiresAt: row.expiresAt)
            return false
        }
        totals.apply(size: size, expiresAt: row.expiresAt, sign: -1)
        totals.apply(size: size, expiresAt: expiresAt, sign: 1)
        var changed = row
        changed.expiresAt = expiresAt
        let written = table.write(digest, key: key, row: changed)
        noteUnapplied(written, digest)
        return true
    }

    /// Removes every entry. The file is emptied by the next batch; until
    /// then its rows are void.
    public func clear() {
        takingBack.removeAll()  // their slots go too
        table.removeAll()
        dropOpenBatch()
        totals = Totals(nextSeq: totals.nextSeq)
        fileVoid = true
        // Once the clear reaches the file it holds only what is written from now on.
        fileKeys.reset()
        clearPending = true
        pendingRequeues = []
        clearInFlight = 0  // a clear already in flight is not this one
        eviction.reset(for: policy)
        expiry = ExpiryWalk()
        if reportsWrites { onEvent?(.cleared) }
    }

    /// Removes an expired entry, counting it as expired.
    func expire(_ digest: KeyDigest, key: [UInt8], size: Int, expiresAt: Int64?) {
        totals.apply(size: size, expiresAt: expiresAt, sign: -1)
        table.write(digest, key: key, row: nil)
        expiredCount += 1
        onEvent?(.expired(key: key))
    }

    /// Records in the walks of eviction and expiry a row not yet in the file.
    func noteUnapplied(_ slot: KeySlot, _ digest: KeyDigest) {
        guard slot.hasRow else { return }
        if capacity > 0 { eviction.note(slot, digest, policy: policy) }
        if let expiresAt = slot.expiresAt { expiry.note(digest, expiresAt: expiresAt, seq: slot.seq) }
    }

    // MARK: Live values

    /// The live value of `key`'s entry, to change it in place: a frozen
    /// one (a batch in flight holds it) is replaced by a copy first. Call
    /// `liveValueChanged` after changing it.
    /// - Returns: nil when the entry is absent, expired, or not live.
    public func liveValueForChange(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> LiveValue? {
        let digest = hasher.digest(key)
        let (found, slot) = try current(digest, key: key, counted: false)
        guard var row = found, !row.isExpired(at: expiryNow()), case .live(let value) = row.value else { return nil }
        let owned = value.isFrozen ? value.thawed() : value
        row.value = .live(owned)
        if let slot {
            table.setLive(slot, owned)
        } else {
            table.write(digest, key: key, row: row)
        }
        return owned
    }

    /// Records that `key`'s live value changed in place (after
    /// `liveValueForChange`; `oldEncodedSize` is its size before): it takes
    /// a new write order and `storageDate`, and capacity is enforced. An
    /// emptied value should be deleted instead.
    public func liveValueChanged(_ key: [UInt8], oldEncodedSize: Int, storageDate: Double) throws(SQLiteKVCache.Error) {
        let digest = hasher.digest(key)
        guard let slot = table.slot(digest), slot.hasRow, let value = slot.live else { return }
        let base = slot.contentSize - value.encodedSize
        totals.apply(size: base + oldEncodedSize, expiresAt: slot.expiresAt, sign: -1)
        totals.apply(size: base + value.encodedSize, expiresAt: slot.expiresAt, sign: 1)
        slot.seq = totals.takeSeq()
        slot.storageDate = storageDate
        table.noteChange(slot, .row)
        access.stampWrite(slot, new: false, now: nowMilliseconds())
        noteUnapplied(slot, digest)
        if reportsWrites { onEvent?(.stored(key: key)) }
        _ = try evictToCapacity(limit: .max)
    }

    /// The live value of `key`'s entry, decoding its bytes with `decode`
    /// when it has none yet (memory keeps the decoded form). For a change
    /// (`forChange`), a frozen value (held by a batch in flight) is replaced
    /// by a copy first; call `liveValueChanged` after changing it.
    /// - Returns: nil when the entry is absent or expired.
    public func liveValue(_ key: [UInt8], forChange: Bool, decode: ([UInt8]) throws -> LiveValue) throws -> LiveValue? {
        let digest = hasher.digest(key)
        var (found, slot) = try current(digest, key: key, counted: false)
        guard var row = found, !row.isExpired(at: expiryNow()) else { return nil }
        var value: LiveValue
        switch row.value {
        case .live(let live): value = live
        case .bytes(let bytes): value = try decode(bytes)
        }
        if forChange && value.isFrozen { value = value.thawed() }
        row.value = .live(value)
        if let slot {
            table.setLive(slot, value)
        } else if forChange {
            slot = table.write(digest, key: key, row: row)
        }
        return value
    }

    /// Keeps `value`, the decoded form of `key`'s bytes, in place of the
    /// bytes (same content: nothing to write), so the next command finds it
    /// decoded. Does nothing when the entry is not in memory as bytes.
    public func adoptLiveValue(_ key: [UInt8], _ value: LiveValue) {
        guard let slot = table.slot(hasher.digest(key)), slot.hasRow, slot.live == nil else { return }
        table.setLive(slot, value)
    }

    // MARK: Settings

    /// Sets the capacity and evicts down to it, at most `batchLimit` entries now.
    /// - Returns: true when within the new capacity.
    @discardableResult
    public func setCapacity(_ newCapacity: Int, batchLimit: Int = .max) throws(SQLiteKVCache.Error) -> Bool {
        capacity = max(0, newCapacity)
        eviction.reset(for: policy)
        if capacity > 0 { eviction.rebuild(table.allUnapplied, policy: policy) }
        return try evictToCapacity(limit: batchLimit)
    }

    public func setPolicy(_ newPolicy: EvictionPolicy) {
        guard newPolicy != policy else { return }
        policy = newPolicy
        eviction.reset(for: policy)
        if capacity > 0 { eviction.rebuild(table.allUnapplied, policy: policy) }
        if policy == .lru { needsRecencyIndex = true }
    }

    /// LRU needs an index on write order; the next batch creates it.
    var needsRecencyIndex = false

    /// Rows eviction found out of their place in age order, for the next batch.
    var pendingRequeues: [EvictionRequeue] = []
    /// The last batch that carried such rows, until it completes (0: none).
    private var requeueBatchID: UInt64 = 0

    /// Changes the memory budget (the shared one, when the engine has one).
    public func setMemoryBudget(_ bytes: Int) { table.budget.limit = max(0, bytes) }

    // MARK: Batches

    /// Hands every change since the last seal to a new batch for log
    /// position `lsn`, or returns nil when nothing changed.
    public func seal(lsn: UInt64) -> CacheBatch? {
        buildFileKeysIfWanted()
        guard table.hasChanges || clearPending || needsRecencyIndex || !pendingRequeues.isEmpty || openBatchID != 0
        else { return nil }
        let id = openBatchID != 0 ? openBatchID : takeBatchID()
        var writes = openWrites
        openBatchID = 0
        openWrites = SealedWrites()
        table.seal(id, into: &writes)
        let batch = CacheBatch(file: file, id: id, lsn: lsn, clear: clearPending, writes: writes, totals: totals)
        batch.createRecencyIndex = needsRecencyIndex
        batch.keepsAgeOrder = policy != .lru
        batch.requeues = pendingRequeues
        if !pendingRequeues.isEmpty { requeueBatchID = id }
        batch.failuresSeen = lastFailedBatch
        needsRecencyIndex = false
        pendingRequeues = []
        if clearPending {
            clearInFlight = id
            clearPending = false
        }
        inFlightBatches.append(batch)
        return batch
    }

    /// Hands up to `limit` changed keys to the next batch ahead of its
    /// seal (a part per iteration of the owner's loop: `seal` then copies
    /// only what is left and what changed since).
    /// - Returns: how many keys it took.
    @discardableResult
    public func sealPart(limit: Int) -> Int {
        // Not over a replay's blind writes: the totals wait for the writer's
        // corrections of those in flight, and must know which are.
        guard table.unsealedCount > 0, table.assumedNewCount == 0 else { return 0 }
        if openBatchID == 0 { openBatchID = takeBatchID() }
        return table.sealPart(openBatchID, into: &openWrites, limit: limit)
    }

    /// Changed keys no part has taken yet.
    public var unsealedCount: Int { table.unsealedCount }

    /// Whether parts of the next batch were taken (`sealPart`) and it is not sealed yet.
    public var sealInProgress: Bool { openBatchID != 0 }
    /// Bytes the parts of the next batch copied.
    public var openBatchBytes: Int { openWrites.byteCount }

    /// The id of a new batch.
    private func takeBatchID() -> UInt64 {
        let id = nextBatchID
        // A slot keeps an id's low 16 bits, 0 meaning none.
        nextBatchID += nextBatchID & 0xFFFF == 0xFFFF ? 2 : 1
        return id
    }

    /// Drops what parts of the next batch took (its slots are gone: a clear).
    private func dropOpenBatch() {
        table.release(&openWrites)
        openWrites = SealedWrites()
        openBatchID = 0
    }

    /// What to do with a batch that could not be applied.
    public enum FailureHandling {
        /// Keep its changes in memory and give them to the next batch.
        case retry
        /// Undo them: forget what memory holds and go back to the file's state.
        case rollBack
    }

    /// Applied batches whose slots memory has not all taken back yet,
    /// oldest first, and the index of the next write to take back. Until
    /// then those slots stay in flight: memory answers for them, as it did
    /// while the writer held them.
    private var takingBack: [(batch: CacheBatch, next: Int)] = []

    /// Whether an applied batch's slots are still being taken back.
    public var takingBackPending: Bool { !takingBack.isEmpty }

    /// Takes back up to `limit` more slots of applied batches.
    /// - Returns: whether every slot is taken back.
    @discardableResult
    public func continueTakingBack(limit: Int) -> Bool {
        var left = limit
        while left > 0, let (batch, next) = takingBack.first {
            let end = next + min(left, batch.writes.count - next)
            table.complete(batch.id, batch.writes, in: next..<end, failed: false)
            left -= end - next
            if end == batch.writes.count {
                takingBack.removeFirst()
            } else {
                takingBack[0].next = end
            }
        }
        return takingBack.isEmpty
    }

    /// Takes back every slot of applied batches now.
    public func finishTakingBack() {
        continueTakingBack(limit: .max)
    }

    /// Takes back the batch in flight once applied (or failed): its slots
    /// are clean again, at most `takeBackLimit` of them now when it was
    /// applied (the rest with `continueTakingBack`, a part per iteration
    /// of the owner's loop: taking 300,000 back at once stalled the loop
    /// for 220 ms).
    public func complete(_ batch: CacheBatch, onFailure: FailureHandling, takeBackLimit: Int = .max) {
        precondition(inFlightBatches.first === batch, "complete() of a batch not the oldest in flight")
        inFlightBatches.removeFirst()
        // Memory lets go of what the batch applied: reads of the file must see it.
        file.releaseRead()
        // Its copy of the bytes too: handing its slots back needs only their digests.
        table.release(&batch.writes)
        if let error = batch.error {
            // A batch sealed in parts that failed before the writer sorted
            // it may hold a key twice: its last write is the one to retry.
            if batch.writes.mayRepeat { batch.writes.sortByDigest() }
            finishTakingBack()
            lastFailure = error
            lastFailedBatch = max(lastFailedBatch, batch.id)
            if batch.createRecencyIndex { needsRecencyIndex = true }
            switch onFailure {
            case .retry:
                table.complete(batch.id, batch.writes, failed: true)
                if batch.clear && batch.id == clearInFlight {
                    clearPending = true
                    clearInFlight = 0
                }
            case .rollBack:
                table.removeAll()
                dropOpenBatch()
                totals = (try? file.reloadState().totals) ?? totals
                // The file keeps what a clear since may have reset the filter of.
                fileKeys.invalidate()
                fileVoid = false
                clearPending = false
                clearInFlight = 0
            }
        } else {
            lastFailure = nil
            appliedLSN = max(appliedLSN, batch.lsn)
            totals = totals + batch.correction
            takingBack.append((batch, 0))
            continueTakingBack(limit: takeBackLimit)
            if batch.id == clearInFlight {
                fileVoid = false
                clearInFlight = 0
            }
        }
        // What the file holds changed: the expiry walk starts again; the
        // eviction walk goes on (rows behind it were evicted or are newer),
        // and starts again only when it reaches the end.
        expiry.fileChanged(volatile: totals.volatile)
        eviction.fileChanged = true
        if requeueBatchID != 0 && batch.id >= requeueBatchID {
            requeueBatchID = 0
            requeueBatchCompleted()
        }
        if capacity > 0 { compactEvictionHeapIfNeeded() }
    }

    /// Counters and settings, read in one call.
    public func statistics() -> SQLiteKVCache.Statistics {
        let t = totals
        return SQLiteKVCache.Statistics(
            entries: t.count, contentBytes: t.bytes, capacity: capacity, policy: policy, volatileEntries: t.volatile,
            meanExpiresAt: t.volatile > 0 ? Int64(t.expiresSum / Double(t.volatile)) : 0,
            evicted: evictedCount, expired: expiredCount, tierHits: table.hits, tierMisses: table.misses,
            tierBytes: table.cleanBytes, tierEntries: table.count,
            backgroundCheckpoints: file.checkpoints.load(),
            unappliedBytes: table.unappliedBytes, appliedLSN: appliedLSN)
    }

    /// Closes the file so it can be renamed (SWAPDB exchanges two files);
    /// nothing may use the engine until `reopenFile`. The batch in flight,
    /// if any, must have completed.
    public func closeFileForRename() {
        precondition(inFlight == nil, "a file is renamed with a batch in flight")
        finishTakingBack()
        file.close()
    }

    /// Opens the file of `handle` (where this engine's file was moved) and
    /// serves under that name from now on. Memory keeps its state.
    /// - Throws: why the file cannot be opened; the engine is then unusable.
    public func reopenFile(as handle: String, directory: String) throws(SQLiteKVCache.Error) {
        let configuration = file.configuration
        do {
            file = try CacheFile(handle: handle, directory: directory, configuration: configuration)
        } catch let error as SQLiteKVCache.Error {
            throw error
        } catch {
            throw .databaseUnavailable(reason: "\(error)")
        }
        self.handle = handle
        eviction.reset(for: policy)
        if capacity > 0 { eviction.rebuild(table.allUnapplied, policy: policy) }
        expiry.fileChanged(volatile: totals.volatile)
    }

    /// Closes the file (checkpointed). Changes not applied are lost: the
    /// owner applies what it means to keep first.
    public func close() {
        finishTakingBack()
        file.close()
    }
}

/// A change to a cache, as it happens in memory.
public enum CacheEvent: Sendable, Equatable {
    case stored(key: [UInt8])
    case deleted(key: [UInt8])
    case expired(key: [UInt8])
    case evicted(key: [UInt8])
    case cleared
}
