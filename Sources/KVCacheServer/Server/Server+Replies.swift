#if canImport(Glibc)
import Glibc
#endif
import CLinux
import RESP
import SQLiteKVCache

/// Sending replies (Redis's networking.c, its write half): clients with
/// output are queued during the iteration and sent to after the log is
/// written (under `appendfsync always`, after its fsync); a socket that
/// takes less waits for EPOLLOUT; a client whose unread replies pass
/// client-output-buffer-limit is closed.
extension Server {
    /// Queues a client with output (its own replies, or a MONITOR feed) to
    /// be sent to at the end of this iteration, after the log is written.
    func queueReplies(_ connection: Connection) {
        guard !connection.queuedForReplies else { return }
        connection.queuedForReplies = true
        clientsWithReplies.append(connection)
    }

    /// Sends the replies of every queued client (Redis's
    /// handleClientsWithPendingWrites), holding those that wait for the
    /// log's fsync; runs after the log is written.
    func sendQueuedReplies() {
        if !pubsub.doomed.isEmpty { closeDoomedSubscribers() }
        if !tracking.broadcastKeys.isEmpty { trackingBroadcast() }
        let synced = persistence.syncedLSN
        for connection in clientsWithReplies {
            connection.queuedForReplies = false
            guard !connection.closed else { continue }
            if connection.awaitingLSN > synced {
                // appendfsync always: the reply waits for its record's fsync.
                heldForSync.append(connection)
                continue
            }
            sendReplies(connection)
            checkSubscriberLimit(connection)
        }
        clientsWithReplies.removeAll(keepingCapacity: true)
        if !pubsub.doomed.isEmpty { closeDoomedSubscribers() }
    }

    /// Writes as much of a client's unsent replies as the socket takes
    /// (Redis's writeToClient); waits for EPOLLOUT when it takes less;
    /// closes the client once done if it asked for that.
    func sendReplies(_ connection: Connection) {
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
                // A client that never catches up (a busy subscriber) would keep
                // what it was sent in front of what it was not: drop the sent
                // part once it is most of the buffer, so memory follows the
                // unsent bytes the output limits bound.
                if connection.outputSent >= 1 << 16 && connection.outputSent * 2 >= connection.output.count {
                    connection.output.removeFirst(connection.outputSent)
                    connection.outputSent = 0
                }
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

    /// Queues for sending the replies that waited for the log's fsync up to `lsn`.
    func releaseRepliesSynced(upTo lsn: UInt64) {
        guard !heldForSync.isEmpty else { return }
        var still: [Connection] = []
        for connection in heldForSync where !connection.closed {
            if connection.awaitingLSN <= lsn { queueReplies(connection) } else { still.append(connection) }
        }
        heldForSync = still
    }

    /// Closes a client whose unsent replies pass the hard output limit, or
    /// the soft one for too long (as Redis's client-output-buffer-limit),
    /// or 1 KiB past a 16 KiB reply buffer before it has authenticated.
    /// - Returns: whether it was closed.
    @discardableResult
    func overOutputLimit(_ connection: Connection, now: Int64 = Server.nowMilliseconds()) -> Bool {
        let limit = connection.subscriptions.active ? config.pubsubOutputBufferLimit : config.outputBufferLimit
        let pending = connection.pendingOutput
        // An unauthenticated client may not hold more than 1 KiB of replies
        // past Redis's 16 KiB reply buffer (Redis's checkClientOutputBufferLimits,
        // the fix of CVE-2025-21605).
        var over = (limit.hard > 0 && pending > limit.hard) || (pending > 17 * 1024 && authRequired(connection))
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
}
