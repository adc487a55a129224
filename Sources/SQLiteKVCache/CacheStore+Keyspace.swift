/// Walking the keyspace: the expiry sweep, SCAN, KEYS, RANDOMKEY.
extension CacheStore {
    /// Removes up to `limit` expired entries, soonest expiry first, through
    /// the expiry index (O(log n) each).
    /// - Returns: how many were removed; fewer than `limit` means none is left due.
    func expireStep(limit: Int) throws(SQLiteKVCache.Error) -> Int {
        let now = nowMilliseconds()
        guard earliestExpiry <= now, totals.volatile > 0 else { return 0 }
        try flushPending()
        return try write {
            let stmt = try db.statement("""
                DELETE FROM entries WHERE digest IN
                    (SELECT digest FROM entries WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)
                RETURNING size, expires_at, digest
                """)
            defer { stmt.reset() }
            stmt.bind(1, now)
            stmt.bind(2, limit)
            var removed = 0
            while try stmt.step() {
                totals.apply(size: Int(stmt.int64(0)), expiresAt: stmt.int64(1), sign: -1)
                tier.remove(stmt.digest(2))
                removed += 1
            }
            expiredCount += removed
            if removed < limit {
                earliestExpiry = try db.scalarInt("SELECT min(expires_at) FROM entries WHERE expires_at IS NOT NULL") ?? .max
            }
            return removed
        }
    }

    /// One step of a scan in digest order, starting at `cursor` (0 to begin).
    /// - Returns: the live keys of about `count` entries, and the cursor to
    ///   continue from (0 when done). Keys present for the whole scan are all
    ///   returned once: entries sharing the cursor's 64-bit prefix are never split.
    /// - Parameter kind: when given, only keys whose value is of this kind
    ///   are returned (the cursor advances as without it).
    func scan(cursor: UInt64, count: Int, kind: ValueKind? = nil) throws(SQLiteKVCache.Error) -> (keys: [[UInt8]], next: UInt64) {
        try flushPending()
        return try read {
            let now = nowMilliseconds()
            var start = [UInt8](repeating: 0, count: 32)
            withUnsafeBytes(of: cursor.bigEndian) { start.replaceSubrange(0..<8, with: $0) }
            let wanted = kind.map { Int64($0.rawValue) }
            let stmt = try db.statement(
                "SELECT digest, key, expires_at, kind FROM entries WHERE digest >= ? ORDER BY digest LIMIT ?")
            defer { stmt.reset() }
            stmt.bind(1, start)
            stmt.bind(2, max(1, count))
            var keys: [[UInt8]] = []
            var rows = 0
            var lastDigest: [UInt8] = []
            while try stmt.step() {
                rows += 1
                lastDigest = stmt.bytes(0)
                let expiresAt: Int64? = stmt.isNull(2) ? nil : stmt.int64(2)
                if !isExpired(expiresAt, now: now) && (wanted == nil || stmt.int64(3) == wanted) { keys.append(stmt.bytes(1)) }
            }
            if rows < max(1, count) { return (keys, 0) }
            let prefix = lastDigest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            // Take the rest of the entries sharing the last prefix, so the next cursor can skip past it.
            let same = try db.statement("SELECT key, expires_at, kind FROM entries WHERE digest > ? AND digest < ? ORDER BY digest")
            defer { same.reset() }
            same.bind(1, lastDigest)
            if prefix == .max {
                same.bind(2, [UInt8](repeating: 0xff, count: 33))  // above every 32-byte digest
            } else {
                var end = [UInt8](repeating: 0, count: 32)
                withUnsafeBytes(of: (prefix + 1).bigEndian) { end.replaceSubrange(0..<8, with: $0) }
                same.bind(2, end)
            }
            while try same.step() {
                let expiresAt: Int64? = same.isNull(1) ? nil : same.int64(1)
                if !isExpired(expiresAt, now: now) && (wanted == nil || same.int64(2) == wanted) { keys.append(same.bytes(0)) }
            }
            return (keys, prefix == .max ? 0 : prefix + 1)
        }
    }

    /// Every live key, in digest order.
    func allKeys() throws(SQLiteKVCache.Error) -> [[UInt8]] {
        try flushPending()
        return try read {
            let now = nowMilliseconds()
            let stmt = try db.statement("SELECT key, expires_at FROM entries")
            defer { stmt.reset() }
            var keys: [[UInt8]] = []
            keys.reserveCapacity(min(totals.count, 1 << 20))
            while try stmt.step() {
                let expiresAt: Int64? = stmt.isNull(1) ? nil : stmt.int64(1)
                if !isExpired(expiresAt, now: now) { keys.append(stmt.bytes(0)) }
            }
            return keys
        }
    }

    /// A live key chosen at random, or nil when there is none.
    func randomKey() throws(SQLiteKVCache.Error) -> [UInt8]? {
        try flushPending()
        return try read {
            guard totals.count > 0 else { return nil }
            let now = nowMilliseconds()
            let stmt = try db.statement("""
                SELECT key, expires_at FROM entries WHERE digest >= ?
                UNION ALL SELECT * FROM (SELECT key, expires_at FROM entries ORDER BY digest LIMIT 1)
                LIMIT 1
                """)
            for _ in 0..<16 {
                defer { stmt.reset() }
                stmt.bind(1, (0..<32).map { _ in UInt8.random(in: 0...255) })
                guard try stmt.step() else { return nil }
                let expiresAt: Int64? = stmt.isNull(1) ? nil : stmt.int64(1)
                if !isExpired(expiresAt, now: now) { return stmt.bytes(0) }
            }
            // Mostly expired: look for any live key.
            let live = try db.statement(
                "SELECT key FROM entries WHERE expires_at IS NULL OR expires_at > ? LIMIT 1")
            defer { live.reset() }
            live.bind(1, now)
            return try live.step() ? live.bytes(0) : nil
        }
    }
}
