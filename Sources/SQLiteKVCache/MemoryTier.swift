import Foundation

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

    /// An entry as the tier keeps it: without its key, which every caller
    /// already holds (it found the slot by the key's digest). A hit then
    /// touches one array fewer, and the tier holds more entries per byte.
    struct Cached {
        var storageDate: Date
        var metadata: [UInt8]
        var value: [UInt8]
        var expiresAt: Int64?
        var kind: ValueKind
        var keyCount: Int

        init(_ entry: SQLiteKVCache.Entry) {
            storageDate = entry.storageDate
            metadata = entry.metadata
            value = entry.value
            expiresAt = entry.expiresAt
            kind = entry.kind
            keyCount = entry.key.count
        }

        /// The bytes the entry counts against its cache's capacity.
        var contentSize: Int { keyCount + value.count + metadata.count }

        /// The whole entry, given its key.
        func entry(key: [UInt8]) -> SQLiteKVCache.Entry {
            SQLiteKVCache.Entry(key: key, storageDate: storageDate, metadata: metadata, value: value,
                                expiresAt: expiresAt, kind: kind)
        }
    }

    /// A class, so a hit reads the entry and sets its bit through one
    /// reference, without copying the slot out of the dictionary or writing it back.
    private final class Slot {
        var cached: Cached
        var referenced = false

        init(_ cached: Cached) {
            self.cached = cached
        }
    }
    private var slots: [KeyDigest: Slot] = [:]
    private var ring: [KeyDigest] = []
    private var hand = 0

    /// Bookkeeping per entry beyond its content: dictionary slot (digest and
    /// reference, 40 B), ring slot (32), the slot object (~80 with malloc's
    /// rounding), two array headers (64).
    static let overhead = 224

    init(budget: Int) {
        self.budget = max(0, budget)
    }

    var count: Int { slots.count }

    static func cost(_ cached: Cached) -> Int { cached.contentSize + overhead }

    /// The entry for `digest`, marking it recently used.
    func get(_ digest: KeyDigest) -> Cached? {
        guard budget > 0 else { return nil }
        guard let slot = slots[digest] else {
            misses += 1
            return nil
        }
        hits += 1
        slot.referenced = true
        return slot.cached
    }

    /// The entry for `digest`, without counting a hit or marking it used.
    func peek(_ digest: KeyDigest) -> Cached? {
        slots[digest]?.cached
    }

    /// Changes the expiry of `digest`'s entry, if the tier holds it.
    func setExpiry(_ digest: KeyDigest, _ expiresAt: Int64?) {
        slots[digest]?.cached.expiresAt = expiresAt
    }

    /// Stores (or replaces) the entry for `digest`, then evicts to the budget.
    /// An entry larger than a quarter of the budget is not kept.
    func set(_ digest: KeyDigest, _ entry: SQLiteKVCache.Entry) {
        let cached = Cached(entry)
        let cost = Self.cost(cached)
        guard budget > 0, cost <= budget / 4 else {
            remove(digest)
            return
        }
        if let old = slots.updateValue(Slot(cached), forKey: digest) {
            bytes -= Self.cost(old.cached)
        } else {
            ring.append(digest)
        }
        bytes += cost
        shrink()
    }

    func remove(_ digest: KeyDigest) {
        if let old = slots.removeValue(forKey: digest) {
            bytes -= Self.cost(old.cached)
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
            let slot = slots.values[index]
            if slot.referenced {
                slot.referenced = false
                hand += 1
            } else {
                bytes -= Self.cost(slot.cached)
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
