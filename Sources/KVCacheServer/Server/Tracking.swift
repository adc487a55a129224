import RESP

/// One client's CLIENT TRACKING state (Redis's CLIENT_TRACKING_* flags,
/// `client_tracking_redirection` and `client_tracking_prefixes`).
final class ClientTracking {
    /// The REDIRECT client's id (0: none), and that client while it lives.
    var redirect: Int64 = 0
    weak var redirectTarget: Connection?
    var bcast = false
    var optin = false
    var optout = false
    var noloop = false
    /// CLIENT CACHING yes (OPTIN) or no (OPTOUT) for the next command.
    var caching = false
    var brokenRedirect = false
    /// BCAST prefixes, in the order given.
    var prefixes: [[UInt8]] = []
}

/// A key as the tracking table knows it: scoped by its cache, so a
/// write in one cache never invalidates (nor names) another cache's key.
struct TrackedKey: Hashable {
    let cache: ObjectIdentifier
    let key: [UInt8]
}

/// The server's side of client-side caching (Redis's tracking.c): which
/// clients read which keys (default mode), which prefixes BCAST clients
/// follow, and the invalidations owed to the running client.
final class Tracking {
    /// Keys read by tracking clients, with those clients.
    var table: [TrackedKey: [ObjectIdentifier: Connection]] = [:]
    var totalItems = 0
    /// Clients with tracking on.
    var clients: [ObjectIdentifier: Connection] = [:]
    /// BCAST prefixes: the clients following each.
    var prefixes: [[UInt8]: [Connection]] = [:]
    /// Keys changed this iteration, for BCAST clients: (cache, key, changed by).
    var broadcastKeys: [(cache: OpenCache, key: [UInt8], by: Connection?)] = []
    /// Invalidations for the running client, sent after its reply (nil: a flush).
    var pending: [[UInt8]?] = []
    /// Nesting of commands (EXEC runs its commands inside its own).
    var depth = 0
    /// The client running the outermost command.
    weak var current: Connection?
    /// Clients already sent a flush's null in this command (FLUSHALL flushes every cache).
    var nullSent: Set<ObjectIdentifier> = []
}

extension Server {
    var trackingActive: Bool { !tracking.clients.isEmpty }

    /// CLIENT TRACKING ON with parsed options (checked by the caller).
    func enableTracking(_ c: Connection, redirect: Int64, redirectTarget: Connection?, bcast: Bool, optin: Bool,
                        optout: Bool, noloop: Bool, prefixes: [[UInt8]]) {
        let t = c.tracking ?? ClientTracking()
        t.redirect = redirect
        t.redirectTarget = redirectTarget
        t.brokenRedirect = false
        t.optin = optin
        t.optout = optout
        t.noloop = noloop
        if bcast {
            t.bcast = true
            for prefix in prefixes.isEmpty ? [[]] : prefixes where !t.prefixes.contains(prefix) {
                t.prefixes.append(prefix)
                tracking.prefixes[prefix, default: []].append(c)
            }
        }
        c.tracking = t
        tracking.clients[ObjectIdentifier(c)] = c
    }

    /// CLIENT TRACKING OFF, RESET, a closing client.
    func disableTracking(_ c: Connection) {
        guard let t = c.tracking else { return }
        for prefix in t.prefixes {
            tracking.prefixes[prefix]?.removeAll { $0 === c }
            if tracking.prefixes[prefix]?.isEmpty == true { tracking.prefixes[prefix] = nil }
        }
        c.tracking = nil
        tracking.clients[ObjectIdentifier(c)] = nil
    }

    /// After a read-only command of a tracking client (default mode): remembers
    /// the keys it read (Redis's trackingRememberKeys), unless OPTIN without
    /// CACHING yes, or OPTOUT with CACHING no.
    func trackingRememberKeys(_ c: Connection, _ command: Command, _ args: Arguments) {
        guard let t = c.tracking, !t.bcast, !command.flags.contains("pubsub") else { return }
        if (t.optin && !t.caching) || (t.optout && t.caching) { return }
        if command.name == "xread" {
            // Its keys follow STREAMS: Redis's key specs place them.
            var keys: [[UInt8]] = []
            command.aclEntry.keys.forEachKey(args) { index, _ in
                keys.append(args.bytes(index))
                return true
            }
            trackingRemember(c, keys: keys)
            return
        }
        guard command.firstKey > 0 else { return }
        let last = command.lastKey < 0 ? args.count + command.lastKey : command.lastKey
        guard last < args.count else { return }
        let cache = ObjectIdentifier(c.cache)
        var i = command.firstKey
        while i <= last {
            let key = TrackedKey(cache: cache, key: args.bytes(i))
            if tracking.table[key, default: [:]].updateValue(c, forKey: ObjectIdentifier(c)) == nil {
                tracking.totalItems += 1
            }
            i += max(command.step, 1)
        }
        trackingLimitKeys()
    }

    /// Remembers `keys` for a tracking client (a script's declared keys, once
    /// the script ran a read-only command), under the same OPTIN/OPTOUT rules.
    func trackingRemember(_ c: Connection, keys: [[UInt8]]) {
        guard let t = c.tracking, !t.bcast else { return }
        if (t.optin && !t.caching) || (t.optout && t.caching) { return }
        let cache = ObjectIdentifier(c.cache)
        for key in keys where tracking.table[TrackedKey(cache: cache, key: key), default: [:]]
            .updateValue(c, forKey: ObjectIdentifier(c)) == nil {
            tracking.totalItems += 1
        }
        trackingLimitKeys()
    }

    /// Keeps the table within `tracking-table-max-keys`, invalidating the keys it drops.
    func trackingLimitKeys() {
        let max = config.trackingTableMaxKeys
        guard max > 0 else { return }
        while tracking.table.count > max, let victim = tracking.table.first?.key {
            trackingInvalidate(victim, bcast: false)
        }
    }

    /// A key changed (Redis's trackingInvalidateKey): its trackers are told,
    /// and it is remembered for the BCAST clients of a matching prefix.
    /// - Parameter byClient: the running client changed it (not an expiry or eviction).
    func trackingKeyChanged(_ key: [UInt8], in cache: OpenCache, byClient: Bool) {
        if !tracking.prefixes.isEmpty {
            tracking.broadcastKeys.append((cache, key, byClient ? tracking.current : nil))
        }
        trackingInvalidate(TrackedKey(cache: ObjectIdentifier(cache), key: key), bcast: true)
    }

    private func trackingInvalidate(_ key: TrackedKey, bcast: Bool) {
        guard let trackers = tracking.table.removeValue(forKey: key) else { return }
        tracking.totalItems -= trackers.count
        for target in trackers.values {
            guard !target.closed, let t = target.tracking, !t.bcast else { continue }
            if target === tracking.current && tracking.depth > 0 {
                if t.noloop { continue }
                tracking.pending.append(key.key)
            } else {
                sendInvalidation(target, keys: [key.key])
            }
        }
    }

    /// FLUSHDB of `cache` (FLUSHALL: every cache): a null invalidation to
    /// every tracking client that tracks keys there or follows prefixes
    /// with it selected; its keys leave the table.
    func trackingFlushed(_ cache: OpenCache) {
        guard trackingActive || !tracking.table.isEmpty else { return }
        let id = ObjectIdentifier(cache)
        var told: Set<ObjectIdentifier> = []
        for (key, trackers) in tracking.table where key.cache == id {
            tracking.table[key] = nil
            tracking.totalItems -= trackers.count
            for target in trackers.values where target.tracking != nil { told.insert(ObjectIdentifier(target)) }
        }
        for (oid, c) in tracking.clients where c.cache === cache && c.tracking?.bcast == true { told.insert(oid) }
        for oid in told where !tracking.nullSent.contains(oid) {
            guard let c = tracking.clients[oid], !c.closed else { continue }
            tracking.nullSent.insert(oid)
            if c === tracking.current && tracking.depth > 0 {
                tracking.pending.append(nil)
            } else {
                sendInvalidation(c, keys: nil)
            }
        }
    }

    /// Starts a command for tracking: the running client is the one whose
    /// own invalidations wait for its reply.
    func trackingBeginCommand(_ c: Connection) {
        if tracking.depth == 0 {
            tracking.current = c
            tracking.nullSent.removeAll()
        }
        tracking.depth += 1
    }

    /// Ends a command: remembers the keys a read-only command read, clears
    /// CLIENT CACHING after the command it applied to, and after the
    /// outermost command sends the client's own invalidations (after its reply).
    func trackingEndCommand(_ c: Connection, _ command: Command, _ args: Arguments) {
        if let t = c.tracking {
            if command.flags.contains("readonly") { trackingRememberKeys(c, command, args) }
            if t.caching && c.transaction == nil && persistence.transactionDepth == 0 && command.name != "client" {
                t.caching = false
            }
        }
        tracking.depth -= 1
        guard tracking.depth == 0 else { return }
        let pending = tracking.pending
        tracking.pending.removeAll()
        tracking.current = nil
        for keys in pending where !c.closed && c.tracking != nil {
            sendInvalidation(c, keys: keys.map { [$0] })
        }
    }

    /// Sends an invalidation (Redis's sendTrackingMessage): a RESP3 push
    /// `invalidate [keys]` (null keys for a flush) to the client or its
    /// REDIRECT target; a RESP2 target gets it as a message on
    /// `__redis__:invalidate` when subscribed. A REDIRECT target that is
    /// gone marks the redirect broken and tells a RESP3 client.
    func sendInvalidation(_ c: Connection, keys: [[UInt8]]?) {
        guard let t = c.tracking else { return }
        var target = c
        var redirected = false
        if t.redirect != 0 {
            guard let r = t.redirectTarget, !r.closed else {
                t.brokenRedirect = true
                if c.protocolVersion >= 3 {
                    var out: [UInt8] = []
                    PubSubFrame.header(2, version: 3, into: &out)
                    RESPEncoder.bulk("tracking-redir-broken", into: &out)
                    RESPEncoder.integer(t.redirect, into: &out)
                    c.push(out)
                    queueReplies(c)
                }
                return
            }
            target = r
            redirected = true
        }
        var out: [UInt8] = []
        if target.protocolVersion >= 3 {
            PubSubFrame.header(2, version: 3, into: &out)
            RESPEncoder.bulk("invalidate", into: &out)
        } else if redirected && target.subscriptions.active {
            PubSubFrame.header(3, version: 2, into: &out)
            RESPEncoder.bulk("message", into: &out)
            RESPEncoder.bulk("__redis__:invalidate", into: &out)
        } else {
            return
        }
        if let keys {
            RESPEncoder.arrayHeader(keys.count, into: &out)
            for key in keys { RESPEncoder.bulk(key, into: &out) }
        } else {
            // The null of the tracking client's protocol, as Redis sends it.
            RESPEncoder.null(into: &out, version: c.protocolVersion)
        }
        target.push(out)
        queueReplies(target)
    }

    /// Before replies are sent: the keys changed this iteration go to the
    /// BCAST clients following a prefix of theirs (Redis's
    /// trackingBroadcastInvalidationMessages), in the cache each has selected;
    /// NOLOOP clients are not told of their own changes.
    func trackingBroadcast() {
        guard !tracking.broadcastKeys.isEmpty else { return }
        // Each key once, with who changed it last (an expiry after the
        // client's own write is news to a NOLOOP client).
        var order: [TrackedKey] = []
        var last: [TrackedKey: (cache: OpenCache, key: [UInt8], by: Connection?)] = [:]
        for change in tracking.broadcastKeys {
            let id = TrackedKey(cache: ObjectIdentifier(change.cache), key: change.key)
            if last.updateValue(change, forKey: id) == nil { order.append(id) }
        }
        let changed = order.map { last[$0]! }
        tracking.broadcastKeys.removeAll()
        for (prefix, followers) in tracking.prefixes {
            for c in followers where !c.closed {
                var keys: [[UInt8]] = []
                for change in changed where change.cache === c.cache && change.key.starts(with: prefix) {
                    if c.tracking?.noloop == true && change.by === c { continue }
                    keys.append(change.key)
                }
                if !keys.isEmpty { sendInvalidation(c, keys: keys) }
            }
        }
    }
}
