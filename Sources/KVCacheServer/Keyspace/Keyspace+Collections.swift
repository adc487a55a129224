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

    /// A list, live: decoded once and kept in memory in its working form;
    /// for a write (`read` false) one the caller may change in place, then
    /// hand back with `store(_:at:replacing:)`.
    func loadList(_ key: [UInt8], read: Bool = false) throws -> (value: ListValue, entry: StoredEntry)? {
        try loadLive(key, of: .list, read: read) { bytes throws(ReplyError) in try ListValue(decoding: bytes) }
    }

    /// The live collection of `kind` at `key` and its entry: a counted read
    /// when `read`, else an uncounted lookup before a change (`entry`'s
    /// value is then the object to change).
    /// - Throws: WRONGTYPE when the key holds another kind.
    private func loadLive<V: LiveCollection>(_ key: [UInt8], of kind: ValueKind, read: Bool,
                                             decode: @escaping ([UInt8]) throws(ReplyError) -> V) throws -> (value: V, entry: StoredEntry)? {
        guard var stored = try lookupStored(key, as: kind, read: read) else { return nil }
        let value = try liveValue(key, forChange: !read, decode: decode)
        guard let typed = value as? V else { throw ReplyError.corruptValue }
        if !read { typed.sizeAtLoad = typed.encodedSize }
        stored.row.value = .live(typed)
        return (typed, stored)
    }

    /// Stores the live collection `value` of `kind` at `key`: the change in
    /// place of `old`'s object (loaded for a write), or a new entry keeping
    /// `old`'s expiry and metadata. An empty one deletes the key, as Redis
    /// never keeps an empty collection. The command is logged as itself (a
    /// replay runs it again on the same state).
    func store<V: LiveCollection>(_ value: V, of kind: ValueKind, at key: [UInt8], replacing old: StoredEntry?) throws {
        defer { server.persistence.noteLiveChange() }
        let now = Double(Server.nowMilliseconds()) / 1000
        let inPlace: Bool
        if let old, case .live(let current) = old.row.value, current === value { inPlace = true } else { inPlace = false }
        if value.isEmpty {
            guard old != nil else { return }
            // The object shrank in place: account for it before the delete,
            // which takes the entry's size as it is now.
            if inPlace { try changeLive(key, oldEncodedSize: value.sizeAtLoad, storageDate: now) }
            try delete(key)
            return
        }
        if inPlace {
            try changeLive(key, oldEncodedSize: value.sizeAtLoad, storageDate: now)
        } else {
            try storeStored(StoredEntry(key: key, row: Row(storageDate: now, expiresAt: old?.row.expiresAt, kind: kind,
                                                          metadata: old?.row.metadata ?? [], value: .live(value))))
        }
        value.sizeAtLoad = value.encodedSize
    }

    func store(_ list: ListValue, at key: [UInt8], replacing old: StoredEntry?) throws {
        try store(list, of: .list, at: key, replacing: old)
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

/// A collection kept live in memory (see `LiveValue`), as the key-access
/// layer handles it.
protocol LiveCollection: LiveValue {
    var isEmpty: Bool { get }
    /// The encoded size when loaded for a write, so the change can be accounted.
    var sizeAtLoad: Int { get set }
}

extension ListValue: LiveCollection {}
