#if canImport(Glibc)
import Glibc
#endif
import CLinux
import RESP
import SQLiteKVCache

/// Reading and running requests (Redis's processInputBuffer and call):
/// read what a socket has, parse every complete request in the buffer, and
/// run each through the checks, the handler and the counters; a write that
/// finds the memtables full waits (is parked) until the writer frees room;
/// the log's command records replay through the same path.
extension Server {
    /// Reads what the socket has (a bounded amount) and runs every complete command in it.
    func readAndExecute(_ connection: Connection) {
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
        if let awaited = connection.parser.frameBytesAwaited, awaited - connection.input.count >= Self.bigArgument {
            // As Redis's processMultibulkBuffer: room for a big argument's
            // whole payload as soon as its header is read (CLIENT LIST's
            // tot-mem and maxmemory-clients see it; no regrowth as it arrives).
            connection.input.reserve(awaited - connection.input.count)
        }
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
        queueReplies(connection)
    }

    /// Parses and runs every complete request in the input buffer. A
    /// multibulk request runs on a view of the buffer (its arguments are not
    /// copied); an unfinished one stays in the buffer, from its first byte,
    /// for the parser to resume.
    func executeBuffered(_ connection: Connection) {
        let outerBatching = batching
        batching = true
        batchClock = nil
        defer {
            batching = outerBatching
            batchClock = nil
        }
        // The master's stream counts toward the replication offset as it is
        // consumed (Redis's reploff): a command's bytes once it has run.
        let link = connection.isMaster ? replicaLink : nil
        link?.lastIO = Self.nowMilliseconds()
        // The master's commands find its keys as it has them: none expired.
        if link != nil { registry.accessTracking.expiryIgnored = true }
        defer { if link != nil { registry.accessTracking.expiryIgnored = false } }
        connection.input.consume { buffer in
            var index = 0
            var accounted = 0
            defer {
                // Bytes consumed but not counted: a transaction still open
                // (held for its EXEC), or what a protocol error dropped.
                if let link, index > accounted {
                    if connection.transaction != nil {
                        link.heldStream.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[accounted..<index]))
                    } else {
                        link.offset += index - accounted
                    }
                }
            }
            let prefetched = link == nil ? prefetchKeys(connection, buffer) : nil
            defer { prefetched?.endPrefetch() }
            while !connection.closeAfterReply && !connection.closed && connection.parked == nil && connection.blocked == nil
                    && connection.postponed == nil {
                let request: RequestParser.Request?
                do {
                    request = try connection.parser.nextRequest(buffer, index: &index)
                } catch let error as ProtocolError {
                    connection.replyError(ReplyError("ERR \(error.message)"))
                    connection.closeAfterReply = true
                    logger.verbose("Protocol error (\(error.message)) from client \(connection.peer)")
                    index = buffer.count
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
                // A transaction counts and goes on whole, at its EXEC (Redis's
                // commandProcessed: not while the client is in MULTI).
                if let link, connection.transaction == nil {
                    var bytes = link.heldStream
                    link.heldStream = []
                    bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[accounted..<index]))
                    link.offset += bytes.count
                    forwardMasterStream(bytes)
                    accounted = index
                }
            }
            return index
        }
        if connection.input.count == 0 { connection.input.shrinkIfIdle(keep: 64 * 1024) }
    }

    /// Most requests a pipeline's look-ahead covers: 16 lookups' misses in
    /// flight at once is about what a core sustains.
    static let prefetchDepth = 16

    /// Asks the selected cache's engine for the memory the lookups of the
    /// pipelined GETs and SETs in `buffer` will read, so their cache misses
    /// overlap instead of coming one after another (at a million keys, two
    /// in a row per lookup). Only for two such keys or more: a lone one
    /// has nothing to overlap with. Not while a request is half read (a
    /// long one arriving read by read would be walked again at each read).
    /// - Returns: the engine to tell `endPrefetch()` once the buffer's
    ///   requests have run, or nil when nothing was asked for.
    private func prefetchKeys(_ connection: Connection, _ buffer: UnsafeRawBufferPointer) -> CacheEngine? {
        guard connection.transaction == nil, !connection.parser.isMidRequest,
              let engine = connection.cache.engine else { return nil }
        defer { keysAhead.removeAll(keepingCapacity: true) }
        RequestParser.peekRequests(buffer, from: 0, limit: Self.prefetchDepth) { name, key in
            guard let key, let packed = PackedCommandName(bytes: name),
                  let command = peekCommand(packed), command.prefetchesKey else { return }
            keysAhead.append(key)
        }
        // One key a request at most: two keys are two requests.
        guard keysAhead.count > 1 else { return nil }
        engine.prefetch(keysAhead)
        return engine
    }

    /// Runs one command and appends its reply: checks (name, arity,
    /// authentication), the monitor feed, the handler, and the counters
    /// INFO commandstats/errorstats and SLOWLOG report.
    func execute(_ args: Arguments, for connection: Connection) {
        guard connection.silenced == 0, connection.replyOff || connection.replySkipNext else {
            return executeCommand(args, for: connection)
        }
        // A replication feed runs nothing it sends (its REPLCONF ACKs are ignored).
        if connection.isReplica { return replicaInput(args, from: connection) }
        // The master's GETACK is answered (with the offset before it), its other replies dropped.
        if connection.isMaster, args.count >= 2, args[0].lowercasedText == "replconf", args[1].lowercasedText == "getack",
           let link = replicaLink {
            return sendAck(link, now: Self.nowMilliseconds())
        }
        // CLIENT REPLY OFF or SKIP: the reply is dropped, pushes are kept.
        connection.replySkipping = connection.replySkipNext
        connection.replySkipNext = false
        let mark = connection.output.count
        connection.silenced += 1
        executeCommand(args, for: connection)
        connection.silenced -= 1
        if connection.replySkipping || connection.replyOff {
            connection.output.removeSubrange(mark...)
        }
        connection.replySkipping = false
        connection.output.append(contentsOf: connection.heldPushes)
        connection.heldPushes.removeAll()
    }

    private func executeCommand(_ args: Arguments, for connection: Connection) {
        stats.totalCommandsProcessed += 1
        if Self.isCrossProtocolAttack(args[0]) {
            logger.warning("Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands "
                + "to the server. This is likely due to an attacker attempting to use Cross Protocol Scripting to "
                + "compromise it. Connection aborted.")
            connection.closeAfterReply = true
            return
        }
        guard let command = lookupCommand(args[0]) else {
            connection.lastCommand = "NULL"  // Redis's c->lastcmd: CLIENT LIST's cmd=NULL, and not the EXEC before
            reject(connection, CommandTable.unknownCommandError(args), stats: nil)
            return
        }
        connection.lastCommand = command.subcommands.isEmpty || args.count < 2
            ? command.name : command.name + "|" + args[1].lowercasedText
        guard command.accepts(argumentCount: args.count) else {
            reject(connection, .wrongArity(command.name), stats: command.stats)
            return
        }
        let stats = command.stats(for: args)
        if authRequired(connection) && !command.flags.contains("no_auth") {
            reject(connection, .noAuth, stats: stats)
            return
        }
        if connection.transaction != nil && command.flags.contains("no_multi") {
            reject(connection, ReplyError("ERR Command not allowed inside a transaction"), stats: stats)
            return
        }
        // ACL: one flag for a user with every right (the default user's usual case).
        if let user = connection.user, !user.unrestricted,
           let refusal = aclRefusal(user, command, args, connection,
                                    context: connection.transaction != nil || connection.runningExec ? .multi : .toplevel) {
            reject(connection, refusal, stats: stats)
            return
        }
        if replicaLink != nil && refusedOnReadOnlyReplica(command, connection, args) {
            reject(connection, ReplyError("READONLY You can't write against a read only replica."), stats: stats)
            return
        }
        if replicaLink != nil && refusedAsStale(command, connection, args) {
            reject(connection, ReplyError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."),
                   stats: stats)
            return
        }
        if pubsub.subscribedClients > 0 && connection.protocolVersion == 2 && connection.subscriptions.active
            && !PubSub.allowedWhileSubscribed.contains(command.name) {
            reject(connection, ReplyError("ERR Can't execute '\(connection.lastCommand)': only (P|S)SUBSCRIBE / "
                + "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"), stats: stats)
            return
        }
        if (persistence.loading || rejoin != nil) && !persistence.replaying && !command.flags.contains("loading") {
            reject(connection, .loading, stats: stats)
            return
        }
        if clientEvictionLimit > 0 && connection.fd >= 0 && commandDepth == 0 && !connection.isMaster {
            // As Redis's processCommand: a client that evicted itself runs nothing.
            evictClientsIfNeeded()
            if connection.closed { return }
        }
        if config.maxMemory > 0 && !persistence.replaying && connection.fd >= 0 && commandDepth == 0 && !ignoresMaxMemory {
            let outOfMemory = !performEvictions()
            preCommandOutOfMemory = outOfMemory
            if outOfMemory && refusedWhenOutOfMemory(command, args, connection) {
                reject(connection, .oom, stats: stats)
                return
            }
        }
        if busyScript != nil, let refusal = busyScriptRefusal(command, args) {
            reject(connection, refusal, stats: stats)
            return
        }
        if config.scripting.minReplicasToWrite > 0 && !persistence.replaying && writes(command, args) && !enoughGoodReplicas {
            reject(connection, .noReplicas, stats: stats)
            return
        }
        if !persistence.replaying && connection.fd >= 0 && isPaused(command, connection, args) {
            postpone(connection, args)
            return
        }
        // Client-side caching's table stays within tracking-table-max-keys (Redis's processCommand).
        if trackingActive { trackingLimitKeys() }
        if let queued = connection.transaction, !command.isTransactionControl {
            queued.queue(args.copies)
            connection.replySimple("QUEUED")
            return
        }
        // The master's stream is never parked: its bytes are counted and
        // passed on as they are consumed, and it must not time out.
        if !persistence.replaying && !connection.isMaster && needsRoom(command, connection) && persistence.memtableFull {
            // The writer is behind: the write waits (and the client's next
            // requests behind it) until it frees room.
            connection.parked = (args.copies, Self.nowMilliseconds())
            parked.append(connection)
            persistence.requestSeal()
            return
        }
        if parkingCounts && !persistence.replaying && connection.fd >= 0 && commandDepth == 0
            && waitsForTotals(command, connection) {
            // The writer is correcting a replay's totals: the count waits
            // for it, not the loop (and everyone else).
            connection.parked = (args.copies, Self.nowMilliseconds())
            connection.parkedForTotals = true
            parked.append(connection)
            backgroundWorkPending = true
            return
        }
        let outer = runningCommandMayGrow
        runningCommandMayGrow = command.deniesOOM || (command.isExec && outer)
        defer { runningCommandMayGrow = outer }
        let cacheAtStart = connection.cache.name
        // Under appendonly no, a top-level command that cannot change two
        // caches records nothing (its record would be dropped at its end).
        let recording = persistence.beginCommand(unrecorded: commandDepth == 0 && !command.maySpanCaches)
        // One clock read serves the command's duration (Redis's call() times
        // with ustime() too) and the time its keys are judged by.
        let began = commandDepth == 0 ? batchClock ?? Self.realtimeMicroseconds() : Self.realtimeMicroseconds()
        var failure: ReplyError?
        if commandDepth == 0 { Self.commandTime = Int64(began / 1000) }
        commandDepth += 1
        defer {
            commandDepth -= 1
            if commandDepth == 0 { Self.commandTime = nil }
        }
        // Keyspace events are collected only while someone may want them.
        let namingEvents = eventSource != nil || wantsKeyspaceEvents
        let outerEvents = namingEvents ? beginKeyspaceEvents(command, args) : nil
        defer { if namingEvents { endKeyspaceEvents(outerEvents) } }
        // Client-side caching: the keys a tracking client read, and its own
        // invalidations after its reply.
        let tracked = trackingActive || tracking.depth > 0
        if tracked { trackingBeginCommand(connection) }
        defer { if tracked { trackingEndCommand(connection, command, args) } }
        // The replication stream: what the command changed, sent when the outermost one ends.
        let feeding = replicationFeeding
        let propagation = feeding ? propagationBegin(connection) : nil
        let offsetAtStart = replication.offset
        // Monitors see a command as it starts (EVAL before its script's
        // commands), but EXEC after the commands it ran (MULTI, SET, EXEC),
        // as Redis 7.0 shows them.
        let execFedAfter = command.isExec
        if !monitors.isEmpty && !execFedAfter { feedMonitors(args, from: connection) }
        failure = runHandler(command, connection, args)
        if replicaLink != nil && failure == nil && command.isWrite && !connection.isMaster {
            rememberReplicaWrittenKeys(command, args, in: connection.cache)
        }
        if execFedAfter && !monitors.isEmpty { feedMonitors(args, from: connection) }
        if let propagation {
            propagationEnd(propagation, command, args)
            if commandDepth == 1 { flushPropagation(transaction: !ReplicationFeed.touchesArbitraryKeys.contains(command.name)) }
        }
        // The stream's offset right after the client's last write that
        // went out (Redis's c->woff): what its WAIT waits for.
        if replication.offset != offsetAtStart { connection.writeOffset = replication.offset }
        let ended = Self.realtimeMicroseconds()
        let elapsed = max(0, ended - began)
        if commandDepth == 1 && batching { batchClock = ended }
        stats.calls += 1
        stats.microseconds += elapsed
        if config.latencyTracking { stats.histogram.record(microseconds: elapsed) }
        latency.addIfNeeded(command.isFast ? "fast-command" : "command", milliseconds: elapsed / 1000)
        if let failure {
            connection.replyError(failure)
            stats.failed += 1
            countError(failure)
            if connection.isMaster { noteErrorToMaster(failure, command: command.name) }
        }
        // As Redis's call(): not EXEC (its commands are logged), nor a
        // command that blocked its client (logged once served).
        if !command.skipsSlowlog && connection.blocked == nil {
            slowlog.recordIfSlow(args, microseconds: elapsed, client: connection)
        }
        if let lsn = persistence.commandFinished(recording, cache: cacheAtStart, args: args) {
            connection.awaitingLSN = lsn
        }
        // Clients blocked on keys this command readied are served once it
        // has ended (after a whole EXEC), its record logged first.
        if commandDepth == 1 && !readyKeys.isEmpty && !persistence.replaying {
            // Judged by the time now, not the command's start (Redis's
            // handleClientsBlockedOnKeys updates its cached time): a key an
            // EXEC made and let expire is no longer there to serve.
            Self.commandTime = Int64(Self.realtimeMicroseconds() / 1000)
            serveReadyKeys()
            if replicationFeeding { flushPropagation() }
        }
    }

    /// The command a request names (any case), the last one found first.
    @inline(__always)
    private func lookupCommand(_ name: Argument) -> Command? {
        guard let packed = name.withUnsafeBytes({ PackedCommandName(bytes: $0) }) else { return commands.lookup(name) }
        if let recent = recentCommand, recent.name == packed { return recent.command }
        guard let command = commands.lookup(packed: packed) else { return nil }
        recentCommand = (packed, command)
        return command
    }

    /// The command named `packed`, the last one found first, without
    /// remembering it (the look-ahead's: the request path remembers).
    @inline(__always)
    private func peekCommand(_ packed: PackedCommandName) -> Command? {
        if let recent = recentCommand, recent.name == packed { return recent.command }
        return commands.lookup(packed: packed)
    }

    /// A replica leaves maxmemory to its master (`replica-ignore-maxmemory
    /// yes`, Redis's default): it evicts nothing and refuses no write.
    var ignoresMaxMemory: Bool { replicaLink != nil && config.acceptedSettings["replica-ignore-maxmemory"] != "no" }

    /// Whether a command changes data, so it waits while the memtables are
    /// full: a write command, or an EXEC whose transaction holds one.
    func needsRoom(_ command: Command, _ connection: Connection) -> Bool {
        if command.isWrite && command.deniesOOM { return true }
        return command.isExec && queuedWrites(connection)
    }

    /// Whether a call writes (Redis's getCommandFlags gives it the write
    /// flag): a write command or subcommand, or EVAL, EVALSHA or FCALL of a script
    /// declared as writing (a shebang or a function without no-writes).
    func writes(_ command: Command, _ args: Arguments) -> Bool {
        if command.isWrite { return true }
        if !command.writeSubcommands.isEmpty, args.count >= 2 {
            return command.writeSubcommands.contains(args[1].lowercasedText)
        }
        return ["eval", "evalsha", "fcall"].contains(command.name) && scripting.declaresWrites(command.name, args)
    }

    /// Whether the transaction `connection` has queued holds a write.
    func queuedWrites(_ connection: Connection) -> Bool {
        guard let queued = connection.transaction else { return false }
        return queued.commands.contains { call in
            guard let command = commands.lookup(call[0]) else { return false }
            return Arguments.withCopy(of: call) { writes(command, $0) }
        }
    }

    /// Whether `command` counts keys (DBSIZE in the client's cache, INFO in
    /// every cache) while a replay's blind writes leave the totals inexact.
    /// The command then waits, parked, while `stepTotals` looks them up a
    /// part per loop iteration and the writer corrects those it holds.
    /// Making them exact in one go stalled every client: 335-380 ms after
    /// 200,000 writes replayed into a file of 1M keys (looking each key up,
    /// or waiting on the loop for the writer's batch). A count parked for
    /// `memtable-full-timeout` (a writer failing) runs anyway, exact the
    /// old way; so does one inside EXEC or a script.
    func waitsForTotals(_ command: Command, _ connection: Connection) -> Bool {
        !persistence.loading && !totalsToResolve(command, connection).isEmpty
    }

    /// The engines whose totals `command` needs exact and that are not yet.
    private func totalsToResolve(_ command: Command, _ connection: Connection) -> [CacheEngine] {
        guard command.countsKeys else { return [] }
        switch command.name {
        case "dbsize": return connection.cache.engine.map { $0.totalsPending ? [$0] : [] } ?? []
        case "info": return registry.open.values.compactMap { $0.engine?.totalsPending ?? false ? $0.engine : nil }
        default: return []
        }
    }

    /// Blind writes looked up per loop iteration for a parked count (about 5 ms).
    static let totalsStep = 2048

    /// One step towards the totals a parked count needs.
    /// - Returns: whether it still waits.
    private func stepTotals(_ command: Command, _ connection: Connection) -> Bool {
        var waiting = false
        for engine in totalsToResolve(command, connection) {
            if engine.totalsPendingInFlight {
                waiting = true  // the writer's batch corrects its part; its completion wakes the loop
                continue
            }
            do {
                if try !engine.resolveTotalsStep(limit: Self.totalsStep) {
                    waiting = true
                    backgroundWorkPending = true
                }
            } catch {
                continue  // the count runs and reports what it can
            }
        }
        return waiting
    }

    /// Runs the writes that waited for room, in arrival order, once there
    /// is room; a write that waited `memtable-full-timeout` gets an error.
    /// Runs a count parked by `waitsForTotals` once its totals are exact.
    func resumeParked() {
        guard !parked.isEmpty else { return }
        let now = Self.nowMilliseconds()
        let full = persistence.memtableFull
        var still: [Connection] = []
        for connection in parked {
            guard !connection.closed, let (args, since) = connection.parked else { continue }
            if connection.parkedForTotals {
                if now - since < Int64(config.memtableFullTimeout), let command = commands.lookup(args[0]),
                   stepTotals(command, connection) {
                    still.append(connection)
                    continue
                }
            } else if full && now - since < Int64(config.memtableFullTimeout) {
                still.append(connection)
                continue
            }
            let forRoom = !connection.parkedForTotals
            connection.parked = nil
            connection.parkedForTotals = false
            // How long the write waited for room: LATENCY's memtable-wait.
            if forRoom { latency.addIfNeeded("memtable-wait", milliseconds: Int(now - since)) }
            if full && forRoom {
                connection.replyError(.memtableFull(config.memtableMaxBytes))
                countError(.memtableFull(config.memtableMaxBytes))
            } else {
                // A count resumed runs now, exact or waited out (not parked again).
                parkingCounts = forRoom
                Arguments.withCopy(of: args) { execute($0, for: connection) }
                parkingCounts = true
            }
            if connection.parked == nil { executeBuffered(connection) }
            if connection.parked != nil { still.append(connection) }
            queueReplies(connection)
        }
        parked = still
        // A count waits for the writer's wake-up, not a poll.
        if parked.contains(where: { !$0.parkedForTotals }) { backgroundWorkPending = !full }
    }

    /// Replays one command of the append-only log in `cache` (a record of a
    /// command whose effect is its own re-run).
    func replayCommand(_ args: [[UInt8]], in cache: OpenCache, time: Int64) {
        Self.clockOverride = time
        defer { Self.clockOverride = nil }
        let connection = replayConnection ?? Connection(
            id: 0, fd: -1, token: 0, peer: nil, local: "", cache: cache, limits: requestLimits, now: Self.nowMilliseconds())
        replayConnection = connection
        connection.cache = cache
        connection.output.removeAll(keepingCapacity: true)
        Arguments.withCopy(of: args) { execute($0, for: connection) }
    }

    /// Answers an error for a command refused before it ran (unknown, arity, NOAUTH).
    /// Runs `command`'s handler for `connection`.
    /// - Returns: the error it answered with, as a reply (nil on success).
    func runHandler(_ command: Command, _ connection: Connection, _ args: Arguments) -> ReplyError? {
        do {
            try command.handler(CommandContext(server: self, connection: connection, args: args))
            return nil
        } catch let error as ReplyError {
            return error
        } catch let error as SQLiteKVCache.Error {
            return .engine(error)
        } catch {
            return ReplyError("ERR \(error)")
        }
    }

    /// Refuses the command about to run, as Redis's `rejectCommand`: inside
    /// MULTI a refused command fails the transaction, and a refused EXEC,
    /// in MULTI or not, drops it whole (`execCommandAbort`: `EXECABORT
    /// Transaction discarded because of: <the reason>`, the reason without
    /// the `ERR ` that Redis's `rejectCommandFormat` never put there; a
    /// NOPERM or OOM keeps its code).
    func reject(_ connection: Connection, _ error: ReplyError, stats: CommandStats?) {
        var reply = error
        if connection.lastCommand == "exec" {
            connection.transaction = nil
            unwatchAll(connection)  // discardTransaction unwatches, in MULTI or not
            let reason = error.text.hasPrefix("ERR ") ? String(error.text.dropFirst(4)) : error.text
            reply = ReplyError("EXECABORT Transaction discarded because of: \(reason)")
        } else if let transaction = connection.transaction {
            transaction.failed = true
        }
        connection.replyError(reply)
        stats?.rejected += 1
        countError(reply)
        if connection.isMaster { noteErrorToMaster(reply, command: "<unknown>") }
    }

    /// A command of the master's stream failed on this replica: the reply
    /// is dropped, so the error is logged and counted, as Redis's
    /// afterErrorReply (propagation-error-behavior ignore).
    func noteErrorToMaster(_ error: ReplyError, command: String) {
        stats.unexpectedErrorReplies += 1
        logger.warning("== CRITICAL == This replica is sending an error to its master: '\(error.text)' "
            + "after processing the command '\(command)'")
    }

    /// Counts an error reply for INFO (total_error_replies, errorstats by prefix).
    func countError(_ error: ReplyError) {
        stats.totalErrorReplies += 1
        let prefix = error.text.split(separator: " ", maxSplits: 1).first.map(String.init) ?? "ERR"
        stats.errorsByPrefix[prefix, default: 0] += 1
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
}
