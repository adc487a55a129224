import RESP
import SQLiteKVCache

/// Redis 7.0's thresholds between its small and large encodings.
struct EncodingLimits: Sendable, Equatable {
    var setMaxIntsetEntries = 512
    var hashMaxListpackEntries = 512
    var hashMaxListpackValue = 64
    var zsetMaxListpackEntries = 128
    var zsetMaxListpackValue = 64
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
        }
    }

    init?(typeName: String) {
        guard let kind = ValueKind.allCases.first(where: { $0.typeName == typeName }) else { return nil }
        self = kind
    }
}

/// The encoding OBJECT ENCODING reports for an entry, as Redis 7.0 names it.
func encodingName(of entry: SQLiteKVCache.Entry) -> String {
    switch entry.kind {
    case .string:
        let value = entry.value
        if value.count <= 20 && parseStrictInt64(value) != nil { return "int" }
        return value.count <= 44 ? "embstr" : "raw"
    case .list: return "quicklist"
    case .set: return ((try? SetValue(decoding: entry.value))?.large ?? true) ? "hashtable" : "intset"
    case .hash: return ((try? HashValue(decoding: entry.value))?.large ?? true) ? "hashtable" : "listpack"
    case .zset: return ((try? ZSetValue(decoding: entry.value))?.large ?? true) ? "skiplist" : "listpack"
    }
}
