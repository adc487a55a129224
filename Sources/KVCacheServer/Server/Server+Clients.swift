#if canImport(Glibc)
import Glibc
#endif
import CLinux
import RESP
import SQLiteKVCache

/// Clients come and go (Redis's networking.c, its accept and close half):
/// accepting on the listeners (refusals past maxclients or in protected
/// mode), TLS handshakes, closing and CLIENT KILL, and pausing the
/// listeners when descriptors run out.
extension Server {
    func acceptClients(on listener: Int32, tls: Bool) {
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
            if config.protectedMode && acl.defaultUser.nopass
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
                cache = try registry.firstCache()
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
            assignStartingUser(connection)
            nextClientID += 1
            guard register(connection) else { continue }
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

    /// Watches a new connection's socket and counts it among the clients;
    /// false (the socket closed) when epoll refuses it.
    func register(_ connection: Connection) -> Bool {
        let fd = connection.fd
        do {
            try epoll.add(fd, token: connection.token, interest: .readable)
        } catch {
            logger.warning("Registering client: \(error)")
            Posix.close(fd)
            return false
        }
        if fd >= connections.count {
            connections.append(contentsOf: repeatElement(nil, count: Int(fd) - connections.count + 1))
        }
        connections[Int(fd)] = connection
        clientCount += 1
        return true
    }

    /// Stops watching the listening sockets until `time` (cron resumes them).
    func pauseListeners(until time: Int64) {
        guard listenersPausedUntil == nil else { return }
        listenersPausedUntil = time
        for listener in listeners { epoll.remove(listener.fd) }
    }

    func resumeListenersIfDue(now: Int64) {
        guard let until = listenersPausedUntil, now >= until else { return }
        listenersPausedUntil = nil
        watchListeners()
    }

    /// Watches every listening socket, each under its index's token.
    private func watchListeners() {
        for (index, listener) in listeners.enumerated() {
            try? epoll.add(listener.fd, token: Self.listenerTokenBase | UInt64(index), interest: .readable)
        }
    }

    /// A listening socket on `host`:`port`, with the address it bound
    /// (port 0 picks a free one).
    /// - Throws: `ConfigError` for an address that does not parse, or with
    ///   `failure`'s text (given the address and why) when it cannot listen.
    static func openListener(host: String, port: Int,
                             failure: (SocketAddress, String) -> String) throws -> (fd: Int32, address: SocketAddress) {
        guard let address = SocketAddress(host: host, port: port) else {
            throw ConfigError("invalid bind address '\(host)'")
        }
        do {
            let fd = try Posix.listen(on: address)
            return (fd, Posix.localAddress(fd) ?? address)
        } catch {
            throw ConfigError(failure(address, String(cString: strerror(error.errno))))
        }
    }

    /// Listening sockets on each of `hosts` for the plain port and the TLS
    /// port (those not 0); none is left open when one fails.
    /// - Throws: `ConfigError` naming the address that could not be had.
    func openListeners(on hosts: [String]) throws -> [(fd: Int32, address: SocketAddress, tls: Bool)] {
        var opened: [(fd: Int32, address: SocketAddress, tls: Bool)] = []
        for (port, tls) in [(config.port, false), (config.tlsPort, true)] where port != 0 {
            for host in hosts {
                do {
                    let (fd, bound) = try Self.openListener(host: host, port: port) { "could not listen on \($0): \($1)" }
                    opened.append((fd, bound, tls))
                } catch {
                    for listener in opened { Glibc.close(listener.fd) }
                    throw error
                }
            }
        }
        return opened
    }

    /// CONFIG SET port: listens on `port` (each bind address) in place of
    /// the plain listeners. The new sockets are opened first, so a port
    /// that cannot be had changes nothing (Redis's changeListenPort);
    /// clients already connected stay. Port 0 closes the plain listeners.
    /// - Throws: `ConfigError` naming why the port cannot be listened on.
    func rebindPlainPort(_ port: Int) throws {
        var fresh: [(fd: Int32, address: SocketAddress, tls: Bool)] = []
        for host in config.bind where port != 0 {
            do {
                let (fd, bound) = try Self.openListener(host: host, port: port) { _, why in "Unable to listen on this port: \(why)" }
                fresh.append((fd, bound, false))
            } catch {
                for listener in fresh { Glibc.close(listener.fd) }
                throw error
            }
        }
        let paused = listenersPausedUntil != nil
        for listener in listeners {
            if !paused { epoll.remove(listener.fd) }
            if !listener.tls { Glibc.close(listener.fd) }
        }
        listeners = listeners.filter(\.tls) + fresh
        guard !paused else { return }  // resumeListenersIfDue watches them all
        watchListeners()
        logger.notice("Listening on \(listeningAddresses.joined(separator: ", "))")
    }

    /// CONFIG SET bind: listens on `hosts` (the plain and the TLS port) in
    /// place of the listeners. The old sockets close first (an address
    /// may overlap a new one); when a new one cannot be had, the old
    /// addresses are listened on again and the error names the failure
    /// (Redis's changeBindAddr). Clients already connected stay.
    /// - Throws: `ConfigError` with Redis's text.
    func rebindAddresses(_ hosts: [String]) throws {
        let paused = listenersPausedUntil != nil
        for listener in listeners {
            if !paused { epoll.remove(listener.fd) }
            Glibc.close(listener.fd)
        }
        var failure: Error?
        do {
            listeners = try openListeners(on: hosts)
        } catch {
            failure = error
            logger.warning("Failed to bind to \(hosts.joined(separator: " ")): \(error)")
            listeners = (try? openListeners(on: config.bind)) ?? []
        }
        if !paused { watchListeners() }
        logger.notice("Listening on \(listeningAddresses.joined(separator: ", "))")
        if failure != nil { throw ConfigError("Failed to bind to specified addresses.") }
    }

    var requestLimits: RequestLimits {
        RequestLimits(maxBulkLength: config.protoMaxBulkLen)
    }

    /// Moves a TLS handshake along; a client stalled in it costs nothing but
    /// its descriptor until the handshake deadline (cron) closes it.
    func advanceHandshake(_ connection: Connection) {
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
        // What it held no longer counts against maxmemory (the count is the
        // last cron's, which may not have seen it: never below zero); taken
        // before its watched keys and subscriptions go.
        if connection.isReplica {
            replicaBufferBytes = max(0, replicaBufferBytes - connection.memoryUsage)
        } else {
            clientBufferBytes = max(0, clientBufferBytes - connection.memoryUsage)
        }
        connection.tls?.shutdown()
        if connection.isMonitor { monitors.removeAll { $0 === connection } }
        if connection.isReplica { detachReplica(connection) }
        if connection.isMaster { masterLost(connection) }
        if connection.blocked != nil { unblock(connection) }
        if connection.postponed != nil { postponedClients.removeAll { $0 === connection } }
        unwatchAll(connection)
        unsubscribeAll(connection)
        disableTracking(connection)
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
}

/// Raises the soft descriptor limit so `maxclients` clients and every cache
/// file fit; when the hard limit is too low, lowers `maxclients` to what
/// fits, as Redis does.
/// - Returns: the maxclients that fits.
func fitDescriptorLimit(_ config: ServerConfig, logger: Logger) -> Int {
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
