import Foundation

/// A value kept in memory in its working form (a list, a hash, …) instead
/// of its bytes, so a command changes it in place: pushing onto a list of
/// 100,000 elements costs what it costs on one of 1,000. Whoever defines
/// the kinds (the server) implements this; the engine only asks for the
/// bytes when a batch is applied to SQLite, and for sizes.
///
/// Sharing rule: when a batch takes a value (`isFrozen` becomes true), the
/// writer thread may read it until the batch completes; the owner must not
/// change a frozen value but replace it with `copy()`. The engine clears
/// the flag once no batch holds the value.
public protocol LiveValue: AnyObject {
    /// The length of `encoded()`: what the value counts against capacity.
    var encodedSize: Int { get }
    /// Bytes of memory the value takes, approximately.
    var memoryCost: Int { get }
    /// The value's bytes as stored in SQLite. May run on the writer thread,
    /// on a frozen value.
    func encoded() -> [UInt8]
    /// Set by the engine while a batch holds the value.
    var isFrozen: Bool { get set }
    /// An unfrozen copy the owner may change.
    func copy() -> LiveValue
    /// An unfrozen value the owner may change, to replace this frozen one
    /// in its entry. From then on the batch holding this one only asks it
    /// for `encoded()`, `encodedSize` and `memoryCost`, so a value may move
    /// what encoding does not read (its indexes) into the new one instead
    /// of copying it: a dictionary of a million members is a million
    /// retains to copy. The default is `copy()`.
    func thawed() -> LiveValue
}

extension LiveValue {
    public func thawed() -> LiveValue { copy() }
}

/// An entry's value: bytes, or a live value in its working form.
public enum StoredValue {
    case bytes([UInt8])
    case live(LiveValue)

    /// The bytes the value counts against capacity.
    public var size: Int {
        switch self {
        case .bytes(let bytes): return bytes.count
        case .live(let value): return value.encodedSize
        }
    }

    /// The value as bytes (a live value is encoded).
    public var bytes: [UInt8] {
        switch self {
        case .bytes(let bytes): return bytes
        case .live(let value): return value.encoded()
        }
    }

    /// Memory the value takes, approximately.
    var memoryCost: Int {
        switch self {
        case .bytes(let bytes): return bytes.count
        case .live(let value): return value.memoryCost
        }
    }
}

/// What an entry holds besides its key.
public struct Row {
    public var storageDate: Double
    /// Write order: the eviction tie-break, and recency under LRU.
    public var seq: Int64
    public var expiresAt: Int64?
    public var kind: ValueKind
    public var metadata: [UInt8]
    public var value: StoredValue

    public init(storageDate: Double, seq: Int64 = 0, expiresAt: Int64?, kind: ValueKind, metadata: [UInt8],
                value: StoredValue) {
        self.storageDate = storageDate
        self.seq = seq
        self.expiresAt = expiresAt
        self.kind = kind
        self.metadata = metadata
        self.value = value
    }

    /// Content bytes without the key: what the entry counts against
    /// capacity is this plus the key's length.
    var bodySize: Int { metadata.count + value.size }

    func isExpired(at now: Int64) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= now
    }
}

/// An entry as the engine's owner sees it: its key and row.
public struct StoredEntry {
    public var key: [UInt8]
    public var row: Row

    public init(key: [UInt8], row: Row) {
        self.key = key
        self.row = row
    }

    /// The entry of the reference API, with its value as bytes.
    public init(_ entry: SQLiteKVCache.Entry) {
        self.init(key: entry.key, row: entry.row(seq: 0))
    }

    /// The bytes this entry counts against its cache's capacity.
    public var contentSize: Int { key.count + row.bodySize }

    /// The entry with its value as bytes (a live value is encoded).
    public var plain: SQLiteKVCache.Entry {
        SQLiteKVCache.Entry(key: key, storageDate: Date(timeIntervalSince1970: row.storageDate), metadata: row.metadata,
                            value: row.value.bytes, expiresAt: row.expiresAt, kind: row.kind)
    }
}

extension SQLiteKVCache.Entry {
    /// The entry as a row, stamped with `seq`.
    func row(seq: Int64) -> Row {
        Row(storageDate: storageDate.timeIntervalSince1970, seq: seq, expiresAt: expiresAt, kind: kind,
            metadata: metadata, value: .bytes(value))
    }
}

/// The running totals a cache keeps beside its rows.
struct Totals: Sendable, Equatable {
    var count = 0
    var bytes = 0
    var nextSeq: Int64 = 1
    /// Entries with an expiry, and the sum of their expiry times (for INFO's avg_ttl).
    var volatile = 0
    var expiresSum: Double = 0

    /// Accounts for a row added (`sign` 1) or removed (`sign` -1).
    mutating func apply(size: Int, expiresAt: Int64?, sign: Int) {
        count += sign
        bytes += sign * size
        if let expiresAt {
            volatile += sign
            expiresSum += Double(sign) * Double(expiresAt)
            if volatile == 0 { expiresSum = 0 }
        }
    }

    /// Takes the next write sequence number.
    mutating func takeSeq() -> Int64 {
        defer { nextSeq += 1 }
        return nextSeq
    }
}
