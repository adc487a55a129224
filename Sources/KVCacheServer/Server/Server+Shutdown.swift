#if canImport(Glibc)
import Glibc
#endif
import CLinux
import RESP
import SQLiteKVCache

/// A clean stop (SIGTERM, SIGINT, SHUTDOWN): stop accepting, write and
/// fsync the log, give clients a bounded moment to take their replies,
/// apply what memory holds to SQLite, close every cache.
extension Server {
    /// SHUTDOWN (without ABORT), SIGTERM or SIGINT: Redis's
    /// prepareForShutdown. Unless `now` (NOW, inside MULTI or a busy
    /// script) or `shutdown-timeout` is 0, while a replica has not
    /// acknowledged the whole stream the shutdown waits, writes paused and
    /// the replicas asked for an ACK, until they have or the timeout ends
    /// (`continueShutdown`); `client` (SHUTDOWN's) blocks meanwhile.
    /// Otherwise the loop stops after the current iteration and `run()`
    /// shuts down cleanly.
    func requestShutdown(now: Bool = false, client: Connection? = nil) {
        if now || config.shutdownTimeout == 0 || replicasInSync {
            finishShutdown()
            return
        }
        if shutdownDeadline == 0 {
            shutdownDeadline = Self.nowMilliseconds() + Int64(config.shutdownTimeout) * 1000
            requestAcks()
            holdExpiryIfNeeded()  // writes wait (isPaused), and no key expires meanwhile
            logger.notice("Waiting for replicas before shutting down.")
        }
        if let client, let command = commands.lookup(Array("shutdown".utf8)) {
            let state = BlockState(command: command, args: [], cache: client.cache, keys: [], kind: .string,
                                   deadline: nil, since: Self.nowMilliseconds())
            state.shutdown = true
            block(client, state)
            shutdownWaiters.append(client)
        }
    }

    /// Every feed acknowledged the whole stream (Redis's isReadyToShutdown).
    var replicasInSync: Bool { openReplicas.allSatisfy { $0.replicaAckOffset >= streamOffset } }

    /// A waiting shutdown goes on once the replicas are in sync or its time
    /// is up (from the cron and on each ACK).
    func continueShutdown(now: Int64 = Server.nowMilliseconds()) {
        guard shutdownDeadline != 0, replicasInSync || now >= shutdownDeadline else { return }
        finishShutdown()
    }

    /// SHUTDOWN ABORT: the waiting shutdown is called off; its blocked
    /// clients get Redis's error and writes resume (Redis's abortShutdown).
    /// - Returns: false when no shutdown was waiting.
    func abortShutdown() -> Bool {
        guard shutdownDeadline != 0 else { return false }
        logger.warning("Shutdown manually aborted.")
        shutdownDeadline = 0
        for client in shutdownWaiters where !client.closed {
            client.replyError(ReplyError("ERR Errors trying to SHUTDOWN. Check logs."))
            unblock(client)
            queueReplies(client)
        }
        shutdownWaiters.removeAll()
        holdExpiryIfNeeded()
        // The writes it held go on, unless CLIENT PAUSE still holds them.
        if pauseType == .off { unpauseClients() }
        return true
    }

    /// INFO's shutdown_in_milliseconds (only while a shutdown waits): the
    /// time left to wait for replicas.
    var shutdownInMilliseconds: Int64 { shutdownDeadline == 0 ? 0 : max(0, shutdownDeadline - Self.nowMilliseconds()) }

    /// Logs the replicas that are behind (Redis's finishShutdown) and stops
    /// the loop; new connections are refused from now on (a client that
    /// sees SHUTDOWN's connection close finds the port closed, as after
    /// Redis's exit).
    private func finishShutdown() {
        let replicas = openReplicas
        let now = Self.nowMilliseconds()
        var lagging = 0
        for replica in replicas where replica.replicaAckOffset < streamOffset {
            lagging += 1
            logger.warning("Lagging replica \(replica.peer) reported offset \(streamOffset - replica.replicaAckOffset) "
                + "behind master, lag=\((now - replica.replicaAckTime) / 1000), state=online.")
        }
        if !replicas.isEmpty {
            logger.notice("\(replicas.count - lagging) of \(replicas.count) replicas are in sync when shutting down.")
        }
        shutdownDeadline = 0
        running = false
        stopListening()
    }

    /// Closes the listening sockets (the second call does nothing).
    private func stopListening() {
        for listener in listeners {
            epoll.remove(listener.fd)
            Posix.close(listener.fd)
        }
        listeners.removeAll()
    }

    func shutdown() {
        stopListening()
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
                sendReplies(connection)
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
