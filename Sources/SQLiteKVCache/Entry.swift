import Foundation

extension SQLiteKVCache {
    /// One cached entry: bytes in, bytes out.
    public struct Entry: Sendable, Equatable {
        public var key: [UInt8]
        public var storageDate: Date
        public var metadata: [UInt8]
        public var value: [UInt8]
        /// When the entry expires, in milliseconds since 1970; nil for never.
        public var expiresAt: Int64?

        public init(key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8], expiresAt: Int64? = nil) {
            self.key = key
            self.storageDate = storageDate
            self.metadata = metadata
            self.value = value
            self.expiresAt = expiresAt
        }

        /// The bytes this entry counts against its cache's capacity.
        public var contentSize: Int { key.count + value.count + metadata.count }
    }
}
