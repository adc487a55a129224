import RESP
import SQLiteKVCache

/// Redis 7.0's thresholds between its small and large encodings.
struct EncodingLimits: Sendable, Equatable {
    var setMaxIntsetEntries = 512
    var hashMaxListpackEntries = 512
    var hashMaxListpackValue = 64
    var zsetMaxListpackEntries = 128
    var zsetMaxListpackValue = 64
    /// A stream's nodes: the most bytes and entries one listpack holds (0: no bound).
    var streamNodeMaxBytes = 4096
    var streamNodeMaxEntries = 100
}

/// Redis's name for a kind, as TYPE answers.
extension ValueKind {
    var typeName: String {
        switch self {
        case .string: return "string"
        case .list: return "list"
        case .set: return "set"
        case .hash: return "hash"
        case .zset: return "zset"
        case .stream: return "stream"
        }
    }

    init?(typeName: String) {
        guard let kind = ValueKind.allCases.first(where: { $0.typeName == typeName }) else { return nil }
        self = kind
    }
}

/// The encoding OBJECT ENCODING reports for an entry, as Redis 7.0 names it.
func encodingName(of entry: StoredEntry) -> String {
    switch (entry.row.kind, entry.row.value) {
    case (.string, let value):
        return stringEncodingName(value.bytes)
    case (.list, _):
        return "quicklist"
    case (.stream, _):
        return "stream"
    case (_, .live(let value)):
        switch value {
        case let set as SetValue: return set.encodingName
        case let hash as HashValue: return hash.encodingName
        case let zset as ZSetValue: return zset.encodingName
        default: return "quicklist"
        }
    case (let kind, .bytes(let bytes)):
        // The flags byte records the large encoding.
        let large = (bytes.first ?? CollectionCodec.largeFlag) & CollectionCodec.largeFlag != 0
        switch kind {
        case .set: return large ? "hashtable" : "intset"
        case .hash: return large ? "hashtable" : "listpack"
        default: return large ? "skiplist" : "listpack"
        }
    }
}

/// A string's encoding: `int`, `embstr` (up to 44 bytes) or `raw`.
func stringEncodingName(_ value: [UInt8]) -> String {
    if value.count <= 20 && parseStrictInt64(value) != nil { return "int" }
    return value.count <= 44 ? "embstr" : "raw"
}

/// The collection an entry holds, in its working form: the live value, or
/// one decoded from its bytes (the caller must not change a live one).
/// Nil for a string.
func collectionValue(of entry: StoredEntry) throws(ReplyError) -> LiveValue? {
    if case .live(let value) = entry.row.value { return value }
    let bytes = entry.row.value.bytes
    switch entry.row.kind {
    case .string: return nil
    case .list: return try ListValue(decoding: bytes)
    case .set: return try SetValue(decoding: bytes)
    case .hash: return try HashValue(decoding: bytes)
    case .zset: return try ZSetValue(decoding: bytes)
    case .stream: return try StreamValue(decoding: bytes)
    }
}
