/// Eviction per policy, and the recency LRU keeps.
extension CacheStore {
    private func evictionQuery() -> String {
        let victim: String
        switch policy {
        case .fifo, .noeviction:
            victim = "(SELECT digest FROM entries ORDER BY storage_date, seq LIMIT 1)"
        case .lru:
            victim = "(SELECT digest FROM entries ORDER BY seq LIMIT 1)"
        case .volatileTTL:
            victim = """
                coalesce((SELECT digest FROM entries WHERE expires_at IS NOT NULL ORDER BY expires_at LIMIT 1),
                         (SELECT digest FROM entries ORDER BY storage_date, seq LIMIT 1))
                """
        }
        return "DELETE FROM entries WHERE digest = \(victim) RETURNING size, expires_at, digest"
    }

    /// Evicts one entry at a time (O(log n) each) until within `capacity` or `limit` entries went.
    /// - Returns: true when the cache is within capacity.
    private func evict(limit: Int) throws -> Bool {
        guard capacity > 0, bytes > capacity else { return true }
        if policy == .lru { try flushTouches() }
        let stmt = try db.statement(evictionQuery())
        var evicted = 0
        while bytes > capacity && evicted < limit {
            defer { stmt.reset() }
            guard try stmt.step() else { break }
            let size = Int(stmt.int64(0))
            let expiresAt: Int64? = stmt.isNull(1) ? nil : stmt.int64(1)
            tier.remove(stmt.digest(2))
            while try stmt.step() {}
            totals.apply(size: size, expiresAt: expiresAt, sign: -1)
            evictedCount += 1
            evicted += 1
        }
        return bytes <= capacity
    }

    /// Evicts until within capacity; runs inside a write.
    func evictToCapacity() throws {
        _ = try evict(limit: .max)
    }

    /// Changes capacity and evicts down to it, at most `batchLimit` entries now.
    /// - Returns: true when the cache is within capacity.
    @discardableResult
    func setCapacity(_ newCapacity: Int, batchLimit: Int = .max) throws(SQLiteKVCache.Error) -> Bool {
        capacity = max(0, newCapacity)
        return try evictStep(limit: batchLimit)
    }

    /// Evicts up to `limit` entries toward capacity.
    /// - Returns: true when the cache is within capacity.
    func evictStep(limit: Int) throws(SQLiteKVCache.Error) -> Bool {
        guard capacity > 0, bytes > capacity else { return true }
        return try write {
            try applyPending()
            return try evict(limit: limit)
        }
    }

    // MARK: Recency (LRU)

    func touch(_ digest: KeyDigest) {
        pendingTouches[digest] = totals.takeSeq()
        if pendingTouches.count >= Self.maxPendingTouches && !batchOpen {
            try? flushTouchesInOwnTransaction()
        }
    }

    func flushTouches() throws {
        guard !pendingTouches.isEmpty else { return }
        let stmt = try db.statement("UPDATE entries SET seq = ? WHERE digest = ?")
        for (digest, seq) in pendingTouches {
            defer { stmt.reset() }
            stmt.bind(1, seq)
            digest.withBytes { stmt.bind(2, $0) }
            _ = try stmt.step()
        }
        pendingTouches.removeAll()
    }

    func flushTouchesInOwnTransaction() throws {
        guard !pendingTouches.isEmpty, !db.isInTransaction else { return }
        try write {}
    }
}
