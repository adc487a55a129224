/// Hot entries kept in memory, bounded in bytes, so repeated reads skip
/// SQLite. The engine keeps it coherent: every write, delete, expiry,
/// eviction and rollback updates or drops the entries it touches.
///
/// Replacement is CLOCK (second chance): entries sit in a ring in insertion
/// order; a read sets an entry's bit; the hand evicts the first entry whose
/// bit is clear, clearing bits as it passes.
final class MemoryTier {
    /// Bytes the tier may hold (content plus a per-entry overhead); 0 disables it.
    var budget: Int {
        didSet { shrink() }
    }
    private(set) var bytes = 0
    private(set) var hits = 0
    private(set) var misses = 0

    private struct Slot {
        var entry: SQLiteKVCache.Entry
        var referenced: Bool
    }
    private var slots: [KeyDigest: Slot] = [:]
    private var ring: [KeyDigest] = []
    private var hand = 0

    /// Bookkeeping per entry beyond its content: dictionary slot, ring slot, array headers.
    static let overhead = 160

    init(budget: Int) {
        self.budget = max(0, budget)
    }

    var count: Int { slots.count }

    static func cost(_ entry: SQLiteKVCache.Entry) -> Int { entry.contentSize + overhead }

    /// The entry for `digest`, marking it recently used.
    func get(_ digest: KeyDigest) -> SQLiteKVCache.Entry? {
        guard budget > 0 else { return nil }
        guard let index = slots.index(forKey: digest) else {
            misses += 1
            return nil
        }
        hits += 1
        slots.values[index].referenced = true
        return slots.values[index].entry
    }

    /// The entry for `digest`, without counting a hit or marking it used.
    func peek(_ digest: KeyDigest) -> SQLiteKVCache.Entry? {
        slots[digest]?.entry
    }

    /// Stores (or replaces) the entry for `digest`, then evicts to the budget.
    /// An entry larger than a quarter of the budget is not kept.
    func set(_ digest: KeyDigest, _ entry: SQLiteKVCache.Entry) {
        let cost = Self.cost(entry)
        guard budget > 0, cost <= budget / 4 else {
            remove(digest)
            return
        }
        if let old = slots.updateValue(Slot(entry: entry, referenced: false), forKey: digest) {
            bytes -= Self.cost(old.entry)
        } else {
            ring.append(digest)
        }
        bytes += cost
        shrink()
    }

    func remove(_ digest: KeyDigest) {
        if let old = slots.removeValue(forKey: digest) {
            bytes -= Self.cost(old.entry)
            // Its ring slot goes stale and is skipped by the hand.
        }
        if ring.count > 64 && ring.count > 2 * slots.count { compactRing() }
    }

    func removeAll() {
        slots.removeAll()
        ring.removeAll()
        hand = 0
        bytes = 0
    }

    /// Evicts with the clock hand until within budget.
    private func shrink() {
        while bytes > budget && !slots.isEmpty {
            if hand >= ring.count { hand = 0 }
            let digest = ring[hand]
            guard let index = slots.index(forKey: digest) else {
                ring.swapAt(hand, ring.count - 1)
                ring.removeLast()
                continue
            }
            if slots.values[index].referenced {
                slots.values[index].referenced = false
                hand += 1
            } else {
                bytes -= Self.cost(slots.values[index].entry)
                slots.remove(at: index)
                ring.swapAt(hand, ring.count - 1)
                ring.removeLast()
            }
        }
        if slots.isEmpty { ring.removeAll(); hand = 0 }
    }

    private func compactRing() {
        ring.removeAll { slots[$0] == nil }
        hand = 0
    }
}
