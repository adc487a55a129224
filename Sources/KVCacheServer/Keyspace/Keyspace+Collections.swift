import Foundation
import SQLiteKVCache

/// Lists, sets, hashes and sorted sets as the collection commands reach
/// them: looked up (a counted read or an uncounted one before a write),
/// decoded, and stored back through `store(_:)` or `delete(_:)`.
extension Keyspace {
    /// A decoded collection and the entry it came from (whose expiry and
    /// metadata a store keeps).
    typealias Loaded<Value> = (value: Value, entry: Entry)

    /// The entry of `kind` at `key`: a counted read when `read`, else an
    /// uncounted lookup before a write.
    /// - Throws: WRONGTYPE when the key holds another kind.
    func collectionEntry(_ key: [UInt8], of kind: ValueKind, read: Bool) throws -> Entry? {
        read ? try lookupRead(key, as: kind) : try lookupWrite(key, as: kind)
    }

    func loadList(_ key: [UInt8], read: Bool = false) throws -> Loaded<ListValue>? {
        guard let entry = try collectionEntry(key, of: .list, read: read) else { return nil }
        return (try ListValue(decoding: entry.value), entry)
    }

    func loadSet(_ key: [UInt8], read: Bool = false) throws -> Loaded<SetValue>? {
        guard let entry = try collectionEntry(key, of: .set, read: read) else { return nil }
        return (try SetValue(decoding: entry.value), entry)
    }

    func loadHash(_ key: [UInt8], read: Bool = false) throws -> Loaded<HashValue>? {
        guard let entry = try collectionEntry(key, of: .hash, read: read) else { return nil }
        return (try HashValue(decoding: entry.value), entry)
    }

    func loadZSet(_ key: [UInt8], read: Bool = false) throws -> Loaded<ZSetValue>? {
        guard let entry = try collectionEntry(key, of: .zset, read: read) else { return nil }
        return (try ZSetValue(decoding: entry.value), entry)
    }

    /// Point lookups into the collection of `kind` at `key`, a counted read,
    /// without decoding it.
    func lookupEncoded(_ key: [UInt8], of kind: ValueKind) throws -> EncodedLookup? {
        guard let entry = try lookupRead(key, as: kind) else { return nil }
        return try EncodedLookup(entry.value, kind: kind)
    }

    /// The element count of the collection of `kind` at `key` (0 when
    /// absent), read from its header: a counted read.
    func collectionCount(_ key: [UInt8], of kind: ValueKind) throws -> Int {
        guard let entry = try lookupRead(key, as: kind) else { return 0 }
        return try EncodedLayout(entry.value).count
    }

    /// Stores the encoded collection `bytes` of `kind` under `key`, keeping
    /// the expiry and metadata of `old` (the entry it replaces, if any); an
    /// empty one deletes the key, as Redis never keeps an empty collection.
    func storeCollection(_ key: [UInt8], kind: ValueKind, _ bytes: [UInt8], isEmpty: Bool, old: Entry?) throws {
        if isEmpty {
            if old != nil { try delete(key) }
            return
        }
        try store(Entry(key: key, storageDate: Date(), metadata: old?.metadata ?? [], value: bytes,
                        expiresAt: old?.expiresAt, kind: kind))
    }

    func store(_ list: ListValue, at key: [UInt8], replacing old: Entry?) throws {
        try storeCollection(key, kind: .list, list.encoded(), isEmpty: list.items.isEmpty, old: old)
    }

    func store(_ set: SetValue, at key: [UInt8], replacing old: Entry?) throws {
        try storeCollection(key, kind: .set, set.encoded(), isEmpty: set.isEmpty, old: old)
    }

    func store(_ hash: HashValue, at key: [UInt8], replacing old: Entry?) throws {
        try storeCollection(key, kind: .hash, hash.encoded(), isEmpty: hash.isEmpty, old: old)
    }

    func store(_ zset: ZSetValue, at key: [UInt8], replacing old: Entry?) throws {
        try storeCollection(key, kind: .zset, zset.encoded(), isEmpty: zset.isEmpty, old: old)
    }
}
