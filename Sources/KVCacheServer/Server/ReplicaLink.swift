#if canImport(Glibc)
import Glibc
#endif
import Foundation
import RESP

/// The replica side of Redis's replication (Redis 7.0's replication.c:
/// `REPLICAOF host port`, `replicaof` in the config file).
///
/// The handshake and the transfer of the master's RDB run on a thread of
/// their own (`MasterSync`), with blocking reads bounded by `repl-timeout`:
/// PING, AUTH (`masteruser`/`masterauth`), REPLCONF listening-port and
/// capa, PSYNC (always a full resynchronization: there is no backlog to
/// continue from; SYNC for a master that does not know PSYNC), then the
/// payload, sized (`$<len>`) or ended by a mark (`$EOF:<mark>`, a diskless
/// master's). The loop polls for the result in its cron, loads the RDB in
/// place of the numbered caches' data and adopts the socket as the master's
/// client: what it sends runs as any client's commands do, with its replies
/// dropped (REPLCONF GETACK answers REPLCONF ACK), and counts toward the
/// replication offset. An ACK goes out every second; a lost link is
/// reconnected every second, as Redis's replicationCron.
final class ReplicaLink {
    enum State: String {
        /// Waiting for the next attempt (ROLE's `connect`).
        case connect
        /// The handshake thread runs (`connecting`, `sync` once the payload comes).
        case connecting
        /// The master's stream is applied (`connected`).
        case connected
    }

    let host: String
    let port: Int
    var state = State.connect
    /// The running handshake, if any.
    var sync: MasterSync?
    /// The master's client, once connected.
    var connection: Connection?
    /// The stream's offset applied so far (INFO's `slave_repl_offset`).
    var offset = 0
    /// The stream's bytes of a MULTI not yet at its EXEC: counted and
    /// passed on to the feeds with it.
    var heldStream: [UInt8] = []
    /// After a lost link: the database the stream had selected, for a
    /// partial resynchronization to go on in (Redis's cached master).
    var resumeCache: OpenCache?
    /// When the master last sent something, and when the last ACK went.
    var lastIO: Int64 = 0
    var lastAck: Int64 = 0
    /// When the next connection attempt may start.
    var nextAttempt: Int64 = 0
    /// When the link went down (INFO's `master_link_down_since_seconds`).
    var downSince: Int64

    init(host: String, port: Int, now: Int64) {
        self.host = host
        self.port = port
        downSince = now
    }
}

/// The handshake and the RDB transfer, on a thread of their own.
final class MasterSync: @unchecked Sendable {
    struct Settings: Sendable {
        var host: String
        var port: Int
        var listeningPort: Int
        var user: String
        var password: String
        var timeoutMilliseconds: Int
        /// `bind-source-addr`: the address the link connects from ("": any).
        var sourceAddress = ""
        /// The stream to continue (its replid and the next offset wanted):
        /// PSYNC asks for it before a full resynchronization.
        var resume: (id: String, offset: Int)?
    }

    enum Outcome {
        case synced(fd: Int32, rdb: [UInt8], buffered: [UInt8], replicationID: String?, offset: Int)
        /// +CONTINUE: the stream goes on from the resumed offset (under a
        /// new replid when the master names one).
        case continued(fd: Int32, buffered: [UInt8], replicationID: String?)
        case failed(String)

        /// The master's socket an outcome holds (closed if nobody takes it).
        var socket: Int32? {
            switch self {
            case .synced(let fd, _, _, _, _), .continued(let fd, _, _): return fd
            case .failed: return nil
            }
        }
    }

    private let lock = NSLock()
    private var outcome: Outcome?
    private var received = 0
    private var transferring = false
    private var handshaking = false
    private var abandoned = false

    init(_ settings: Settings) {
        let thread = Thread { [self] in
            // -1: connected, the handshake runs; then the payload's bytes so far.
            let result = Self.run(settings, progress: { bytes in
                self.lock.withLock {
                    if bytes < 0 {
                        self.handshaking = true
                    } else {
                        self.transferring = true
                        self.received = bytes
                    }
                }
            })
            lock.withLock {
                if abandoned, let fd = result.socket {
                    Glibc.close(fd)
                } else {
                    outcome = result
                }
            }
        }
        thread.name = "kvcache-replica-sync"
        thread.start()
    }

    /// The result, once the thread is done (taken once).
    func take() -> Outcome? {
        lock.withLock {
            defer { outcome = nil }
            return outcome
        }
    }

    /// Whether the handshake has started (connected), whether the payload
    /// is coming in, and how many bytes of it came.
    var progress: (handshaking: Bool, transferring: Bool, received: Int) {
        lock.withLock { (handshaking, transferring, received) }
    }

    /// The link is gone: the thread's socket is closed when it ends.
    func abandon() {
        lock.withLock {
            abandoned = true
            if let fd = outcome?.socket { Glibc.close(fd) }
            outcome = nil
        }
    }

    private static func run(_ settings: Settings, progress: (Int) -> Void) -> Outcome {
        let timeout = settings.timeoutMilliseconds
        guard let socket = SyncSocket.connect(host: settings.host, port: settings.port, timeout: timeout,
                                              source: settings.sourceAddress) else {
            return .failed("Error condition on socket for SYNC: Connection refused")
        }
        progress(-1)
        func command(_ words: String...) -> String? {
            var request: [UInt8] = []
            RESPEncoder.bulkArray(words.map { Array($0.utf8) }, into: &request)
            guard socket.write(request, timeout: timeout), let line = socket.readLine(timeout: timeout) else { return nil }
            return String(decoding: line, as: UTF8.self)
        }
        guard let pong = command("PING") else { return .failed("Timeout connecting to the MASTER...") }
        // As Redis: an authentication error to PING is fine (AUTH follows).
        if pong.hasPrefix("-") && !pong.hasPrefix("-NOAUTH") && !pong.hasPrefix("-NOPERM")
            && !pong.hasPrefix("-ERR operation not permitted") {
            return .failed("Error reply to PING from master: '\(pong)'")
        }
        if !settings.password.isEmpty {
            let reply = settings.user.isEmpty ? command("AUTH", settings.password)
                : command("AUTH", settings.user, settings.password)
            guard let reply, reply.hasPrefix("+") else {
                return .failed("Unable to AUTH to MASTER: \(reply ?? "timeout")")
            }
        }
        guard command("REPLCONF", "listening-port", String(settings.listeningPort)) != nil,
              command("REPLCONF", "capa", "eof", "capa", "psync2") != nil else {
            return .failed("Timeout during the handshake with the MASTER")
        }
        var replicationID: String?
        var offset = 0
        let resume = settings.resume
        guard var psync = command("PSYNC", resume?.id ?? "?", resume.map { String($0.offset) } ?? "-1") else {
            return .failed("Timeout reading the PSYNC reply")
        }
        // A master keeps the link alive with newlines until it answers
        // (a diskless one waits repl-diskless-sync-delay first).
        while psync.isEmpty {
            guard let line = socket.readLine(timeout: timeout) else { return .failed("Timeout reading the PSYNC reply") }
            psync = String(decoding: line, as: UTF8.self)
        }
        if psync.hasPrefix("+CONTINUE"), resume != nil {
            let words = psync.split(separator: " ")
            let (fd, buffered) = socket.detach()
            return .continued(fd: fd, buffered: buffered, replicationID: words.count >= 2 ? String(words[1]) : nil)
        }
        if psync.hasPrefix("+FULLRESYNC") {
            let words = psync.split(separator: " ")
            if words.count >= 3 {
                replicationID = String(words[1])
                offset = Int(words[2]) ?? 0
            }
        } else if psync.hasPrefix("-NOMASTERLINK") || psync.hasPrefix("-LOADING") {
            return .failed("Master is currently unable to PSYNC but should be in the future: \(psync)")
        } else if psync.hasPrefix("-") {
            // A master that knows no PSYNC: SYNC, whose reply is the payload.
            var request: [UInt8] = []
            RESPEncoder.bulkArray([Array("SYNC".utf8)], into: &request)
            guard socket.write(request, timeout: timeout) else { return .failed("Timeout sending SYNC") }
        } else {
            return .failed("Unexpected reply to PSYNC from master: \(psync)")
        }
        // The payload's header, after the newlines a master sends while it
        // prepares the RDB.
        var header: [UInt8] = []
        while header.isEmpty {
            guard let line = socket.readLine(timeout: timeout) else { return .failed("Timeout receiving bulk data from MASTER") }
            header = line
        }
        guard header.first == UInt8(ascii: "$") else {
            return .failed("Bad protocol from MASTER, the first byte is not '$': \(String(decoding: header, as: UTF8.self))")
        }
        progress(0)
        let rdb: [UInt8]?
        if header.count == 45 && header[1...4].elementsEqual("EOF:".utf8) {
            rdb = socket.read(until: Array(header[5...]), timeout: timeout, progress: progress)
        } else {
            guard let size = Int(String(decoding: header.dropFirst(), as: UTF8.self)), size >= 0 else {
                return .failed("Bad payload size from MASTER: \(String(decoding: header, as: UTF8.self))")
            }
            rdb = socket.read(count: size, timeout: timeout)
        }
        guard let rdb else { return .failed("I/O error trying to sync with MASTER: connection lost") }
        let (fd, buffered) = socket.detach()
        return .synced(fd: fd, rdb: rdb, buffered: buffered, replicationID: replicationID, offset: offset)
    }
}

extension Server {
    /// The master's address when this server is a replica.
    var masterAddress: (host: String, port: Int)? { replicaLink.map { ($0.host, $0.port) } }

    /// REPLICAOF host port: this server becomes a replica of that master
    /// (its feeds are closed, as Redis disconnects its sub-replicas so they
    /// resynchronize); the data is replaced once the master's RDB comes.
    func replicate(from host: String, port: Int) {
        stopReplicating()
        for replica in openReplicas { close(replica) }
        // Clients blocked on keys of a master would wait for writes that now
        // come from elsewhere (Redis's disconnectAllBlockedClients; a client
        // held by CLIENT PAUSE is not blocked on anything).
        for case let client? in connections where client.blocked != nil {
            client.replyError(ReplyError("UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"))
            unblock(client)
            client.closeAfterReply = true
            queueReplies(client)
        }
        replicaLink = ReplicaLink(host: host, port: port, now: Self.nowMilliseconds())
        config.replicaOf = ReplicaOf(host: host, port: port)
        holdExpiryIfNeeded()
        logger.notice("Connecting to MASTER \(host):\(port)")
        replicaCron(now: Self.nowMilliseconds())
    }

    /// REPLICAOF NO ONE: the link goes; the data stays, and the stream
    /// offset goes on from what was applied, under a new replication id
    /// (Redis's shiftReplicationId).
    func stopReplicating() {
        guard let link = replicaLink else { return }
        replicaLink = nil
        config.replicaOf = nil
        replicaWrittenKeys.removeAll()
        holdExpiryIfNeeded()
        // The feeds followed the master's stream: the next op selects anew.
        replication.selected = nil
        link.sync?.abandon()
        if let master = link.connection { close(master) }
        previousReplicationID = replicationID
        secondReplicationOffset = link.offset + 1
        replicationID = Self.randomID()
        replication.offset = link.offset
        logger.notice("MASTER MODE enabled")
    }

    /// The link's periodic work (Redis's replicationCron, each cron): start
    /// an attempt that is due, take a finished one, send the ACK each
    /// second, and drop a master silent for `repl-timeout`.
    func replicaCron(now: Int64) {
        guard let link = replicaLink else { return }
        switch link.state {
        case .connect:
            guard now >= link.nextAttempt else { return }
            link.state = .connecting
            link.sync = MasterSync(MasterSync.Settings(
                host: link.host, port: link.port, listeningPort: config.port,
                user: config.acceptedSettings["masteruser"] ?? "", password: config.acceptedSettings["masterauth"] ?? "",
                timeoutMilliseconds: replicationTimeout, sourceAddress: config.acceptedSettings["bind-source-addr"] ?? "",
                resume: link.resumeCache != nil ? (replicationID, link.offset + 1) : nil))
            logger.notice("MASTER <-> REPLICA sync started")
        case .connecting:
            guard let outcome = link.sync?.take() else { return }
            link.sync = nil
            switch outcome {
            case .failed(let reason):
                logger.warning(reason)
                retryLater(link, now: now)
            case .synced(let fd, let rdb, let buffered, let id, let offset):
                finishSync(link, fd: fd, rdb: rdb, buffered: buffered, replicationID: id, offset: offset, now: now)
            case .continued(let fd, let buffered, let id):
                continueSync(link, fd: fd, buffered: buffered, replicationID: id, now: now)
            }
        case .connected:
            if now - link.lastIO > Int64(replicationTimeout), let master = link.connection {
                logger.warning("MASTER timeout: no data nor PING received...")
                close(master)
                return
            }
            if now - link.lastAck >= 1000 { sendAck(link, now: now) }
        }
    }

    /// A failed attempt: the next one a second from now (the master's
    /// socket, when the attempt had one, closed).
    private func retryLater(_ link: ReplicaLink, now: Int64, closing fd: Int32? = nil) {
        if let fd { Posix.close(fd) }
        link.state = .connect
        link.nextAttempt = now + 1000
    }

    private var replicationTimeout: Int { (Int(config.acceptedSettings["repl-timeout"] ?? "") ?? 60) * 1000 }

    /// Loads the master's RDB and adopts its socket as the master's client.
    private func finishSync(_ link: ReplicaLink, fd: Int32, rdb: [UInt8], buffered: [UInt8], replicationID id: String?,
                            offset: Int, now: Int64) {
        logger.notice("MASTER <-> REPLICA sync: receiving \(rdb.count) bytes from master")
        var streamDatabase: Int?
        do {
            let file = try RDBFile(rdb, limits: config.encodingLimits, checksum: true)
            streamDatabase = file.streamDatabase
            // Feeds of the data being replaced resynchronize (Redis's disconnectSlaves).
            for replica in openReplicas { close(replica) }
            logger.notice("MASTER <-> REPLICA sync: Flushing old data")
            let (loaded, _) = try importRDB(file, source: "the master's RDB")
            logger.notice("MASTER <-> REPLICA sync: Loading DB in memory (\(loaded) keys)")
        } catch {
            let text = (error as? RDBFile.Failure)?.lines.joined(separator: "; ") ?? "\(error)"
            logger.warning("Failed trying to load the MASTER synchronization DB from socket: \(text)")
            retryLater(link, now: now, closing: fd)
            return
        }
        let cache: OpenCache
        do {
            // The stream goes on in the database its source had selected.
            if let index = streamDatabase, index >= 0, index < config.databases {
                cache = try registry.cache(named: "db\(index)")
            } else {
                cache = try registry.firstCache()
            }
        } catch {
            logger.warning("Cannot open db0 for the master's client: \(error.text)")
            retryLater(link, now: now, closing: fd)
            return
        }
        if let id { self.replicationID = id }
        // The stream's offsets go on from the master's, into a new backlog.
        link.offset = offset
        replication.offset = offset
        replication.backlog = ReplicationBacklog(after: offset, capacity: backlogSize)
        adoptMaster(link, fd: fd, cache: cache, buffered: buffered, now: now)
        logger.notice("MASTER <-> REPLICA sync: Finished with success")
    }

    /// +CONTINUE: the data stays, and the stream goes on from where the lost
    /// link left it, in the database it had selected (Redis's
    /// replicationResurrectCachedMaster). A new replid shifts the old one to
    /// replid2, as Redis's.
    private func continueSync(_ link: ReplicaLink, fd: Int32, buffered: [UInt8], replicationID id: String?, now: Int64) {
        logger.notice("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.")
        if let id, id != replicationID {
            logger.notice("Master replication ID changed to \(id)")
            previousReplicationID = replicationID
            secondReplicationOffset = link.offset + 1
            replicationID = id
        }
        let cache = link.resumeCache ?? (try? registry.firstCache())
        guard let cache else {
            retryLater(link, now: now, closing: fd)
            return
        }
        adoptMaster(link, fd: fd, cache: cache, buffered: buffered, now: now)
        logger.notice("Successful partial resynchronization with master.")
    }

    /// The master's socket becomes the master's client, in `cache`; what
    /// came after the handshake is applied at once.
    private func adoptMaster(_ link: ReplicaLink, fd: Int32, cache: OpenCache, buffered: [UInt8], now: Int64) {
        generation = generation == 0x7fff_ffff ? 1 : generation + 1
        let token = UInt64(generation) << 32 | UInt64(UInt32(fd))
        let master = Connection(id: nextClientID, fd: fd, token: token, peer: Posix.peerAddress(fd),
                                local: Posix.localAddress(fd)?.description ?? "", cache: cache, limits: requestLimits, now: now)
        nextClientID += 1
        master.isMaster = true
        master.replyOff = true
        master.user = nil
        master.authenticated = true
        master.parser.limits.unauthenticated = false
        guard register(master) else {
            retryLater(link, now: now)
            return
        }
        link.connection = master
        link.resumeCache = nil
        link.heldStream = []
        link.state = .connected
        link.lastIO = now
        // The first ACK at once: a diskless master starts the stream on it.
        sendAck(link, now: now)
        if !buffered.isEmpty {
            master.input.append(buffered)
            executeBuffered(master)
        }
    }

    /// REPLCONF ACK <offset> to the master.
    func sendAck(_ link: ReplicaLink, now: Int64) {
        guard let master = link.connection, !master.closed else { return }
        link.lastAck = now
        RESPEncoder.bulkArray([Array("REPLCONF".utf8), Array("ACK".utf8), Array(String(link.offset).utf8)],
                              into: &master.output)
        queueReplies(master)
    }

    /// The master's client closed: the link is down, retried at the next cron.
    func masterLost(_ connection: Connection) {
        guard let link = replicaLink, link.connection === connection else { return }
        logger.notice("Connection with master lost.")
        logger.notice("Caching the disconnected master state.")
        link.resumeCache = connection.cache
        link.heldStream = []
        link.connection = nil
        link.state = .connect
        link.downSince = Self.nowMilliseconds()
        link.nextAttempt = 0
    }

    // MARK: Expiry on a replica

    /// A replica's keys expire by its master's DELs: a read finds an expired
    /// key absent but leaves it (Redis's expireIfNeeded with a master), as
    /// during CLIENT PAUSE. The hold is on while either is.
    func holdExpiryIfNeeded() {
        registry.accessTracking.expiryHeld = replicaLink != nil || pauseType != .off || shutdownDeadline != 0
    }

    /// A client's write on a writable replica: its keys are watched, so those
    /// it gave a time to live expire here (Redis's rememberSlaveKeyWithExpire).
    func rememberReplicaWrittenKeys(_ command: Command, _ args: Arguments, in cache: OpenCache) {
        command.aclEntry.keys.forEachKey(args) { index, need in
            if need.contains(.write) { replicaWrittenKeys.insert(CacheKey(cache: cache.name, key: args.bytes(index))) }
            return true
        }
    }

    /// Redis's expireSlaveKeys (each cron on a replica): the keys clients
    /// wrote here that have expired go; those without a time to live, or
    /// gone, are no longer watched.
    func expireReplicaWrittenKeys() {
        for id in replicaWrittenKeys {
            let cache = registry.open[id.cache]
            let expiresAt = cache.flatMap { cache in try? Keyspace(server: self, cache: cache).removeIfExpired(id.key) }
            if expiresAt == nil { replicaWrittenKeys.remove(id) }
        }
    }

    /// Whether this is a read-only replica (`replica-read-only yes`, the
    /// default) and `connection` is not its master.
    func refusesWrites(of connection: Connection) -> Bool {
        replicaLink != nil && !connection.isMaster && config.acceptedSettings["replica-read-only"] != "no"
    }

    /// Whether a client's write is refused on a read-only replica (Redis's
    /// processCommand: a write command or a script declared as writing, or
    /// an EXEC whose queue holds one; never the master's own).
    func refusedOnReadOnlyReplica(_ command: Command, _ connection: Connection, _ args: Arguments) -> Bool {
        guard refusesWrites(of: connection) else { return false }
        return writes(command, args) || (command.isExec && queuedWrites(connection))
    }

    /// Whether the link to the master is down and `replica-serve-stale-data
    /// no`: clients may then run only what Redis flags `stale`.
    var servesNoStaleData: Bool {
        guard let link = replicaLink, link.state != .connected else { return false }
        return config.acceptedSettings["replica-serve-stale-data"] == "no"
    }

    /// Whether a client's call gets -MASTERDOWN (Redis's processCommand): the
    /// link is down, replica-serve-stale-data is no and the call is not
    /// flagged `stale` (a script's own flags count: allow-stale), or an
    /// EXEC queues one that is not.
    func refusedAsStale(_ command: Command, _ connection: Connection, _ args: Arguments) -> Bool {
        guard servesNoStaleData, !connection.isMaster else { return false }
        func allowed(_ command: Command, _ args: Arguments) -> Bool {
            if ["eval", "evalsha", "fcall"].contains(command.name),
               let flags = scripting.declaredFlags(command.name, args), !flags.contains(.evalCompat) {
                return flags.contains(.allowStale)
            }
            return RedisCommandFlags.flags(of: command, name: args[0], subcommand: args.count >= 2 ? args[1] : nil)
                .contains("stale")
        }
        if !allowed(command, args) { return true }
        guard command.isExec, let queued = connection.transaction else { return false }
        return queued.commands.contains { call in
            guard let queuedCommand = commands.lookup(call[0]) else { return false }
            return Arguments.withCopy(of: call) { !allowed(queuedCommand, $0) }
        }
    }

    /// INFO replication's lines for a replica, before `connected_slaves`.
    func replicaRoleInfoLines(_ link: ReplicaLink) -> [String] {
        let now = Self.nowMilliseconds()
        var lines = [
            "role:slave",
            "master_host:\(link.host)",
            "master_port:\(link.port)",
            "master_link_status:\(link.state == .connected ? "up" : "down")",
            "master_last_io_seconds_ago:\(link.state == .connected ? (now - link.lastIO) / 1000 : -1)",
        ]
        let progress = link.sync?.progress
        if let progress, progress.transferring {
            lines += ["master_sync_in_progress:1", "master_sync_total_bytes:-1",
                      "master_sync_read_bytes:\(progress.received)", "master_sync_left_bytes:-1",
                      "master_sync_perc:0.00", "master_sync_last_io_seconds_ago:0"]
        } else {
            lines.append("master_sync_in_progress:0")
        }
        lines += ["slave_read_repl_offset:\(link.offset)", "slave_repl_offset:\(link.offset)"]
        if link.state != .connected { lines.append("master_link_down_since_seconds:\((now - link.downSince) / 1000)") }
        lines += [
            "slave_priority:\(config.acceptedSettings["replica-priority"] ?? "100")",
            "slave_read_only:\(config.acceptedSettings["replica-read-only"] == "no" ? 0 : 1)",
            "replica_announced:1",
        ]
        return lines
    }

    /// ROLE's state word for the link.
    func roleState(_ link: ReplicaLink) -> String {
        switch link.state {
        case .connect: return "connect"
        case .connecting:
            // Redis's states: connected and in the handshake, then receiving the RDB.
            guard let progress = link.sync?.progress else { return "connecting" }
            return progress.transferring ? "sync" : progress.handshaking ? "handshake" : "connecting"
        case .connected: return "connected"
        }
    }
}
