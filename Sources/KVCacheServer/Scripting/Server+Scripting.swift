#if canImport(Glibc)
import Glibc
#endif
import RESP
import SQLiteKVCache

/// The loop's side of scripting: running a script's command (Redis's
/// `call` from scriptCall), and serving the other clients while a script
/// runs past busy-reply-threshold (Redis's processEventsWhileBlocked).
extension Server {
    /// Runs one command of a script on the script's client: the handler,
    /// the counters, SLOWLOG, MONITOR, and its part of the script's record.
    /// The script's own checks (Scripting.call) came first; the client
    /// never waits for room in the memtables (the script is one unit).
    /// - Parameters:
    ///   - caller: the client that ran the script, and `callerRequest` its
    ///     EVAL/FCALL: when the script runs a read-only command, the keys the
    ///     script declared are tracked for the caller (CLIENT TRACKING), as Redis.
    func executeForScript(_ command: Command, _ args: Arguments, on connection: Connection, caller: Connection? = nil,
                          callerRequest: [[UInt8]] = []) {
        stats.totalCommandsProcessed += 1
        connection.lastCommand = command.subcommands.isEmpty || args.count < 2
            ? command.name : command.name + "|" + args[1].lowercasedText
        if !monitors.isEmpty { feedMonitors(args, from: connection) }
        let outer = runningCommandMayGrow
        runningCommandMayGrow = command.deniesOOM
        defer { runningCommandMayGrow = outer }
        let cacheAtStart = connection.cache.name
        let recording = persistence.beginCommand()
        let began = Self.monotonicMicroseconds()
        var failure: ReplyError?
        // Keyspace events are named by the script's command, not by EVAL.
        let namingEvents = eventSource != nil || wantsKeyspaceEvents
        let outerEvents = namingEvents ? beginKeyspaceEvents(command, args) : nil
        defer { if namingEvents { endKeyspaceEvents(outerEvents) } }
        defer {
            if let caller, caller.tracking != nil, command.flags.contains("readonly"), callerRequest.count >= 3,
               let numkeys = Int(String(decoding: callerRequest[2], as: UTF8.self)), numkeys > 0,
               callerRequest.count >= 3 + numkeys {
                trackingRemember(caller, keys: Array(callerRequest[3..<(3 + numkeys)]))
            }
        }
        // The script's writes are what it propagates (effects replication).
        let propagation = replicationFeeding ? propagationBegin(connection) : nil
        failure = runHandler(command, connection, args)
        if let propagation { propagationEnd(propagation, command, args) }
        let elapsed = Self.monotonicMicroseconds() - began
        // A container's subcommand counts as itself (xgroup|createconsumer), as outside scripts.
        let stats = command.stats(for: args)
        stats.calls += 1
        stats.microseconds += elapsed
        if let failure {
            connection.replyError(failure)
            stats.failed += 1
            countError(failure)
        }
        slowlog.recordIfSlow(args, microseconds: elapsed, client: connection)
        _ = persistence.commandFinished(recording, cache: cacheAtStart, args: args)
    }

    /// What a client gets for `command` while a script is busy: nil for the
    /// commands Redis lets through (SCRIPT KILL, FUNCTION KILL and STATS,
    /// SHUTDOWN, AUTH, HELLO, MULTI, DISCARD, WATCH, UNWATCH, QUIT, RESET).
    func busyScriptRefusal(_ command: Command, _ args: Arguments) -> ReplyError? {
        guard let run = busyScript else { return nil }
        let flags = RedisCommandFlags.flags(of: command, name: args[0], subcommand: args.count > 1 ? args[1] : nil)
        let refusal: ReplyError = run.isEval ? .busyEval : .busyFunction
        guard flags.contains("allow_busy") else { return refusal }
        // SHUTDOWN only with NOSAVE, as in Redis.
        if command.name == "shutdown" && !args.dropFirst().contains(where: { $0.lowercasedText == "nosave" }) { return refusal }
        return nil
    }

    /// A script passed busy-reply-threshold: from now on the other clients
    /// are served from its hook, and get -BUSY.
    func scriptBusyStarted(_ run: ScriptRun) {
        busyScript = run
    }

    /// The busy script ended: its client is served again.
    func scriptBusyEnded(_ run: ScriptRun) {
        busyScript = nil
    }

    /// Serves the other clients once, without blocking, from a busy
    /// script's hook: accepts, reads and answers (-BUSY for nearly all),
    /// writes the log's completed records and sends replies. Never seals,
    /// sweeps or evicts (the script's changes must stay one unit), never
    /// reads the script's own client (it waits for its reply), and leaves
    /// the background threads' wake-ups for later. A shutdown asked for
    /// meanwhile (SHUTDOWN, SIGTERM) exits at once, as Redis does: the
    /// script's changes were never logged, so the log and SQLite hold
    /// nothing of it.
    func processEventsWhileBusy(_ run: ScriptRun) {
        guard !processingWhileBusy else { return }
        processingWhileBusy = true
        defer { processingWhileBusy = false }
        let caller = run.caller
        try? epoll.wait(timeoutMilliseconds: 0) { event in
            // The writer's and syncer's wake-ups wait for the script's end,
            // and so does the script's own client.
            if event.token == Self.wakeToken || event.token == caller.token { return }
            self.dispatch(event)
        }
        if !running { exitDuringBusyScript(run) }
        persistence.beforeReplies()
        sendQueuedReplies()
    }

    /// SHUTDOWN (or SIGTERM) while a script is busy: keep what the log
    /// holds and exit without the script's changes.
    private func exitDuringBusyScript(_ run: ScriptRun) -> Never {
        logger.warning("Shutdown requested while a script was running (\(run.name)); exiting without its changes, "
            + "which were never logged")
        persistence.beforeReplies()
        persistence.syncLogNow()
        logger.notice("Redis is now ready to exit, bye bye...")
        exit(0)
    }
}
