import SQLiteKVCache

/// Streams as the stream commands reach them: live values, like the other
/// collections (see Keyspace+Collections), with the rules Redis's
/// t_stream.c keeps apart from theirs. An empty stream stays (XDEL of its
/// last entry and `MAXLEN 0` leave the key). A new stream is Redis's
/// dbAdd (the `new` event, clients blocked on the key readied); a change in
/// place names no event of its own (each command names its: `xadd`,
/// `xgroup-create`, …) and tells WATCH and client-side caching only where
/// Redis calls signalModifiedKey. The command is logged as itself or as
/// the deterministic form it asked for (`Persistence.logCommands`).
extension Keyspace {
    /// The stream at `key`: for a read (`read`, counted as a hit or miss)
    /// the engine's object, never to be changed; for a write one the caller
    /// may change, then hand back with `streamChanged`.
    /// - Throws: WRONGTYPE when the key holds another kind.
    func loadStream(_ key: [UInt8], read: Bool) throws -> (value: StreamValue, entry: StoredEntry)? {
        try loadLive(key, of: .stream, read: read) { bytes throws(ReplyError) in try StreamValue(decoding: bytes) }
    }

    /// Stores a new stream at `key`, which holds nothing (XADD, XGROUP
    /// CREATE … MKSTREAM): Redis's dbAdd and signalModifiedKey.
    func addStream(_ stream: StreamValue, at key: [UInt8]) throws {
        defer { server.persistence.noteLiveChange() }
        let now = Double(Server.nowMilliseconds()) / 1000
        try storeStored(StoredEntry(key: key, row: Row(storageDate: now, expiresAt: nil, kind: .stream, metadata: [],
                                                      value: .live(stream))))
        stream.sizeAtLoad = stream.encodedSize
    }

    /// Records that `stream`, loaded for a write from `key`, changed in
    /// place; `modifiesKey` is Redis's signalModifiedKey (XADD, and XDEL and
    /// XTRIM when they removed something).
    func streamChanged(_ stream: StreamValue, at key: [UInt8], modifiesKey: Bool) throws {
        defer { server.persistence.noteLiveChange() }
        try changeStream(key, oldEncodedSize: stream.sizeAtLoad, modifiesKey: modifiesKey)
        stream.sizeAtLoad = stream.encodedSize
    }

    /// Names a stream event (Redis's notifyKeyspaceEvent with NOTIFY_STREAM).
    func notifyStream(_ event: String, _ key: [UInt8]) {
        server.notifyKeyspaceEvent(.stream, event, key, in: cache)
    }
}
