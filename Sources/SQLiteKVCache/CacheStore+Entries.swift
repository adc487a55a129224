import Foundation

/// Reads and writes of single entries.
extension CacheStore {
    /// The size and expiry of the row for `digest`, if there is one (live or expired).
    func rowInfo(_ digest: KeyDigest) throws -> (size: Int, expiresAt: Int64?)? {
        let stmt = try db.statement("SELECT size, expires_at FROM entries WHERE digest = ?")
        defer { stmt.reset() }
        digest.withBytes { stmt.bind(1, $0) }
        guard try stmt.step() else { return nil }
        return (Int(stmt.int64(0)), stmt.isNull(1) ? nil : stmt.int64(1))
    }

    func isExpired(_ expiresAt: Int64?, now: Int64) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= now
    }

    /// Runs a read, mapping SQLite failures to `readFailed`.
    /// Inside a batch, reads share one (deferred) transaction, so a loop
    /// iteration's reads take SQLite's shared-memory locks once, not each.
    func read<R>(_ body: () throws -> R) throws(SQLiteKVCache.Error) -> R {
        do {
            if batchOpen && !db.isInTransaction { try db.execute("BEGIN") }
            return try body()
        } catch let failure as SQLiteFailure {
            throw failure.asReadError
        } catch let error as SQLiteKVCache.Error {
            throw error
        } catch {
            throw .readFailed(sqliteCode: 1)
        }
    }

    /// Returns the live entry for `key`, or nil if absent or expired. An
    /// expired entry found here is deleted at once (lazy expiry, as Redis).
    func get(key: [UInt8]) throws(SQLiteKVCache.Error) -> SQLiteKVCache.Entry? {
        let digest = hasher.digest(key)
        if let write = pending[digest] {
            guard case .put(let entry, _) = write else { return nil }
            if isExpired(entry.expiresAt, now: nowMilliseconds()) {
                _ = try? deferDelete(digest)
                return nil
            }
            if policy == .lru { touch(digest) }
            return entry
        }
        if let cached = tier.get(digest) {
            if let expiresAt = cached.expiresAt, expiresAt <= nowMilliseconds() {
                expireLazily(digest, now: expiresAt)
                return nil
            }
            if policy == .lru { touch(digest) }
            return cached.entry(key: key)
        }
        let found: SQLiteKVCache.Entry? = try read {
            let stmt = try db.statement(
                "SELECT storage_date, metadata, value, expires_at, kind FROM entries WHERE digest = ?")
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            guard try stmt.step() else { return nil }
            let expiresAt: Int64? = stmt.isNull(3) ? nil : stmt.int64(3)
            // The key is the one asked for (its digest matched): no copy from SQLite.
            return SQLiteKVCache.Entry(
                key: key, storageDate: Date(timeIntervalSince1970: stmt.double(0)),
                metadata: stmt.bytes(1), value: stmt.bytes(2), expiresAt: expiresAt,
                kind: ValueKind(rawValue: UInt8(truncatingIfNeeded: stmt.int64(4))) ?? .string)
        }
        guard let entry = found else { return nil }
        if let expiresAt = entry.expiresAt, expiresAt <= nowMilliseconds() {
            expireLazily(digest, now: expiresAt)
            return nil
        }
        tier.set(digest, entry)
        if policy == .lru { touch(digest) }
        return entry
    }

    /// Deletes the entry for `digest` if it has expired by `now`, counting it
    /// as expired. Best effort: a failure leaves it to the sweep.
    func expireLazily(_ digest: KeyDigest, now: Int64) {
        if defersWrites || pending[digest] != nil {
            _ = try? deferDelete(digest)
            return
        }
        _ = try? write {
            let stmt = try db.statement("DELETE FROM entries WHERE digest = ? AND expires_at <= ? RETURNING size, expires_at")
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            stmt.bind(2, now)
            guard try stmt.step() else { return }
            let size = Int(stmt.int64(0)), expiresAt = stmt.int64(1)
            while try stmt.step() {}
            totals.apply(size: size, expiresAt: expiresAt, sign: -1)
            expiredCount += 1
            pendingTouches[digest] = nil
            tier.remove(digest)
        }
    }

    /// Whether `digest` has a live entry; an expired one is deleted on the way.
    private func isLive(_ digest: KeyDigest) throws(SQLiteKVCache.Error) -> Bool {
        let now = nowMilliseconds()
        let expiresAt: Int64??
        if let known = knownRow(digest) {
            expiresAt = known.map { $0.expiresAt }
        } else if let cached = tier.get(digest) {
            expiresAt = .some(cached.expiresAt)
        } else {
            expiresAt = try read { try rowInfo(digest).map { $0.expiresAt } }
        }
        guard let expiresAt else { return false }
        if isExpired(expiresAt, now: now) {
            expireLazily(digest, now: now)
            return false
        }
        return true
    }

    /// True when a live entry exists for `key`.
    func contains(key: [UInt8]) throws(SQLiteKVCache.Error) -> Bool {
        try isLive(hasher.digest(key))
    }

    /// Marks `key` as used now (LRU) if it is live.
    /// - Returns: whether it is live.
    func touch(key: [UInt8]) throws(SQLiteKVCache.Error) -> Bool {
        let digest = hasher.digest(key)
        let live = try isLive(digest)
        if live && policy == .lru { touch(digest) }
        return live
    }

    /// Inserts or replaces the entry for `key`, then evicts per policy until
    /// the cache is back within capacity.
    /// - Throws: `entryTooLarge` if the entry alone exceeds capacity;
    ///   `capacityExceeded` under `noeviction`; `writeFailed` from SQLite.
    func put(_ entry: SQLiteKVCache.Entry) throws(SQLiteKVCache.Error) {
        let size = entry.contentSize
        if capacity > 0 && size > capacity {
            throw .entryTooLarge(size: size, capacity: capacity)
        }
        let digest = hasher.digest(entry.key)
        if defersWrites { return try deferPut(entry, digest: digest) }
        if pending[digest] != nil { try flushPending() }
        try write {
            // The tier holds only rows that exist: a hit spares the lookup.
            let old = try tier.peek(digest).map { (size: $0.contentSize, expiresAt: $0.expiresAt) } ?? rowInfo(digest)
            if policy == .noeviction && capacity > 0 && bytes - (old?.size ?? 0) + size > capacity {
                throw SQLiteKVCache.Error.capacityExceeded(capacity: capacity)
            }
            // A plain INSERT or UPDATE: the lookup above already knows which.
            let stmt = try db.statement(old == nil
                ? "INSERT INTO entries(size, storage_date, seq, expires_at, key, metadata, value, kind, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                : "UPDATE entries SET size = ?, storage_date = ?, seq = ?, expires_at = ?, key = ?, metadata = ?, value = ?, kind = ? WHERE digest = ?")
            defer { stmt.reset() }
            bindRow(stmt, entry, seq: totals.takeSeq(), digest: digest)
            _ = try stmt.step()
            pendingTouches[digest] = nil
            tier.set(digest, entry)
            if let old { totals.apply(size: old.size, expiresAt: old.expiresAt, sign: -1) }
            totals.apply(size: size, expiresAt: entry.expiresAt, sign: 1)
            if let expiresAt = entry.expiresAt { earliestExpiry = min(earliestExpiry, expiresAt) }
            try evictToCapacity()
        }
    }

    /// Sets or clears the expiry of the live entry for `key`.
    /// - Returns: whether there was a live entry.
    func setExpiry(key: [UInt8], expiresAt: Int64?) throws(SQLiteKVCache.Error) -> Bool {
        let digest = hasher.digest(key)
        if pending[digest] != nil { try flushPending() }
        return try write {
            guard let old = try rowInfo(digest), !isExpired(old.expiresAt, now: nowMilliseconds()) else { return false }
            let stmt = try db.statement("UPDATE entries SET expires_at = ? WHERE digest = ?")
            defer { stmt.reset() }
            if let expiresAt { stmt.bind(1, expiresAt) } else { stmt.bindNull(1) }
            digest.withBytes { stmt.bind(2, $0) }
            _ = try stmt.step()
            totals.apply(size: old.size, expiresAt: old.expiresAt, sign: -1)
            totals.apply(size: old.size, expiresAt: expiresAt, sign: 1)
            if let expiresAt { earliestExpiry = min(earliestExpiry, expiresAt) }
            tier.setExpiry(digest, expiresAt)
            return true
        }
    }

    /// Removes the entry for `key`.
    /// - Returns: whether a live entry was removed (an expired one is removed
    ///   too, but counts as expired, not deleted).
    @discardableResult
    func delete(key: [UInt8]) throws(SQLiteKVCache.Error) -> Bool {
        let digest = hasher.digest(key)
        if defersWrites { return try deferDelete(digest) }
        if pending[digest] != nil { try flushPending() }
        return try write {
            let stmt = try db.statement("DELETE FROM entries WHERE digest = ? RETURNING size, expires_at")
            defer { stmt.reset() }
            digest.withBytes { stmt.bind(1, $0) }
            guard try stmt.step() else { return false }
            let size = Int(stmt.int64(0))
            let expiresAt: Int64? = stmt.isNull(1) ? nil : stmt.int64(1)
            while try stmt.step() {}
            totals.apply(size: size, expiresAt: expiresAt, sign: -1)
            pendingTouches[digest] = nil
            tier.remove(digest)
            if isExpired(expiresAt, now: nowMilliseconds()) {
                expiredCount += 1
                return false
            }
            return true
        }
    }

    /// Removes every entry.
    func clear() throws(SQLiteKVCache.Error) {
        try write {
            pending.removeAll()
            pendingBytes = 0
            try db.execute("DELETE FROM entries")
            totals = Totals(nextSeq: totals.nextSeq)
            pendingTouches.removeAll()
            tier.removeAll()
            earliestExpiry = .max
        }
    }
}
