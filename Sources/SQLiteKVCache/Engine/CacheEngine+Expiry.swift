/// Where the expiry sweep stands: rows not yet in the file in a heap by
/// expiry time, and a walk over the file's expiry index.
struct ExpiryWalk {
    struct Pending: HeapElement {
        var expiresAt: Int64
        var digest: KeyDigest
        var seq: Int64

        static func precedes(_ a: Self, _ b: Self) -> Bool { a.expiresAt < b.expiresAt }
    }

    var heap = Heap<Pending>()
    /// While the heap is rebuilt: its old entries, those from
    /// `rebuildNext` on not looked at yet (`CacheEngine.rebuildExpiryHeap`).
    var rebuilding: [Pending] = []
    var rebuildNext = 0
    /// The next time a row of the file falls due (.max: none has an expiry
    /// left; .min: unknown, look now). Rows up to `position` were listed.
    var fileHint: Int64 = .min
    /// The last row the walk listed (expiry time and digest).
    var position: (Int64, KeyDigest)?
    /// Keys the walk listed as due and has not looked at yet, from
    /// `dueNext` on: one read of the index serves several steps.
    var due: [(expiresAt: Int64, digest: KeyDigest)] = []
    var dueNext = 0
    /// When `due` was listed, if the index had no more rows due then.
    var dueEndedAt: Int64?

    /// Keys listed a read of the index.
    static let listing = 256

    mutating func note(_ digest: KeyDigest, expiresAt: Int64, seq: Int64) {
        heap.push(Pending(expiresAt: expiresAt, digest: digest, seq: seq))
    }

    /// A batch reached the file: walk its index again from the start.
    mutating func fileChanged(volatile: Int) {
        position = nil
        fileHint = volatile > 0 ? .min : .max
        due = []
        dueNext = 0
        dueEndedAt = nil
    }
}

/// The active expiry sweep.
extension CacheEngine {
    /// True when some entry may be due for removal (cheap: no SQL).
    public func expiryDue() -> Bool {
        guard totals.volatile > 0 else { return false }
        let now = nowMilliseconds()
        if let top = expiry.heap.top, top.expiresAt <= now { return true }
        return !expiry.rebuilding.isEmpty || (!fileVoid && expiry.fileHint <= now)
    }

    /// Removes `key` if it has expired, even while expiry is held (a
    /// writable replica's own keys: Redis's expireSlaveKeys).
    /// - Returns: the key's expiry time while it is live with one; nil when
    ///   it is absent, has no expiry, or expired and was removed now.
    public func removeIfExpired(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> Int64? {
        let digest = hasher.digest(key)
        guard let row = try current(digest, key: key, counted: false).row, let expiresAt = row.expiresAt else { return nil }
        guard expiresAt <= nowMilliseconds() else { return expiresAt }
        expire(digest, key: key, size: key.count + row.bodySize, expiresAt: expiresAt)
        return nil
    }

    /// Keys ahead of the sweep whose index bucket it asks for (and whose
    /// slot, half as far ahead), as a pipeline's lookups do.
    static let expiryLookahead = 8

    /// Keys listed due that a call passes over at most (memory holds a
    /// newer state, or their delete is not in the file yet: after a batch
    /// completes the walk starts over and meets them again).
    static let expiryPassLimit = 1024

    /// Removes up to `limit` expired entries, soonest first: those in
    /// memory, then those the file's expiry index lists (O(log n) each).
    /// - Returns: how many went; fewer than `limit` means the sweep has
    ///   nothing more to do for now, unless `expiryDue()` still says so
    ///   (it passed over `expiryPassLimit` keys).
    public func removeExpired(limit: Int) throws(SQLiteKVCache.Error) -> Int {
        let now = nowMilliseconds()
        var removed = 0
        if !expiry.rebuilding.isEmpty { continueExpiryHeapRebuild(entries: Self.expiryRebuildStep) }
        while removed < limit, let top = expiry.heap.top, top.expiresAt <= now {
            expiry.heap.pop()
            guard let slot = table.slot(top.digest), slot.hasRow, slot.seq == top.seq,
                  slot.expiresAt == top.expiresAt else { continue }
            expire(top.digest, key: slot.key, size: slot.contentSize, expiresAt: slot.expiresAt)
            removed += 1
        }
        var passed = 0
        while removed < limit && !fileVoid && expiry.fileHint <= now && passed < Self.expiryPassLimit {
            if expiry.dueNext == expiry.due.count {
                if let listedAt = expiry.dueEndedAt {
                    // Every row due then was seen: wait for the next one to fall due.
                    expiry.fileHint = try file.earliestExpiry(after: listedAt) ?? .max
                    expiry.dueEndedAt = nil
                    continue
                }
                expiry.due = try file.expiredKeys(now: now, after: expiry.position, limit: ExpiryWalk.listing)
                expiry.dueNext = 0
                if let last = expiry.due.last { expiry.position = (last.expiresAt, last.digest) }
                if expiry.due.count < ExpiryWalk.listing { expiry.dueEndedAt = now }
                continue
            }
            let (_, digest) = expiry.due[expiry.dueNext]
            expiry.dueNext += 1
            if expiry.dueNext + Self.expiryLookahead < expiry.due.count {
                table.prefetchBucket(expiry.due[expiry.dueNext + Self.expiryLookahead].digest)
            }
            if expiry.dueNext + Self.expiryLookahead / 2 < expiry.due.count {
                table.prefetchSlot(expiry.due[expiry.dueNext + Self.expiryLookahead / 2].digest)
            }
            if let slot = table.slot(digest) {
                // Memory holds the key's state, the file's or a newer one
                // (which the heap covers too: it passes over a key gone by
                // the time its entry comes up).
                guard slot.hasRow, slot.isExpired(at: now) else {
                    passed += 1
                    continue
                }
                expire(digest, key: slot.key, size: slot.contentSize, expiresAt: slot.expiresAt)
            } else {
                // Only the file holds it, as listed: a change would have put
                // the key in memory first.
                guard let row = try file.listedRow(digest), let rowExpiry = row.expiresAt, rowExpiry <= now else {
                    passed += 1
                    continue
                }
                expire(digest, key: row.key, size: row.size, expiresAt: rowExpiry)
            }
            removed += 1
        }
        if expiry.rebuilding.isEmpty && expiry.heap.count > expiryHeapBound {
            // Few rows left to apply (a batch completed): from their slots, at once.
            if table.unappliedCount <= Self.expiryRebuildStep { rebuildExpiryHeapFromSlots() } else { startExpiryHeapRebuild() }
        }
        return removed
    }

    /// The heap's entries past which it is rebuilt: twice the rows not yet
    /// in the file, and some.
    private var expiryHeapBound: Int { 2 * table.unappliedCount + 1024 }

    /// Old entries of the heap a step of the sweep looks at while it is
    /// rebuilt (about half a millisecond).
    static let expiryRebuildStep = 4096

    /// Rebuilds the heap at once (tests; the sweep does it in steps).
    func rebuildExpiryHeap() {
        startExpiryHeapRebuild()
        continueExpiryHeapRebuild(entries: .max)
    }

    /// Starts keeping in the heap only rows not yet in the file (the walk
    /// over the file finds the rest) when many are: the entries of those
    /// rows' current states, which every change of such a row noted. The old entries are
    /// looked at a step of the sweep at a time, the current ones pushed
    /// again, while changes push theirs as before; a key due meanwhile
    /// whose entry is not looked at yet goes a few steps later. (Rebuilt
    /// at once from the unapplied slots, each one's digest computed from
    /// its key, it stalled the loop 350-730 ms when 865k keys due at once
    /// were still on their way to the file.)
    private func startExpiryHeapRebuild() {
        expiry.rebuilding = expiry.heap.takeAll()
        expiry.rebuildNext = 0
        // Room for what is kept, at once: grown by doubling, the array
        // copied up to 96 MB while the sweep pushed (24 ms steps).
        expiry.heap.reserveCapacity(min(expiry.rebuilding.count, expiryHeapBound))
    }

    private func continueExpiryHeapRebuild(entries: Int) {
        let table = self.table
        let old = expiry.rebuilding
        let end = old.count - expiry.rebuildNext > entries ? expiry.rebuildNext + entries : old.count
        for i in expiry.rebuildNext..<end {
            if i + Self.expiryLookahead < end { table.prefetchBucket(old[i + Self.expiryLookahead].digest) }
            if i + Self.expiryLookahead / 2 < end { table.prefetchSlot(old[i + Self.expiryLookahead / 2].digest) }
            let entry = old[i]
            if let slot = table.slot(entry.digest), slot.hasRow, slot.isUnapplied, slot.seq == entry.seq,
               slot.expiresAt == entry.expiresAt {
                expiry.heap.push(entry)
            }
        }
        expiry.rebuildNext = end
        guard end == old.count else { return }
        expiry.rebuilding = []
        expiry.rebuildNext = 0
        // Entries of one state repeated (the same EXPIREAT again and
        // again) can keep it over the bound: then from the slots, at once.
        if expiry.heap.count > expiryHeapBound { rebuildExpiryHeapFromSlots() }
    }

    /// The heap made again from the unapplied slots, a digest computed and
    /// a push for each.
    private func rebuildExpiryHeapFromSlots() {
        expiry.heap.removeAll()
        for slot in table.allUnapplied {
            if slot.hasRow, let expiresAt = slot.expiresAt { expiry.note(slot.digest(), expiresAt: expiresAt, seq: slot.seq) }
        }
    }
}
