import Foundation

/// How reads and writes stamp a key, as Redis's objects carry an LRU clock
/// or an LFU counter (evict.c): the last access, and a logarithmic counter
/// of accesses that decays with idleness. The owner shares one between its
/// engines and sets the LFU factors (Redis's `lfu-log-factor`,
/// `lfu-decay-time`). Used by an owner's server-wide eviction (Redis's
/// maxmemory policies) and by OBJECT IDLETIME/FREQ; a cache's own
/// capacity eviction keeps its policy's order.
public final class AccessTracking: @unchecked Sendable {
    /// Redis's LFU_INIT_VAL: a new key's counter, so it is not evicted at once.
    public static let initialFrequency: UInt8 = 5
    public var lfuLogFactor = 10
    public var lfuDecayTime = 1
    /// While set (Redis's CLIENT PAUSE), an expired key reads as absent but
    /// is not deleted by a read: Redis's expireIfNeeded during a pause.
    public var expiryHeld = false
    /// While set (a replica applying its master's stream), no key reads as
    /// expired: the master decides, with the DEL it sends (Redis's
    /// expireIfNeeded for the master client).
    public var expiryIgnored = false
    /// The LFU counter's coin (xorshift64*): a draw per read must not cost a
    /// `getrandom(2)`, as `SystemRandomNumberGenerator` does.
    private var coin = FastRandom(seed: UInt64.random(in: 1...UInt64.max))

    public init() {}

    /// The LRU clock: what a key keeps of its last access, 32 bits of
    /// 16 ms units (`clockShift`), wrapping every 795 days. Redis's is 24
    /// bits of seconds (LRU_CLOCK_MAX, 194 days); a finer one keeps apart
    /// the keys read and the keys written within one second.
    static let clockShift: Int64 = 4

    /// The LRU clock at `now` (milliseconds since 1970), never 0 (a slot's
    /// "never stamped").
    @inline(__always)
    static func clock(_ now: Int64) -> UInt32 {
        let clock = UInt32(truncatingIfNeeded: now >> clockShift)
        return clock == 0 ? 1 : clock
    }

    /// Milliseconds from LRU clock `clock` to `now` (as Redis's
    /// estimateObjectIdleTime), over the clock's wrap up to half its span
    /// (397 days); a stamp after `now` (the wall clock stepped back, or a
    /// replayed record's time) is 0.
    static func idleMilliseconds(since clock: UInt32, now: Int64) -> Int64 {
        max(0, Int64(Int32(bitPattern: Self.clock(now) &- clock))) << clockShift
    }

    /// The counter after the decay for the minutes since it last decayed
    /// (Redis's LFUDecrAndReturn).
    func decayed(_ slot: KeySlot, nowMinutes: UInt16) -> UInt8 {
        // Minutes modulo 2^16, as Redis's LFU clock (LFUTimeElapsed).
        let elapsed = Int(nowMinutes &- slot.frequencyMinutes)
        guard lfuDecayTime > 0, elapsed > 0 else { return slot.frequency }
        let periods = elapsed / lfuDecayTime
        return periods >= Int(slot.frequency) ? 0 : slot.frequency - UInt8(periods)
    }

    /// A read or write of the key: its access time, and its counter decayed
    /// then incremented with probability 1 / ((counter - 5) * factor + 1)
    /// (Redis's updateLFU and LFULogIncr).
    func touch(_ slot: KeySlot, now: Int64) {
        let minutes = self.minutes(now)
        var counter = decayed(slot, nowMinutes: minutes)
        if counter < 255 {
            let base = max(0, Int(counter) - Int(Self.initialFrequency))
            // p = 1 / (base * factor + 1): certain while base is 0 (no draw).
            if base == 0 || coin.unitInterval() < 1.0 / (Double(base) * Double(lfuLogFactor) + 1) { counter += 1 }
        }
        slot.frequency = counter
        slot.frequencyMinutes = minutes
        slot.lruClock = Self.clock(now)
    }

    /// A write: a new key starts its counter at 5; an overwritten one keeps it.
    func stampWrite(_ slot: KeySlot, new: Bool, now: Int64) {
        if new {
            slot.frequency = Self.initialFrequency
            slot.frequencyMinutes = minutes(now)
        }
        slot.lruClock = Self.clock(now)
    }

    /// The latest minute the LFU clock has shown (minutes since 1970).
    private var latestMinute: Int64 = 0

    /// The LFU clock at `now` (milliseconds since 1970): minutes, modulo
    /// 2^16, and never behind a minute it already showed. A replayed
    /// command runs at its record's time, in the past: a clock stepping
    /// back a minute would read as 2^16 minutes elapsed and decay a
    /// counter to 0.
    func minutes(_ now: Int64) -> UInt16 {
        latestMinute = max(latestMinute, now / 60_000)
        return UInt16(truncatingIfNeeded: latestMinute)
    }
}

/// What the engine knows of a key's use, for OBJECT IDLETIME/FREQ and eviction.
public struct AccessInfo: Sendable {
    /// Milliseconds since the last access (or, for a key memory does not
    /// hold, since its last write).
    public var idleMilliseconds: Int64
    /// The LFU counter, decayed to now.
    public var frequency: UInt8
}

/// A key offered to server-wide eviction, with what each policy ranks by.
public struct EvictionSample: Sendable {
    public var key: [UInt8]
    public var idleMilliseconds: Int64
    public var frequency: UInt8
    public var expiresAt: Int64?
    /// Write time (seconds since 1970), then write order: the fifo order.
    public var storageDate: Double
    public var seq: Int64
}

extension CacheEngine {
    /// How `key` has been used, without counting as a use; nil when absent or expired.
    public func accessInfo(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> AccessInfo? {
        let digest = hasher.digest(key)
        let now = nowMilliseconds()
        if let slot = table.slot(digest) {
            guard slot.hasRow, !slot.isExpired(at: now) else { return nil }
            return info(slot, now: now)
        }
        guard fileMayHold(digest), let row = try file.row(digest), !row.isExpired(at: now) else { return nil }
        return AccessInfo(idleMilliseconds: max(0, now - Int64(row.storageDate * 1000)),
                          frequency: AccessTracking.initialFrequency)
    }

    private func info(_ slot: KeySlot, now: Int64) -> AccessInfo {
        let idle = slot.lruClock > 0 ? AccessTracking.idleMilliseconds(since: slot.lruClock, now: now)
                                      : max(0, now - Int64(slot.storageDate * 1000))
        return AccessInfo(idleMilliseconds: idle,
                          frequency: access.decayed(slot, nowMinutes: access.minutes(now)))
    }

    /// Sets how `key` was used (RESTORE … IDLETIME / FREQ): its idleness in
    /// seconds, or its LFU counter. Brings the key into memory to hold it.
    /// - Returns: whether the key is live.
    @discardableResult
    public func setAccess(_ key: [UInt8], idleSeconds: Int64?, frequency: UInt8?) throws(SQLiteKVCache.Error) -> Bool {
        let digest = hasher.digest(key)
        var slot = table.slot(digest)
        if slot == nil {
            guard let row = try current(digest, key: key, counted: false).row else { return false }
            slot = table.slot(digest) ?? table.write(digest, key: key, row: row)
        }
        guard let slot, slot.hasRow else { return false }
        let now = nowMilliseconds()
        if let idleSeconds {
            // At most what the clock tells (Redis's wraps too), rounded up
            // so OBJECT IDLETIME reads back what was set.
            let span = (Int64(Int32.max) << AccessTracking.clockShift) / 1000
            let units = UInt32(clamping: (min(max(0, idleSeconds), span) * 1000 + 15) >> AccessTracking.clockShift)
            let clock = AccessTracking.clock(now) &- units
            slot.lruClock = clock == 0 ? UInt32.max : clock
        }
        if let frequency {
            slot.frequency = frequency
            slot.frequencyMinutes = access.minutes(now)
        }
        return true
    }

    /// Up to `count` live keys picked at random (with an expiry only, when
    /// `volatileOnly`), from memory and from the file in proportion to what
    /// each holds, with what eviction ranks them by. Repeats are possible.
    public func evictionSamples(count: Int, volatileOnly: Bool) throws(SQLiteKVCache.Error) -> [EvictionSample] {
        guard totals.count > 0, count > 0, !volatileOnly || totals.volatile > 0 else { return [] }
        let now = nowMilliseconds()
        var samples: [EvictionSample] = []
        // Keys offered: those memory holds by slot (a slot keeps no whole
        // digest), the file's others by digest.
        var seen = Set<KeyDigest>()
        var seenSlots = Set<ObjectIdentifier>()
        func offer(_ slot: KeySlot) {
            guard slot.hasRow, !slot.isExpired(at: now), !volatileOnly || slot.expiresAt != nil,
                  seenSlots.insert(ObjectIdentifier(slot)).inserted else { return }
            let use = info(slot, now: now)
            samples.append(EvictionSample(key: slot.key, idleMilliseconds: use.idleMilliseconds, frequency: use.frequency,
                                          expiresAt: slot.expiresAt, storageDate: slot.storageDate, seq: slot.seq))
        }
        let inMemory = table.count
        var attempts = 0
        while samples.count < count && attempts < count * 4 {
            attempts += 1
            let fromMemory = fileVoid || table.draw(max(1, totals.count)) < inMemory
            if fromMemory {
                guard let slot = table.randomSlot() else { continue }
                if !slot.hasRow && !slot.isUnapplied {
                    // A remembered miss (a delete the file has): dropped as
                    // met, or after a burst of evictions most picks would
                    // find the keys already evicted.
                    table.forget(slot)
                    continue
                }
                offer(slot)
                continue
            }
            guard let row = try file.row(atOrAfter: KeyDigest(w0: table.random.next())) else { continue }
            if let slot = table.slot(row.digest) {
                offer(slot)
                continue
            }
            guard !(row.expiresAt.map { $0 <= now } ?? false), !volatileOnly || row.expiresAt != nil,
                  seen.insert(row.digest).inserted else { continue }
            samples.append(EvictionSample(key: row.key, idleMilliseconds: max(0, now - Int64(row.storageDate * 1000)),
                                          frequency: AccessTracking.initialFrequency, expiresAt: row.expiresAt,
                                          storageDate: row.storageDate, seq: row.seq))
        }
        if volatileOnly && samples.isEmpty && !fileVoid {
            // Few keys expire: the file's soonest to expire stand in (as
            // memory holds them, when it does).
            for row in try file.evictionCandidates(.expiry, after: nil, limit: count) {
                if let slot = table.slot(row.digest) {
                    offer(slot)
                    continue
                }
                samples.append(EvictionSample(key: row.key, idleMilliseconds: max(0, now - Int64(row.storageDate * 1000)),
                                              frequency: AccessTracking.initialFrequency, expiresAt: row.expiresAt,
                                              storageDate: row.storageDate, seq: row.seq))
            }
        }
        if samples.isEmpty {
            // The keys with an expiry may all be in memory only (written
            // since the last seal), or random picks in memory may all have
            // found deletes the writer has not applied yet (after a burst
            // of evictions most slots are): look through memory for live
            // keys, so a write is never refused while keys remain.
            table.visitSlots(limit: 1 << 16) { slot in
                offer(slot)
                return samples.count < count
            }
        }
        return samples
    }

    /// Evicts `key` for the owner's server-wide limit (counted as evicted,
    /// reported as `.evicted`).
    /// - Returns: the content bytes freed (0 when the key was not live).
    @discardableResult
    public func evictKey(_ key: [UInt8]) throws(SQLiteKVCache.Error) -> Int {
        let digest = hasher.digest(key)
        guard let old = try oldState(digest) else { return 0 }
        if let expiresAt = old.expiresAt, expiresAt <= nowMilliseconds() {
            expire(digest, key: key, size: old.size, expiresAt: expiresAt)
            return old.size
        }
        totals.apply(size: old.size, expiresAt: old.expiresAt, sign: -1)
        table.write(digest, key: key, row: nil)
        evictedCount += 1
        onEvent?(.evicted(key: key))
        return old.size
    }
}
