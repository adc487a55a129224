/// A position in a policy's eviction order: lower goes first.
struct EvictionOrderKey: Comparable {
    /// volatile-ttl: entries with an expiry (0) before the rest (1).
    var rank: Int
    var primary: Double
    var seq: Int64

    static func < (a: Self, b: Self) -> Bool { (a.rank, a.primary, a.seq) < (b.rank, b.primary, b.seq) }

    init(rank: Int, primary: Double, seq: Int64) {
        self.rank = rank
        self.primary = primary
        self.seq = seq
    }

    /// Where a row goes in `policy`'s order.
    init(_ policy: EvictionPolicy, storageDate: Double, seq: Int64, expiresAt: Int64?) {
        switch policy {
        case .fifo, .noeviction: self.init(rank: 0, primary: storageDate, seq: seq)
        case .lru: self.init(rank: 0, primary: 0, seq: seq)
        case .volatileTTL:
            if let expiresAt {
                self.init(rank: 0, primary: Double(expiresAt), seq: seq)
            } else {
                self.init(rank: 1, primary: storageDate, seq: seq)
            }
        }
    }
}

/// Where eviction stands: rows not yet in the file in a heap by the
/// policy's order, and a walk over the file's rows in the same order.
/// Both are checked against the key table before a row is evicted: a
/// slot with another write order is a newer state, and the stale entry
/// is skipped.
struct EvictionWalk {
    struct Pending {
        var order: EvictionOrderKey
        var digest: KeyDigest
        var seq: Int64
        /// Noted by the file walk: a row the file holds whose place in age
        /// order is behind its last write (which memory holds).
        var fromWalk = false
    }

    var heap = Heap<Pending>()
    var page: [CacheFile.ListedRow] = []
    var pageIndex = 0
    var position: CacheFile.EvictionPosition?
    var phase = EvictionOrder.age
    var fileDone = false
    /// A batch reached the file since the walk started: at the end of the
    /// file, it starts over once (rows applied behind it).
    var fileChanged = false
    /// It waits for that batch: no victim may come after `requeueFloor`.
    var awaitingBatch = false
    /// The earliest place, by their last writes, of the rows this pass
    /// asked to move (`CacheEngine.requeue`); nil when it asked for none.
    /// At the end of the file the walk then waits for their batch and
    /// starts over, rather than being done.
    var requeueFloor: EvictionOrderKey?
    /// The batch carrying this pass's requests to move rows has landed (or failed).
    var requeuesLanded = false
    /// Where the walk stopped when a step's skip budget ran out (the next
    /// row's place): every row it has not reached is at or after it.
    var pausedAt: EvictionOrderKey?
    /// Entries the file walk put in the heap (an upper bound: counted
    /// again at each `compact`).
    var walkNoted = 0
    /// The most entries the file walk keeps in the heap; past it, rows are
    /// moved in the file instead (`requeue`).
    static let walkNotedLimit = 1 << 18
    /// Rows a step may pass over (evicted or changed since): a bound on the
    /// work one step does, so a stale walk cannot stall the loop.
    static let skipBudget = 2048

    /// Starts the walk over the file again, from the start of `policy`'s order.
    mutating func reset(for policy: EvictionPolicy) {
        heap.removeAll()
        page = []
        pageIndex = 0
        position = nil
        fileDone = false
        fileChanged = false
        awaitingBatch = false
        requeueFloor = nil
        requeuesLanded = false
        pausedAt = nil
        switch policy {
        case .fifo, .noeviction: phase = .age
        case .lru: phase = .recency
        case .volatileTTL: phase = .expiry
        }
    }

    mutating func note(_ slot: KeySlot, _ digest: KeyDigest, policy: EvictionPolicy, fromWalk: Bool = false) {
        heap.push(Pending(order: EvictionOrderKey(policy, storageDate: slot.storageDate, seq: slot.seq,
                                                  expiresAt: slot.expiresAt),
                          digest: digest, seq: slot.seq, fromWalk: fromWalk))
        if fromWalk { walkNoted += 1 }
    }

    mutating func rebuild(_ slots: [KeySlot], policy: EvictionPolicy) {
        heap.removeAll()
        walkNoted = 0
        for slot in slots where slot.hasRow { note(slot, slot.digest(), policy: policy) }
    }

    /// Whether the heap holds many entries no longer current: more than
    /// twice what it needs.
    func needsCompacting(unapplied: Int) -> Bool { heap.count > 2 * (unapplied + walkNoted) + 1024 }

    /// Drops the heap's entries no longer current: the walk's that `isCurrent`
    /// keeps stay, the rest are noted again from the unapplied `slots`.
    mutating func compact(_ slots: [KeySlot], policy: EvictionPolicy, isCurrent: (Pending) -> Bool) {
        let kept = heap.elements.filter { $0.fromWalk && isCurrent($0) }
        rebuild(slots, policy: policy)
        for entry in kept { heap.push(entry) }
        walkNoted = kept.count
    }
}

/// Eviction by policy, to stay within capacity.
extension CacheEngine {
    struct Victim {
        var digest: KeyDigest
        var key: [UInt8]
        var size: Int
        var expiresAt: Int64?
    }

    /// Evicts, one entry at a time in the policy's order, until within
    /// capacity or `limit` entries went.
    /// - Returns: true when the cache is within capacity.
    func evictToCapacity(limit: Int) throws(SQLiteKVCache.Error) -> Bool {
        guard capacity > 0 else { return true }
        if table.assumedNewCount > 0 && totals.bytes > capacity { try resolveTotals() }  // after a replay: exact first
        var evicted = 0
        while totals.bytes > capacity && evicted < limit {
            guard let victim = try nextVictim() else { break }
            totals.apply(size: victim.size, expiresAt: victim.expiresAt, sign: -1)
            table.write(victim.digest, key: victim.key, row: nil)
            evictedCount += 1
            evicted += 1
            onEvent?(.evicted(key: victim.key))
        }
        compactEvictionHeapIfNeeded()
        return totals.bytes <= capacity
    }

    /// Drops the eviction heap's stale entries once they outnumber the rest.
    func compactEvictionHeapIfNeeded() {
        guard eviction.needsCompacting(unapplied: table.unappliedCount) else { return }
        eviction.compact(table.allUnapplied, policy: policy) { entry in
            guard let slot = table.slot(entry.digest) else { return false }
            return slot.hasRow && slot.seq == entry.seq && !slot.isUnapplied
        }
    }

    /// Evicts up to `limit` entries toward capacity (after a capacity cut).
    /// - Returns: true when the cache is within capacity.
    public func evict(limit: Int) throws(SQLiteKVCache.Error) -> Bool {
        try evictToCapacity(limit: limit)
    }

    /// The next entry to evict, taken from whichever of the two walks has
    /// the earlier one; nil when there is none, when the file walk's step
    /// ran out of skips before a row the heap's earliest may come after, or
    /// while rows the walk asked to move wait for their batch.
    private func nextVictim() throws(SQLiteKVCache.Error) -> Victim? {
        if eviction.awaitingBatch {
            guard eviction.requeuesLanded else { return nil }
            restartWalk()  // the moved rows are where they belong now
        }
        let fromFile = try nextFileCandidate()
        let fromMemory = nextMemoryCandidate()
        let order: EvictionOrderKey
        let takeFile: Bool
        if let fromFile, fromMemory == nil || fromFile.order < fromMemory!.order {
            (order, takeFile) = (fromFile.order, true)
        } else if let fromMemory {
            // Rows the walk has not reached may be earlier than anything past its pause.
            if let paused = eviction.pausedAt, paused < fromMemory.order { return nil }
            (order, takeFile) = (fromMemory.order, false)
        } else {
            return nil
        }
        if let floor = eviction.requeueFloor, floor < order {
            // A row asked to move is earlier: it goes first, once its batch lands.
            eviction.awaitingBatch = true
            return nil
        }
        if takeFile {
            eviction.pageIndex += 1
            return fromFile!.victim
        }
        eviction.heap.pop()
        return fromMemory!.victim
    }

    /// Walks the file again from the start, keeping the heap.
    private func restartWalk() {
        let heap = eviction.heap, noted = eviction.walkNoted
        eviction.reset(for: policy)
        eviction.heap = heap
        eviction.walkNoted = noted
    }

    /// The batch carrying the walk's requests to move rows has completed.
    func requeueBatchCompleted() { eviction.requeuesLanded = true }

    /// Asks the next batch to move a row of the file to its place in age
    /// order (its last write's), and holds back every victim after that
    /// place until the batch completes; the walk then starts over and
    /// meets the row where it belongs. Overwrites leave a row's place in
    /// the age index behind (`CacheBatch.keepsAgeOrder`): eviction puts it
    /// right when it gets there, once, rather than every overwrite moving it.
    private func requeue(_ digest: KeyDigest, storageDate: Double, seq: Int64) {
        let order = placeInWalk(storageDate: storageDate, seq: seq, expiresAt: nil)
        if eviction.requeueFloor.map({ order < $0 }) ?? true { eviction.requeueFloor = order }
        guard pendingRequeues.count < Self.requeueLimit else { return }  // the walk's next pass finds the rest
        pendingRequeues.append(EvictionRequeue(digest: digest, storageDate: storageDate, seq: seq))
    }

    /// The most rows one batch moves in age order (40 bytes each until the seal).
    static let requeueLimit = 1 << 18

    /// Eviction waits for the batch that moves rows it passed to their place
    /// in age order (the next victim would come after one of them):
    /// calling again before that batch completes finds nothing.
    public var evictionAwaitsBatch: Bool { eviction.awaitingBatch && !eviction.requeuesLanded }

    /// Eviction stopped for rows being moved in age order: once their
    /// batch has completed, evicting again goes on.
    var evictionResumesAfterBatch: Bool { eviction.awaitingBatch }

    /// Where a row the file walk lists stands in the policy's order.
    private func placeInWalk(_ row: CacheFile.ListedRow) -> EvictionOrderKey {
        placeInWalk(storageDate: row.storageDate, seq: row.seq, expiresAt: row.expiresAt)
    }

    private func placeInWalk(storageDate: Double, seq: Int64, expiresAt: Int64?) -> EvictionOrderKey {
        switch eviction.phase {
        case .age: EvictionOrderKey(rank: policy == .volatileTTL ? 1 : 0, primary: storageDate, seq: seq)
        case .recency: EvictionOrderKey(rank: 0, primary: 0, seq: seq)
        case .expiry: EvictionOrderKey(rank: 0, primary: Double(expiresAt ?? .max), seq: seq)
        }
    }

    private func nextMemoryCandidate() -> (order: EvictionOrderKey, victim: Victim)? {
        while let top = eviction.heap.top {
            if let slot = table.slot(top.digest), slot.hasRow, slot.seq == top.seq {
                return (top.order, Victim(digest: top.digest, key: slot.key, size: slot.contentSize, expiresAt: slot.expiresAt))
            }
            eviction.heap.pop()
        }
        return nil
    }

    private func nextFileCandidate() throws(SQLiteKVCache.Error) -> (order: EvictionOrderKey, victim: Victim)? {
        guard !fileVoid else { return nil }
        eviction.pausedAt = nil
        var skipped = 0
        /// Ends the step, the budget spent: the next row (the page's, or the
        /// position reached) is where the walk resumes.
        func pause() -> (order: EvictionOrderKey, victim: Victim)? {
            let next = eviction.pageIndex < eviction.page.count ? eviction.page[eviction.pageIndex] : eviction.page.last
            eviction.pausedAt = next.map(placeInWalk)
            return nil
        }
        while true {
            if eviction.pageIndex >= eviction.page.count {
                guard !eviction.fileDone else { return nil }
                let rows = try file.evictionCandidates(eviction.phase, after: eviction.position, limit: 64)
                guard let last = rows.last else {
                    if policy == .volatileTTL && eviction.phase == .expiry {
                        eviction.phase = .age
                        eviction.position = nil
                        continue
                    }
                    if eviction.requeueFloor != nil {
                        // Rows it passed are being moved to where they belong: met on the next pass.
                        eviction.awaitingBatch = true
                        return nil
                    }
                    if eviction.fileChanged {
                        // Rows applied behind the walk: once more from the start.
                        restartWalk()
                        continue
                    }
                    eviction.fileDone = true
                    return nil
                }
                eviction.page = rows
                eviction.pageIndex = 0
                switch eviction.phase {
                case .age: eviction.position = .age(last.storageDate, last.seq)
                case .recency: eviction.position = .recency(last.seq)
                case .expiry: eviction.position = .expiry(last.expiresAt ?? .max, last.digest)
                }
            }
            let row = eviction.page[eviction.pageIndex]
            let order = placeInWalk(row)
            if let slot = table.slot(row.digest) {
                // The table knows a state of this key: the row is the current
                // one only if it has the same write order.
                guard slot.hasRow, slot.seq == row.seq else {
                    // A state the file holds, written after the row's place in
                    // age order: it waits in the heap at its write's place (or,
                    // past the heap's share, the row moves there in the file).
                    if slot.hasRow, !slot.isUnapplied, eviction.phase != .expiry {
                        if eviction.walkNoted < EvictionWalk.walkNotedLimit {
                            eviction.note(slot, row.digest, policy: policy, fromWalk: true)
                        } else {
                            requeue(row.digest, storageDate: slot.storageDate, seq: slot.seq)
                        }
                    }
                    eviction.pageIndex += 1
                    skipped += 1
                    if skipped >= EvictionWalk.skipBudget { return pause() }  // go on in the next step
                    continue
                }
                return (order, Victim(digest: row.digest, key: slot.key, size: slot.contentSize, expiresAt: slot.expiresAt))
            }
            guard row.size < 0 else {
                return (order, Victim(digest: row.digest, key: row.key, size: row.size, expiresAt: row.expiresAt))
            }
            // Listed from an index alone: the rest from the table, if the file still holds it.
            guard let details = try file.evictionDetails(row.digest) else {
                eviction.pageIndex += 1
                skipped += 1
                if skipped >= EvictionWalk.skipBudget { return pause() }
                continue
            }
            if let written = details.written, written.seq != row.seq {
                // Overwritten since it took this place: not the oldest.
                requeue(row.digest, storageDate: written.date, seq: written.seq)
                eviction.pageIndex += 1
                skipped += 1
                if skipped >= EvictionWalk.skipBudget { return pause() }
                continue
            }
            // Kept in the page: the walk may offer this row again (when memory's candidate goes first).
            eviction.page[eviction.pageIndex].key = details.key
            eviction.page[eviction.pageIndex].size = details.size
            eviction.page[eviction.pageIndex].expiresAt = details.expiresAt
            return (order, Victim(digest: row.digest, key: details.key, size: details.size, expiresAt: details.expiresAt))
        }
    }
}

extension EvictionWalk.Pending: HeapElement {
    static func precedes(_ a: Self, _ b: Self) -> Bool { a.order < b.order }
}
