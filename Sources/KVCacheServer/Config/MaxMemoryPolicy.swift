/// Redis's `maxmemory-policy`: what a write does when the data passes
/// `maxmemory`. Redis's eight policies, and this server's `fifo` (oldest
/// write first, over every cache).
public enum MaxMemoryPolicy: String, Sendable, CaseIterable {
    case noeviction
    case allkeysLRU = "allkeys-lru"
    case allkeysLFU = "allkeys-lfu"
    case allkeysRandom = "allkeys-random"
    case volatileLRU = "volatile-lru"
    case volatileLFU = "volatile-lfu"
    case volatileRandom = "volatile-random"
    case volatileTTL = "volatile-ttl"
    case fifo

    /// Whether only keys with an expiry may be evicted.
    var volatileOnly: Bool {
        switch self {
        case .volatileLRU, .volatileLFU, .volatileRandom, .volatileTTL: return true
        default: return false
        }
    }

    /// Whether keys keep an LFU counter (OBJECT FREQ answers) rather than an access time.
    var isLFU: Bool { self == .allkeysLFU || self == .volatileLFU }

    /// Whether the policy ranks keys by access (Redis's
    /// MAXMEMORY_FLAG_NO_SHARED_INTEGERS: LRU and LFU).
    var ranksByAccess: Bool { isLFU || self == .allkeysLRU || self == .volatileLRU }
}
