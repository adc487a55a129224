import Foundation
import SQLiteKVCache

/// Lists, sets, hashes and sorted sets as the collection commands reach
/// them: live values (see `LiveValue`), decoded once and kept in memory in
/// their working form. A read (`read: true`) gets the engine's object and
/// must never change it; a write (`read: false`) gets an object it owns,
/// validates everything first, changes it in place, then calls one of the
/// `store(_:at:replacing:)` methods once (an emptied collection deletes its
/// key). A command that changes a live value is logged as itself, and a
/// replay runs it again at its record's time (`Persistence.noteLiveChange`).
extension Keyspace {
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
    func loadLive<V: LiveCollection>(_ key: [UInt8], of kind: ValueKind, read: Bool,
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
            if inPlace { try changeLive(key, kind: kind, oldEncodedSize: value.sizeAtLoad, storageDate: now) }
            try delete(key)
            return
        }
        if inPlace {
            try changeLive(key, kind: kind, oldEncodedSize: value.sizeAtLoad, storageDate: now)
        } else {
            try storeStored(StoredEntry(key: key, row: Row(storageDate: now, expiresAt: old?.row.expiresAt, kind: kind,
                                                          metadata: old?.row.metadata ?? [], value: .live(value))))
        }
        value.sizeAtLoad = value.encodedSize
    }

    /// Stores `value` as a new entry at `key`, replacing whatever the key
    /// held (any kind, its expiry dropped), as Redis's `setKey` does for
    /// the result of SINTERSTORE, ZUNIONSTORE, SORT … STORE and the like;
    /// an empty one deletes the key. Logged as its command.
    func storeNew<V: LiveCollection>(_ value: V, of kind: ValueKind, at key: [UInt8]) throws {
        defer { server.persistence.noteLiveChange() }
        if value.isEmpty {
            try delete(key)
            return
        }
        let now = Double(Server.nowMilliseconds()) / 1000
        try storeStored(StoredEntry(key: key, row: Row(storageDate: now, expiresAt: nil, kind: kind, metadata: [],
                                                      value: .live(value))))
        value.sizeAtLoad = value.encodedSize
    }

    func store(_ list: ListValue, at key: [UInt8], replacing old: StoredEntry?) throws {
        try store(list, of: .list, at: key, replacing: old)
    }

    func loadSet(_ key: [UInt8], read: Bool = false) throws -> (value: SetValue, entry: StoredEntry)? {
        try loadLive(key, of: .set, read: read) { bytes throws(ReplyError) in try SetValue(decoding: bytes) }
    }

    func loadHash(_ key: [UInt8], read: Bool = false) throws -> (value: HashValue, entry: StoredEntry)? {
        try loadLive(key, of: .hash, read: read) { bytes throws(ReplyError) in try HashValue(decoding: bytes) }
    }

    /// A sorted set, live (see `loadList`).
    func loadZSet(_ key: [UInt8], read: Bool = false) throws -> (value: ZSetValue, entry: StoredEntry)? {
        try loadLive(key, of: .zset, read: read) { bytes throws(ReplyError) in try ZSetValue(decoding: bytes) }
    }

    func store(_ set: SetValue, at key: [UInt8], replacing old: StoredEntry?) throws {
        try store(set, of: .set, at: key, replacing: old)
    }

    func store(_ hash: HashValue, at key: [UInt8], replacing old: StoredEntry?) throws {
        try store(hash, of: .hash, at: key, replacing: old)
    }

    func store(_ zset: ZSetValue, at key: [UInt8], replacing old: StoredEntry?) throws {
        try store(zset, of: .zset, at: key, replacing: old)
    }

    /// The live collection of `kind` at `key`, as a counted read: the
    /// object the engine holds, never to be changed.
    func readCollection(_ key: [UInt8], of kind: ValueKind) throws -> LiveCollection? {
        switch kind {
        case .list: return try loadList(key, read: true)?.value
        case .set: return try loadSet(key, read: true)?.value
        case .hash: return try loadHash(key, read: true)?.value
        case .zset: return try loadZSet(key, read: true)?.value
        case .stream: return try loadStream(key, read: true)?.value
        case .string: return nil
        }
    }

    /// The element count of the collection of `kind` at `key` (0 when
    /// absent): a counted read.
    func collectionCount(_ key: [UInt8], of kind: ValueKind) throws -> Int {
        try readCollection(key, of: kind)?.count ?? 0
    }
}

/// A collection kept live in memory (see `LiveValue`), as the key-access
/// layer handles it.
protocol LiveCollection: LiveValue {
    var count: Int { get }
    var isEmpty: Bool { get }
    /// The encoded size when loaded for a write, so the change can be accounted.
    var sizeAtLoad: Int { get set }
}

extension ListValue: LiveCollection {}
extension SetValue: LiveCollection {}
extension HashValue: LiveCollection {}
extension ZSetValue: LiveCollection {}
extension StreamValue: LiveCollection {}
