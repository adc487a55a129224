extension SQLiteKVCache {
    /// The longest cache name.
    public static let maxHandleLength = 64

    /// Returns the canonical (lowercased) form of a cache name.
    /// - Throws: `Error.invalidHandle` unless it is 1 to 64 of `[a-z0-9._-]`
    ///   after lowercasing and not `.` or `..`, so it can never name a path
    ///   outside the cache directory.
    public static func canonicalHandle(_ handle: String) throws(Error) -> String {
        let lowered = handle.lowercased()
        let valid = !lowered.isEmpty
            && lowered.utf8.count <= maxHandleLength
            && lowered != "." && lowered != ".."
            && lowered.utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
        guard valid else { throw .invalidHandle(handle) }
        return lowered
    }

    /// True when `handle` is a valid cache name (in any case).
    public static func isValidHandle(_ handle: String) -> Bool {
        (try? canonicalHandle(handle)) != nil
    }
}
