import Foundation

/// When an entry expires, as the options of `SET`, `GETEX` and `KVCACHE.PUT`.
public enum Expiry: Sendable, Equatable {
    /// `EX s`: this many seconds from now.
    case seconds(Int64)
    /// `PX ms`: this many milliseconds from now.
    case milliseconds(Int64)
    /// `EXAT t`: at this Unix time in seconds.
    case unixSeconds(Int64)
    /// `PXAT t`: at this Unix time in milliseconds.
    case unixMilliseconds(Int64)
    /// `KEEPTTL`: keep the expiry the key has (`SET`, `KVCACHE.PUT` only).
    case keepTTL
    /// `PERSIST`: remove the expiry (`GETEX` only).
    case persist

    /// `PXAT` of `date`, to the millisecond.
    public static func at(_ date: Date) -> Expiry {
        .unixMilliseconds(Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }

    var arguments: [[UInt8]] {
        switch self {
        case .seconds(let n): return [Array("EX".utf8), n.kvcacheBytes]
        case .milliseconds(let n): return [Array("PX".utf8), n.kvcacheBytes]
        case .unixSeconds(let n): return [Array("EXAT".utf8), n.kvcacheBytes]
        case .unixMilliseconds(let n): return [Array("PXAT".utf8), n.kvcacheBytes]
        case .keepTTL: return [Array("KEEPTTL".utf8)]
        case .persist: return [Array("PERSIST".utf8)]
        }
    }
}

/// Whether `SET` writes, by whether the key exists.
public enum SetCondition: Sendable, Equatable {
    /// Always write.
    case always
    /// `NX`: only when the key does not exist.
    case ifNotExists
    /// `XX`: only when the key exists.
    case ifExists
}

/// Whether `EXPIRE` and its kin set the expiry, by the expiry the key has.
public enum ExpireCondition: String, Sendable, Equatable {
    /// `NX`: only when the key has no expiry.
    case ifNoExpiry = "NX"
    /// `XX`: only when the key has an expiry.
    case ifHasExpiry = "XX"
    /// `GT`: only when the new expiry is later (no expiry counts as infinite).
    case ifLater = "GT"
    /// `LT`: only when the new expiry is sooner (no expiry counts as infinite).
    case ifSooner = "LT"
}
