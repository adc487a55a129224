import Foundation
import SQLiteKVCache

/// `rejoin-policy expire`: after a restart, every entry written before it
/// expires at the latest `rejoin-window` seconds later, so a node that a
/// proxy ejected and took back serves what changed elsewhere meanwhile for
/// a bounded time, while still answering its hot keys at once
/// (docs/cluster.md). Each key's deadline is spread over the window by a
/// hash of the key, so refills trickle instead of falling on one second.
///
/// The pass runs once the log is replayed, in bounded steps between the
/// loop's iterations, and clients get `-LOADING` until it ends (a TTL read
/// before a key is capped would promise too much). It caps each entry whose
/// storage date is before the start: an expiry already sooner stays, and a
/// deadline already past (a second restart after the window) deletes the
/// key. The caps are ordinary expiries, logged as PEXPIREAT: a write after
/// the restart (SET, LPUSH …) replaces the entry and lifts its cap, and so
/// does a TTL a client sets (EXPIRE, PERSIST), which this server cannot tell
/// from a doubt about the value. A restart during the pass starts it again;
/// a cap already set stays, so a second restart does not extend the first
/// deadline.
final class RejoinPass {
    let startedAt: Int64
    let windowMilliseconds: Int64
    /// Caches still to cap (every cache known once the log is replayed:
    /// the replay may create some), and the one in progress with its cursor.
    var remaining: [String]?
    var current: (name: String, cursor: UInt64)?
    var capped = 0
    var deleted = 0
    let began = Server.monotonicMicroseconds()

    init(startedAt: Int64, window: Int) {
        self.startedAt = startedAt
        self.windowMilliseconds = Int64(window) * 1000
    }

    /// The latest a key of before the restart may live: the start plus its
    /// share of the window (FNV-1a of the key, mixed by MurmurHash3's
    /// finalizer so similar keys spread, as a fraction of 2^64).
    func deadline(_ key: [UInt8]) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash = hash &* 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return startedAt + Int64(Double(hash) / 18_446_744_073_709_551_616.0 * Double(windowMilliseconds))
    }
}

extension Server {
    /// Caps up to `budget` keys; ends the pass when every cache is done.
    func rejoinStep(budget: Int) {
        guard let pass = rejoin else { return }
        var left = budget
        if pass.remaining == nil { pass.remaining = registry.known.sorted() }
        while left > 0 {
            if pass.current == nil {
                guard let next = pass.remaining?.first else {
                    rejoin = nil
                    let ms = (Self.monotonicMicroseconds() - pass.began) / 1000
                    logger.notice("rejoin-policy expire: capped \(pass.capped) keys from before the restart "
                        + "(\(pass.deleted) already past their deadline) in \(ms) ms; serving")
                    rejoinFinished = (pass.capped, pass.deleted)
                    return
                }
                pass.remaining?.removeFirst()
                pass.current = (next, 0)
            }
            let (name, cursor) = pass.current!
            do {
                let keyspace = Keyspace(server: self, cache: try registry.cache(named: name))
                let (keys, next) = try keyspace.scan(cursor: cursor, count: min(left, 256), kind: nil)
                let now = Self.nowMilliseconds()
                for key in keys {
                    guard let entry = try keyspace.peek(key),
                          Int64(entry.storageDate.timeIntervalSince1970 * 1000) < pass.startedAt else { continue }
                    let deadline = pass.deadline(key)
                    if let expiresAt = entry.expiresAt, expiresAt <= deadline { continue }
                    if deadline <= now {
                        try keyspace.delete(key)
                        pass.deleted += 1
                    } else {
                        try keyspace.setExpiry(key, deadline)
                        pass.capped += 1
                    }
                }
                persistence.internalChangesFinished()
                left -= max(keys.count, 1)
                pass.current = next == 0 ? nil : (name, next)
            } catch {
                // A cache that cannot be read keeps nothing to cap; say so and go on.
                logger.warning("rejoin-policy expire: cache '\(name)' skipped: \(error)")
                pass.current = nil
            }
        }
    }
}
