import RESP

/// One client: its socket, parse state, pending replies and session state.
final class Connection {
    let id: Int64
    let fd: Int32
    /// The epoll token: descriptor in the low half, generation in the high half.
    let token: UInt64
    let peer: String
    let peerIsLoopback: Bool
    let local: String
    let createdAt: Int64

    var parser: RequestParser
    let input = ReadBuffer()
    /// Replies not yet sent: bytes `[outputSent, output.count)`.
    var output: [UInt8] = []
    var outputSent = 0

    var cache: OpenCache
    var name: [UInt8] = []
    var lastInteraction: Int64
    var lastCommand = "NULL"
    var protocolVersion = 2
    /// An open MULTI, and the keys WATCH recorded.
    var transaction: Transaction?
    /// The keys WATCH recorded, and whether one changed since (Redis's CLIENT_DIRTY_CAS).
    var watched: [WatchedKey] = []
    var dirtyCAS = false
    /// What the client is blocked on (BLPOP and the like), if it is.
    var blocked: BlockState?
    /// A command held while clients are paused (CLIENT PAUSE).
    var postponed: [[UInt8]]?
    /// CLIENT NO-EVICT: kept out of client eviction (there is none here; the flag shows in CLIENT LIST).
    var noEvict = false
    /// Whether the client ran MONITOR.
    var isMonitor = false
    /// Whether the client ran SYNC/PSYNC: it is a feed of the replication
    /// stream (Server/ReplicationFeed.swift), and the port REPLCONF
    /// listening-port gave.
    var isReplica = false
    var replicaListeningPort = 0
    /// Whether this is the master's client on a replica (Server/ReplicaLink.swift):
    /// its commands are obeyed (no ACL, read-only or maxmemory refusal) and
    /// its replies dropped.
    var isMaster = false
    /// The replication offset right after this client's last write that
    /// reached the stream (Redis's woff): what WAIT waits for.
    var writeOffset = 0
    /// The offset its last REPLCONF ACK gave (ROLE's third field of a
    /// replica), and when that ACK came (ms; SYNC sets it first): INFO's
    /// `lag` is the seconds since, as Redis's repl_ack_time.
    var replicaAckOffset = 0
    var replicaAckTime: Int64 = 0
    /// Its Pub/Sub channels, patterns and shard channels (Server/PubSub.swift).
    var subscriptions = Subscriptions()
    /// CLIENT TRACKING's state while it is on (Server/Tracking.swift).
    var tracking: ClientTracking?
    /// CLIENT REPLY OFF, and SKIP (the next command's reply is dropped).
    var replyOff = false
    var replySkipNext = false
    /// The running command's reply is being skipped (CLIENT REPLY ON stops it).
    var replySkipping = false
    /// Nesting of commands whose replies are being dropped; pushes made
    /// meanwhile wait in `heldPushes` and are kept.
    var silenced = 0
    var heldPushes: [UInt8] = []
    /// The TLS session of a client of the TLS port.
    var tls: TLSSession?
    /// Whether the client has passed AUTH (always true with no password set).
    var authenticated = true
    /// The ACL user it runs as (nil for the log's replay: every right).
    var user: ACLUser?
    /// EXEC is running its queued commands: an ACL refusal then has Redis's EXEC text.
    var runningExec = false
    /// The log position of the client's last write: under `appendfsync
    /// always` its replies wait until the log is fsynced that far.
    var awaitingLSN: UInt64 = 0
    /// A write waiting for room in the memtables, and since when (ms); the
    /// client's later requests wait behind it.
    var parked: (args: [[UInt8]], since: Int64)?
    /// What is parked waits for exact totals (`Server.waitsForTotals`), not for room.
    var parkedForTotals = false

    /// Reply, then close (QUIT, protocol errors, end of stream).
    var closeAfterReply = false
    var closed = false
    /// Taken off the poll set after an EOF, while its replies wait for the log's fsync.
    var unwatched = false
    /// Registered for EPOLLOUT because a write was short.
    var waitingToWrite = false
    /// Queued to have its replies sent at the end of the loop iteration.
    var queuedForReplies = false
    /// Since when unsent replies have been over the soft output limit (ms), or nil.
    var overSoftLimitSince: Int64?

    /// Redis's `multiStateMemOverhead`: the queued commands' arguments and
    /// entries, and the watched keys' entries.
    var multiMemory: Int {
        (transaction.map { $0.queuedBytes + $0.commands.count * 24 } ?? 0) + watched.count * 56
    }

    /// What the client holds, as Redis's `getClientMemoryUsage` counts it
    /// (CLIENT LIST's tot-mem; maxmemory and maxmemory-clients count it):
    /// its buffers, its MULTI state and watched keys, an entry per
    /// subscription and per BCAST prefix tracked (Redis's rax nodes).
    var memoryUsage: Int {
        input.allocated + output.capacity + multiMemory
            + (subscriptions.channels.count + subscriptions.patterns.count + subscriptions.shardChannels.count) * 32
            + (tracking?.prefixes.count ?? 0) * 48
    }

    /// Memory this client's unparsed input holds: bytes (an unfinished
    /// request's arguments among them: they stay in the buffer) plus a
    /// bookkeeping cost per argument, so many empty arguments are not free.
    var queryBufferCost: Int {
        input.count + parser.pendingArgumentCount * 32
    }

    init(id: Int64, fd: Int32, token: UInt64, peer: SocketAddress?, local: String, cache: OpenCache,
         limits: RequestLimits, now: Int64) {
        self.id = id
        self.fd = fd
        self.token = token
        self.peer = peer?.description ?? "?:0"
        self.peerIsLoopback = peer?.isLoopback ?? false
        self.local = local
        self.cache = cache
        self.parser = RequestParser(limits: limits)
        self.createdAt = now
        self.lastInteraction = now
    }

    var pendingOutput: Int { output.count - outputSent }

    /// The port of the listener it came through (`listener-user`).
    var localPort: Int { local.split(separator: ":").last.flatMap { Int($0) } ?? 0 }

    /// The client's address without its port (the failed-AUTH bound counts per address).
    var peerHost: String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }

    /// The `db=` field: the index for `db<n>`, the name otherwise.
    var databaseLabel: String {
        cache.databaseIndex.map(String.init) ?? cache.name
    }

    /// The size of Redis's per-client reply buffer (PROTO_REPLY_CHUNK_BYTES).
    static let replyBufferBytes = 16 * 1024

    /// A `CLIENT LIST`/`CLIENT INFO` line, in Redis's field order.
    func infoLine(now: Int64) -> String {
        let age = (now - createdAt) / 1000
        let idle = (now - lastInteraction) / 1000
        let nameText = String(decoding: name, as: UTF8.self)
        let events = waitingToWrite ? "rw" : "r"
        var flags = isMonitor ? "O" : isReplica ? "S" : ""
        if subscriptions.active { flags += "P" }
        if transaction != nil { flags += "x" }
        if blocked != nil || postponed != nil { flags += "b" }
        if let tracking {
            flags += "t"
            if tracking.brokenRedirect { flags += "R" }
            if tracking.bcast { flags += "B" }
        }
        if dirtyCAS { flags += "d" }
        if noEvict { flags += "e" }
        if flags.isEmpty { flags = "N" }
        let multi = transaction.map { $0.commands.count } ?? -1
        // Redis's output is a 16 KB buffer (obl: its bytes) and a list of
        // blocks past it (oll: how many, omem: their bytes); the pending
        // bytes are shown the same way.
        let pending = pendingOutput
        let beyond = max(0, pending - Self.replyBufferBytes)
        let blocks = (beyond + Self.replyBufferBytes - 1) / Self.replyBufferBytes
        return "id=\(id) addr=\(peer) laddr=\(local) fd=\(fd) name=\(nameText) age=\(age) idle=\(idle) flags=\(flags) "
            + "db=\(databaseLabel) sub=\(subscriptions.channels.count) psub=\(subscriptions.patterns.count) ssub=\(subscriptions.shardChannels.count) multi=\(multi) qbuf=\(input.count) qbuf-free=\(input.allocated - input.count) "
            + "argv-mem=\(parser.pendingArgumentBytes) multi-mem=\(transaction?.queuedBytes ?? 0) rbs=\(input.allocated) rbp=\(input.allocated) "
            + "obl=\(pending - beyond) oll=\(blocks) omem=\(beyond) tot-mem=\(memoryUsage) "
            + "events=\(events) cmd=\(lastCommand) user=\(user?.name ?? "default") redir=\(tracking.map { $0.redirect } ?? -1) resp=\(protocolVersion)"
    }
}
