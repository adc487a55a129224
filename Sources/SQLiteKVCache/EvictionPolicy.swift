/// Which entries a cache drops when a write takes it past its capacity.
public enum EvictionPolicy: String, Sendable, CaseIterable {
    /// Oldest storage date first, ties by write order (the default).
    case fifo
    /// Least recently read or written first.
    case lru
    /// Soonest expiry first; entries without an expiry after them, oldest first.
    case volatileTTL = "volatile-ttl"
    /// Refuse a write that would pass capacity.
    case noeviction

    /// Parses our names and Redis's where they map (`allkeys-lru`, `volatile-ttl`, `noeviction`).
    public init?(name: String) {
        switch name.lowercased() {
        case "fifo", "oldest": self = .fifo
        case "lru", "allkeys-lru": self = .lru
        case "volatile-ttl", "ttl": self = .volatileTTL
        case "noeviction": self = .noeviction
        default: return nil
        }
    }
}
