#if canImport(Glibc)
import Glibc
#endif
import CLinux
import RESP
import SQLiteKVCache

/// The server: one thread running an epoll loop over the listening sockets,
/// the clients and a signalfd. Each loop iteration reads what is ready, runs
/// the complete commands, commits the iteration's writes (one transaction per
/// cache touched), and only then sends the replies: a write is acknowledged
/// after it is committed.
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

    /// Caches written in this iteration, committed before replies go out.
    private var dirtyCaches: [OpenCache] = []
    /// Replies to writes in this iteration, patched if their cache's commit fails.
    private var batchWrites: [(connection: Connection, start: Int, end: Int, cache: OpenCache)] = []
    /// Caches the running command wrote to.
    private var touchedByCommand: [OpenCache] = []
    private var pendingFlush: [Connection] = []
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
    /// Whether a client's write waits in the open batch (its reply waits for the commit).
    private var clientWrotePending = false
    /// Accepting is paused (descriptors ran out) until this time.
    private var listenersPausedUntil: Int64?
    private var lastAcceptWarning: Int64 = 0
    /// When the last commit was (`everysec`).
    private var lastCommit: Int64 = 0
    /// In `everysec` mode, a commit is forced when this many keys (or bytes)
    /// wait: it bounds both the memory held and how long one commit takes.
    static let maxPendingWrites = 50_000
    static let maxPendingBytes = 256 << 20
    /// DEBUG SET-ACTIVE-EXPIRE: whether expired keys are swept in the background.
    var activeExpire = true
    /// Set when the last sweep or eviction step left work: poll instead of sleeping.
    private var backgroundWorkPending = false
    static let sweepBatch = 32
    /// Keys the sweep and eviction removed since the last commit.
    private var backgroundRemovals = 0
    /// A commit of nothing but sweep or eviction work is due at this many
    /// removals (or 100 ms): every removal dirties about a page, and one
    /// commit of a mass expiry's 100 ms (thousands of pages) held the loop
    /// for over 100 ms.
    static let backgroundCommitRemovals = 256
    /// Time the expiry sweep may take per loop iteration.
    static let sweepBudgetMicroseconds = 1000
    /// Milliseconds a client of the TLS port may take to finish its handshake.
    static let handshakeTimeout: Int64 = 10_000

    private static let signalToken: UInt64 = 1 << 63
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
        while running {
            try epoll.wait(timeoutMilliseconds: backgroundWorkPending || !tlsReadAgain.isEmpty ? 0 : 100) { event in
                self.handle(event)
            }
            let again = tlsReadAgain
            tlsReadAgain.removeAll()
            for connection in again where !connection.closed { readAndExecute(connection) }
            backgroundWorkPending = false
            sweepExpired()
            continueEviction()
            commitIfDue()
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
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { close(connection) }
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

    /// Parses and runs every complete request in the input buffer.
    private func executeBuffered(_ connection: Connection) {
        connection.input.consume { buffer in
            var index = 0
            while !connection.closeAfterReply && !connection.closed {
                let request: [[UInt8]]?
                do {
                    request = try connection.parser.next(buffer, index: &index)
                } catch let error as ProtocolError {
                    connection.replyError(ReplyError("ERR \(error.message)"))
                    connection.closeAfterReply = true
                    logger.verbose("Protocol error (\(error.message)) from client \(connection.peer)")
                    return buffer.count
                } catch {
                    preconditionFailure("the request parser throws only ProtocolError")
                }
                guard let request else { break }
                execute(request, for: connection)
            }
            return index
        }
        if connection.input.count == 0 { connection.input.shrinkIfIdle(keep: 64 * 1024) }
    }

    /// Runs one command and appends its reply: checks (name, arity,
    /// authentication), the monitor feed, the handler, and the counters
    /// INFO commandstats/errorstats and SLOWLOG report.
    func execute(_ args: [[UInt8]], for connection: Connection) {
        stats.totalCommandsProcessed += 1
        let start = connection.output.count
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
            ? command.name : command.name + "|" + String(decoding: args[1].map(asciiLower), as: UTF8.self)
        guard command.accepts(argumentCount: args.count) else {
            reject(connection, .wrongArity(command.name), command: command)
            return
        }
        if authRequired(connection) && !command.flags.contains("no_auth") {
            reject(connection, .noAuth, command: command)
            return
        }
        if let queued = connection.transaction, !command.isTransactionControl {
            queued.commands.append(args)
            connection.replySimple("QUEUED")
            return
        }
        if !monitors.isEmpty { feedMonitors(args, from: connection) }
        touchedByCommand.removeAll(keepingCapacity: true)
        joinBatch(connection.cache)
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
        if !touchedByCommand.isEmpty { clientWrotePending = true }
        if config.durability == .commit {
            for cache in touchedByCommand {
                batchWrites.append((connection, start, connection.output.count, cache))
            }
        }
    }

    /// Commits the open batches when the durability mode says so: every
    /// iteration for `commit` (replies wait for it); for `everysec` once a
    /// second, or at once when the backlog passes its bound (backpressure).
    private func commitIfDue() {
        guard !dirtyCaches.isEmpty else { return }
        if config.durability == .everysec {
            let now = Self.nowMilliseconds()
            var backlog = (count: 0, bytes: 0)
            for cache in dirtyCaches {
                let pending = (try? cache.engine.pendingWrites()) ?? (count: 0, bytes: 0)
                backlog = (backlog.count + pending.count, backlog.bytes + pending.bytes)
            }
            let due = now - lastCommit >= 1000 || backlog.count >= Self.maxPendingWrites
                || backlog.bytes >= Self.maxPendingBytes
            guard due else { return }
            lastCommit = now
        } else if !clientWrotePending {
            // Only the sweep (or eviction) wrote: nothing to acknowledge, and
            // an expired key is as good as gone, so commit those at most every 100 ms.
            let now = Self.nowMilliseconds()
            guard now - lastCommit >= 100 || backgroundRemovals >= Self.backgroundCommitRemovals else { return }
            lastCommit = now
        } else {
            lastCommit = Self.nowMilliseconds()
        }
        clientWrotePending = false
        backgroundRemovals = 0
        commitBatches()
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
    static func isCrossProtocolAttack(_ name: [UInt8]) -> Bool {
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

    // MARK: Group commit

    /// Clears the caches the running command wrote to (EXEC: its commands recorded theirs).
    func forgetTouchedCaches() { touchedByCommand.removeAll(keepingCapacity: true) }

    /// Joins `cache` to this iteration's batch, so its reads share one
    /// SQLite transaction (committed with the iteration's writes).
    func joinBatch(_ cache: OpenCache) {
        guard !cache.inBatch, cache.openError == nil else { return }
        guard (try? cache.engine.beginBatch()) != nil else { return }
        cache.inBatch = true
        dirtyCaches.append(cache)
    }

    /// The engine of `cache`, joined to this iteration's batch, for a write.
    func writable(_ cache: OpenCache) throws -> SQLiteKVCache {
        if let failure = cache.commitFailure { throw failure }
        if !cache.inBatch {
            try cache.engine.beginBatch()
            cache.inBatch = true
            dirtyCaches.append(cache)
        }
        if !touchedByCommand.contains(where: { $0 === cache }) { touchedByCommand.append(cache) }
        return cache.engine
    }

    /// Commits each cache written in this iteration (or only `only`). When a
    /// commit fails, the replies to that cache's writes become the error
    /// before anything is sent.
    func commitBatches(only: [OpenCache]? = nil) {
        guard !dirtyCaches.isEmpty else { return }
        var failed: [ObjectIdentifier: ReplyError] = [:]
        var remaining: [OpenCache] = []
        for cache in dirtyCaches {
            if let only, !only.contains(where: { $0 === cache }) {
                remaining.append(cache)
                continue
            }
            cache.inBatch = false
            do {
                try cache.engine.commitBatch()
            } catch {
                logger.warning("Commit to cache '\(cache.name)' failed: \(error)")
                failed[ObjectIdentifier(cache)] = .engine(error)
                stats.failedCommits += 1
                if config.durability == .everysec {
                    // Acknowledged writes were lost: refuse more until writes succeed again.
                    cache.commitFailure = error
                }
            }
        }
        dirtyCaches = remaining
        if !failed.isEmpty {
            // Latest first, so a patch never moves the ranges still to patch.
            for write in batchWrites.reversed() {
                guard let error = failed[ObjectIdentifier(write.cache)], !write.connection.closed else { continue }
                var replacement: [UInt8] = []
                RESPEncoder.error(error.text, into: &replacement)
                write.connection.output.replaceSubrange(write.start..<write.end, with: replacement)
            }
        }
        if only == nil || dirtyCaches.isEmpty { batchWrites.removeAll(keepingCapacity: true) }
    }

    /// Swaps the files of two caches (SWAPDB), committing their pending writes first.
    func swap(_ a: OpenCache, _ b: OpenCache) throws {
        commitBatches(only: [a, b])
        try registry.swap(a, b)
    }

    /// Closes and reopens every open cache (DEBUG RELOAD), committing first.
    func reloadCaches() {
        commitBatches()
        for cache in registry.open.values { registry.reopen(cache) }
    }

    /// Applies a changed configuration to the running server.
    func apply(_ newConfig: ServerConfig) {
        if newConfig.durability != config.durability { commitBatches() }
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
        for connection in pendingFlush {
            connection.queuedForFlush = false
            if !connection.closed { flush(connection) }
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
                    backgroundRemovals += removed
                    guard removed == Self.sweepBatch else { break }
                    if Self.monotonicMicroseconds() >= deadline || backgroundRemovals >= Self.backgroundCommitRemovals {
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
                cache.needsEviction = !(try Keyspace(server: self, cache: cache).evict(limit: Self.backgroundCommitRemovals))
                // `evict` says only whether it is done: count the step as a full batch.
                backgroundRemovals += Self.backgroundCommitRemovals
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
        for cache in registry.open.values where cache.commitFailure != nil {
            if (try? cache.engine.probeWrite()) != nil {
                logger.notice("Writes to cache '\(cache.name)' succeed again")
                cache.commitFailure = nil
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
        commitBatches()
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
        registry.closeAll()
        logger.notice("kvcache-server is now ready to exit, bye bye...")
    }
}

/// Counters INFO reports.
struct ServerStats {
    var totalCommandsProcessed = 0
    var totalConnectionsReceived = 0
    var rejectedConnections = 0
    /// Commits that failed (their writes were answered with the error, or,
    /// under `durability everysec`, lost after being acknowledged).
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
