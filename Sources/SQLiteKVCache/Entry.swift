import Foundation

/// What an entry's value holds: a plain string of bytes, or a collection
/// serialized into the value bytes by whoever stores it. The engine keeps
/// the kind beside the value and never looks inside.
public enum ValueKind: UInt8, Sendable, CaseIterable {
    case string = 0
    case list = 1
    case set = 2
    case hash = 3
    case zset = 4
    case stream = 5
}

extension SQLiteKVCache {
    /// One cached entry: bytes in, bytes out.
    public struct Entry: Sendable, Equatable {
        public var key: [UInt8]
        public var storageDate: Date
        public var metadata: [UInt8]
        public var value: [UInt8]
        /// When the entry expires, in milliseconds since 1970; nil for never.
        public var expiresAt: Int64?
        /// What the value holds; `.string` unless a caller says otherwise.
        public var kind: ValueKind

        public init(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8], expiresAt: Int64? = nil,
                    kind: ValueKind = .string) {
            self.key = key
            self.storageDate = storageDate
            self.metadata = metadata
            self.value = value
            self.expiresAt = expiresAt
            self.kind = kind
        }

        /// The bytes this entry counts against its cache's capacity.
        public var contentSize: Int { key.count + value.count + metadata.count }
    }
}
