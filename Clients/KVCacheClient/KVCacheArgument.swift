/// What a typed call accepts as a key or value: strings (sent as UTF-8),
/// bytes, and integers (sent as their decimal digits, as Redis clients do).
public protocol KVCacheArgument {
    /// The bytes sent to the server.
    var kvcacheBytes: [UInt8] { get }
}

extension String: KVCacheArgument {
    public var kvcacheBytes: [UInt8] { Array(utf8) }
}

extension Substring: KVCacheArgument {
    public var kvcacheBytes: [UInt8] { Array(utf8) }
}

extension Array: KVCacheArgument where Element == UInt8 {
    public var kvcacheBytes: [UInt8] { self }
}

extension ArraySlice: KVCacheArgument where Element == UInt8 {
    public var kvcacheBytes: [UInt8] { Array(self) }
}

extension Int: KVCacheArgument {
    public var kvcacheBytes: [UInt8] { Array(String(self).utf8) }
}

extension Int64: KVCacheArgument {
    public var kvcacheBytes: [UInt8] { Array(String(self).utf8) }
}
