#if canImport(Glibc)
import Glibc
#endif
import CLinux
import RESP
import SQLiteKVCache

/// Work the loop does beside requests (Redis's serverCron, activeExpireCycle
/// and evict.c): a time-bounded expiry sweep and bounded eviction every
/// iteration, and every 100 ms the cron (timeouts, output limits, TLS
/// handshake deadlines, ops samples).
extension Server {
    /// Removes a bounded batch of expired entries from each open cache, so a
    /// mass expiry never stalls the loop; more left means poll again at once.
    func sweepExpired() {
        // A replica expires nothing by itself: its master's DELs do (Redis's activeExpireCycle runs on masters).
        guard activeExpire, pauseType == .off, replicaLink == nil else { return }
        // The seal's parts first (each loop iteration takes one): the sweep goes on once they have caught up.
        guard !persistence.sealBacklogged else {
            backgroundWorkPending = true
            return
        }
        defer { serveKeysReadiedInTheBackground() }
        let started = Self.monotonicMicroseconds()
        // The sweep's time is LATENCY's expire-cycle, as Redis's activeExpireCycle.
        defer { latency.addIfNeeded("expire-cycle", milliseconds: (Self.monotonicMicroseconds() - started) / 1000) }
        let deadline = started + Self.sweepBudgetMicroseconds
        for cache in registry.open.values where cache.openError == nil {
            do {
                let keyspace = Keyspace(server: self, cache: cache)
                guard try keyspace.expiryDue() else { continue }
                // Small steps until the iteration's budget is spent: a mass
                // expiry spreads over iterations, between which clients are served.
                while true {
                    let removed = try keyspace.removeExpired(limit: Self.sweepBatch)
                    // Fewer: none left due, or a step passed over many keys not due.
                    guard try removed == Self.sweepBatch || keyspace.expiryDue() else { break }
                    if Self.monotonicMicroseconds() >= deadline {
                        backgroundWorkPending = true
                        return
                    }
                }
            } catch {
                logger.warning("Expiring keys in cache '\(cache.name)' failed: \(error)")
            }
        }
    }

    /// Serves the clients blocked on keys the sweep or background eviction
    /// removed (an XREADGROUP on a stream that expired gets its error), as
    /// a command's end does for the keys it readied.
    func serveKeysReadiedInTheBackground() {
        guard commandDepth == 0, !readyKeys.isEmpty, !persistence.replaying else { return }
        serveReadyKeys()
        if replicationFeeding { flushPropagation() }
    }

    /// Evicts a bounded batch from each cache over its capacity (after a
    /// capacity cut, a swap, or a file opened with a smaller capacity).
    func continueEviction() {
        guard !persistence.loading else { return }  // the totals are exact once the replay's writes are applied
        var started: Int?
        // The steps' time is LATENCY's eviction-cycle, as Redis's performEvictions.
        defer {
            serveKeysReadiedInTheBackground()
            if let started {
                latency.addIfNeeded("eviction-cycle", milliseconds: (Self.monotonicMicroseconds() - started) / 1000)
            }
        }
        for cache in registry.open.values where cache.needsEviction || (cache.engine?.overCapacity ?? false) {
            if started == nil { started = Self.monotonicMicroseconds() }
            do {
                cache.needsEviction = !(try Keyspace(server: self, cache: cache).evict(limit: Self.evictionBatch))
            } catch {
                logger.warning("Evicting from cache '\(cache.name)' failed: \(error)")
                cache.needsEviction = false
            }
            guard cache.needsEviction else { continue }
            if cache.engine?.evictionAwaitsBatch ?? false {
                // Waiting for the writer to move rows in age order: sealed now, not at the
                // next interval; the batch's end wakes the loop.
                if (cache.engine?.changedCount ?? 0) > 0 { persistence.requestSeal() }
            } else {
                backgroundWorkPending = true
            }
        }
    }

    func cron(now: Int64) {
        if shutdownDeadline != 0 { continueShutdown(now: now) }
        if !replicaWrittenKeys.isEmpty && pauseType == .off { expireReplicaWrittenKeys() }
        resumeListenersIfDue(now: now)
        // The memory tier's clocks go on where writes and reads left them
        // over the budget (each takes bounded steps), or after it was lowered.
        registry.memoryBudget.enforce()
        trimHeapIfShrunk(now: now)
        if config.maxMemory > 0 { refreshClientBufferBytes() }
        // The tracking table's bound, even when idle after a CONFIG SET (as Redis's serverCron).
        if !tracking.table.isEmpty { trackingLimitKeys() }
        if replicationFeeding { replicationCron(now: now) }
        if replicaLink != nil { replicaCron(now: now) }
        opsSamples.append((now, stats.totalCommandsProcessed))
        if opsSamples.count > 16 { opsSamples.removeFirst(opsSamples.count - 16) }
        for connection in connections.compactMap({ $0 }) {
            if let tls = connection.tls, !tls.handshakeDone, now - connection.createdAt > Self.handshakeTimeout {
                logger.verbose("Closing \(connection.peer): TLS handshake not done in time")
                close(connection)
            }
        }
        for connection in connections.compactMap({ $0 }) where connection.pendingOutput > 0 {
            overOutputLimit(connection, now: now)
        }
        if config.timeout > 0 {
            let limit = Int64(config.timeout) * 1000
            // Replicas and the master's link are not idle clients (Redis
            // skips CLIENT_SLAVE and CLIENT_MASTER).
            for connection in connections.compactMap({ $0 })
            where now - connection.lastInteraction > limit && !connection.isReplica && !connection.isMaster {
                logger.verbose("Closing idle client \(connection.peer)")
                close(connection)
            }
        }
    }
}

extension Server {
    /// Memory the key tables must have given up before the heap is trimmed.
    static let heapTrimAfterFreeing = 64 << 20
    /// The least time between two trims (milliseconds).
    static let heapTrimInterval: Int64 = 10_000

    /// Gives free heap pages back to the system (glibc's `malloc_trim`, as
    /// `MEMORY PURGE`) once what the key tables hold (the memory tier and
    /// the memtable), or the memtable alone once drained, has fallen by
    /// `heapTrimAfterFreeing` since its high mark, at most every
    /// `heapTrimInterval`. glibc keeps what is freed in its arenas: after
    /// a lowered memory-tier-size RssAnon stayed at its peak, and after a
    /// drained memtable the heap kept the holes of the batches it had
    /// applied (glibc's mmap threshold rises to the size of each mapped
    /// block freed, so later batches came from the heap): a fill of 1M
    /// keys of 100 B left RssAnon at 532 MiB, 456 once trimmed (Redis's
    /// jemalloc purges in the background). A trim walks the heap: 8 ms
    /// for that one, on the loop, rarely. (A fixed mmap threshold of
    /// 1 MiB kept the holes away too, but SET of 1.5 MB values then ran
    /// at a third of the speed: every such buffer was mapped afresh.)
    func trimHeapIfShrunk(now: Int64) {
        // Without the copies batches hold in flight: one let go at a
        // batch's completion is not memory given up (a trim then, mid-load,
        // held off the one after the memtable drained by the interval: 1M
        // keys left RssAnon at 433 MiB, not 363).
        let budget = registry.memoryBudget
        let used = budget.used - budget.sealedBytes, unapplied = budget.unappliedBytes
        if used > heapHighWater {
            heapHighWater = used
            heapTrimFollowUp = false
        }
        if unapplied > memtableHighWater { memtableHighWater = unapplied }
        // The memtable counts once drained (to an eighth of its mark), not
        // at each batch of a sustained load.
        let drained = unapplied * 8 <= memtableHighWater ? memtableHighWater - unapplied : 0
        let freed = max(heapHighWater - used, drained)
        guard now - lastHeapTrim >= Self.heapTrimInterval else { return }
        // One more trim an interval after one, unless the tables grew since:
        // what goes after the memtable drains (the last batches' copies,
        // the idle writer's page cache) is not counted in the tables, and
        // stayed in the heap (1M keys: 293 MiB, 272 once trimmed again).
        let followUp = heapTrimFollowUp
        heapTrimFollowUp = false
        guard freed >= Self.heapTrimAfterFreeing || followUp else { return }
        heapTrimFollowUp = !followUp || freed >= Self.heapTrimAfterFreeing
        let started = Self.monotonicMicroseconds()
        malloc_trim(0)
        latency.addIfNeeded("heap-trim", milliseconds: (Self.monotonicMicroseconds() - started) / 1000)
        lastHeapTrim = now
        heapHighWater = used
        memtableHighWater = unapplied
    }
}
