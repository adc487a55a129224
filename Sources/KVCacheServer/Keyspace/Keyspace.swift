import Foundation
import SQLiteKVCache

/// The one way from a command to a key: one cache's keys as commands see
/// them, as Redis's `db.c` is for a database. A command file never touches
/// the engine; it looks keys up and changes them here, so a rule that
/// concerns every key (counting hits and misses, WRONGTYPE, the records of
/// the append-only log, and later keyspace events) lands in one place.
///
/// Reads come in three kinds, as Redis's lookups: `lookupRead` counts a
/// keyspace hit or miss (INFO's `keyspace_hits`/`keyspace_misses`, Redis's
/// `lookupKeyRead`), `lookupWrite` does not (the key is about to be written:
/// `lookupKeyWrite`), and `peek` does not either (introspection: OBJECT,
/// DEBUG, WATCH). Every read expires the key lazily: the engine deletes an
/// expired entry it meets and answers nil, as Redis's `expireIfNeeded`.
///
/// Every change to a cache's contents goes through one of seven methods:
/// `store(_:)` (SET, ADD and overwrite all end there), `delete(_:)`,
/// `setExpiry(_:_:)`, `flush()`, `swap(with:)`, and the background
/// `removeExpired(limit:)` and `evict(limit:)`. Everything else (`set`,
/// `expire`, `rename`, `move`, `copy`, the collection stores) is built from
/// those. The first five record their effect for the append-only log
/// (`Persistence.record`), so a command's record holds exactly what it
/// changed, in every cache it touched; keyspace-change events will be
/// emitted there too.
struct Keyspace {
    typealias Entry = SQLiteKVCache.Entry

    unowned(unsafe) let server: Server  // the server outlives every request
    let cache: OpenCache

    init(server: Server, cache: OpenCache) {
        self.server = server
        self.cache = cache
    }

    /// The engine serving this cache.
    /// - Throws: why the cache's file could not be opened.
    private var engine: CacheEngine {
        get throws(ReplyError) { try cache.usableEngine() }
    }

    /// Runs `body` on the engine; a file SQLite finds damaged is moved
    /// aside and the cache starts empty (the error still reaches the client).
    private func run<R>(_ body: (CacheEngine) throws(SQLiteKVCache.Error) -> R) throws -> R {
        let engine = try self.engine
        do throws(SQLiteKVCache.Error) {
            return try body(engine)
        } catch {
            if CacheEngine.isCorruption(error) { server.recoverCorrupt(cache, reason: "\(error)") }
            throw error
        }
    }

    // MARK: Reads

    /// The live entry for `key`, counted as a keyspace hit or miss.
    /// - Throws: WRONGTYPE when `kind` is given and the key holds another
    ///   kind (counted as a hit, as in Redis); the engine's error when the
    ///   cache cannot be read.
    func lookupRead(_ key: [UInt8], as kind: ValueKind? = nil) throws -> Entry? {
        let entry = try run { engine throws(SQLiteKVCache.Error) in try engine.get(key)?.plain }
        countLookup(hit: entry != nil)
        if entry == nil { changed(.missed, key) }
        if let kind, let entry, entry.kind != kind { throw ReplyError.wrongType }
        return entry
    }

    /// Calls `body` with the value of `key` where memory holds it (no
    /// copy, no entry built), a counted read as `lookupRead`: GET's path.
    /// - Returns: false when the key has no live entry (`body` not called).
    /// - Throws: WRONGTYPE when the key holds another kind than `kind`.
    func readValue(_ key: Argument, as kind: ValueKind, _ body: (CacheEngine.ValueView) -> Void) throws -> Bool {
        let found = try key.withUnsafeBytes { bytes in
            try run { engine throws(SQLiteKVCache.Error) in
                try engine.withValue(bytes) { found, view in
                    if found == kind { body(view) }
                    return found
                }
            }
        }
        countLookup(hit: found != nil)
        guard let found else {
            changed(.missed, key.bytes)
            return false
        }
        if found != kind { throw ReplyError.wrongType }
        return true
    }

    /// The live entry for `key` as stored (a collection's value may be live),
    /// counted as a keyspace hit or miss when `read`.
    /// - Throws: WRONGTYPE when the key holds another kind than `kind`.
    /// - Parameter touch: count as a use (LRU/LFU); false for TYPE, TTL and the like.
    func lookupStored(_ key: [UInt8], as kind: ValueKind? = nil, read: Bool, touch: Bool = true) throws -> StoredEntry? {
        let entry = try run { engine throws(SQLiteKVCache.Error) in try engine.get(key, touch: touch) }
        if read { countLookup(hit: entry != nil); if entry == nil { changed(.missed, key) } }
        if let kind, let entry, entry.row.kind != kind { throw ReplyError.wrongType }
        return entry
    }

    /// The live value of `key`, decoded from its bytes with `decode` when
    /// needed; for a change, one the caller owns (see `CacheEngine.liveValue`).
    func liveValue(_ key: [UInt8], forChange: Bool, decode: @escaping ([UInt8]) throws(ReplyError) -> LiveValue)
        throws -> LiveValue?
    {
        let engine = forChange ? try engineForWrite() : try self.engine
        do {
            return try engine.liveValue(key, forChange: forChange) { bytes in try decode(bytes) }
        } catch let error as SQLiteKVCache.Error {
            if CacheEngine.isCorruption(error) { server.recoverCorrupt(cache, reason: "\(error)") }
            throw error
        }
    }

    /// Records that `key`'s live value changed in place (its encoded size was `oldEncodedSize`).
    func changeLive(_ key: [UInt8], kind: ValueKind, oldEncodedSize: Int, storageDate: Double) throws {
        let engine = try engineForWrite(grows: true)
        try run { _ throws(SQLiteKVCache.Error) in
            try engine.liveValueChanged(key, oldEncodedSize: oldEncodedSize, storageDate: storageDate)
        }
        keyChanged(key, storedKind: kind)
        changed(.stored(isNew: false), key)
    }

    /// Stores an entry whose value may be live (a new collection). Logged as
    /// its command, by the caller's `noteLiveChange`.
    func storeStored(_ entry: StoredEntry) throws {
        let engine = try engineForWrite(grows: true)
        let isNew = isNewKey(entry.key)
        try run { _ throws(SQLiteKVCache.Error) in try engine.put(entry) }
        keyChanged(entry.key, storedKind: entry.row.kind)
        changed(.stored(isNew: isNew), entry.key)
    }

    /// The live entry for `key` before a write to it, not counted.
    /// - Throws: WRONGTYPE when `kind` is given and the key holds another kind.
    func lookupWrite(_ key: [UInt8], as kind: ValueKind? = nil) throws -> Entry? {
        let entry = try run { engine throws(SQLiteKVCache.Error) in try engine.get(key)?.plain }
        if let kind, let entry, entry.kind != kind { throw ReplyError.wrongType }
        return entry
    }

    /// The live entry for `key`, not counted and with no intent to write
    /// (OBJECT, DEBUG, WATCH and EXEC's check of watched keys).
    func peek(_ key: [UInt8]) throws -> Entry? {
        try run { engine throws(SQLiteKVCache.Error) in try engine.get(key)?.plain }
    }

    /// The live entry for `key` as stored (a collection's value may be
    /// live), not counted and with no intent to write (OBJECT, DEBUG).
    func peekStored(_ key: [UInt8]) throws -> StoredEntry? {
        try run { engine throws(SQLiteKVCache.Error) in try engine.get(key, touch: false) }
    }

    /// The entry for `key`, expired or not, untouched (DEBUG OBJECT).
    func peekIncludingExpired(_ key: [UInt8]) throws -> StoredEntry? {
        try run { engine throws(SQLiteKVCache.Error) in try engine.peekIncludingExpired(key) }
    }

    /// Whether `key` has a live entry, without reading its value.
    /// - Parameter counted: count a keyspace hit or miss (EXISTS does).
    func exists(_ key: [UInt8], counted: Bool = false) throws -> Bool {
        let live = try run { engine throws(SQLiteKVCache.Error) in try engine.contains(key) }
        if counted { countLookup(hit: live) }
        return live
    }

    /// Marks `key` as just used (for an `lru` cache) when it is live.
    /// - Returns: whether it is live.
    func touch(_ key: [UInt8]) throws -> Bool {
        try run { engine throws(SQLiteKVCache.Error) in
            try engine.policy == .lru ? engine.touch(key) : engine.get(key, touch: true) != nil
        }
    }

    /// The number of entries (expired ones not yet removed included), as DBSIZE.
    func count() throws -> Int {
        let engine = try self.engine
        if engine.totalsPending { try server.makeTotalsExact(cache) }
        return engine.count
    }

    /// Every live key.
    func keys() throws -> [[UInt8]] {
        try run { engine throws(SQLiteKVCache.Error) in try engine.keys() }
    }

    /// One step of a SCAN: the keys found and the cursor to continue from
    /// (0 when done). Up to `count` keys already expired are removed first
    /// (as Redis's SCAN expires the keys it meets, so their DELs propagate).
    func scan(cursor: UInt64, count: Int, kind: ValueKind?) throws -> (keys: [[UInt8]], next: UInt64) {
        if try expiryDue() { _ = try removeExpired(limit: max(1, count)) }
        return try run { engine throws(SQLiteKVCache.Error) in try engine.scan(cursor: cursor, count: count, kind: kind) }
    }

    /// A live key chosen at random, or nil when there is none. A few keys
    /// already expired are removed first (Redis's dbRandomKey expires the
    /// keys it draws).
    func randomKey() throws -> [UInt8]? {
        if try expiryDue() { _ = try removeExpired(limit: 16) }
        return try run { engine throws(SQLiteKVCache.Error) in try engine.randomKey() }
    }

    /// Whether some entry's expiry has passed (cheap: no SQL).
    func expiryDue() throws -> Bool {
        try engine.expiryDue()
    }

    /// Counts a read for INFO's keyspace_hits / keyspace_misses, server-wide and per cache.
    private func countLookup(hit: Bool) {
        if hit {
            server.stats.keyspaceHits += 1
            cache.hits += 1
        } else {
            server.stats.keyspaceMisses += 1
            cache.misses += 1
        }
    }

    // MARK: The changes (every write ends in one of these)

    /// Tells the server that `key` changed (Redis's signalModifiedKey and
    /// signalKeyAsReady): clients watching it will see EXEC fail; clients
    /// blocked on it are looked at once the running command ends (served
    /// when it now holds what they wait for; a stream's XREADGROUP clients
    /// answered with an error when it was deleted or replaced).
    private func keyChanged(_ key: [UInt8], storedKind kind: ValueKind? = nil) {
        if !server.watchers.isEmpty { server.touchWatchedKey(cache.name, key) }
        if server.blockedCount > 0 { server.signalKeyAsReady(cache.name, key) }
    }

    /// Redis's signalModifiedKey alone: WATCH and client-side caching see
    /// `key` change (a stream command that changes its stream in place).
    func signalModified(_ key: [UInt8]) {
        if !server.watchers.isEmpty { server.touchWatchedKey(cache.name, key) }
        if server.trackingActive { server.trackingKeyChanged(key, in: cache, byClient: true) }
    }

    /// Records that `key`'s stream, loaded for a write, changed in place:
    /// the engine accounts its new size. Only when `modifiesKey` do WATCH
    /// and client-side caching hear of it, as Redis's stream commands call
    /// signalModifiedKey for some changes only; no keyspace event is named
    /// here (each stream command names its own) and no blocked client is
    /// readied (XADD does that itself).
    func changeStream(_ key: [UInt8], oldEncodedSize: Int, modifiesKey: Bool) throws {
        let engine = try engineForWrite(grows: true)
        let now = Double(Server.nowMilliseconds()) / 1000
        try run { _ throws(SQLiteKVCache.Error) in
            try engine.liveValueChanged(key, oldEncodedSize: oldEncodedSize, storageDate: now)
        }
        if modifiesKey { signalModified(key) }
    }

    /// The engine of this cache, for a change.
    /// - Parameter grows: the change may take more room (a store by a
    ///   command Redis flags `denyoom`): refused while the cache's changes
    ///   cannot be applied to SQLite (a full disk), with SQLite's error.
    ///   Removals are taken, so room can be made.
    /// - Throws: MISCONF while the append-only log cannot be written.
    private func engineForWrite(grows: Bool = false) throws -> CacheEngine {
        if let refusal = server.persistence.writeRefusal { throw refusal }
        let engine = try self.engine
        if grows, server.runningCommandMayGrow, let failure = engine.lastFailure { throw ReplyError.engine(failure) }
        return engine
    }

    /// Stores a whole entry (its kind, expiry, date and metadata), replacing
    /// any entry under its key, whatever its kind: Redis's `setKey`, and
    /// `dbAdd`/`dbOverwrite` when the caller has checked the key first.
    /// - Throws: the engine's error (`-OOM` at capacity under `noeviction`,
    ///   an entry larger than the capacity, SQLite's failure).
    func store(_ entry: Entry) throws {
        let engine = try engineForWrite(grows: true)
        let isNew = isNewKey(entry.key)
        try run { _ throws(SQLiteKVCache.Error) in try engine.put(StoredEntry(entry)) }
        keyChanged(entry.key, storedKind: entry.kind)
        server.persistence.recordPut(cache: cache.name, key: entry.key, kind: entry.kind,
                                     storageDate: entry.storageDate.timeIntervalSince1970,
                                     expiresAt: entry.expiresAt, metadata: entry.metadata, value: entry.value)
        changed(.stored(isNew: isNew), entry.key)
    }

    /// Stores a whole entry whose value may be live, recording it as a
    /// whole entry (a live value is encoded for the log).
    func store(_ entry: StoredEntry) throws {
        let engine = try engineForWrite(grows: true)
        let isNew = isNewKey(entry.key)
        try run { _ throws(SQLiteKVCache.Error) in try engine.put(entry) }
        keyChanged(entry.key, storedKind: entry.row.kind)
        server.persistence.record(.put(cache: cache.name, key: entry.key, kind: entry.row.kind,
                                       storageDate: entry.row.storageDate, expiresAt: entry.row.expiresAt,
                                       metadata: entry.row.metadata, value: entry.row.value.bytes))
        changed(.stored(isNew: isNew), entry.key)
    }

    /// Removes `key`.
    /// - Returns: whether there was a live entry.
    @discardableResult
    func delete(_ key: [UInt8]) throws -> Bool {
        let engine = try engineForWrite()
        guard try run({ _ throws(SQLiteKVCache.Error) in try engine.delete(key) }) else { return false }
        keyChanged(key)
        server.persistence.record(.delete(cache: cache.name, key: key))
        changed(.deleted, key)
        return true
    }

    /// Sets (milliseconds since 1970) or clears (nil) the expiry of a live `key`.
    /// - Returns: whether there was a live entry.
    @discardableResult
    func setExpiry(_ key: [UInt8], _ expiresAt: Int64?) throws -> Bool {
        let engine = try engineForWrite()
        guard try run({ _ throws(SQLiteKVCache.Error) in try engine.setExpiry(key, expiresAt) }) else { return false }
        keyChanged(key)
        server.persistence.record(.expire(cache: cache.name, key: key, at: expiresAt))
        changed(.expirySet(expiresAt), key)
        return true
    }

    /// Removes every key of this cache (FLUSHDB).
    func flush() throws {
        let engine = try engineForWrite()
        if !server.watchers.isEmpty {
            server.touchWatchedKeys(in: cache.name) { key in (try? engine.contains(key)) ?? true }
        }
        engine.clear()
        server.persistence.record(.clear(cache: cache.name))
        server.trackingFlushed(cache)
        // XREADGROUP clients blocked on a stream that went are answered.
        server.signalAllBlockedKeysAsReady(in: cache.name)
    }

    /// Exchanges the contents of this cache and `other` (SWAPDB), at once:
    /// their engines change places, and the writer later exchanges their files.
    func swap(with other: Keyspace) throws {
        let (x, y) = (try engineForWrite(), try other.engineForWrite())
        server.persistence.record(.swap(a: cache.name, b: other.cache.name, fileA: x.fileID, fileB: y.fileID))
        if !server.watchers.isEmpty {
            // A watched key changes when it is live in either cache.
            let live = { (key: [UInt8]) in ((try? x.contains(key)) ?? true) || ((try? y.contains(key)) ?? true) }
            server.touchWatchedKeys(in: cache.name, where: live)
            server.touchWatchedKeys(in: other.cache.name, where: live)
        }
        server.registry.swapEngines(cache, other.cache)
        server.signalAllBlockedKeysAsReady(in: cache.name)
        server.signalAllBlockedKeysAsReady(in: other.cache.name)
        server.persistence.noteExchangePending()
    }

    /// Removes up to `limit` expired entries, soonest first (the active
    /// expiry sweep). Not logged: a replay expires them again.
    /// - Returns: how many went; fewer than `limit` means none is left due,
    ///   unless `expiryDue()` says more may be.
    func removeExpired(limit: Int) throws -> Int {
        try run { engine throws(SQLiteKVCache.Error) in try engine.removeExpired(limit: limit) }
    }

    /// Removes `key` if it has expired, even on a replica (see `CacheEngine.removeIfExpired`).
    /// - Returns: its expiry time while it is live with one.
    func removeIfExpired(_ key: [UInt8]) throws -> Int64? {
        try run { engine throws(SQLiteKVCache.Error) in try engine.removeIfExpired(key) }
    }

    /// Evicts `key` for maxmemory (Redis's performEvictions): logged as a
    /// delete, so a replay drops it too; watchers see it change.
    /// - Returns: the content bytes freed (0 when it was not live).
    func evictForMaxMemory(_ key: [UInt8]) throws -> Int {
        let freed = try run { engine throws(SQLiteKVCache.Error) in try engine.evictKey(key) }
        guard freed > 0 else { return 0 }
        keyChanged(key)
        server.persistence.record(.delete(cache: cache.name, key: key))
        return freed
    }

    /// How `key` has been used (OBJECT IDLETIME/FREQ), without counting as a use.
    func accessInfo(_ key: [UInt8]) throws -> AccessInfo? {
        try run { engine throws(SQLiteKVCache.Error) in try engine.accessInfo(key) }
    }

    /// Milliseconds since `key` was last used, nil when it is absent.
    func idleMilliseconds(_ key: [UInt8]) throws -> Int64? {
        try accessInfo(key)?.idleMilliseconds
    }

    /// Sets how `key` was used (RESTORE … IDLETIME/FREQ).
    func setAccess(_ key: [UInt8], idleSeconds: Int64?, frequency: UInt8?) throws {
        _ = try run { engine throws(SQLiteKVCache.Error) in try engine.setAccess(key, idleSeconds: idleSeconds, frequency: frequency) }
    }

    /// Evicts up to `limit` entries toward the capacity (after a capacity
    /// cut). Not logged: a replay into a cache over capacity evicts again.
    /// - Returns: true when the cache is within its capacity.
    func evict(limit: Int) throws -> Bool {
        try run { engine throws(SQLiteKVCache.Error) in try engine.evict(limit: limit) }
    }

    // MARK: Changes built from those

    /// `set` of a key and value viewed where they arrived (SET's path): when
    /// nothing needs the key as a copy (no WATCH, blocked client, tracking
    /// or keyspace event), neither is copied on the way to the engine and
    /// the log.
    func set(_ key: Argument, _ value: Argument, expiresAt: Int64?) throws {
        guard server.watchers.isEmpty && server.blockedCount == 0 && !server.trackingActive
                && !server.wantsKeyspaceEvents && server.eventSource == nil else {
            return try set(key.bytes, value.bytes, expiresAt: expiresAt)
        }
        let engine = try engineForWrite(grows: true)
        let storageDate = Double(Server.keyTime()) / 1000
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        try key.withUnsafeBytes { key in
            try value.withUnsafeBytes { value in
                try run { engine throws(SQLiteKVCache.Error) in
                    try engine.put(key: key, kind: .string, storageDate: storageDate, expiresAt: expiresAt,
                                   metadata: none, value: value)
                }
                server.persistence.recordPut(cache: cache.name, key: key, kind: .string, storageDate: storageDate,
                                             expiresAt: expiresAt, metadata: none, value: value)
            }
        }
    }

    /// Stores a string `value` under `key`, stamped now: Redis's `setKey`.
    func set(_ key: [UInt8], _ value: [UInt8], expiresAt: Int64?, metadata: [UInt8] = [],
             storageDate: Date = Date(timeIntervalSince1970: Double(Server.keyTime()) / 1000)) throws {
        try store(Entry(key: key, storageDate: storageDate, metadata: metadata, value: value, expiresAt: expiresAt))
    }

    /// Stores a string `value` under `key` only when the key has no live
    /// entry (SETNX): Redis's `dbAdd` after its check.
    /// - Parameter value: made only when it is stored.
    /// - Returns: whether it was stored.
    func add(_ key: [UInt8], _ value: @autoclosure () -> [UInt8]) throws -> Bool {
        if try exists(key) { return false }
        try set(key, value(), expiresAt: nil)
        return true
    }

    /// A key's expiry, as TTL and friends read it.
    enum Expiry: Equatable {
        case noKey
        case persistent
        /// Milliseconds since 1970.
        case at(Int64)
    }

    /// The expiry of `key`: a counted read, as Redis's TTL.
    func expiry(_ key: [UInt8]) throws -> Expiry {
        guard let entry = try lookupStored(key, read: true, touch: false) else { return .noKey }
        return entry.row.expiresAt.map(Expiry.at) ?? .persistent
    }

    /// Gives a live `key` the expiry `when`, or deletes it when `when` is not
    /// after `now` (a time already past deletes the key, as in Redis).
    /// Propagated (EXPIRE's family, GETEX) as PEXPIREAT key <when>
    /// followed by `options`, or as DEL (UNLINK under lazyfree-lazy-expire).
    func expire(_ key: [UInt8], at when: Int64, now: Int64, options: [[UInt8]] = []) throws {
        if when <= now {
            try delete(key)
            let lazy = server.config.lazyFree["lazyfree-lazy-expire"] ?? false
            server.propagateAs([Array((lazy ? "UNLINK" : "DEL").utf8), key])
        } else {
            try setExpiry(key, when)
            server.propagateAs([Array("PEXPIREAT".utf8), key, Array(String(when).utf8)] + options)
        }
    }

    /// What a RENAME found.
    enum RenameResult { case noSuchKey, sameKey, destinationExists, renamed }

    /// Renames `source` to `destination`, keeping its date, metadata, expiry
    /// and kind; with `replace` false, only when `destination` has no live
    /// entry. A live collection moves as it is (O(1)), and the command is
    /// logged as itself; a string is logged as its effects.
    func rename(_ source: [UInt8], to destination: [UInt8], replace: Bool) throws -> RenameResult {
        guard var entry = try lookupStored(source, read: false) else { return .noSuchKey }
        if source == destination { return .sameKey }
        if !replace, try exists(destination) { return .destinationExists }
        entry.key = destination
        if case .live = entry.row.value {
            try delete(source)
            try storeStored(entry)
            server.persistence.noteLiveChange()
        } else {
            try store(entry)
            try delete(source)
        }
        return .renamed
    }

    /// Copies `source` to `destination` in `target` (this cache or another),
    /// keeping its date, metadata, expiry and kind. The source lookup is a
    /// counted read, as Redis's COPY. Within one cache a live collection is
    /// copied as it is, and the command logged as itself; into another
    /// cache the copy is logged as its value.
    /// - Returns: false when there is no source, or (without `replace`) the destination exists.
    func copy(_ source: [UInt8], to destination: [UInt8], in target: Keyspace, replace: Bool) throws -> Bool {
        guard var entry = try lookupStored(source, read: true) else { return false }
        if !replace, try target.exists(destination) { return false }
        entry.key = destination
        if case .live(let value) = entry.row.value {
            // A stream copies as Redis's streamDup does (listpacks allocated to fit).
            entry.row.value = .live((value as? StreamValue)?.duplicate() ?? value.copy())
            if target.cache === cache {
                try storeStored(entry)
                server.persistence.noteLiveChange()
                return true
            }
        }
        try target.store(entry)
        return true
    }

    /// Moves `key` to `target` (another cache), keeping its date, metadata,
    /// expiry and kind; logged as its value stored there and its delete here.
    /// - Returns: false when the key is absent here or present there.
    func move(_ key: [UInt8], to target: Keyspace) throws -> Bool {
        guard let entry = try lookupStored(key, read: false), try !target.exists(key) else { return false }
        try target.store(entry)
        try delete(key)
        return true
    }

    /// Removes every key of every cache in the data directory (FLUSHALL),
    /// opening the caches not yet open; a cache that cannot be opened is skipped.
    static func flushAll(_ server: Server) throws {
        for cache in server.registry.openAllKnown() where cache.openError == nil {
            try Keyspace(server: server, cache: cache).flush()
        }
    }
}
