// The typed calls; `Pipeline+Commands.swift` queues the same ones.
// Each is a `Commands` call (Call.swift), which says what is sent and how
// the reply reads.

extension KVCacheClient {
    // MARK: Strings

    /// `GET key`: the value, or nil.
    public func get(_ key: some KVCacheArgument) throws(KVCacheClientError) -> [UInt8]? {
        try run(Commands.get(key))
    }

    /// `GET key` as UTF-8 text, or nil.
    public func getString(_ key: some KVCacheArgument) throws(KVCacheClientError) -> String? {
        try run(Commands.getString(key))
    }

    /// `SET key value [NX|XX] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]`.
    /// - Returns: false when the condition skipped the write.
    @discardableResult
    public func set(_ key: some KVCacheArgument, _ value: some KVCacheArgument, expiry: Expiry? = nil, condition: SetCondition = .always) throws(KVCacheClientError) -> Bool {
        try run(Commands.set(key, value, expiry: expiry, condition: condition))
    }

    /// `MGET key…`: the values in order, nil for each missing key.
    public func mget<Key: KVCacheArgument>(_ keys: [Key]) throws(KVCacheClientError) -> [[UInt8]?] {
        try run(Commands.mget(keys))
    }

    /// `MSET key value…`.
    public func mset<Key: KVCacheArgument, Value: KVCacheArgument>(_ pairs: [(Key, Value)]) throws(KVCacheClientError) {
        try run(Commands.mset(pairs))
    }

    /// `MSETNX key value…`: sets all or, when any key exists, none.
    /// - Returns: whether they were set.
    @discardableResult
    public func msetNX<Key: KVCacheArgument, Value: KVCacheArgument>(_ pairs: [(Key, Value)]) throws(KVCacheClientError) -> Bool {
        try run(Commands.msetnx(pairs))
    }

    /// `INCR key`: the new value.
    @discardableResult
    public func incr(_ key: some KVCacheArgument) throws(KVCacheClientError) -> Int64 {
        try run(Commands.incr(key))
    }

    /// `INCRBY key increment`: the new value.
    @discardableResult
    public func incrBy(_ key: some KVCacheArgument, _ increment: Int64) throws(KVCacheClientError) -> Int64 {
        try run(Commands.incrBy(key, increment))
    }

    /// `INCRBYFLOAT key increment`: the new value.
    @discardableResult
    public func incrByFloat(_ key: some KVCacheArgument, _ increment: Double) throws(KVCacheClientError) -> Double {
        try run(Commands.incrByFloat(key, increment))
    }

    /// `DECR key`: the new value.
    @discardableResult
    public func decr(_ key: some KVCacheArgument) throws(KVCacheClientError) -> Int64 {
        try run(Commands.decr(key))
    }

    /// `DECRBY key decrement`: the new value.
    @discardableResult
    public func decrBy(_ key: some KVCacheArgument, _ decrement: Int64) throws(KVCacheClientError) -> Int64 {
        try run(Commands.decrBy(key, decrement))
    }

    /// `APPEND key value`: the new length.
    @discardableResult
    public func append(_ key: some KVCacheArgument, _ value: some KVCacheArgument) throws(KVCacheClientError) -> Int {
        try run(Commands.append(key, value))
    }

    /// `STRLEN key`: the value's length, 0 for a missing key.
    public func strlen(_ key: some KVCacheArgument) throws(KVCacheClientError) -> Int {
        try run(Commands.strlen(key))
    }

    /// `GETRANGE key start end`: bytes `start…end`, inclusive; negative counts from the end.
    public func getRange(_ key: some KVCacheArgument, _ start: Int, _ end: Int) throws(KVCacheClientError) -> [UInt8] {
        try run(Commands.getRange(key, start, end))
    }

    /// `SETRANGE key offset value`: overwrites from `offset`, zero-padding; returns the new length.
    @discardableResult
    public func setRange(_ key: some KVCacheArgument, offset: Int, _ value: some KVCacheArgument) throws(KVCacheClientError) -> Int {
        try run(Commands.setRange(key, offset, value))
    }

    /// `GETDEL key`: the value, deleting the key; nil when missing.
    @discardableResult
    public func getDel(_ key: some KVCacheArgument) throws(KVCacheClientError) -> [UInt8]? {
        try run(Commands.getDel(key))
    }

    /// `GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST]`: the value, setting or removing its expiry.
    @discardableResult
    public func getEx(_ key: some KVCacheArgument, expiry: Expiry? = nil) throws(KVCacheClientError) -> [UInt8]? {
        try run(Commands.getEx(key, expiry: expiry))
    }

    // MARK: Expiry

    /// `EXPIRE key seconds [NX|XX|GT|LT]`.
    /// - Returns: whether the expiry was set (false: no such key, or the condition failed).
    @discardableResult
    public func expire(_ key: some KVCacheArgument, seconds: Int64, _ condition: ExpireCondition? = nil) throws(KVCacheClientError) -> Bool {
        try run(Commands.expire(key, seconds, condition))
    }

    /// `PEXPIRE key milliseconds [NX|XX|GT|LT]`: whether the expiry was set.
    @discardableResult
    public func pexpire(_ key: some KVCacheArgument, milliseconds: Int64, _ condition: ExpireCondition? = nil) throws(KVCacheClientError) -> Bool {
        try run(Commands.pexpire(key, milliseconds, condition))
    }

    /// `EXPIREAT key unix-seconds [NX|XX|GT|LT]`: whether the expiry was set.
    @discardableResult
    public func expireAt(_ key: some KVCacheArgument, unixSeconds: Int64, _ condition: ExpireCondition? = nil) throws(KVCacheClientError) -> Bool {
        try run(Commands.expireAt(key, unixSeconds, condition))
    }

    /// `PEXPIREAT key unix-milliseconds [NX|XX|GT|LT]`: whether the expiry was set.
    @discardableResult
    public func pexpireAt(_ key: some KVCacheArgument, unixMilliseconds: Int64, _ condition: ExpireCondition? = nil) throws(KVCacheClientError) -> Bool {
        try run(Commands.pexpireAt(key, unixMilliseconds, condition))
    }

    /// `TTL key`: seconds left; -1 when the key has no expiry, -2 when it does not exist.
    public func ttl(_ key: some KVCacheArgument) throws(KVCacheClientError) -> Int64 {
        try run(Commands.ttl(key))
    }

    /// `PTTL key`: milliseconds left; -1 when the key has no expiry, -2 when it does not exist.
    public func pttl(_ key: some KVCacheArgument) throws(KVCacheClientError) -> Int64 {
        try run(Commands.pttl(key))
    }

    /// `PERSIST key`: whether an expiry was removed.
    @discardableResult
    public func persist(_ key: some KVCacheArgument) throws(KVCacheClientError) -> Bool {
        try run(Commands.persist(key))
    }

    // MARK: Keys

    /// `DEL key…`: how many existed.
    @discardableResult
    public func del<Key: KVCacheArgument>(_ keys: Key...) throws(KVCacheClientError) -> Int {
        try run(Commands.del(keys))
    }

    /// `DEL key…`: how many existed.
    @discardableResult
    public func del<Key: KVCacheArgument>(_ keys: [Key]) throws(KVCacheClientError) -> Int {
        try run(Commands.del(keys))
    }

    /// `EXISTS key…`: how many exist (a key named twice counts twice).
    public func exists<Key: KVCacheArgument>(_ keys: Key...) throws(KVCacheClientError) -> Int {
        try run(Commands.exists(keys))
    }

    /// `EXISTS key…`: how many exist (a key named twice counts twice).
    public func exists<Key: KVCacheArgument>(_ keys: [Key]) throws(KVCacheClientError) -> Int {
        try run(Commands.exists(keys))
    }

    /// `KEYS pattern`: every key matching the glob; `scanKeys` walks a large cache without one huge reply.
    public func keys(_ pattern: some KVCacheArgument = "*") throws(KVCacheClientError) -> [[UInt8]] {
        try run(Commands.keys(pattern))
    }

    /// `SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]`: one step; start at 0, go on with the returned
    /// cursor until it is 0 again.
    public func scan(cursor: UInt64, match: String? = nil, count: Int? = nil, type: String? = nil) throws(KVCacheClientError) -> (cursor: UInt64, keys: [[UInt8]]) {
        try run(Commands.scan(cursor: cursor, match: match, count: count, type: type))
    }

    /// `RENAME key newkey`.
    public func rename(_ key: some KVCacheArgument, to newKey: some KVCacheArgument) throws(KVCacheClientError) {
        try run(Commands.rename(key, newKey))
    }

    /// `RENAMENX key newkey`: whether it was renamed (false when `newKey` exists).
    @discardableResult
    public func renameNX(_ key: some KVCacheArgument, to newKey: some KVCacheArgument) throws(KVCacheClientError) -> Bool {
        try run(Commands.renameNX(key, newKey))
    }

    /// `TYPE key`: `string`, or `none` for a missing key.
    public func type(_ key: some KVCacheArgument) throws(KVCacheClientError) -> String {
        try run(Commands.type(key))
    }

    /// `DBSIZE`: the number of keys in the selected cache.
    public func dbsize() throws(KVCacheClientError) -> Int {
        try run(Commands.dbsize())
    }

    /// `FLUSHDB`: empties the selected cache.
    public func flushdb() throws(KVCacheClientError) {
        try run(Commands.flushdb())
    }

    /// `FLUSHALL`: empties every cache.
    public func flushall() throws(KVCacheClientError) {
        try run(Commands.flushall())
    }

    // MARK: Caches and connection

    /// `SELECT name`: switches to the named cache, creating it if needed (`select("sessions")`).
    /// The client selects it again after reconnecting.
    public func select(_ cache: String) throws(KVCacheClientError) {
        try run(Commands.select(cache))
    }

    /// `SELECT index`: switches to the cache `db<index>`.
    public func select(_ index: Int) throws(KVCacheClientError) {
        try run(Commands.select(index))
    }

    /// `PING`: `PONG`.
    @discardableResult
    public func ping() throws(KVCacheClientError) -> String {
        try run(Commands.ping())
    }

    /// `INFO [section]`: the server's report, as text.
    public func info(_ section: String? = nil) throws(KVCacheClientError) -> String {
        try run(Commands.info(section))
    }
}
