// The typed calls; `KVCacheClient+Commands.swift` runs the same ones at once.
// Each is a `Commands` call (Call.swift), which says what is sent and how
// the reply reads.

extension Pipeline {
    // MARK: Strings

    /// `GET key`: the value, or nil.
    @discardableResult
    public func get(_ key: some KVCacheArgument) -> Pending<[UInt8]?> {
        add(Commands.get(key))
    }

    /// `GET key` as UTF-8 text, or nil.
    @discardableResult
    public func getString(_ key: some KVCacheArgument) -> Pending<String?> {
        add(Commands.getString(key))
    }

    /// `SET key value [NX|XX] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]`.
    /// - Returns: false when the condition skipped the write.
    @discardableResult
    public func set(_ key: some KVCacheArgument, _ value: some KVCacheArgument, expiry: Expiry? = nil, condition: SetCondition = .always) -> Pending<Bool> {
        add(Commands.set(key, value, expiry: expiry, condition: condition))
    }

    /// `MGET key…`: the values in order, nil for each missing key.
    @discardableResult
    public func mget<Key: KVCacheArgument>(_ keys: [Key]) -> Pending<[[UInt8]?]> {
        add(Commands.mget(keys))
    }

    /// `MSET key value…`.
    @discardableResult
    public func mset<Key: KVCacheArgument, Value: KVCacheArgument>(_ pairs: [(Key, Value)]) -> Pending<Void> {
        add(Commands.mset(pairs))
    }

    /// `MSETNX key value…`: sets all or, when any key exists, none.
    /// - Returns: whether they were set.
    @discardableResult
    public func msetNX<Key: KVCacheArgument, Value: KVCacheArgument>(_ pairs: [(Key, Value)]) -> Pending<Bool> {
        add(Commands.msetnx(pairs))
    }

    /// `INCR key`: the new value.
    @discardableResult
    public func incr(_ key: some KVCacheArgument) -> Pending<Int64> {
        add(Commands.incr(key))
    }

    /// `INCRBY key increment`: the new value.
    @discardableResult
    public func incrBy(_ key: some KVCacheArgument, _ increment: Int64) -> Pending<Int64> {
        add(Commands.incrBy(key, increment))
    }

    /// `INCRBYFLOAT key increment`: the new value.
    @discardableResult
    public func incrByFloat(_ key: some KVCacheArgument, _ increment: Double) -> Pending<Double> {
        add(Commands.incrByFloat(key, increment))
    }

    /// `DECR key`: the new value.
    @discardableResult
    public func decr(_ key: some KVCacheArgument) -> Pending<Int64> {
        add(Commands.decr(key))
    }

    /// `DECRBY key decrement`: the new value.
    @discardableResult
    public func decrBy(_ key: some KVCacheArgument, _ decrement: Int64) -> Pending<Int64> {
        add(Commands.decrBy(key, decrement))
    }

    /// `APPEND key value`: the new length.
    @discardableResult
    public func append(_ key: some KVCacheArgument, _ value: some KVCacheArgument) -> Pending<Int> {
        add(Commands.append(key, value))
    }

    /// `STRLEN key`: the value's length, 0 for a missing key.
    @discardableResult
    public func strlen(_ key: some KVCacheArgument) -> Pending<Int> {
        add(Commands.strlen(key))
    }

    /// `GETRANGE key start end`: bytes `start…end`, inclusive; negative counts from the end.
    @discardableResult
    public func getRange(_ key: some KVCacheArgument, _ start: Int, _ end: Int) -> Pending<[UInt8]> {
        add(Commands.getRange(key, start, end))
    }

    /// `SETRANGE key offset value`: overwrites from `offset`, zero-padding; returns the new length.
    @discardableResult
    public func setRange(_ key: some KVCacheArgument, offset: Int, _ value: some KVCacheArgument) -> Pending<Int> {
        add(Commands.setRange(key, offset, value))
    }

    /// `GETDEL key`: the value, deleting the key; nil when missing.
    @discardableResult
    public func getDel(_ key: some KVCacheArgument) -> Pending<[UInt8]?> {
        add(Commands.getDel(key))
    }

    /// `GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST]`: the value, setting or removing its expiry.
    @discardableResult
    public func getEx(_ key: some KVCacheArgument, expiry: Expiry? = nil) -> Pending<[UInt8]?> {
        add(Commands.getEx(key, expiry: expiry))
    }

    // MARK: Expiry

    /// `EXPIRE key seconds [NX|XX|GT|LT]`.
    /// - Returns: whether the expiry was set (false: no such key, or the condition failed).
    @discardableResult
    public func expire(_ key: some KVCacheArgument, seconds: Int64, _ condition: ExpireCondition? = nil) -> Pending<Bool> {
        add(Commands.expire(key, seconds, condition))
    }

    /// `PEXPIRE key milliseconds [NX|XX|GT|LT]`: whether the expiry was set.
    @discardableResult
    public func pexpire(_ key: some KVCacheArgument, milliseconds: Int64, _ condition: ExpireCondition? = nil) -> Pending<Bool> {
        add(Commands.pexpire(key, milliseconds, condition))
    }

    /// `EXPIREAT key unix-seconds [NX|XX|GT|LT]`: whether the expiry was set.
    @discardableResult
    public func expireAt(_ key: some KVCacheArgument, unixSeconds: Int64, _ condition: ExpireCondition? = nil) -> Pending<Bool> {
        add(Commands.expireAt(key, unixSeconds, condition))
    }

    /// `PEXPIREAT key unix-milliseconds [NX|XX|GT|LT]`: whether the expiry was set.
    @discardableResult
    public func pexpireAt(_ key: some KVCacheArgument, unixMilliseconds: Int64, _ condition: ExpireCondition? = nil) -> Pending<Bool> {
        add(Commands.pexpireAt(key, unixMilliseconds, condition))
    }

    /// `TTL key`: seconds left; -1 when the key has no expiry, -2 when it does not exist.
    @discardableResult
    public func ttl(_ key: some KVCacheArgument) -> Pending<Int64> {
        add(Commands.ttl(key))
    }

    /// `PTTL key`: milliseconds left; -1 when the key has no expiry, -2 when it does not exist.
    @discardableResult
    public func pttl(_ key: some KVCacheArgument) -> Pending<Int64> {
        add(Commands.pttl(key))
    }

    /// `PERSIST key`: whether an expiry was removed.
    @discardableResult
    public func persist(_ key: some KVCacheArgument) -> Pending<Bool> {
        add(Commands.persist(key))
    }

    // MARK: Keys

    /// `DEL key…`: how many existed.
    @discardableResult
    public func del<Key: KVCacheArgument>(_ keys: Key...) -> Pending<Int> {
        add(Commands.del(keys))
    }

    /// `DEL key…`: how many existed.
    @discardableResult
    public func del<Key: KVCacheArgument>(_ keys: [Key]) -> Pending<Int> {
        add(Commands.del(keys))
    }

    /// `EXISTS key…`: how many exist (a key named twice counts twice).
    @discardableResult
    public func exists<Key: KVCacheArgument>(_ keys: Key...) -> Pending<Int> {
        add(Commands.exists(keys))
    }

    /// `EXISTS key…`: how many exist (a key named twice counts twice).
    @discardableResult
    public func exists<Key: KVCacheArgument>(_ keys: [Key]) -> Pending<Int> {
        add(Commands.exists(keys))
    }

    /// `KEYS pattern`: every key matching the glob; `scanKeys` walks a large cache without one huge reply.
    @discardableResult
    public func keys(_ pattern: some KVCacheArgument = "*") -> Pending<[[UInt8]]> {
        add(Commands.keys(pattern))
    }

    /// `SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]`: one step; start at 0, go on with the returned
    /// cursor until it is 0 again.
    @discardableResult
    public func scan(cursor: UInt64, match: String? = nil, count: Int? = nil, type: String? = nil) -> Pending<(cursor: UInt64, keys: [[UInt8]])> {
        add(Commands.scan(cursor: cursor, match: match, count: count, type: type))
    }

    /// `RENAME key newkey`.
    @discardableResult
    public func rename(_ key: some KVCacheArgument, to newKey: some KVCacheArgument) -> Pending<Void> {
        add(Commands.rename(key, newKey))
    }

    /// `RENAMENX key newkey`: whether it was renamed (false when `newKey` exists).
    @discardableResult
    public func renameNX(_ key: some KVCacheArgument, to newKey: some KVCacheArgument) -> Pending<Bool> {
        add(Commands.renameNX(key, newKey))
    }

    /// `TYPE key`: `string`, or `none` for a missing key.
    @discardableResult
    public func type(_ key: some KVCacheArgument) -> Pending<String> {
        add(Commands.type(key))
    }

    /// `DBSIZE`: the number of keys in the selected cache.
    @discardableResult
    public func dbsize() -> Pending<Int> {
        add(Commands.dbsize())
    }

    /// `FLUSHDB`: empties the selected cache.
    @discardableResult
    public func flushdb() -> Pending<Void> {
        add(Commands.flushdb())
    }

    /// `FLUSHALL`: empties every cache.
    @discardableResult
    public func flushall() -> Pending<Void> {
        add(Commands.flushall())
    }

    // MARK: Caches and connection

    /// `SELECT name`: switches to the named cache, creating it if needed (`select("sessions")`).
    /// The client selects it again after reconnecting.
    @discardableResult
    public func select(_ cache: String) -> Pending<Void> {
        add(Commands.select(cache))
    }

    /// `SELECT index`: switches to the cache `db<index>`.
    @discardableResult
    public func select(_ index: Int) -> Pending<Void> {
        add(Commands.select(index))
    }

    /// `PING`: `PONG`.
    @discardableResult
    public func ping() -> Pending<String> {
        add(Commands.ping())
    }

    /// `INFO [section]`: the server's report, as text.
    @discardableResult
    public func info(_ section: String? = nil) -> Pending<String> {
        add(Commands.info(section))
    }
}
