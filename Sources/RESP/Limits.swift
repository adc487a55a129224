/// The bounds a request parser enforces while it reads, never after.
public struct RequestLimits: Sendable, Equatable {
    /// The largest element count of a multibulk request.
    public var maxMultibulkCount: Int
    /// The largest bulk string (Redis's `proto-max-bulk-len`).
    public var maxBulkLength: Int
    /// The longest inline request or count line without a newline.
    public var maxInlineLength: Int
    /// True before a client has authenticated on a server with a password:
    /// then Redis allows 10 elements and 16 KiB bulks, with its own texts.
    public var unauthenticated = false

    /// Redis's limits for clients that have not authenticated yet.
    public static let unauthenticatedMultibulkCount = 10
    public static let unauthenticatedBulkLength = 16 * 1024

    public init(maxMultibulkCount: Int = 1024 * 1024, maxBulkLength: Int = 512 * 1024 * 1024,
                maxInlineLength: Int = 64 * 1024) {
        self.maxMultibulkCount = maxMultibulkCount
        self.maxBulkLength = maxBulkLength
        self.maxInlineLength = maxInlineLength
    }
}

/// Parses a whole buffer as a signed 64-bit decimal the way Redis's
/// `string2ll` does: optional `-`, digits, no `+`, no spaces, no leading zeros.
/// - Returns: nil when the bytes are not exactly such a number or overflow.
@inlinable
public func parseStrictInt64<C: Collection>(_ bytes: C) -> Int64? where C.Element == UInt8 {
    var iterator = bytes.makeIterator()
    guard let first = iterator.next() else { return nil }
    var negative = false
    var digit: UInt8
    if first == UInt8(ascii: "-") {
        negative = true
        guard let next = iterator.next() else { return nil }
        digit = next
    } else {
        digit = first
    }
    if digit == UInt8(ascii: "0") {
        // Only "0" itself; "-0" and leading zeros are refused as in Redis.
        return (iterator.next() == nil && !negative) ? 0 : nil
    }
    guard digit >= UInt8(ascii: "1") && digit <= UInt8(ascii: "9") else { return nil }
    var magnitude = UInt64(digit - UInt8(ascii: "0"))
    while let byte = iterator.next() {
        guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
        let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
        guard !o1 && !o2 else { return nil }
        magnitude = sum
    }
    if negative {
        guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
        return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
    }
    guard magnitude <= UInt64(Int64.max) else { return nil }
    return Int64(magnitude)
}
