import RESP
import SQLiteKVCache

/// A key in one cache: what clients block on and WATCH.
struct CacheKey: Hashable {
    let cache: String
    let key: [UInt8]
}

/// What a client blocked by BLPOP, BLMOVE, BZPOPMIN and the like waits
/// for: its command (copied), the keys it waits on, and until when.
final class BlockState {
    let command: Command
    let args: [[UInt8]]
    let cache: OpenCache
    /// The distinct keys waited on, in the command's order.
    let keys: [[UInt8]]
    /// The kind a key must hold to serve the client (a list or a sorted set).
    let kind: ValueKind
    /// Milliseconds since 1970; nil waits forever.
    let deadline: Int64?
    let since: Int64
    /// Set while the command runs again after one of its keys was readied.
    var retrying = false
    /// Set by that run when it found nothing to take (the client waits on).
    var waitingAgain = false
    /// XREAD's and XREADGROUP's: the IDs waited past, by key, and the rest.
    var stream: StreamWait?
    /// The key readied, while the command runs again for a stream (Redis
    /// serves a stream client from the one key that woke it).
    var readyKey: [UInt8]?
    /// WAIT's: the stream offset the replicas must acknowledge, and how
    /// many of them (the client waits on no key).
    var acks: (offset: Int, replicas: Int)?
    /// SHUTDOWN's, waiting for the replicas to catch up (Redis's
    /// BLOCKED_SHUTDOWN: CLIENT UNBLOCK leaves it).
    var shutdown = false

    init(command: Command, args: [[UInt8]], cache: OpenCache, keys: [[UInt8]], kind: ValueKind, deadline: Int64?, since: Int64) {
        self.command = command
        self.args = args
        self.cache = cache
        self.keys = keys
        self.kind = kind
        self.deadline = deadline
        self.since = since
    }
}

/// Blocking commands (Redis's blocked.c and its handleClientsBlockedOnKeys):
/// a client whose keys are all empty is parked in a registry by (cache,
/// key), first come first served, and the loop goes on serving others.
/// Any change to a key someone waits on (a push by any client, XADD, EXEC,
/// RENAME, MOVE, RESTORE, SORT … STORE, a delete, FLUSHDB, a SWAPDB
/// bringing the key in or out) readies the key; once the command that did
/// it ends (at the top level: after a whole EXEC), each readied key's
/// clients run their command again, in order: a list or sorted set client
/// while the key holds something; a stream client (XREAD, XREADGROUP) is
/// served from that key when it has entries past the ID it waits for, and
/// an XREADGROUP client gets an error when its stream or group went. A
/// served command is logged as its non-blocking form (BLPOP as LPOP,
/// XREADGROUP as XCLAIMs). Timeouts are kept in a heap and fired by the
/// loop, which never sleeps past the nearest one.
extension Server {
    /// Parks `connection` until one of `state`'s keys is readied, its
    /// deadline passes, or CLIENT UNBLOCK.
    func block(_ connection: Connection, _ state: BlockState) {
        connection.blocked = state
        blockedCount += 1
        for key in state.keys {
            blockedByKey[CacheKey(cache: state.cache.name, key: key), default: []].append(connection)
        }
        if let deadline = state.deadline {
            blockDeadlines.push((deadline, connection))
        }
    }

    /// Takes `connection` out of the registry (served, timed out, unblocked
    /// or closed); its buffered requests run in the loop's next step.
    func unblock(_ connection: Connection) {
        guard let state = connection.blocked else { return }
        connection.blocked = nil
        blockedCount -= 1
        for key in state.keys {
            let id = CacheKey(cache: state.cache.name, key: key)
            guard var waiting = blockedByKey[id] else { continue }
            waiting.removeAll { $0 === connection }
            blockedByKey[id] = waiting.isEmpty ? nil : waiting
        }
        if !connection.closed { unblockedClients.append(connection) }
    }

    /// A list or sorted set was stored under `key`: clients blocked on it
    /// are served once the running command ends.
    func signalKeyAsReady(_ cache: String, _ key: [UInt8]) {
        let id = CacheKey(cache: cache, key: key)
        guard blockedByKey[id] != nil, readyKeySet.insert(id).inserted else { return }
        readyKeys.append(id)
    }

    /// Every key someone is blocked on in `cache` (after SWAPDB brought in
    /// a whole cache): ready, to be checked.
    func signalAllBlockedKeysAsReady(in cache: String) {
        guard blockedCount > 0 else { return }
        for id in blockedByKey.keys where id.cache == cache { signalKeyAsReady(id.cache, id.key) }
    }

    /// Serves the clients blocked on readied keys (Redis's
    /// handleClientsBlockedOnKeys): for each key, its clients in the order
    /// they blocked, each running its command again while the key holds a
    /// value of the kind it waits for. Serving may ready more keys (BLMOVE
    /// pushes); those are served in turn.
    func serveReadyKeys() {
        guard !servingReadyKeys else { return }
        servingReadyKeys = true
        // A client the master's write serves finds keys as clients do
        // (expired ones absent), not as the master's commands do.
        let ignoringExpiry = registry.accessTracking.expiryIgnored
        registry.accessTracking.expiryIgnored = false
        defer {
            servingReadyKeys = false
            registry.accessTracking.expiryIgnored = ignoringExpiry
        }
        while !readyKeys.isEmpty {
            let batch = readyKeys
            readyKeys = []
            readyKeySet = []
            for id in batch {
                guard let waiting = blockedByKey[id], let cache = registry.open[id.cache] else { continue }
                let keyspace = Keyspace(server: self, cache: cache)
                for client in waiting where client.blocked != nil && !client.closed {
                    guard let state = client.blocked else { continue }
                    if state.kind == .stream {
                        // The command decides: served, an error, or waiting on.
                        state.readyKey = id.key
                        retryBlocked(client)
                        state.readyKey = nil
                        continue
                    }
                    guard let entry = try? keyspace.lookupStored(id.key, read: false), entry.row.kind == state.kind else {
                        continue
                    }
                    retryBlocked(client)
                }
            }
        }
    }

    /// Runs a blocked client's command again: it takes from a key that now
    /// holds something and replies (then the client is unblocked), or finds
    /// nothing and waits on.
    private func retryBlocked(_ client: Connection) {
        guard let state = client.blocked else { return }
        state.retrying = true
        state.waitingAgain = false
        let outer = runningCommandMayGrow
        runningCommandMayGrow = state.command.deniesOOM
        defer { runningCommandMayGrow = outer }
        let recording = persistence.beginCommand()
        let began = Self.monotonicMicroseconds()
        var failure: ReplyError?
        Arguments.withCopy(of: state.args) { args in
            // As the loop runs a command: its keyspace events named after it,
            // and the client's own invalidations after its reply.
            let namingEvents = eventSource != nil || wantsKeyspaceEvents
            let outerEvents = namingEvents ? beginKeyspaceEvents(state.command, args) : nil
            // The woken client's command is its own, even when the push that
            // woke it is still running: its tracking scope starts afresh.
            let tracked = trackingActive || tracking.depth > 0
            let outer = (tracking.current, tracking.depth, tracking.pending, tracking.nullSent)
            if tracked {
                (tracking.current, tracking.depth, tracking.pending) = (nil, 0, [])
                trackingBeginCommand(client)
            }
            // Served, it propagates as a command of its own (BLPOP as LPOP).
            let propagation = replicationFeeding ? propagationBegin(client) : nil
            failure = runHandler(state.command, client, args)
            if let propagation {
                propagationEnd(propagation, state.command, args)
                flushPropagation()
            }
            if tracked {
                trackingEndCommand(client, state.command, args)
                (tracking.current, tracking.depth, tracking.pending, tracking.nullSent) = outer
            }
            if namingEvents { endKeyspaceEvents(outerEvents) }
            if let lsn = persistence.commandFinished(recording, cache: state.cache.name, args: args) {
                client.awaitingLSN = lsn
            }
            // Served (or failed), it is logged as the client sent it, with
            // the time it ran, not the time it waited (Redis's updateStatsOnUnblock).
            if failure != nil || !state.waitingAgain {
                slowlog.recordIfSlow(args, microseconds: Self.monotonicMicroseconds() - began, client: client)
            }
        }
        state.retrying = false
        state.command.stats.microseconds += Self.monotonicMicroseconds() - began
        if failure == nil && state.waitingAgain { return }
        if let failure {
            client.replyError(failure)
            state.command.stats.failed += 1
            countError(failure)
        }
        unblock(client)
        queueReplies(client)
    }

    /// Replies to the clients whose deadline has passed as Redis does on a
    /// timeout (a null array), and unblocks them.
    func expireBlockedClients(now: Int64) {
        while let (deadline, client) = blockDeadlines.top, deadline <= now {
            blockDeadlines.pop()
            guard let state = client.blocked, state.deadline == deadline, !client.closed else { continue }
            replyTimedOut(client, state)
            unblock(client)
            queueReplies(client)
        }
    }

    /// Milliseconds until the nearest blocked client's deadline, if any.
    func millisecondsToNextDeadline(now: Int64) -> Int64? {
        while let (deadline, client) = blockDeadlines.top {
            if let state = client.blocked, state.deadline == deadline, !client.closed {
                return max(0, deadline - now)
            }
            blockDeadlines.pop()
        }
        return nil
    }

    /// Runs the requests unblocked clients received while they waited.
    func resumeUnblockedClients() {
        while !unblockedClients.isEmpty {
            let clients = unblockedClients
            unblockedClients = []
            for client in clients where !client.closed && client.blocked == nil && client.parked == nil {
                executeBuffered(client)
                queueReplies(client)
            }
        }
    }

    /// CLIENT UNBLOCK id [TIMEOUT|ERROR]: answers a blocked client as on
    /// a timeout, or with an error.
    /// - Returns: whether the client was blocked.
    func unblockByRequest(_ id: Int64, error: Bool) -> Bool {
        guard let client = connections.first(where: { $0?.id == id }) ?? nil, let blocked = client.blocked,
              !blocked.shutdown else { return false }
        if error {
            let failure = ReplyError("UNBLOCKED client unblocked via CLIENT UNBLOCK")
            client.replyError(failure)
            client.blocked?.command.stats.failed += 1
            countError(failure)  // errorstat_UNBLOCKED, as Redis
        } else if let state = client.blocked {
            replyTimedOut(client, state)
        }
        unblock(client)
        queueReplies(client)
        return true
    }

    /// A blocked client's answer on a timeout: a null array, or for WAIT
    /// the number of replicas that acknowledged its offset.
    private func replyTimedOut(_ client: Connection, _ state: BlockState) {
        if let acks = state.acks {
            client.replyInteger(replicasAcknowledging(acks.offset))
        } else {
            client.replyNullArray()
        }
    }

    /// The feeds whose last REPLCONF ACK reached `offset`.
    func replicasAcknowledging(_ offset: Int) -> Int {
        openReplicas.reduce(0) { $0 + ($1.replicaAckOffset >= offset ? 1 : 0) }
    }

    /// WAIT numreplicas timeout: blocks the client until that many replicas
    /// acknowledge the stream up to its last write, or the timeout (milliseconds;
    /// 0 forever) passes; the answer is the count that did (Redis's
    /// waitCommand). The replicas are asked for an ACK before the loop sleeps (GETACK).
    func waitForReplicas(_ connection: Connection, count: Int, timeout: Int64, mayBlock: Bool) {
        let offset = connection.writeOffset
        let acknowledged = replicasAcknowledging(offset)
        guard acknowledged < count, mayBlock, let command = commands.lookup(Array("wait".utf8)) else {
            connection.replyInteger(acknowledged)
            return
        }
        let state = BlockState(command: command, args: [], cache: connection.cache, keys: [], kind: .string,
                               deadline: timeout > 0 ? Self.nowMilliseconds() + timeout : nil, since: Self.nowMilliseconds())
        state.acks = (offset, count)
        block(connection, state)
        waitingForAcks.append(connection)
        acksWanted = true
    }

    /// REPLCONF GETACK * to every feed (Redis's replicationRequestAckFromSlaves).
    func requestAcks() {
        acksWanted = false
        var getack: [UInt8] = []
        RESPEncoder.bulkArray([Array("REPLCONF".utf8), Array("GETACK".utf8), Array("*".utf8)], into: &getack)
        sendToReplicas(getack)
    }

    /// An ACK came: the WAITs it satisfies are answered.
    func serveWaitingForAcks() {
        guard !waitingForAcks.isEmpty else { return }
        waitingForAcks.removeAll { client in
            guard let state = client.blocked, let acks = state.acks, !client.closed else { return true }
            let acknowledged = replicasAcknowledging(acks.offset)
            guard acknowledged >= acks.replicas else { return false }
            client.replyInteger(acknowledged)
            unblock(client)
            queueReplies(client)
            return true
        }
    }
}

extension CommandContext {
    /// Parses a blocking command's timeout (seconds, a float; 0 forever),
    /// as Redis's getTimeoutFromObjectOrReply.
    /// - Returns: the deadline in milliseconds since 1970, or nil for none.
    func blockingDeadline(_ index: Int) throws(ReplyError) -> Int64? {
        guard let seconds = parseLongDouble(args[index]) else {
            throw ReplyError("ERR timeout is not a float or out of range")
        }
        let milliseconds = (seconds * 1000).rounded(.up)
        guard milliseconds >= 0 else { throw ReplyError("ERR timeout is negative") }
        guard milliseconds < LongDouble(Int64.max / 2) else { throw ReplyError("ERR timeout is out of range") }
        let value = Int64(milliseconds)
        return value == 0 ? nil : value + Server.nowMilliseconds()
    }

    /// Whether this command may block (not inside MULTI/EXEC or a replay).
    var mayBlock: Bool {
        server.denyBlocking == 0 && !server.persistence.replaying && connection.fd >= 0
    }

    /// Blocks the client on `keys` (to be served from the first one that
    /// holds a `kind`), or, when it may not block, replies as a timeout at
    /// once (`nullArray` false: a null bulk, as BLMOVE does). When the
    /// command runs again for a blocked client, it waits on.
    func block(on keys: [[UInt8]], kind: ValueKind, deadline: Int64?, nullArray: Bool = true, stream: StreamWait? = nil) {
        if let state = connection.blocked, state.retrying {
            state.waitingAgain = true
            return
        }
        guard mayBlock, let command = server.commands.lookup(args[0]) else {
            if nullArray { connection.replyNullArray() } else { connection.replyNull() }
            return
        }
        var distinct: [[UInt8]] = []
        for key in keys where !distinct.contains(key) { distinct.append(key) }
        let state = BlockState(command: command, args: args.copies, cache: cache, keys: distinct, kind: kind,
                               deadline: deadline, since: Server.nowMilliseconds())
        state.stream = stream
        server.block(connection, state)
    }
}

/// Blocked clients by deadline, soonest first: a binary min-heap. An entry
/// whose client was served meanwhile stays until it reaches the top, where
/// it is recognised (the client's deadline differs or it is unblocked) and
/// dropped.
struct DeadlineHeap {
    private var items: [(deadline: Int64, client: Connection)] = []

    var top: (Int64, Connection)? { items.first.map { ($0.deadline, $0.client) } }
    var count: Int { items.count }

    mutating func push(_ item: (Int64, Connection)) {
        items.append((item.0, item.1))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].deadline < items[parent].deadline else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        let last = items.removeLast()
        guard !items.isEmpty else { return }
        items[0] = last
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < items.count && items[l].deadline < items[smallest].deadline { smallest = l }
            if r < items.count && items[r].deadline < items[smallest].deadline { smallest = r }
            if smallest == i { break }
            items.swapAt(i, smallest)
            i = smallest
        }
    }
}
