#if canImport(Glibc)
import Glibc
#endif
import CLinux
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

    var config: ServerConfig
    let logger: Logger
    private let epoll: Epoll
    private let signals: SignalSource
    private var listeners: [(fd: Int32, address: SocketAddress, tls: Bool)] = []
    private let tlsContext: TLSContext?
    /// TLS clients whose session holds decrypted bytes the socket will not signal.
    private var tlsReadAgain: [Connection] = []
    let registry: CacheRegistry
    let commands: CommandTable
    var stats = ServerStats()
    let startedAt: Int64

    /// Clients by descriptor.
    private var connections: [Connection?] = []
    private(set) var clientCount = 0
    private var nextClientID: Int64 = 1
    private var generation: UInt32 = 0

    /// The append-only log, the writer thread and the seals.
    private(set) var persistence: Persistence!
    private var pendingFlush: [Connection] = []
    /// Clients whose replies wait for the log's fsync (`appendfsync always`).
    private var heldForSync: [Connection] = []
    /// Clients whose write waits for room in the memtables.
    private var parked: [Connection] = []
    /// Whether the running command may take more room (Redis's `denyoom`).
    private(set) var runningCommandMayGrow = false
    private var running = true
    private var lastCron: Int64 = 0
    /// Clients in MONITOR mode, fed every command others run.
    var monitors: [Connection] = []
    var slowlog = SlowLog()
    /// The largest RSS INFO has seen.
    var peakMemory = 0
    /// A random 40-hex-digit id for INFO replication, as Redis makes one per start.
    let replicationID = (0..<40).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
    /// Samples of total_commands_processed for instantaneous_ops_per_sec.
    var opsSamples: [(time: Int64, commands: Int)] = []
    /// Accepting is paused (descriptors ran out) until this time.
    private var listenersPausedUntil: Int64?
    private var lastAcceptWarning: Int64 = 0
    /// DEBUG SET-ACTIVE-EXPIRE: whether expired keys are swept in the background.
    var activeExpire = true
    /// Set when the last sweep or eviction step left work: poll instead of sleeping.
    private var backgroundWorkPending = false
    static let sweepBatch = 32
    /// Entries one step of background eviction removes at most.
    static let evictionBatch = 256
    /// Time the expiry sweep may take per loop iteration.
    static let sweepBudgetMicroseconds = 1000
    /// Milliseconds a client of the TLS port may take to finish its handshake.
    static let handshakeTimeout: Int64 = 10_000

    private static let signalToken: UInt64 = 1 << 63
    private static let wakeToken: UInt64 = (1 << 63) | 1
    private static let listenerTokenBase: UInt64 = (1 << 63) | (1 << 62)
    private static let readChunk = 64 * 1024

    /// Binds the listening sockets and prepares the loop; no client is served until `run()`.
    /// - Throws: `ConfigError` or `SystemError` with a message fit for the user.
    public init(config: ServerConfig, logger: Logger) throws {
        self.config = config
        self.logger = logger
        self.startedAt = Server.nowMilliseconds()
        SignalSource.ignoreBrokenPipe()
        self.config.maxClients = fitDescriptorLimit(config, logger: logger)
        signals = try SignalSource(signals: [SIGTERM, SIGINT])
        epoll = try Epoll()
        umask(0o077)  // cache files, lock files and logs: owner only
        registry = try CacheRegistry(config: config, logger: logger)
        commands = try CommandTable.standard.renamed(config.renamedCommands)
        if let old = config.deprecatedDurability {
            logger.warning("'durability \(old)' is deprecated: it now means 'appendonly \(config.appendOnly ? "yes" : "no")'; "
                + "use appendonly and appendfsync")
        }
        slowlog.threshold = config.slowlogSlowerThan
        slowlog.maxLength = config.slowlogMaxLength
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
        try epoll.add(persistence.wakeFD, token: Self.wakeToken, interest: .readable)
        for (port, tls) in [(config.port, false), (config.tlsPort, true)] where port != 0 {
            for host in config.bind {
                guard let address = SocketAddress(host: host, port: port) else {
                    throw ConfigError("invalid bind address '\(host)'")
                }
                let fd: Int32
                do {
                    fd = try Posix.listen(on: address)
                } catch {
                    throw ConfigError("could not listen on \(address): \(String(cString: strerror(error.errno)))")
                }
                let bound = Posix.localAddress(fd) ?? address
                try epoll.add(fd, token: Self.listenerTokenBase | UInt64(listeners.count), interest: .readable)
                listeners.append((fd, bound, tls))
            }
        }
        guard !listeners.isEmpty || config.port == 0 && config.tlsPort == 0 else {
            throw ConfigError("nothing to listen on")
        }
    }

    /// The addresses actually listened on (port 0 in a bind picks a free port).
    public var listeningAddresses: [String] { listeners.map { $0.address.description + ($0.tls ? " (TLS)" : "") } }

    static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    // MARK: The loop

    /// Serves until SIGTERM or SIGINT, then shuts down cleanly: stops
    /// accepting, sends pending replies, closes every cache.
    public func run() throws {
        logger.notice("kvcache-server \(Self.version) (Redis \(Self.redisVersion) protocol) pid=\(getpid()) "
            + "listening on \(listeningAddresses.joined(separator: ", ")), data directory \(config.dir)")
        // db0 is every client's first cache: open it now, so a large file's
        // progress shows at start-up, not on the first connection.
        _ = try? registry.cache(named: "db0")
        if persistence.loading {
            logger.notice("Loading the append-only log: \(persistence.recordsToLoad) records to replay...")
        }
        while running {
            let poll = backgroundWorkPending || !tlsReadAgain.isEmpty || persistence.loading
            try epoll.wait(timeoutMilliseconds: poll ? 0 : 100) { event in
                self.handle(event)
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
            }
            backgroundWorkPending = false
            sweepExpired()
            continueEviction()
            resumeParked()
            persistence.periodic(now: Self.nowMilliseconds())
            persistence.beforeReplies()
            flushPending()
            let now = Self.nowMilliseconds()
            if now - lastCron >= 100 {
                lastCron = now
                cron(now: now)
            }
        }
        shutdown()
    }

    private func handle(_ event: Epoll.Event) {
        if event.token == Self.wakeToken {
            persistence.handleWake()
            return
        }
        if event.token == Self.signalToken {
            for signal in signals.drain() {
                logger.notice("Received \(signal == SIGINT ? "SIGINT" : "SIGTERM"), scheduling shutdown...")
                running = false
            }
            return
        }
        if event.token & Self.listenerTokenBase == Self.listenerTokenBase {
            let listener = listeners[Int(event.token & 0xffff)]
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
            if connection.pendingOutput > 0 { queueFlush(connection) }
        }
        if event.readable { readAndExecute(connection) }
        // Replies go out only after this iteration's commit: queue, never flush here.
        if event.writable && !connection.closed && connection.waitingToWrite { queueFlush(connection) }
    }

    // MARK: Clients

    private func acceptClients(on listener: Int32, tls: Bool) {
        for _ in 0..<1000 {
            let accepted: IOResult<(Int32, sockaddr_storage)>
            do {
                accepted = try Posix.accept(listener)
            } catch {
                let now = Self.nowMilliseconds()
                if now - lastAcceptWarning >= 1000 {
                    lastAcceptWarning = now
                    logger.warning("Accepting client connection: \(error)")
                }
                if error.errno == EMFILE || error.errno == ENFILE {
                    // Out of descriptors: the listener stays readable, so stop
                    // watching it for a moment instead of spinning on it.
                    pauseListeners(until: now + 100)
                }
                return
            }
            guard case .done(let (fd, storage)) = accepted else { return }
            stats.totalConnectionsReceived += 1
            if clientCount >= config.maxClients {
                let message = Array("-ERR max number of clients reached\r\n".utf8)
                message.withUnsafeBytes { _ = try? Posix.write(fd, $0) }
                Posix.close(fd)
                stats.rejectedConnections += 1
                continue
            }
            let peerAddress = SocketAddress(storage: storage)
            if config.protectedMode && config.requirePass.isEmpty
                && !(peerAddress.map { $0.host == "127.0.0.1" || $0.host == "::1" } ?? false) {
                Array(Self.protectedModeRefusal.utf8).withUnsafeBytes { _ = try? Posix.write(fd, $0) }
                Posix.close(fd)
                stats.rejectedConnections += 1
                continue
            }
            try? Posix.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            generation = generation == 0x7fff_ffff ? 1 : generation + 1
            let token = UInt64(generation) << 32 | UInt64(UInt32(fd))
            let cache: OpenCache
            do {
                cache = try registry.cache(named: "db0")
            } catch {
                logger.warning("Cannot open db0 for a new client: \(error.text)")
                Posix.close(fd)
                continue
            }
            let now = Self.nowMilliseconds()
            let local = Posix.localAddress(fd)?.description ?? listeners.first?.address.description ?? ""
            let connection = Connection(
                id: nextClientID, fd: fd, token: token, peer: peerAddress, local: local,
                cache: cache, limits: requestLimits, now: now)
            connection.authenticated = config.requirePass.isEmpty
            connection.parser.limits.unauthenticated = !connection.authenticated
            nextClientID += 1
            do {
                try epoll.add(fd, token: token, interest: .readable)
            } catch {
                logger.warning("Registering client: \(error)")
                Posix.close(fd)
                continue
            }
            if fd >= connections.count {
                connections.append(contentsOf: repeatElement(nil, count: Int(fd) - connections.count + 1))
            }
            connections[Int(fd)] = connection
            clientCount += 1
            logger.debug("Accepted \(connection.peer)")
            if tls, let tlsContext {
                guard let session = TLSSession(context: tlsContext, fd: fd) else {
                    close(connection)
                    continue
                }
                connection.tls = session
                advanceHandshake(connection)
            }
        }
    }

    /// Stops watching the listening sockets until `time` (cron resumes them).
    private func pauseListeners(until time: Int64) {
        guard listenersPausedUntil == nil else { return }
        listenersPausedUntil = time
        for listener in listeners { epoll.remove(listener.fd) }
    }

    private func resumeListenersIfDue(now: Int64) {
        guard let until = listenersPausedUntil, now >= until else { return }
        listenersPausedUntil = nil
        for (index, listener) in listeners.enumerated() {
            try? epoll.add(listener.fd, token: Self.listenerTokenBase | UInt64(index), interest: .readable)
        }
    }

    var requestLimits: RequestLimits {
        RequestLimits(maxBulkLength: config.protoMaxBulkLen)
    }

    /// Moves a TLS handshake along; a client stalled in it costs nothing but
    /// its descriptor until the handshake deadline (cron) closes it.
    private func advanceHandshake(_ connection: Connection) {
        guard let tls = connection.tls else { return }
        switch tls.handshake() {
        case .done:
            try? epoll.modify(connection.fd, token: connection.token, interest: .readable)
            readAndExecute(connection)  // the client may have sent its first command with the handshake
        case .wantRead:
            try? epoll.modify(connection.fd, token: connection.token, interest: .readable)
        case .wantWrite:
            try? epoll.modify(connection.fd, token: connection.token, interest: [.readable, .writable])
        case .closed:
            close(connection)
        case .failed(let reason):
            logger.verbose("TLS handshake with \(connection.peer) failed: \(reason)")
            stats.tlsHandshakeFailures += 1
            close(connection)
        }
    }

    /// Closes a client now, dropping anything unsent.
    func close(_ connection: Connection) {
        guard !connection.closed else { return }
        connection.closed = true
        connection.tls?.shutdown()
        if connection.isMonitor { monitors.removeAll { $0 === connection } }
        epoll.remove(connection.fd)
        Posix.close(connection.fd)
        if Int(connection.fd) < connections.count, connections[Int(connection.fd)] === connection {
            connections[Int(connection.fd)] = nil
        }
        clientCount -= 1
    }

    /// CLIENT KILL: closes `victim` now, or, when it is the caller, right
    /// after its reply.
    func kill(_ victim: Connection, by caller: Connection) {
        if victim === caller {
            victim.closeAfterReply = true
        } else {
            close(victim)
        }
    }

    /// Every connected client, in id order.
    var allConnections: [Connection] {
        connections.compactMap { $0 }.sorted { $0.id < $1.id }
    }

    /// Reads what the socket has (a bounded amount) and runs every complete command in it.
    private func readAndExecute(_ connection: Connection) {
        if connection.closeAfterReply {
            // Nothing more will be run for this client: discard input, notice EOF.
            var scratch = [UInt8](repeating: 0, count: 4096)
            let n = scratch.withUnsafeMutableBytes { Glibc.read(connection.fd, $0.baseAddress, $0.count) }
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) {
                if connection.pendingOutput > 0 && connection.awaitingLSN > persistence.syncedLSN {
                    // Its replies wait for the log's fsync: stop watching the
                    // socket (an EOF stays readable), send them, then close.
                    epoll.remove(connection.fd)
                    connection.unwatched = true
                } else {
                    close(connection)
                }
            }
            return
        }
        var endOfStream = false
        do {
            let result: IOResult<Int>
            if let tls = connection.tls {
                result = try connection.input.read(chunk: Self.readChunk) { space throws(SystemError) in
                    switch tls.read(space) {
                    case .done(let n): return .done(n)
                    case .wantRead, .wantWrite: return .wouldBlock
                    case .closed: return .done(0)
                    case .failed(let reason):
                        logger.verbose("TLS read from \(connection.peer) failed: \(reason)")
                        throw SystemError(function: "SSL_read", errno: EPROTO)
                    }
                }
                if tls.pending > 0 { tlsReadAgain.append(connection) }
            } else {
                result = try connection.input.read(from: connection.fd, chunk: Self.readChunk)
            }
            switch result {
            case .wouldBlock: return
            case .done(0): endOfStream = true
            case .done(let n): stats.netInputBytes += n
            }
        } catch {
            logger.verbose("Reading from client \(connection.peer): \(error)")
            close(connection)
            return
        }
        connection.lastInteraction = Self.nowMilliseconds()
        executeBuffered(connection)
        if connection.closed { return }
        if connection.queryBufferCost > config.clientQueryBufferLimit {
            logger.warning("Closing client \(connection.peer) that reached max query buffer length "
                + "(\(connection.queryBufferCost) bytes)")
            close(connection)
            return
        }
        if overOutputLimit(connection) { return }
        if endOfStream {
            // Send what is owed for the commands already read, then close.
            connection.closeAfterReply = true
        }
        queueFlush(connection)
    }

    /// Parses and runs every complete request in the input buffer. A
    /// multibulk request runs on a view of the buffer (its arguments are not
    /// copied); an unfinished one stays in the buffer, from its first byte,
    /// for the parser to resume.
    private func executeBuffered(_ connection: Connection) {
        connection.input.consume { buffer in
            var index = 0
            while !connection.closeAfterReply && !connection.closed && connection.parked == nil {
                let request: RequestParser.Request?
                do {
                    request = try connection.parser.nextRequest(buffer, index: &index)
                } catch let error as ProtocolError {
                    connection.replyError(ReplyError("ERR \(error.message)"))
                    connection.closeAfterReply = true
                    logger.verbose("Protocol error (\(error.message)) from client \(connection.peer)")
                    return buffer.count
                } catch {
                    preconditionFailure("the request parser throws only ProtocolError")
                }
                switch request {
                case nil:
                    return index
                case .multibulk(let frame):
                    execute(Arguments(frame: frame, in: buffer, ranges: connection.parser.argumentRanges), for: connection)
                case .inline(let words):
                    Arguments.withCopy(of: words) { execute($0, for: connection) }
                }
            }
            return index
        }
        if connection.input.count == 0 { connection.input.shrinkIfIdle(keep: 64 * 1024) }
    }

    /// Runs one command and appends its reply: checks (name, arity,
    /// authentication), the monitor feed, the handler, and the counters
    /// INFO commandstats/errorstats and SLOWLOG report.
    func execute(_ args: Arguments, for connection: Connection) {
        stats.totalCommandsProcessed += 1
        if Self.isCrossProtocolAttack(args[0]) {
            logger.warning("Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands "
                + "to the server. This is likely due to an attacker attempting to use Cross Protocol Scripting to "
                + "compromise it. Connection aborted.")
            connection.closeAfterReply = true
            return
        }
        guard let command = commands.lookup(args[0]) else {
            reject(connection, CommandTable.unknownCommandError(args), command: nil)
            return
        }
        connection.lastCommand = command.subcommands.isEmpty || args.count < 2
            ? command.name : command.name + "|" + args[1].lowercasedText
        guard command.accepts(argumentCount: args.count) else {
            reject(connection, .wrongArity(command.name), command: command)
            return
        }
        if authRequired(connection) && !command.flags.contains("no_auth") {
            reject(connection, .noAuth, command: command)
            return
        }
        if persistence.loading && !persistence.replaying && !command.flags.contains("loading") {
            reject(connection, .loading, command: command)
            return
        }
        if let queued = connection.transaction, !command.isTransactionControl {
            queued.commands.append(args.copies)
            connection.replySimple("QUEUED")
            return
        }
        if !persistence.replaying && needsRoom(command, connection) && persistence.memtableFull {
            // The writer is behind: the write waits (and the client's next
            // requests behind it) until it frees room.
            connection.parked = (args.copies, Self.nowMilliseconds())
            parked.append(connection)
            persistence.requestSeal()
            return
        }
        if !monitors.isEmpty { feedMonitors(args, from: connection) }
        let outer = runningCommandMayGrow
        runningCommandMayGrow = command.flags.contains("denyoom") || (command.name == "exec" && outer)
        defer { runningCommandMayGrow = outer }
        let began = Self.monotonicMicroseconds()
        var failure: ReplyError?
        do {
            try command.handler(CommandContext(server: self, connection: connection, args: args))
        } catch let error as ReplyError {
            failure = error
        } catch let error as SQLiteKVCache.Error {
            failure = .engine(error)
        } catch {
            failure = ReplyError("ERR \(error)")
        }
        let elapsed = Self.monotonicMicroseconds() - began
        command.stats.calls += 1
        command.stats.microseconds += elapsed
        if let failure {
            connection.replyError(failure)
            command.stats.failed += 1
            countError(failure)
        }
        if elapsed >= slowlog.threshold && slowlog.threshold >= 0 {
            slowlog.record(args, microseconds: elapsed, client: connection)
        }
        if let lsn = persistence.commandFinished() { connection.awaitingLSN = lsn }
    }

    /// Whether a command changes data, so it waits while the memtables are
    /// full: a write command, or an EXEC whose transaction holds one.
    private func needsRoom(_ command: Command, _ connection: Connection) -> Bool {
        if command.isWrite && command.flags.contains("denyoom") { return true }
        guard command.name == "exec", let queued = connection.transaction else { return false }
        return queued.commands.contains { commands.lookup($0[0])?.isWrite ?? false }
    }

    /// Runs the writes that waited for room, in arrival order, once there
    /// is room; a write that waited `memtable-full-timeout` gets an error.
    private func resumeParked() {
        guard !parked.isEmpty else { return }
        let now = Self.nowMilliseconds()
        let full = persistence.memtableFull
        var still: [Connection] = []
        for connection in parked {
            guard !connection.closed, let (args, since) = connection.parked else { continue }
            if full && now - since < Int64(config.memtableFullTimeout) {
                still.append(connection)
                continue
            }
            connection.parked = nil
            if full {
                connection.replyError(.memtableFull(config.memtableMaxBytes))
                countError(.memtableFull(config.memtableMaxBytes))
            } else {
                Arguments.withCopy(of: args) { execute($0, for: connection) }
            }
            if connection.parked == nil { executeBuffered(connection) }
            if connection.parked != nil { still.append(connection) }
            queueFlush(connection)
        }
        parked = still
        if !parked.isEmpty { backgroundWorkPending = !full }
    }

    /// Replays one command of the append-only log in `cache` (a record of a
    /// command whose effect is its own re-run).
    func replayCommand(_ args: [[UInt8]], in cache: OpenCache, lsn: UInt64) {
        let connection = replayConnection ?? Connection(
            id: 0, fd: -1, token: 0, peer: nil, local: "", cache: cache, limits: requestLimits, now: Self.nowMilliseconds())
        replayConnection = connection
        connection.cache = cache
        connection.output.removeAll(keepingCapacity: true)
        Arguments.withCopy(of: args) { execute($0, for: connection) }
    }
    private var replayConnection: Connection?

    /// Queues for sending the replies that waited for the log's fsync up to `lsn`.
    func releaseRepliesSynced(upTo lsn: UInt64) {
        guard !heldForSync.isEmpty else { return }
        var still: [Connection] = []
        for connection in heldForSync where !connection.closed {
            if connection.awaitingLSN <= lsn { queueFlush(connection) } else { still.append(connection) }
        }
        heldForSync = still
    }

    /// Answers an error for a command refused before it ran (unknown, arity, NOAUTH).
    private func reject(_ connection: Connection, _ error: ReplyError, command: Command?) {
        connection.replyError(error)
        command?.stats.rejected += 1
        countError(error)
        if let transaction = connection.transaction { transaction.failed = true }
    }

    /// Counts an error reply for INFO (total_error_replies, errorstats by prefix).
    func countError(_ error: ReplyError) {
        stats.totalErrorReplies += 1
        let prefix = error.text.split(separator: " ", maxSplits: 1).first.map(String.init) ?? "ERR"
        stats.errorsByPrefix[prefix, default: 0] += 1
    }

    static func monotonicMicroseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int(now.tv_sec) * 1_000_000 + Int(now.tv_nsec) / 1000
    }

    /// `POST` and `Host:` lines mean an HTTP client was tricked into talking to us.
    static func isCrossProtocolAttack(_ name: Argument) -> Bool {
        // Compared in place: this runs for every command.
        func equalsIgnoringCase(_ word: StaticString) -> Bool {
            guard name.count == word.utf8CodeUnitCount else { return false }
            let bytes = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            return zip(name, bytes).allSatisfy { asciiLower($0) == $1 }
        }
        return equalsIgnoringCase("post") || equalsIgnoringCase("host:")
    }

    /// Redis's answer to a non-loopback client in protected mode.
    static let protectedModeRefusal = "-DENIED Redis is running in protected mode because protected "
        + "mode is enabled and no password is set for the default user. "
        + "In this mode connections are only accepted from the loopback interface. "
        + "If you want to connect from external computers to Redis you "
        + "may adopt one of the following solutions: "
        + "1) Just disable protected mode sending the command "
        + "'CONFIG SET protected-mode no' from the loopback interface "
        + "by connecting to Redis from the same host the server is "
        + "running, however MAKE SURE Redis is not publicly accessible "
        + "from internet if you do so. Use CONFIG REWRITE to make this "
        + "change permanent. "
        + "2) Alternatively you can just disable the protected mode by "
        + "editing the Redis configuration file, and setting the protected "
        + "mode option to 'no', and then restarting the server. "
        + "3) If you started the server manually just for testing, restart "
        + "it with the '--protected-mode no' option. "
        + "4) Setup a an authentication password for the default user. "
        + "NOTE: You only need to do one of the above things in order for "
        + "the server to start accepting connections from the outside.\r\n"

    // MARK: Persistence

    /// A cache whose file SQLite found damaged: once the writer is done
    /// with it, the file is moved aside and the cache starts empty.
    func recoverCorrupt(_ cache: OpenCache, reason: String) {
        if cache.engine?.inFlight != nil {
            persistence.writer.waitUntilIdle()
            persistence.collectFinished()
        }
        registry.recoverCorrupt(cache, reason: reason)
    }

    /// Closes and reopens every open cache (DEBUG RELOAD), after applying
    /// everything memory holds to SQLite.
    func reloadCaches() {
        persistence.applyAll()
        for cache in registry.open.values { registry.reopen(cache) }
    }

    /// Applies a changed configuration to the running server.
    func apply(_ newConfig: ServerConfig) throws {
        if newConfig.appendOnly != config.appendOnly {
            try persistence.setAppendOnly(newConfig.appendOnly, config: newConfig)
        }
        config = newConfig
        logger.level = newConfig.logLevel
        registry.apply(newConfig)
        slowlog.threshold = newConfig.slowlogSlowerThan
        slowlog.maxLength = newConfig.slowlogMaxLength
    }

    // MARK: Writing replies

    /// Queues another client's output (a MONITOR feed) for this iteration's flush.
    func queueFlushFromCommand(_ connection: Connection) { queueFlush(connection) }

    private func queueFlush(_ connection: Connection) {
        guard !connection.queuedForFlush else { return }
        connection.queuedForFlush = true
        pendingFlush.append(connection)
    }

    private func flushPending() {
        let synced = persistence.syncedLSN
        for connection in pendingFlush {
            connection.queuedForFlush = false
            guard !connection.closed else { continue }
            if connection.awaitingLSN > synced {
                // appendfsync always: the reply waits for its record's fsync.
                heldForSync.append(connection)
                continue
            }
            flush(connection)
        }
        pendingFlush.removeAll(keepingCapacity: true)
    }

    /// Writes as much pending output as the socket takes; waits for EPOLLOUT
    /// when it takes less; closes the client once done if it asked for that.
    private func flush(_ connection: Connection) {
        while connection.pendingOutput > 0 {
            let result: IOResult<Int>
            do {
                result = try connection.output.withUnsafeBytes { raw throws(SystemError) in
                    let unsent = UnsafeRawBufferPointer(rebasing: raw[connection.outputSent...])
                    guard let tls = connection.tls else { return try Posix.write(connection.fd, unsent) }
                    switch tls.write(unsent) {
                    case .done(let n): return .done(n)
                    case .wantRead, .wantWrite: return .wouldBlock
                    case .closed, .failed: throw SystemError(function: "SSL_write", errno: EPIPE)
                    }
                }
            } catch {
                logger.verbose("Writing to client \(connection.peer): \(error)")
                close(connection)
                return
            }
            switch result {
            case .done(let n):
                connection.outputSent += n
                stats.netOutputBytes += n
            case .wouldBlock:
                if connection.unwatched {
                    connection.unwatched = false
                    try? epoll.add(connection.fd, token: connection.token, interest: [.readable, .writable])
                    connection.waitingToWrite = true
                    return
                }
                if !connection.waitingToWrite {
                    connection.waitingToWrite = true
                    try? epoll.modify(connection.fd, token: connection.token, interest: [.readable, .writable])
                }
                return
            }
        }
        if connection.output.capacity > 1 << 20 {
            connection.output = []
        } else {
            connection.output.removeAll(keepingCapacity: true)
        }
        connection.outputSent = 0
        if connection.waitingToWrite {
            connection.waitingToWrite = false
            try? epoll.modify(connection.fd, token: connection.token, interest: .readable)
        }
        if connection.closeAfterReply { close(connection) }
    }

    /// Closes a client whose unsent replies pass the hard output limit, or
    /// the soft one for too long (as Redis's client-output-buffer-limit).
    /// - Returns: whether it was closed.
    @discardableResult
    private func overOutputLimit(_ connection: Connection, now: Int64 = Server.nowMilliseconds()) -> Bool {
        let limit = config.outputBufferLimit
        let pending = connection.pendingOutput
        var over = limit.hard > 0 && pending > limit.hard
        if limit.soft > 0 && pending > limit.soft {
            let since = connection.overSoftLimitSince ?? now
            connection.overSoftLimitSince = since
            if now - since > Int64(limit.softSeconds) * 1000 { over = true }
        } else {
            connection.overSoftLimitSince = nil
        }
        guard over else { return false }
        logger.warning("Client \(connection.peer) closed for overcoming of output buffer limits (\(pending) bytes unsent).")
        stats.outputLimitDisconnections += 1
        close(connection)
        return true
    }

    // MARK: Periodic work

    /// Removes a bounded batch of expired entries from each open cache, so a
    /// mass expiry never stalls the loop; more left means poll again at once.
    func sweepExpired() {
        guard activeExpire else { return }
        let deadline = Self.monotonicMicroseconds() + Self.sweepBudgetMicroseconds
        for cache in registry.open.values where cache.openError == nil {
            do {
                let keyspace = Keyspace(server: self, cache: cache)
                guard try keyspace.expiryDue() else { continue }
                // Small steps until the iteration's budget is spent: a mass
                // expiry spreads over iterations, between which clients are served.
                while true {
                    let removed = try keyspace.removeExpired(limit: Self.sweepBatch)
                    guard removed == Self.sweepBatch else { break }
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

    /// Evicts a bounded batch from each cache over its capacity (after a
    /// capacity cut, a swap, or a file opened with a smaller capacity).
    func continueEviction() {
        for cache in registry.open.values where cache.needsEviction {
            do {
                cache.needsEviction = !(try Keyspace(server: self, cache: cache).evict(limit: Self.evictionBatch))
            } catch {
                logger.warning("Evicting from cache '\(cache.name)' failed: \(error)")
                cache.needsEviction = false
            }
            if cache.needsEviction { backgroundWorkPending = true }
        }
    }

    private func cron(now: Int64) {
        resumeListenersIfDue(now: now)
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
            for connection in connections.compactMap({ $0 }) where now - connection.lastInteraction > limit {
                logger.verbose("Closing idle client \(connection.peer)")
                close(connection)
            }
        }
    }

    // MARK: Shutdown

    /// Stops the loop after the current iteration; `run()` then shuts down cleanly.
    func requestShutdown() {
        running = false
    }

    private func shutdown() {
        for listener in listeners {
            epoll.remove(listener.fd)
            Posix.close(listener.fd)
        }
        listeners.removeAll()
        // Every acknowledged record on disk, then the replies that waited for it.
        persistence.beforeReplies()
        persistence.syncLogNow()
        heldForSync.removeAll()
        // Give clients a bounded moment to take their pending replies.
        let deadline = Self.nowMilliseconds() + 2000
        var waiting = connections.compactMap { $0 }.filter { $0.pendingOutput > 0 }
        while !waiting.isEmpty && Self.nowMilliseconds() < deadline {
            for connection in waiting {
                connection.waitingToWrite = false
                flush(connection)
            }
            waiting = waiting.filter { !$0.closed && $0.pendingOutput > 0 }
            if !waiting.isEmpty { usleep(10_000) }
        }
        for connection in connections.compactMap({ $0 }) { close(connection) }
        persistence.shutdown(seconds: Double(config.shutdownTimeout))
        registry.closeAll()
        logger.notice("kvcache-server is now ready to exit, bye bye...")
    }
}

/// Counters INFO reports.
struct ServerStats {
    var totalCommandsProcessed = 0
    var totalConnectionsReceived = 0
    var rejectedConnections = 0
    /// Batches the writer could not apply to SQLite (their changes stay in
    /// memory and are tried again).
    var failedCommits = 0
    var outputLimitDisconnections = 0
    /// Failed AUTH (and HELLO AUTH) attempts: INFO's acl_access_denied_auth.
    var authFailures = 0
    var tlsHandshakeFailures = 0
    var errorsByPrefix: [String: Int] = [:]
    var netInputBytes = 0
    var netOutputBytes = 0
    var totalErrorReplies = 0
    var keyspaceHits = 0
    var keyspaceMisses = 0
}

/// Raises the soft descriptor limit so `maxclients` clients fit, as Redis does.
/// Raises the soft descriptor limit so `maxclients` clients and every cache
/// file fit; when the hard limit is too low, lowers `maxclients` to what
/// fits, as Redis does.
/// - Returns: the maxclients that fits.
private func fitDescriptorLimit(_ config: ServerConfig, logger: Logger) -> Int {
    // Listeners, epoll, signalfd, logs, lock files, six per cache (file and
    // WAL for its reader and writer connections, shared memory, lock file),
    // and eight for the append-only log (its segment, the fsync thread's
    // duplicates, the directory, the wake-up eventfd).
    let reserved = 32 + 6 * config.maxCaches + 8
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return config.maxClients }
    let wanted = rlim_t(config.maxClients + reserved)
    if limit.rlim_cur < wanted {
        var raised = limit
        raised.rlim_cur = min(wanted, limit.rlim_max)
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
    }
    guard limit.rlim_cur < wanted else { return config.maxClients }
    let fitting = max(1, Int(limit.rlim_cur) - reserved)
    logger.warning("You requested maxclients of \(config.maxClients) requiring at least \(wanted) max file descriptors. "
        + "The limit is \(limit.rlim_cur): maxclients has been reduced to \(fitting) to compensate for low ulimit. "
        + "If you need higher maxclients increase 'ulimit -n'.")
    return fitting
}
