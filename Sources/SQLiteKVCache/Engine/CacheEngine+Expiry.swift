/// Where the expiry sweep stands: rows not yet in the file in a heap by
/// expiry time, and a walk over the file's expiry index.
struct ExpiryWalk {
    struct Pending {
        var expiresAt: Int64
        var digest: KeyDigest
        var seq: Int64
    }

    var heap = Heap<Pending>(by: { $0.expiresAt < $1.expiresAt })
    /// The next time a row of the file falls due (.max: none has an expiry
    /// left; .min: unknown, look now). Rows before `position` were seen.
    var fileHint: Int64 = .min
    /// The last row the walk looked at (expiry time and digest).
    var position: (Int64, KeyDigest)?

    mutating func note(_ digest: KeyDigest, expiresAt: Int64, seq: Int64) {
        heap.push(Pending(expiresAt: expiresAt, digest: digest, seq: seq))
    }

    /// A batch reached the file: walk its index again from the start.
    mutating func fileChanged(volatile: Int) {
        position = nil
        fileHint = volatile > 0 ? .min : .max
    }
}

/// The active expiry sweep.
extension CacheEngine {
    /// True when some entry may be due for removal (cheap: no SQL).
    public func expiryDue() -> Bool {
        guard totals.volatile > 0 else { return false }
        let now = nowMilliseconds()
        if let top = expiry.heap.top, top.expiresAt <= now { return true }
        return !fileVoid && expiry.fileHint <= now
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

    /// Removes up to `limit` expired entries, soonest first: those in
    /// memory, then those the file's expiry index lists (O(log n) each).
    /// - Returns: how many went; fewer than `limit` means the sweep has
    ///   nothing more to do for now.
    public func removeExpired(limit: Int) throws(SQLiteKVCache.Error) -> Int {
        let now = nowMilliseconds()
        var removed = 0
        while removed < limit, let top = expiry.heap.top, top.expiresAt <= now {
            expiry.heap.pop()
            guard let slot = table.slot(top.digest), slot.hasRow, slot.seq == top.seq,
                  slot.expiresAt == top.expiresAt else { continue }
            expire(top.digest, key: slot.key, size: slot.contentSize, expiresAt: slot.expiresAt)
            removed += 1
        }
        if removed < limit && !fileVoid && expiry.fileHint <= now {
            // Read a page even when few are wanted: rows a newer state in
            // memory shadows are passed over without counting.
            let fetch = max(limit - removed, 64)
            let rows = try file.expiredRows(now: now, after: expiry.position, limit: fetch)
            var examined = 0
            for row in rows {
                if removed == limit { break }
                examined += 1
                expiry.position = (row.expiresAt ?? .max, row.digest)
                if let slot = table.slot(row.digest) {
                    // Memory knows a newer state: the heap covers it if it expires.
                    guard slot.hasRow, slot.seq == row.seq, slot.isExpired(at: now) else { continue }
                    expire(row.digest, key: slot.key, size: slot.contentSize, expiresAt: slot.expiresAt)
                } else {
                    expire(row.digest, key: row.key, size: row.size, expiresAt: row.expiresAt)
                }
                removed += 1
            }
            if rows.count < fetch && examined == rows.count {
                // Every row due by now was seen: wait for the next one to fall due.
                expiry.fileHint = try file.earliestExpiry(after: now) ?? .max
            }
        }
        if expiry.heap.count > 2 * table.unappliedCount + 1024 { rebuildExpiryHeap() }
        return removed
    }

    /// Keeps in the heap only rows not yet in the file (the walk over the
    /// file finds the rest).
    func rebuildExpiryHeap() {
        expiry.heap.removeAll()
        for slot in table.allUnapplied {
            if slot.hasRow, let expiresAt = slot.expiresAt { expiry.note(slot.digest(), expiresAt: expiresAt, seq: slot.seq) }
        }
    }
}
