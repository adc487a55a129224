#if canImport(Glibc)
import Glibc
#endif
import CLinux
import CThreadClock
import RESP
import SQLiteKVCache

/// The server: one thread running an epoll loop over the listening sockets,
/// the clients, a signalfd and the wake-ups of its background threads. Each
/// loop iteration reads what is ready, runs the complete commands (their
/// changes go to the caches' memtables and records of the append-only
/// log), writes the log, and only then sends the replies: a write is
/// acknowledged once its record is in the log (and fsynced, under
/// `appendfsync always`). The writer thread applies the changes to SQLite
/// in batches (`Persistence`).
public final class Server {
    public static let version = "0.1.0"
    /// The Redis version whose behaviour this server follows.
    public static let redisVersion = "7.0.15"

    // MARK: Settings and identity

    var config: ServerConfig
    let logger: Logger
    let startedAt: Int64
    /// A random 40-hex-digit id for INFO replication, as Redis makes one per start.
    var replicationID = Server.randomID()
    /// The replication id before the last promotion (INFO's `master_replid2`)
    /// and the offset from which the current one holds (`second_repl_offset`).
    var previousReplicationID = String(repeating: "0", count: 40)
    var secondReplicationOffset = -1
    /// The link to the master when this server is a replica (REPLICAOF).
    var replicaLink: ReplicaLink?
    /// INFO's run_id: random at each start, as Redis's (tools tell a restart by it).
    let runID = Server.randomID()
    /// 40 random hex digits, as Redis's run ids and replication ids.
    static func randomID() -> String { (0..<40).map { _ in String("0123456789abcdef".randomElement()!) }.joined() }

    // MARK: The loop

    let epoll: Epoll
    let signals: SignalSource
    var running = true
    var lastCron: Int64 = 0
    /// Set when the last sweep or eviction step left work: poll instead of sleeping.
    var backgroundWorkPending = false
    static let signalToken: UInt64 = 1 << 63
    static let wakeToken: UInt64 = (1 << 63) | 1
    static let listenerTokenBase: UInt64 = (1 << 63) | (1 << 62)

    // MARK: Clients (Server+Clients)

    var listeners: [(fd: Int32, address: SocketAddress, tls: Bool)] = []
    let tlsContext: TLSContext?
    /// TLS clients whose session holds decrypted bytes the socket will not signal.
    var tlsReadAgain: [Connection] = []
    /// Clients by descriptor.
    var connections: [Connection?] = []
    var clientCount = 0
    var nextClientID: Int64 = 1
    var generation: UInt32 = 0
    /// Accepting is paused (descriptors ran out) until this time.
    var listenersPausedUntil: Int64?
    var lastAcceptWarning: Int64 = 0
    /// Milliseconds a client of the TLS port may take to finish its handshake.
    static let handshakeTimeout: Int64 = 10_000

    // MARK: Running commands (Server+Execution)

    let commands: CommandTable
    /// The command a request named last, by packed name: a pipeline of one
    /// command (the common case) finds it without the table's hash lookup.
    /// The table never changes after start-up, so this never goes stale.
    var recentCommand: (name: PackedCommandName, command: Command)?
    /// The keys of the pipelined GETs and SETs a read buffer holds, looked
    /// up ahead (`prefetchKeys`); kept to reuse its storage.
    var keysAhead: [UnsafeRawBufferPointer] = []
    /// The free room a read asks of a client's buffer: Redis's
    /// PROTO_IOBUF_LEN, so an idle client holds about what Redis's does
    /// (maxmemory and maxmemory-clients count it); a big argument gets its
    /// whole room at once (`bigArgument`).
    static let readChunk = 16 * 1024
    /// Redis's PROTO_MBULK_BIG_ARG: an argument this long gets its room at once.
    static let bigArgument = 32 * 1024
    /// Clients whose write waits for room in the memtables.
    var parked: [Connection] = []
    /// Whether a count may be parked for exact totals (false while a parked one resumes).
    var parkingCounts = true
    /// The connection the log's command records are replayed on.
    var replayConnection: Connection?
    /// Whether the running command may take more room (Redis's `denyoom`).
    var runningCommandMayGrow = false
    /// Whether the top-level command found the server over maxmemory (Redis's
    /// pre_command_oom_state): a script's first write is then refused.
    var preCommandOutOfMemory = false
    /// How deep the running command is (EXEC's commands run at depth 2).
    var commandDepth = 0
    /// When the last top-level command of the batch being run ended
    /// (microseconds since 1970): the next command of the same batch starts
    /// then, so a pipelined command reads the clock once, not twice. Nil
    /// outside `executeBuffered` and before its first command.
    var batchClock: Int?
    /// Whether `executeBuffered` is running a batch (see `batchClock`).
    var batching = false
    /// Above 0 while blocking commands must not block (inside EXEC).
    var denyBlocking = 0

    // MARK: Blocked clients (Server+Blocking)

    /// Clients blocked on each key, in the order they blocked.
    var blockedByKey: [CacheKey: [Connection]] = [:]
    var blockedCount = 0
    /// Blocked clients' deadlines, soonest first (stale entries skipped).
    var blockDeadlines = DeadlineHeap()
    /// Keys a change readied, to serve when the running command ends.
    var readyKeys: [CacheKey] = []
    var readyKeySet: Set<CacheKey> = []
    var servingReadyKeys = false
    /// Clients served or timed out whose buffered requests wait to run.
    var unblockedClients: [Connection] = []
    /// The clients blocked in WAIT, served as REPLCONF ACKs come.
    var waitingForAcks: [Connection] = []
    /// A WAIT blocked this iteration: the feeds are asked for an ACK before the loop sleeps.
    var acksWanted = false

    // MARK: maxmemory (Server+MaxMemory)

    /// What clients' buffers held at the last count (cron).
    var clientBufferBytes = 0
    /// When a shutdown waiting for replicas goes on regardless
    /// (milliseconds since 1970; 0: none waits).
    var shutdownDeadline: Int64 = 0
    /// The keys clients wrote on a writable replica, watched for their
    /// expiry (Redis's slaveKeysWithExpire).
    var replicaWrittenKeys: Set<CacheKey> = []
    /// The SHUTDOWN clients blocked while it waits.
    var shutdownWaiters: [Connection] = []
    /// What replica feeds hold (INFO's mem_clients_slaves): not counted
    /// against maxmemory, as Redis's freeMemoryGetNotCountedMemory.
    var replicaBufferBytes = 0
    /// maxmemory-clients in bytes (0: no client eviction), kept as the
    /// configuration changes (see `evictClientsIfNeeded`).
    var clientEvictionLimit = 0
    var openedAllForMaxMemory = false
    /// A command stopped evicting at its time budget; the loop goes on.
    var maxMemoryEvictionPending = false
    /// The best eviction candidates sampled so far (Redis's EVPOOL).
    var evictionPool: [EvictionCandidate] = []
    /// Random picks that need no secrecy (eviction's pick of a cache,
    /// SRANDMEMBER, SPOP, HRANDFIELD, ZRANDMEMBER): xorshift, as Redis's
    /// `random()`; the system generator is a `getrandom(2)` per draw.
    var random = FastRandom(seed: UInt64.random(in: 1...UInt64.max))

    // MARK: CLIENT PAUSE (Server+Pause)

    var pauseType = PauseType.off
    var pauseEnd: Int64 = 0
    var postponedClients: [Connection] = []

    // MARK: WATCH (TransactionCommands)

    /// Clients watching each key.
    var watchers: [CacheKey: [Connection]] = [:]

    /// Clients in MONITOR mode, fed every command others run.
    var monitors: [Connection] = []
    /// The replication stream's feeds (SYNC) and what the running command
    /// propagates (Server/ReplicationFeed.swift).
    let replication = ReplicationFeed()
    /// Whether a feed is attached: the one check a command pays otherwise.
    var replicationFeeding = false
    /// Pub/Sub's channels and patterns (Server/PubSub.swift).
    let pubsub = PubSub()
    /// Client-side caching's tables (Server/Tracking.swift).
    let tracking = Tracking()
    /// The keyspace events of the running command, published when it ends
    /// (Keyspace/KeyspaceEvents.swift).
    var pendingKeyspaceEvents: [KeyspaceEvent] = []
    /// The command whose changes are being named, while it runs.
    var eventSource: EventSource?
    var slowlog = SlowLog()

    // MARK: Scripting (Scripting/)

    /// EVAL's and FUNCTION's interpreters, the script cache, the libraries.
    lazy var scripting = Scripting(server: self)
    /// A script running past busy-reply-threshold: other clients get -BUSY.
    var busyScript: ScriptRun?
    /// Set while a busy script's hook serves the other clients.
    var processingWhileBusy = false

    // MARK: Caches and persistence (Server+Persistence)

    let registry: CacheRegistry
    /// The append-only log, the writer thread and the seals.
    var persistence: Persistence!

    // MARK: Replies (Server+Replies)

    /// Clients with replies to send at the end of the iteration.
    var clientsWithReplies: [Connection] = []
    /// Clients whose replies wait for the log's fsync (`appendfsync always`).
    var heldForSync: [Connection] = []

    // MARK: Background work (Server+PeriodicWork)

    /// DEBUG SET-ACTIVE-EXPIRE: whether expired keys are swept in the background.
    var activeExpire = true
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION: RESTORE takes a payload whatever
    /// its CRC (Redis's tests of corrupt payloads use it); its version and
    /// contents are still checked.
    var skipChecksumValidation = false
    /// DEBUG PAUSE-CRON: the cron's work is skipped while set.
    var cronPaused = false
    static let sweepBatch = 32
    /// Entries one step of background eviction removes at most.
    static let evictionBatch = 256
    /// Time the expiry sweep may take per loop iteration.
    static let sweepBudgetMicroseconds = 1000

    // MARK: Statistics (ServerStats, Server+Info)

    var stats = ServerStats()
    /// ACL users, ACL LOG, failed-AUTH counts (ACL/ACLRegistry.swift).
    let acl = ACLRegistry()
    /// LATENCY's events (Latency/).
    let latency = LatencyMonitor()
    /// The largest RSS INFO has seen.
    var peakMemory = 0
    /// What malloc had handed out when the loop started (MEMORY STATS's
    /// `startup.allocated`).
    var startupMemory = 0
    /// The most malloc has handed out, as MEMORY STATS has seen it.
    var peakAllocated = 0
    /// `rejoin-policy expire`'s pass over what the caches held at start-up,
    /// while it runs; then how many keys it capped and deleted.
    var rejoin: RejoinPass?
    var rejoinFinished: (capped: Int, deleted: Int)?
    /// Samples of total_commands_processed for instantaneous_ops_per_sec.
    var opsSamples: [(time: Int64, commands: Int)] = []
    /// The most the key tables held since the heap was last trimmed, and when that was (`trimHeapIfShrunk`).
    var heapHighWater = 0
    var memtableHighWater = 0
    var lastHeapTrim: Int64 = 0
    /// A trim is owed once more after the last one (`trimHeapIfShrunk`).
    var heapTrimFollowUp = false

    // MARK: Set-up

    /// Binds the listening sockets and prepares the loop; no client is served until `run()`.
    /// - Throws: `ConfigError` or `SystemError` with a message fit for the user.
    public init(config: ServerConfig, logger: Logger) throws {
        self.config = config
        clientEvictionLimit = Self.clientEvictionLimit(config)
        self.logger = logger
        self.startedAt = Server.nowMilliseconds()
        SignalSource.ignoreBrokenPipe()
        self.config.maxClients = fitDescriptorLimit(config, logger: logger)
        signals = try SignalSource(signals: [SIGTERM, SIGINT])
        epoll = try Epoll()
        umask(0o077)  // cache files, lock files and logs: owner only
        registry = try CacheRegistry(config: config, logger: logger)
        commands = try CommandTable.standard.withOwnCounters().renamed(config.renamedCommands)
        if let old = config.deprecatedDurability {
            logger.warning("'durability \(old)' is deprecated: it now means 'appendonly \(config.appendOnly ? "yes" : "no")'; "
                + "use appendonly and appendfsync")
        }
        slowlog.threshold = config.slowlogSlowerThan
        slowlog.maxLength = config.slowlogMaxLength
        latency.threshold = config.latencyMonitorThreshold
        registry.latency = latency
        if config.tlsPort != 0 {
            guard !config.tlsCertFile.isEmpty, !config.tlsKeyFile.isEmpty else {
                throw ConfigError("tls-port needs tls-cert-file and tls-key-file")
            }
            tlsContext = try TLSContext(
                certificateFile: config.tlsCertFile, keyFile: config.tlsKeyFile, caCertificateFile: config.tlsCACertFile,
                clientAuth: TLSContext.ClientAuth(rawValue: config.tlsAuthClients) ?? .yes)
        } else {
            tlsContext = nil
        }
        try epoll.add(signals.fd, token: Self.signalToken, interest: .readable)
        persistence = try Persistence(server: self, config: config)
        registry.onOpen = { [unowned self] engine in persistence.cacheOpened(engine) }
        registry.onEngineEvent = { [unowned self] cache, event in
            switch event {
            case .expired(let key):
                keyChanged(.expired, key, in: cache)
                // An XREADGROUP client blocked on an expired stream is answered.
                if blockedCount > 0 { signalKeyAsReady(cache.name, key) }
                if replicationFeeding { propagateDeletion(key, in: cache, lazy: config.lazyFree["lazyfree-lazy-expire"] ?? false) }
            case .evicted(let key):
                keyChanged(.evicted, key, in: cache)
                if blockedCount > 0 { signalKeyAsReady(cache.name, key) }
                if replicationFeeding { propagateDeletion(key, in: cache, lazy: config.lazyFree["lazyfree-lazy-eviction"] ?? false) }
            default: break
            }
        }
        try epoll.add(persistence.wakeFD, token: Self.wakeToken, interest: .readable)
        // Users before the listeners: a configuration whose users are refused
        // stops the start before any client can connect.
        try loadUsersAtStartup()
        listeners = try openListeners(on: config.bind)
        for (index, listener) in listeners.enumerated() {
            try epoll.add(listener.fd, token: Self.listenerTokenBase | UInt64(index), interest: .readable)
        }
        guard !listeners.isEmpty || config.port == 0 && config.tlsPort == 0 else {
            throw ConfigError("nothing to listen on")
        }
    }

    /// The addresses actually listened on (port 0 in a bind picks a free port).
    public var listeningAddresses: [String] { listeners.map { $0.address.description + ($0.tls ? " (TLS)" : "") } }

    /// The time a replayed command sees: the time its record was written,
    /// so it decides what had expired as it did then. Per thread (the
    /// loop's), as `commandTime`.
    static var clockOverride: Int64? {
        get {
            let value = kv_clock_override_get()
            return value == 0 ? nil : value
        }
        set { kv_clock_override_set(newValue ?? 0) }
    }

    /// When the running top-level command started (milliseconds since
    /// 1970), or nil between commands: the time its keys are judged by
    /// (Redis 7.0's cached `mstime` while `fixed_time_expire` is set), so a
    /// command reads the clock once for every key it touches. Per thread:
    /// the loop's, so servers side by side in one process (the tests) and
    /// other threads (the writer) never see another loop's command.
    static var commandTime: Int64? {
        get {
            let value = kv_command_time_get()
            return value == 0 ? nil : value
        }
        set { kv_command_time_set(newValue ?? 0) }
    }

    /// The time expiry and access stamps use: a replayed record's time, else
    /// the running command's start, else now.
    static func keyTime() -> Int64 {
        if let clockOverride { return clockOverride }
        if let commandTime { return commandTime }
        return nowMilliseconds()
    }

    static func nowMilliseconds() -> Int64 {
        if let clockOverride { return clockOverride }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// Microseconds since 1970 (the wall clock, as Redis's ustime()).
    static func realtimeMicroseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int(now.tv_sec) * 1_000_000 + Int(now.tv_nsec) / 1000
    }

    static func monotonicMicroseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int(now.tv_sec) * 1_000_000 + Int(now.tv_nsec) / 1000
    }

    /// Applies a changed configuration to the running server.
    func apply(_ newConfig: ServerConfig) throws {
        // First: the one change that can fail here leaves everything as it was.
        if newConfig.port != config.port {
            do {
                try rebindPlainPort(newConfig.port)
            } catch let error as ConfigError {
                throw ReplyError("ERR CONFIG SET failed (possibly related to argument 'port') - \(error.description)")
            }
        }
        if newConfig.bind != config.bind {
            do {
                try rebindAddresses(newConfig.bind)
            } catch let error as ConfigError {
                throw ReplyError("ERR CONFIG SET failed (possibly related to argument 'bind') - \(error.description)")
            }
        }
        if newConfig.appendOnly != config.appendOnly {
            try persistence.setAppendOnly(newConfig.appendOnly, config: newConfig)
        }
        if newConfig.maxMemory != config.maxMemory {
            openedAllForMaxMemory = false
            refreshClientBufferBytes()
        }
        if newConfig.maxMemoryPolicy != config.maxMemoryPolicy { evictionPool = [] }
        let passwordChanged = newConfig.requirePass != config.requirePass
        config = newConfig
        clientEvictionLimit = Self.clientEvictionLimit(newConfig)
        logger.level = newConfig.logLevel
        registry.apply(newConfig)
        slowlog.threshold = newConfig.slowlogSlowerThan
        slowlog.maxLength = newConfig.slowlogMaxLength
        latency.threshold = newConfig.latencyMonitorThreshold
        if passwordChanged { setDefaultPassword(newConfig.requirePass) }
        if acl.log.count > newConfig.aclLogMaxLen { acl.log.removeLast(acl.log.count - newConfig.aclLogMaxLen) }
        if newConfig.maxMemory > 0 && maxMemoryUsed > newConfig.maxMemory {
            // As Redis's startEvictionTimeProc: a lowered maxmemory evicts
            // right away, in the background, not at the next write.
            maxMemoryEvictionPending = true
            backgroundWorkPending = true
        }
    }

    // MARK: The loop

    /// Serves until SIGTERM or SIGINT, then shuts down cleanly: stops
    /// accepting, sends pending replies, closes every cache.
    public func run() throws {
        // " PID: <pid>", "Server initialized" and "Ready to accept
        // connections" are Redis's lines, which Redis's test suite (and
        // scripts written for redis-server) wait for in the log.
        logger.notice("kvcache-server \(Self.version) (Redis \(Self.redisVersion) protocol), PID: \(getpid()), "
            + "listening on \(listeningAddresses.joined(separator: ", ")), data directory \(config.dir)")
        if let path = config.acceptedSettings["unixsocket"], !path.isEmpty {
            logger.warning("unixsocket \(path) is accepted but not listened on: this server serves TCP (and TLS) only")
        }
        let heap = mallinfo2()
        startupMemory = Int(heap.uordblks + heap.hblkhd)
        // db0 is every client's first cache: open it now, so a large file's
        // progress shows at start-up, not on the first connection; then
        // every other cache with a file, so INFO (and the dashboards that
        // read it) counts every cache from the start, not only those used since.
        _ = try? registry.firstCache()
        for name in registry.known.sorted() { _ = try? registry.cache(named: name) }
        _ = scripting  // the interpreters, and the function libraries kept by the last run
        logger.warning("Server initialized")
        if !persistence.loading { try loadDumpFileIfNew() }
        if persistence.loading {
            logger.notice("Loading the append-only log: \(persistence.recordsToLoad) records to replay...")
        } else {
            logger.notice("Ready to accept connections")
        }
        if config.rejoinPolicy == .expire {
            rejoin = RejoinPass(startedAt: Self.nowMilliseconds(), window: config.rejoinWindow)
        }
        if let master = config.replicaOf { replicate(from: master.host, port: master.port) }
        while running {
            let poll = backgroundWorkPending || !tlsReadAgain.isEmpty || persistence.loading || rejoin != nil
            var timeout: Int32 = poll ? 0 : 100
            if blockedCount > 0, let wait = millisecondsToNextDeadline(now: Self.nowMilliseconds()) {
                timeout = min(timeout, Int32(min(wait, 100)))
            }
            if pauseType != .off { timeout = min(timeout, Int32(max(0, min(pauseEnd - Self.nowMilliseconds(), 100)))) }
            try epoll.wait(timeoutMilliseconds: timeout) { event in
                self.dispatch(event)
            }
            let again = tlsReadAgain
            tlsReadAgain.removeAll()
            for connection in again where !connection.closed { readAndExecute(connection) }
            if persistence.loading {
                do {
                    try persistence.replayStep(budget: 20)
                } catch {
                    logger.warning("Replaying the append-only log failed: \(error)")
                    throw ConfigError("the append-only log cannot be replayed: \(error)")
                }
            } else if rejoin != nil {
                rejoinStep(budget: 2000)
            }
            if blockedCount > 0 { expireBlockedClients(now: Self.nowMilliseconds()) }
            if pauseType != .off { checkPauseEnd(now: Self.nowMilliseconds()) }
            resumeUnblockedClients()
            backgroundWorkPending = false
            sweepExpired()
            continueEviction()
            continueMaxMemoryEviction()
            resumeParked()
            persistence.periodic(now: Self.nowMilliseconds())
            persistence.beforeReplies()
            // WAIT's GETACK goes out once per iteration, after the commands
            // (Redis's beforeSleep), so it is no client's write.
            if acksWanted { requestAcks() }
            if clientEvictionLimit > 0 { evictClientsIfNeeded() }
            sendQueuedReplies()
            let now = Self.nowMilliseconds()
            if now - lastCron >= 100 && !cronPaused {
                lastCron = now
                cron(now: now)
            }
            // Not across the wait: the writer's checkpoints would wait on it.
            registry.heldReads.releaseAll()
        }
        shutdown()
    }

    /// Dispatches one epoll event: a background thread's wake-up, a signal,
    /// a listener ready to accept, or a client ready to read or write (a
    /// stale event for a closed and reused descriptor is recognised by its
    /// token and dropped).
    func dispatch(_ event: Epoll.Event) {
        if event.token == Self.wakeToken {
            persistence.handleWake()
            return
        }
        if event.token == Self.signalToken {
            for signal in signals.drain() {
                logger.notice("Received \(signal == SIGINT ? "SIGINT" : "SIGTERM"), scheduling shutdown...")
                // A second signal while the shutdown waits for replicas: at once.
                requestShutdown(now: shutdownDeadline != 0 || processingWhileBusy)
            }
            return
        }
        if event.token & Self.listenerTokenBase == Self.listenerTokenBase {
            // Stale when an event of the same wait closed the listeners
            // first (a SIGTERM's shutdown, CONFIG SET bind): it was an
            // index out of range, a crash at shutdown.
            let index = Int(event.token & 0xffff)
            guard index < listeners.count else { return }
            let listener = listeners[index]
            acceptClients(on: listener.fd, tls: listener.tls)
            return
        }
        let fd = Int(event.token & 0xffff_ffff)
        guard fd < connections.count, let connection = connections[fd], connection.token == event.token else {
            return  // stale: the descriptor was closed (and perhaps reused) since
        }
        if let tls = connection.tls {
            if !tls.handshakeDone {
                advanceHandshake(connection)
                return
            }
            // A TLS write may wait on a read (and the reverse): try both.
            if connection.pendingOutput > 0 { queueReplies(connection) }
        }
        if event.readable { readAndExecute(connection) }
        // Replies go out only after this iteration's log write: queue, never send here.
        if event.writable && !connection.closed && connection.waitingToWrite { queueReplies(connection) }
    }

    // MARK: Clients

    // MARK: Persistence

    // MARK: Writing replies

    // MARK: Periodic work

    // MARK: Shutdown

}

