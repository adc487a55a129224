import Foundation

/// A whole cache entry: the model of the `SQLiteKVCache` engine and of the
/// server's `KVCACHE.GET`.
public protocol KeyValueCacheEntry {
    var key: [UInt8] { get }
    var storageDate: Date { get }
    var metadata: [UInt8] { get }
    var value: [UInt8] { get }
}

/// What the embedded engine (`SQLiteKVCache`, through the
/// `KVCacheClientEmbedded` module) and the server client (`KVCacheClient`)
/// both offer, so a program written against it switches from one to the
/// other by changing the line that makes the cache.
public protocol KeyValueCache: AnyObject, Sendable {
    associatedtype Entry: KeyValueCacheEntry

    /// The entry under `key`; nil when there is none or it expired.
    func get(key: [UInt8]) throws -> Entry?
    /// Stores an entry, replacing any under `key`. `expiresAt` is in
    /// milliseconds since 1970; nil for never.
    func put(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8], expiresAt: Int64?) throws
    /// Removes the entry under `key`; returns whether there was one.
    @discardableResult
    func delete(key: [UInt8]) throws -> Bool
    /// Removes every entry of this cache.
    func clear() throws
}

extension KeyValueCache {
    /// Stores an entry that never expires.
    public func put(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8]) throws {
        try put(key: key, storageDate: storageDate, metadata: metadata, value: value, expiresAt: nil)
    }
}

extension KVCacheClient {
    /// An entry as `KVCACHE.GET` returns it. The server keeps the storage
    /// date to the millisecond.
    public struct Entry: KeyValueCacheEntry, Sendable, Equatable {
        public var key: [UInt8]
        public var storageDate: Date
        public var metadata: [UInt8]
        public var value: [UInt8]

        public init(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8]) {
            self.key = key
            self.storageDate = storageDate
            self.metadata = metadata
            self.value = value
        }
    }
}

extension KVCacheClient: KeyValueCache {
    /// `KVCACHE.GET key`: the whole entry, or nil.
    public func get(key: [UInt8]) throws(KVCacheClientError) -> Entry? {
        try run(Commands.entry(key))
    }

    /// `KVCACHE.PUT key storage-date-ms metadata value [PXAT expiresAt]`.
    public func put(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8],
                    expiresAt: Int64? = nil) throws(KVCacheClientError) {
        try run(Commands.putEntry(key, storageDate: storageDate, metadata: metadata, value: value,
                                  expiry: expiresAt.map { .unixMilliseconds($0) }))
    }

    /// `KVCACHE.PUT … [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]`.
    public func put(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8],
                    expiry: Expiry) throws(KVCacheClientError) {
        try run(Commands.putEntry(key, storageDate: storageDate, metadata: metadata, value: value, expiry: expiry))
    }

    /// `DEL key`: returns whether there was an entry.
    @discardableResult
    public func delete(key: [UInt8]) throws(KVCacheClientError) -> Bool {
        try run(Commands.del([key])) > 0
    }

    /// `FLUSHDB`: empties the selected cache, as the engine's `clear()` empties its file.
    public func clear() throws(KVCacheClientError) {
        try run(Commands.flushdb())
    }
}
