/// Walks over every key: SCAN, KEYS, RANDOMKEY. The file's rows and the
/// keys not yet in it are merged in digest order; where memory knows a
/// key, its state there wins over the file's row.
extension CacheEngine {
    /// One step of a scan in digest order from `cursor` (0 to begin).
    /// - Returns: the live keys of about `count` entries (of `kind`, when
    ///   given), and the cursor to continue from (0 when done). A key
    ///   present for the whole scan is returned exactly once: keys sharing
    ///   a cursor's prefix are never split between steps.
    ///
    /// A cursor is the digest's first `cursorBits` bits (53): below 2^53,
    /// as Redis's cursors are at any size a dict reaches, so a script's
    /// `tonumber(cursor)` (a Lua double) gives it back exactly; a cursor
    /// of 64 bits came back from Lua as `1.5807634692070441e+18`, an
    /// invalid cursor. A cursor past 2^53 - 1 ends the scan.
    public func scan(cursor: UInt64, count: Int, kind: ValueKind? = nil) throws(SQLiteKVCache.Error)
        -> (keys: [[UInt8]], next: UInt64)
    {
        guard cursor < 1 << Self.cursorBits else { return ([], 0) }
        let start = KeyDigest(w0: cursor << Self.cursorShift)
        let now = nowMilliseconds()
        let limit = max(1, count)
        var fileRows: [CacheFile.ListedRow] = []
        var fileEnded = true
        if !fileVoid { (fileRows, fileEnded) = try file.scanPage(from: start, limit: limit, prefixRest: Self.cursorPrefixRest) }
        let memory = table.unapplied(from: start, limit: limit)
        // Both lists are complete up to `bound` (the end of a cursor's prefix):
        // the file's up to the end of its last row's 53-bit prefix, memory's up
        // to the end of the 12-bit bucket it stopped in.
        var bound = UInt64.max
        if !fileEnded, let last = fileRows.last { bound = last.digest.w0 | Self.cursorPrefixRest }
        if memory.count >= limit, let last = memory.last { bound = min(bound, last.digest.w0 | (UInt64.max >> UInt64(KeyTable.indexBits))) }
        let done = bound == .max && fileEnded && memory.count < limit

        func live(_ slot: KeySlot) -> Bool {
            guard slot.hasRow, !slot.isExpired(at: now) else { return false }
            return kind == nil || slot.kind == kind
        }
        var found: [(KeyDigest, [UInt8])] = []
        for row in fileRows where row.digest.w0 <= bound {
            if let slot = table.slot(row.digest) {
                if live(slot) { found.append((row.digest, slot.key)) }
            } else if !(row.expiresAt.map { $0 <= now } ?? false) && (kind == nil || row.kind == kind) {
                found.append((row.digest, row.key))
            }
        }
        let inFile = Set(fileRows.lazy.filter { $0.digest.w0 <= bound }.map(\.digest))
        for (digest, slot) in memory where digest.w0 <= bound && !inFile.contains(digest) && live(slot) {
            found.append((digest, slot.key))
        }
        found.sort { $0.0 < $1.0 }
        return (found.map(\.1), done || bound == .max ? 0 : (bound + 1) >> Self.cursorShift)
    }

    /// Bits of the digest a SCAN cursor holds, and the low bits of the
    /// first word it leaves out (all set: the end of a cursor's prefix).
    static let cursorBits: UInt64 = 53
    static let cursorShift: UInt64 = 64 - cursorBits
    static let cursorPrefixRest: UInt64 = (1 << cursorShift) - 1

    /// Every live key, in digest order.
    public func keys() throws(SQLiteKVCache.Error) -> [[UInt8]] {
        let now = expiryNow()
        var found: [(KeyDigest, [UInt8])] = []
        found.reserveCapacity(min(totals.count, 1 << 20))
        var seen = Set<KeyDigest>()
        if !fileVoid {
            try file.allRows { row in
                if let slot = table.slot(row.digest) {
                    seen.insert(row.digest)
                    if slot.hasRow, !slot.isExpired(at: now) { found.append((row.digest, slot.key)) }
                } else if !(row.expiresAt.map { $0 <= now } ?? false) {
                    found.append((row.digest, row.key))
                }
            }
        }
        for slot in table.allUnapplied where slot.hasRow && !slot.isExpired(at: now) {
            let digest = slot.digest()
            if !seen.contains(digest) { found.append((digest, slot.key)) }
        }
        found.sort { $0.0 < $1.0 }
        return found.map(\.1)
    }

    /// A live key chosen at random, or nil when there is none.
    public func randomKey() throws(SQLiteKVCache.Error) -> [UInt8]? {
        guard totals.count > 0 else { return nil }
        let now = nowMilliseconds()
        let unapplied = table.allUnapplied.filter { $0.hasRow && !$0.isExpired(at: now) }
        // Pick memory or the file in proportion to what each holds.
        let fromMemory = fileVoid || table.draw(max(1, totals.count)) < unapplied.count
        if fromMemory, let slot = unapplied.randomElement(using: &table.random) { return slot.key }
        if !fileVoid {
            for _ in 0..<16 {
                let probe = KeyDigest(w0: table.random.next())
                guard let row = try file.row(atOrAfter: probe) else { break }
                if let slot = table.slot(row.digest) {
                    if slot.hasRow, !slot.isExpired(at: now) { return slot.key }
                } else if !(row.expiresAt.map { $0 <= now } ?? false) {
                    return row.key
                }
            }
        }
        if let slot = unapplied.randomElement(using: &table.random) { return slot.key }
        // Mostly expired or shadowed: any live key at all.
        return try keys().randomElement(using: &table.random)
    }
}
