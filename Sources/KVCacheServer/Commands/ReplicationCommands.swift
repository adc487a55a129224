import RESP

/// The master side of Redis's replication handshake, enough for a
/// read-only feed of the writes (Server/ReplicationFeed.swift): SYNC,
/// PSYNC (always a full resynchronization) and REPLCONF.
let replicationCommands: [Command] = [
    Command(name: "sync", arity: 1, flags: ["admin", "noscript", "no_async_loading", "no_multi"], firstKey: 0, lastKey: 0,
            step: 0, group: "server", summary: "An internal command used in replication.",
            handler: { try sync($0, psync: false) }),
    Command(name: "psync", arity: -3, flags: ["admin", "noscript", "no_async_loading", "no_multi"], firstKey: 0, lastKey: 0,
            step: 0, group: "server", summary: "An internal command used in replication.",
            handler: { try sync($0, psync: true) }),
    Command(name: "replconf", arity: -1, flags: ["admin", "noscript", "loading", "stale", "allow_busy"], firstKey: 0,
            lastKey: 0, step: 0, group: "server", summary: "An internal command for configuring the replication stream.",
            handler: replconf),
    Command(name: "role", arity: 1, flags: ["noscript", "loading", "stale", "fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Returns the replication role.", handler: role),
    Command(name: "replicaof", arity: 3, flags: ["admin", "noscript", "stale", "no_async_loading"], firstKey: 0,
            lastKey: 0, step: 0, group: "server",
            summary: "Configures a server as replica of another, or promotes it to a master.",
            handler: replicaof),
    Command(name: "slaveof", arity: 3, flags: ["admin", "noscript", "stale", "no_async_loading"], firstKey: 0,
            lastKey: 0, step: 0, group: "server",
            summary: "Sets a Redis server as a replica of another, or promotes it to being a master.",
            handler: replicaof),
]

/// ROLE, as Redis's roleCommand answers it. A master: `master`, the
/// stream's offset, and each replica's ip, listening port and the offset
/// it last acknowledged (REPLCONF ACK; 0 before one). A replica: `slave`,
/// the master's host and port, the link's state and the offset applied.
private func role(_ ctx: CommandContext) throws {
    let c = ctx.connection
    if let link = ctx.server.replicaLink {
        c.replyArrayHeader(5)
        c.replyBulk("slave")
        c.replyBulk(link.host)
        c.replyInteger(link.port)
        c.replyBulk(ctx.server.roleState(link))
        c.replyInteger(link.state == .connected ? link.offset : -1)
        return
    }
    let replication = ctx.server.replication
    let replicas = ctx.server.openReplicas
    c.replyArrayHeader(3)
    c.replyBulk("master")
    c.replyInteger(replication.offset)
    c.replyArrayHeader(replicas.count)
    for replica in replicas {
        c.replyArrayHeader(3)
        c.replyBulk(replica.peerHost)
        c.replyBulk(String(replica.replicaListeningPort))
        c.replyBulk(String(replica.replicaAckOffset))
    }
}

/// REPLICAOF (SLAVEOF) host port makes this server a replica of that
/// master (Server/ReplicaLink.swift); NO ONE makes it a master again,
/// keeping its data (Redis's replicaofCommand).
private func replicaof(_ ctx: CommandContext) throws {
    let server = ctx.server
    if ctx.option(1) == "no" && ctx.option(2) == "one" {
        if server.replicaLink != nil { server.stopReplicating() }
        ctx.connection.replyOK()
        return
    }
    if ctx.connection.isReplica { throw ReplyError("ERR Command is not valid when client is a replica.") }
    guard let port = parseStrictInt64(ctx.args[2]), (0...65535).contains(port) else {
        throw ReplyError("ERR Invalid master port")
    }
    let host = ctx.text(1)
    if let current = server.masterAddress, current.host.lowercased() == host.lowercased(), current.port == Int(port) {
        server.logger.notice("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.")
        ctx.connection.replySimple("OK Already connected to specified master")
        return
    }
    server.replicate(from: host, port: Int(port))
    server.logger.notice("REPLICAOF \(host):\(port) enabled (user request from '\(ctx.connection.peer)')")
    ctx.connection.replyOK()
}

/// SYNC, and PSYNC replid offset (answered `+FULLRESYNC <replid> <offset>`:
/// there is no backlog to continue from): the empty RDB, then the stream.
private func sync(_ ctx: CommandContext, psync: Bool) throws {
    let c = ctx.connection
    // Ignored from a replica or a monitor, as Redis.
    guard !c.isReplica, !c.isMonitor else { return }
    let offset = psync ? try ctx.integer(2) : -1
    guard c.pendingOutput == 0 else { throw ReplyError("ERR SYNC and PSYNC are invalid with pending output") }
    // A replica without its master has nothing current to hand on (Redis's syncCommand).
    if let link = ctx.server.replicaLink, link.state != .connected {
        throw ReplyError("NOMASTERLINK Can't SYNC while not connected with my master")
    }
    if psync && ctx.server.continueReplica(c, replicationID: ctx.text(1), offset: Int(offset)) { return }
    ctx.server.attachReplica(c, fullResync: psync)
}

/// REPLCONF option value ...: listening-port, ip-address, capa, rdb-only
/// and rdb-filter-only (which redis-cli --replica sends) answer +OK; ack, fack and getack answer nothing (Redis's
/// replconfCommand).
private func replconf(_ ctx: CommandContext) throws {
    guard ctx.args.count % 2 == 1 else { throw ReplyError.syntax }
    for j in stride(from: 1, to: ctx.args.count, by: 2) {
        switch ctx.option(j) {
        case "listening-port":
            let port = try ctx.integer(j + 1)
            ctx.connection.replicaListeningPort = Int(truncatingIfNeeded: port)
        case "ip-address":
            guard ctx.args[j + 1].count < 256 else {
                throw ReplyError("ERR REPLCONF ip-address provided by replica instance is too long: \(ctx.args[j + 1].count) bytes")
            }
        case "capa", "rdb-filter-only":
            break
        case "ack", "fack", "getack":
            return
        case "rdb-only":
            guard let flag = parseStrictInt64(ctx.args[j + 1]) else { throw ReplyError.notInteger }
            guard flag == 0 || flag == 1 else { throw ReplyError("ERR value is out of range, value must between 0 and 1") }
        default:
            throw ReplyError("ERR Unrecognized REPLCONF option: \(ctx.quoted(j))")
        }
    }
    ctx.connection.replyOK()
}
