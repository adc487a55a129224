/// Deferred writes, for a server that acknowledges writes before they are
/// committed (`durability everysec`). Inside a batch, puts and deletes go to
/// a map of pending writes (the latest per key wins) and to the memory
/// tier; totals change at once. The map is applied to SQLite in one go when
/// the batch commits, or before anything that reads SQLite in bulk (scans,
/// sweeps, eviction). A put that takes the cache past its capacity applies
/// the pending writes and evicts at once (inside the open transaction), so
/// a cache never stays over capacity; a cache running full thus writes
/// through to SQLite on every put, though it still commits once a batch.
enum PendingWrite {
    case put(SQLiteKVCache.Entry, seq: Int64)
    case delete
}

extension CacheStore {
    /// True when writes are deferred now: the mode is on and a batch is open.
    var defersWrites: Bool { deferWrites && batchOpen }

    /// What is known of `digest` without SQLite: from the pending writes, or
    /// the memory tier. `.some(nil)` means known absent.
    func knownRow(_ digest: KeyDigest) -> (size: Int, expiresAt: Int64?)?? {
        if let pending = pending[digest] {
            switch pending {
            case .put(let entry, _): return .some((entry.contentSize, entry.expiresAt))
            case .delete: return .some(nil)
            }
        }
        if let cached = tier.peek(digest) { return .some((cached.contentSize, cached.expiresAt)) }
        return nil
    }

    /// The size and expiry of `digest`'s entry, pending writes first.
    func currentRow(_ digest: KeyDigest) throws -> (size: Int, expiresAt: Int64?)? {
        if let known = knownRow(digest) { return known }
        return try rowInfo(digest)
    }

    /// Records a put to apply at commit.
    func deferPut(_ entry: SQLiteKVCache.Entry, digest: KeyDigest) throws(SQLiteKVCache.Error) {
        let old = try read { try currentRow(digest) }
        let size = entry.contentSize
        if policy == .noeviction && capacity > 0 && bytes - (old?.size ?? 0) + size > capacity {
            throw .capacityExceeded(capacity: capacity)
        }
        if let old { totals.apply(size: old.size, expiresAt: old.expiresAt, sign: -1) }
        totals.apply(size: size, expiresAt: entry.expiresAt, sign: 1)
        if case .put(let previous, _)? = pending[digest] { pendingBytes -= previous.contentSize }
        pending[digest] = .put(entry, seq: totals.takeSeq())
        pendingBytes += size
        pendingTouches[digest] = nil
        tier.set(digest, entry)
        if let expiresAt = entry.expiresAt { earliestExpiry = min(earliestExpiry, expiresAt) }
        if capacity > 0 && bytes > capacity { try flushPending() }
    }

    /// Records a delete to apply at commit.
    /// - Returns: whether a live entry was deleted.
    func deferDelete(_ digest: KeyDigest) throws(SQLiteKVCache.Error) -> Bool {
        guard let old = try read({ try currentRow(digest) }) else { return false }
        totals.apply(size: old.size, expiresAt: old.expiresAt, sign: -1)
        if case .put(let previous, _)? = pending[digest] { pendingBytes -= previous.contentSize }
        pending[digest] = .delete
        pendingTouches[digest] = nil
        tier.remove(digest)
        if isExpired(old.expiresAt, now: nowMilliseconds()) {
            expiredCount += 1
            return false
        }
        return true
    }

    /// Applies the pending writes inside the open transaction, then evicts
    /// to capacity.
    func applyPending() throws {
        guard !pending.isEmpty else { return }
        let upsert = try db.statement("""
            INSERT INTO entries(size, storage_date, seq, expires_at, key, metadata, value, kind, digest)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(digest) DO UPDATE SET size = excluded.size, storage_date = excluded.storage_date,
                seq = excluded.seq, expires_at = excluded.expires_at, key = excluded.key,
                metadata = excluded.metadata, value = excluded.value, kind = excluded.kind
            """)
        let delete = try db.statement("DELETE FROM entries WHERE digest = ?")
        for (digest, write) in pending {
            switch write {
            case .put(let entry, let seq):
                defer { upsert.reset() }
                bindRow(upsert, entry, seq: seq, digest: digest)
                _ = try upsert.step()
            case .delete:
                defer { delete.reset() }
                digest.withBytes { delete.bind(1, $0) }
                _ = try delete.step()
            }
        }
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
        try evictToCapacity()
    }

    /// Applies pending writes now (before a scan, sweep or eviction reads SQLite).
    func flushPending() throws(SQLiteKVCache.Error) {
        guard !pending.isEmpty else { return }
        try write { try applyPending() }
    }

    /// Binds an entry to an INSERT or UPDATE written with the columns in the
    /// order size, storage_date, seq, expires_at, key, metadata, value, kind, digest.
    func bindRow(_ stmt: SQLiteStatement, _ entry: SQLiteKVCache.Entry, seq: Int64, digest: KeyDigest) {
        stmt.bind(1, entry.contentSize)
        stmt.bind(2, entry.storageDate.timeIntervalSince1970)
        stmt.bind(3, seq)
        if let expiresAt = entry.expiresAt { stmt.bind(4, expiresAt) } else { stmt.bindNull(4) }
        stmt.bind(5, entry.key)
        stmt.bind(6, entry.metadata)
        stmt.bind(7, entry.value)
        stmt.bind(8, Int64(entry.kind.rawValue))
        digest.withBytes { stmt.bind(9, $0) }
    }
}
