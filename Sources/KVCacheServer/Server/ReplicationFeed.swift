import RESP

/// The stream's last bytes (at least `capacity` of them, once that many
/// went out), with the offset of the first: Redis's replication backlog.
struct ReplicationBacklog {
    private(set) var bytes: [UInt8] = []
    /// The stream offset of `bytes[0]` (the stream's bytes count from 1).
    private(set) var firstOffset: Int
    var capacity: Int

    init(after offset: Int, capacity: Int) {
        firstOffset = offset + 1
        self.capacity = max(capacity, 16 * 1024)
    }

    /// Appends what went out; past twice the capacity the oldest go, down
    /// to the capacity (so trimming costs O(1) a byte).
    mutating func append(_ data: [UInt8]) {
        bytes.append(contentsOf: data)
        if bytes.count > 2 * capacity {
            let dropped = bytes.count - capacity
            bytes.removeFirst(dropped)
            firstOffset += dropped
        }
    }

    /// The bytes from stream offset `offset` on, if the backlog holds them
    /// (`offset` one past the end: none, which is a valid continuation).
    func bytes(from offset: Int) -> ArraySlice<UInt8>? {
        guard offset >= firstOffset, offset <= firstOffset + bytes.count else { return nil }
        return bytes[(offset - firstOffset)...]
    }
}

/// Redis's replication stream, served as a read-only feed (Redis's
/// replication.c master side and server.c's propagation, 7.0).
///
/// `SYNC` (or `PSYNC`, answered `+FULLRESYNC`, or `+CONTINUE` from the
/// backlog) turns a connection into a feed: it gets an RDB of the numbered caches' data, then every write the server
/// propagates, as Redis sends it to its replicas (`SELECT` when the
/// database changes, rewrites such as `SET … PXAT`, `MULTI`/`EXEC` around a
/// command's several effects, `DEL` for keys that expired or were evicted,
/// a `PING` every `repl-ping-replica-period` seconds). The replica side is
/// Server/ReplicaLink.swift.
///
/// Commands record their propagation while they run (Redis's
/// `server.also_propagate`); the outermost command hands the collected ops
/// to the feeds when it ends (`propagatePendingCommands`).
final class ReplicationFeed {
    /// The connections that ran SYNC (Redis's `server.slaves`).
    var replicas: [Connection] = []
    /// The ops the running outermost command caused, each with its
    /// database's label (Redis's `server.also_propagate`).
    var pending: [(db: String, args: [[UInt8]])] = []
    /// What the running command propagates instead of its own arguments
    /// (Redis's `rewriteClientCommandVector` and `alsoPropagate`), if it was rewritten.
    var rewrite: [[[UInt8]]]?
    /// The database the stream last selected (Redis's `slaveseldb`); nil
    /// after a feed attaches, so the next op is preceded by `SELECT`.
    var selected: String?
    /// Bytes sent on the stream since start (INFO's `master_repl_offset`).
    var offset = 0
    /// When the stream last had a PING (milliseconds).
    var lastPing: Int64 = 0
    /// The stream's last bytes, for a replica that reconnects to continue
    /// from where it was (Redis's repl_backlog): made when the first feed
    /// attaches (or a replica syncs), kept from then on.
    var backlog: ReplicationBacklog?
    /// When the last feed went (milliseconds; for repl-backlog-ttl).
    var noReplicasSince: Int64 = 0
    /// Redis's sync_full, sync_partial_ok and sync_partial_err.
    var fullSyncs = 0, partialSyncs = 0, refusedPartialSyncs = 0
    /// Changes that are not to data (FUNCTION LOAD, DELETE, FLUSH,
    /// RESTORE), counted beside the store's so they propagate too (they
    /// raise Redis's `server.dirty`).
    var otherChanges = 0

    /// Where a command's propagation starts (restored when it ends, for a
    /// command nested in EXEC, a script or a served blocked client).
    struct Mark {
        let changes: Int
        let rewrite: [[[UInt8]]]?
        let db: String
    }

    /// The stream's label for a cache: its database number when it is
    /// `db<n>`, its name otherwise.
    static func label(_ cache: OpenCache) -> String {
        cache.databaseIndex.map(String.init) ?? cache.name
    }

    /// The commands that never propagate themselves: EXEC (its commands
    /// do, wrapped by the outermost command) and the scripts (the writes
    /// their `redis.call` ran do: effects replication).
    static let propagatesEffectsOnly: Set<String> = [
        "exec", "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro",
    ]

    /// The commands whose lazy-expiry deletes go out one by one, not in
    /// MULTI/EXEC (Redis's CMD_TOUCHES_ARBITRARY_KEYS).
    static let touchesArbitraryKeys: Set<String> = ["keys", "scan", "randomkey"]

    /// An RDB (version 10) holding `databases` (each database's number
    /// and its keys, already encoded), as a replica expects after SYNC.
    static func rdb(now: Int64, streamDatabase: Int? = nil, functions: [[UInt8]] = [],
                    databases: [(index: Int, keys: [UInt8])] = []) -> [UInt8] {
        var out = Array("REDIS00\(RDB.version)".utf8)
        func aux(_ key: String, _ value: String) {
            out.append(0xFA)  // RDB_OPCODE_AUX
            RDB.appendString(Array(key.utf8), to: &out)
            RDB.appendString(Array(value.utf8), to: &out)
        }
        aux("redis-ver", "7.0.15")
        aux("redis-bits", "64")
        aux("ctime", String(now / 1000))
        aux("used-mem", "0")
        aux("aof-base", "0")
        if let streamDatabase { aux("repl-stream-db", String(streamDatabase)) }
        for code in functions { Scripting.appendFunctionRecord(code, to: &out) }
        for database in databases {
            out.append(0xFE)  // RDB_OPCODE_SELECTDB
            RDB.appendLength(database.index, to: &out)
            out.append(contentsOf: database.keys)
        }
        out.append(0xFF)  // RDB_OPCODE_EOF
        withUnsafeBytes(of: RDB.crc64(out).littleEndian) { out.append(contentsOf: $0) }
        return out
    }

    /// One key as an RDB holds it: its expiry (RDB_OPCODE_EXPIRETIME_MS),
    /// its type, its name and its value, from the key's DUMP payload (type,
    /// value, then the 2-byte version and the 8-byte checksum).
    static func appendRDBKey(_ key: [UInt8], expiresAt: Int64?, dump: [UInt8], to out: inout [UInt8]) {
        if let expiresAt {
            out.append(0xFC)
            withUnsafeBytes(of: UInt64(bitPattern: expiresAt).littleEndian) { out.append(contentsOf: $0) }
        }
        out.append(dump[0])
        RDB.appendString(key, to: &out)
        out.append(contentsOf: dump[1..<dump.count - 10])
    }
}

extension Server {
    // MARK: Attaching and detaching feeds

    /// PSYNC replid offset: continues the stream from `offset` when it is
    /// this stream (or the one before a promotion, up to where it ended)
    /// and the backlog still holds it (Redis's masterTryPartialResynchronization).
    /// - Returns: whether it did (+CONTINUE, then the backlog's bytes).
    func continueReplica(_ connection: Connection, replicationID id: String, offset: Int) -> Bool {
        let known = id == replicationID || (id == previousReplicationID && offset <= secondReplicationOffset)
        guard known, let backlog = replication.backlog, let missing = backlog.bytes(from: offset),
              replicaLink == nil || replicaLink?.state == .connected else {
            if id != "?" { replication.refusedPartialSyncs += 1 }
            return false
        }
        connection.replySimple("CONTINUE \(replicationID)")
        connection.output.append(contentsOf: missing)
        makeFeed(connection)
        replication.partialSyncs += 1
        logger.notice("Partial resynchronization request from \(connection.peer) accepted. Sending \(missing.count) bytes "
            + "of backlog starting from offset \(offset).")
        return true
    }

    /// `connection` is a feed of the stream from now on (replies off).
    private func makeFeed(_ connection: Connection) {
        connection.isReplica = true
        connection.replicaAckTime = Self.nowMilliseconds()
        connection.replyOff = true
        replication.replicas.append(connection)
        // A new feed starts with no database selected (Redis resets slaveseldb).
        replication.selected = nil
        if replication.replicas.count == 1 { replication.lastPing = Self.nowMilliseconds() }
        if replication.backlog == nil {
            replication.backlog = ReplicationBacklog(after: replication.offset, capacity: backlogSize)
        }
        replicationFeeding = true
    }

    /// SYNC/PSYNC: sends `connection` an RDB of the numbered caches as a
    /// bulk payload and makes it a feed of the stream from now on (replies
    /// to what it sends later are dropped; REPLCONF ACK is ignored, as
    /// Redis). The snapshot is made on the loop, in one go: Redis forks for
    /// it, here the other clients wait while it is made.
    func attachReplica(_ connection: Connection, fullResync: Bool) {
        // A replica's feed gets its master's stream as it comes (see
        // `forwardMasterStream`): its offset, and the database that stream
        // has selected (the replica's own stream would SELECT first).
        let master = replicaLink?.connection
        let payload = ReplicationFeed.rdb(now: Self.nowMilliseconds(), streamDatabase: master?.cache.databaseIndex,
                                          functions: scripting.libraryCodes, databases: snapshotDatabases())
        if fullResync {
            connection.replySimple("FULLRESYNC \(replicationID) \(replicaLink?.offset ?? replication.offset)")
        }
        connection.output.append(contentsOf: Array("$\(payload.count)\r\n".utf8))
        connection.output.append(contentsOf: payload)
        makeFeed(connection)
        replication.fullSyncs += 1
        logger.verbose("Replica \(connection.peer) asks for synchronization: streaming writes from now on")
    }

    /// The numbered caches' keys, encoded for an RDB (named caches are
    /// not Redis databases and are left out).
    private func snapshotDatabases() -> [(index: Int, keys: [UInt8])] {
        // Keys that expired but are not yet deleted go too, as in Redis's
        // RDB: the replica's load decides (a replica keeps them for its
        // master's DEL, a master drops them).
        registry.accessTracking.expiryIgnored = true
        defer { registry.accessTracking.expiryIgnored = false }
        var databases: [(index: Int, keys: [UInt8])] = []
        let caches = registry.openAllKnown().filter { $0.openError == nil && $0.databaseIndex != nil }
        for cache in caches.sorted(by: { $0.databaseIndex! < $1.databaseIndex! }) {
            var bytes: [UInt8] = []
            do {
                let keyspace = Keyspace(server: self, cache: cache)
                for key in try keyspace.keys() {
                    guard let entry = try keyspace.peekStored(key) else { continue }
                    ReplicationFeed.appendRDBKey(key, expiresAt: entry.row.expiresAt, dump: try RDB.dump(entry), to: &bytes)
                }
            } catch {
                logger.warning("Snapshot of cache '\(cache.name)' for a replica is incomplete: \(error)")
            }
            if !bytes.isEmpty { databases.append((cache.databaseIndex!, bytes)) }
        }
        return databases
    }

    /// Removes a closed feed.
    func detachReplica(_ connection: Connection) {
        replication.replicas.removeAll { $0 === connection }
        // A master keeps its stream going into the backlog, for the
        // replica that comes back (Redis keeps feeding it without replicas).
        replicationFeeding = !replication.replicas.isEmpty || (replication.backlog != nil && replicaLink == nil)
        if replication.replicas.isEmpty { replication.noReplicasSince = Self.nowMilliseconds() }
        if !replicationFeeding {
            replication.pending.removeAll()
            replication.rewrite = nil
        }
    }

    /// What a feed sends after SYNC: REPLCONF ACK (and GETACK, FACK) is
    /// ignored; any other command would answer, and a replica must get no
    /// replies, so the feed is dropped (as Redis 7.0).
    func replicaInput(_ args: Arguments, from connection: Connection) {
        if args[0].lowercasedText == "replconf", args.count >= 2,
           ["ack", "fack", "getack"].contains(args[1].lowercasedText) {
            // ACK <offset>: what ROLE and INFO report as the replica's offset.
            if args[1].lowercasedText == "ack", args.count >= 3, let offset = parseStrictInt64(args[2]) {
                connection.replicaAckOffset = max(connection.replicaAckOffset, Int(truncatingIfNeeded: offset))
                connection.replicaAckTime = Self.nowMilliseconds()
                serveWaitingForAcks()
                if shutdownDeadline != 0 { continueShutdown() }
            }
            return
        }
        let name = commands.lookup(args[0])?.name ?? args[0].lowercasedText
        logger.warning("Replica generated a reply to command '\(name)', disconnecting it: \(connection.peer)")
        close(connection)
    }

    // MARK: Recording a command's propagation

    /// The running command is propagated as `ops` instead of its own
    /// arguments (Redis's rewriteClientCommandVector; several ops for
    /// alsoPropagate). A no-op when no feed is attached.
    func propagateAs(_ ops: [[UInt8]]...) {
        propagateAs(commands: ops)
    }

    /// The same with the ops as an array (none: the command propagates nothing).
    func propagateAs(commands ops: [[[UInt8]]]) {
        guard replicationFeeding else { return }
        replication.rewrite = ops
    }

    /// A command starts (only called while feeding).
    func propagationBegin(_ connection: Connection) -> ReplicationFeed.Mark {
        defer { replication.rewrite = nil }
        return ReplicationFeed.Mark(changes: persistence.changes + replication.otherChanges, rewrite: replication.rewrite,
                                    db: ReplicationFeed.label(connection.cache))
    }

    /// A command begun at `mark` ends: when it changed data (Redis's dirty
    /// counter) it joins the pending ops, rewritten if it asked to be (or
    /// as the append-only log records it: SPOP as SREM, BLPOP as LPOP).
    func propagationEnd(_ mark: ReplicationFeed.Mark, _ command: Command, _ args: Arguments) {
        defer { replication.rewrite = mark.rewrite }
        guard replicationFeeding, persistence.changes + replication.otherChanges > mark.changes,
              !ReplicationFeed.propagatesEffectsOnly.contains(command.name) else { return }
        let ops = replication.rewrite ?? persistence.commandRewrite ?? [args.copies]
        for op in ops { replication.pending.append((mark.db, op)) }
    }

    /// The running command changed something that is not data (the
    /// function libraries): it propagates as if it had.
    func markChanged() {
        replication.otherChanges += 1
    }

    /// A key expired (lazily or in the sweep) or was evicted: propagated as
    /// DEL, or UNLINK when the matching lazyfree setting is yes (Redis's
    /// propagateDeletion). Outside any command it goes out at once.
    func propagateDeletion(_ key: [UInt8], in cache: OpenCache, lazy: Bool) {
        let op = [Array((lazy ? "UNLINK" : "DEL").utf8), key]
        replication.pending.append((ReplicationFeed.label(cache), op))
        if commandDepth == 0 { flushPropagation() }
    }

    /// Sends the pending ops to the feeds (Redis's propagatePendingCommands):
    /// more than one is wrapped in MULTI/EXEC unless `transaction` is false.
    func flushPropagation(transaction: Bool = true) {
        guard !replication.pending.isEmpty else { return }
        let ops = replication.pending
        replication.pending.removeAll()
        guard replicationFeeding else { return }
        var stream: [UInt8] = []
        func emit(_ db: String, _ args: [[UInt8]]) {
            if replication.selected != db {
                RESPEncoder.bulkArray([Array("SELECT".utf8), Array(db.utf8)], into: &stream)
                replication.selected = db
            }
            RESPEncoder.bulkArray(args, into: &stream)
        }
        let wrap = transaction && ops.count > 1
        if wrap { emit(ops[0].db, [Array("MULTI".utf8)]) }
        for (db, args) in ops { emit(db, args) }
        if wrap { emit(ops[ops.count - 1].db, [Array("EXEC".utf8)]) }
        sendToReplicas(stream)
    }

    /// Appends `bytes` to every feed's output.
    func sendToReplicas(_ bytes: [UInt8], forwarded: Bool = false) {
        // A replica's feeds carry its master's stream alone (Redis's
        // replicationFeedStreamFromMasterStream): nothing of its own.
        guard replicaLink == nil || forwarded else { return }
        replication.offset += bytes.count
        replication.backlog?.append(bytes)
        for replica in replication.replicas where !replica.closed {
            replica.output.append(contentsOf: bytes)
            queueReplies(replica)
        }
    }

    /// A replica passes the bytes of its master's stream it has applied to
    /// its own feeds, as they came.
    func forwardMasterStream(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        sendToReplicas(bytes, forwarded: true)  // into the backlog even with no feed
    }

    /// The stream's PING every `repl-ping-replica-period` seconds (Redis's
    /// replicationCron), sent with no SELECT.
    func replicationCron(now: Int64) {
        freeBacklogIfIdle(now: now)
        guard replicationFeeding, replicaLink == nil, !replication.replicas.isEmpty,
              now - replication.lastPing >= Int64(config.replPingReplicaPeriod) * 1000 else { return }
        replication.lastPing = now
        var ping: [UInt8] = []
        RESPEncoder.bulkArray([Array("PING".utf8)], into: &ping)
        sendToReplicas(ping)
    }

    /// A master without feeds for `repl-backlog-ttl` seconds (0: never)
    /// frees its backlog and takes a new replid, so no replica continues a
    /// stream it can no longer prove (Redis's replicationCron).
    private func freeBacklogIfIdle(now: Int64) {
        guard replication.backlog != nil, replicaLink == nil, replication.replicas.isEmpty,
              let ttl = Int64(config.acceptedSettings["repl-backlog-ttl"] ?? "3600"), ttl > 0,
              now - replication.noReplicasSince > ttl * 1000 else { return }
        replication.backlog = nil
        replicationFeeding = false
        replication.pending.removeAll()
        replicationID = Self.randomID()
        previousReplicationID = String(repeating: "0", count: 40)
        secondReplicationOffset = -1
        logger.notice("Replication backlog freed after \(ttl) seconds without connected replicas.")
    }

    /// `repl-backlog-size` in bytes.
    var backlogSize: Int { Int(config.acceptedSettings["repl-backlog-size"] ?? "") ?? 1_048_576 }

    /// The stream's offset: on a replica its master's (which its feeds get and acknowledge).
    var streamOffset: Int { replicaLink?.offset ?? replication.offset }

    /// The feeds still open (ROLE and INFO list these).
    var openReplicas: [Connection] { replication.replicas.filter { !$0.closed } }

    /// INFO replication's `connected_slaves` and `slave<n>` lines: each
    /// feed's address, listening port, the offset it last acknowledged and
    /// the seconds since that ACK, as Redis's genRedisInfoString.
    var replicaInfoLines: [String] {
        let replicas = openReplicas, now = Self.nowMilliseconds()
        var lines = ["connected_slaves:\(replicas.count)"]
        if config.scripting.minReplicasToWrite > 0 && config.scripting.minReplicasMaxLag > 0 {
            lines.append("min_slaves_good_slaves:\(goodReplicas)")
        }
        for (i, replica) in replicas.enumerated() {
            let lag = max(0, now - replica.replicaAckTime) / 1000
            lines.append("slave\(i):ip=\(replica.peerHost),port=\(replica.replicaListeningPort),state=online,"
                + "offset=\(replica.replicaAckOffset),lag=\(lag)")
        }
        return lines
    }

    /// The feeds whose last ACK is at most `min-replicas-max-lag` seconds
    /// old (Redis's repl_good_slaves_count).
    var goodReplicas: Int {
        let now = Self.nowMilliseconds() / 1000, maxLag = Int64(config.scripting.minReplicasMaxLag)
        return openReplicas.count { now - $0.replicaAckTime / 1000 <= maxLag }
    }

    /// Whether writes may go on (Redis's checkGoodReplicasStatus): on a
    /// replica, or with `min-replicas-to-write` or `min-replicas-max-lag`
    /// at 0, or with that many good replicas.
    var enoughGoodReplicas: Bool {
        let settings = config.scripting
        guard replicaLink == nil, settings.minReplicasToWrite > 0, settings.minReplicasMaxLag > 0 else { return true }
        return goodReplicas >= settings.minReplicasToWrite
    }
}
