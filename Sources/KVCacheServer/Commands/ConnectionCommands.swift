import RESP

/// PING, ECHO, QUIT, SELECT, HELLO, CLIENT, WAIT.
let connectionCommands: [Command] = [
    Command(name: "ping", arity: -1, flags: ["fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "Returns the server's liveliness response.", handler: ping),
    Command(name: "echo", arity: 2, flags: ["fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "Returns the given string.", handler: { $0.connection.replyBulk($0.args[1]) }),
    Command(name: "quit", arity: -1, flags: ["fast", "allow_busy", "no_auth"], firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "Closes the connection.", handler: quit),
    Command(name: "select", arity: 2, flags: ["loading", "stale", "fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "Changes the selected cache: a DB index or a cache name.", handler: select),
    Command(name: "hello", arity: -1, flags: ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
            firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "Handshakes with the server.", handler: hello),
    Command(name: "client", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "A container for client connection commands.", handler: client,
            subcommands: ["caching", "getname", "getredir", "id", "info", "kill", "list", "no-evict", "pause", "reply",
                          "setinfo", "setname", "tracking", "trackinginfo", "unblock", "unpause"]),
    Command(name: "wait", arity: 3, flags: [], firstKey: 0, lastKey: 0, step: 0, group: "generic",
            summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", handler: wait),
]

private func ping(_ ctx: CommandContext) throws {
    if ctx.args.count <= 2 && ctx.connection.subscriptions.active && ctx.connection.protocolVersion == 2 {
        // Subscribed (RESP2): a message-shaped reply, as Redis's pingCommand.
        ctx.connection.replyArrayHeader(2)
        ctx.connection.replyBulk("pong")
        if ctx.args.count == 2 { ctx.connection.replyBulk(ctx.args[1]) } else { ctx.connection.replyBulk("") }
        return
    }
    switch ctx.args.count {
    case 1: ctx.connection.replySimple("PONG")
    case 2: ctx.connection.replyBulk(ctx.args[1])
    default: throw ReplyError.wrongArity("ping")
    }
}

private func quit(_ ctx: CommandContext) throws {
    ctx.connection.replyOK()
    ctx.connection.closeAfterReply = true
}

private func select(_ ctx: CommandContext) throws {
    ctx.connection.cache = try ctx.server.registry.cache(selecting: ctx.args[1])
    ctx.connection.replyOK()
}

/// HELLO [protover [AUTH username password] [SETNAME clientname]]: switches
/// the connection to RESP2 or RESP3 and describes the server.
private func hello(_ ctx: CommandContext) throws {
    let args = ctx.args
    var name: [UInt8]?
    var version = ctx.connection.protocolVersion
    if args.count >= 2 {
        guard let requested = parseStrictInt64(args[1]) else {
            throw ReplyError("ERR Protocol version is not an integer or out of range")
        }
        guard requested == 2 || requested == 3 else {
            throw ReplyError("NOPROTO unsupported protocol version")
        }
        version = Int(requested)
        var i = 2
        while i < args.count {
            let option = ctx.option(i)
            let more = args.count - i - 1
            if option == "auth" && more >= 2 {
                try ctx.server.authenticate(ctx.connection, user: args.bytes(i + 1), password: args.bytes(i + 2))
                i += 3
            } else if option == "setname" && more >= 1 {
                try validateClientName(args[i + 1])
                name = args.bytes(i + 1)
                i += 2
            } else {
                throw ReplyError("ERR Syntax error in HELLO option '\(ctx.quoted(i))'")
            }
        }
    }
    guard !ctx.server.authRequired(ctx.connection) else {
        throw ReplyError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
            + "AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol "
            + "version at the same time")
    }
    if let name { ctx.connection.name = name }
    let c = ctx.connection
    c.protocolVersion = version
    c.replyMapHeader(7)
    c.replyBulk("server"); c.replyBulk("redis")
    c.replyBulk("version"); c.replyBulk(Server.redisVersion)
    c.replyBulk("proto"); c.replyInteger(version)
    c.replyBulk("id"); c.replyInteger(c.id)
    c.replyBulk("mode"); c.replyBulk("standalone")
    c.replyBulk("role"); c.replyBulk("master")
    c.replyBulk("modules"); c.replyArrayHeader(0)
}

private func validateClientName(_ name: Argument) throws {
    // Redis allows printable ASCII except space.
    guard name.allSatisfy({ $0 > 32 && $0 < 127 }) else {
        throw ReplyError("ERR Client names cannot contain spaces, newlines or special characters.")
    }
}

private func client(_ ctx: CommandContext) throws {
    let sub = ctx.option(1)
    let c = ctx.connection
    func arity(_ n: Int) throws {
        guard ctx.args.count == n else { throw ReplyError.wrongArity("client|\(sub)") }
    }
    switch sub {
    case "setname":
        try arity(3)
        try validateClientName(ctx.args[2])
        c.name = ctx.args.bytes(2)
        c.replyOK()
    case "getname":
        try arity(2)
        c.replyOptionalBulk(c.name.isEmpty ? nil : c.name)
    case "id":
        try arity(2)
        c.replyInteger(c.id)
    case "info":
        try arity(2)
        c.replyVerbatim(c.infoLine(now: Server.nowMilliseconds()) + "\n")
    case "list":
        // CLIENT LIST [TYPE type] | [ID id [id ...]] (Redis 7.0's forms).
        var listed = ctx.server.allConnections
        if ctx.args.count == 4 && ctx.option(2) == "type" {
            guard let type = clientType(named: ctx.text(3)) else {
                throw ReplyError("ERR Unknown client type '\(ctx.quoted(3))'")
            }
            listed = listed.filter { $0.clientType == type }
        } else if ctx.args.count > 3 && ctx.option(2) == "id" {
            var ids: [Int64] = []
            for j in 3..<ctx.args.count {
                guard let id = parseStrictInt64(ctx.args[j]) else { throw ReplyError("ERR Invalid client ID") }
                ids.append(id)
            }
            listed = ids.compactMap { id in listed.first { $0.id == id } }
        } else if ctx.args.count != 2 {
            throw ReplyError.syntax
        }
        let now = Server.nowMilliseconds()
        c.replyVerbatim(listed.map { $0.infoLine(now: now) + "\n" }.joined())
    case "kill":
        guard ctx.args.count >= 3 else { throw ReplyError.wrongArity("client|kill") }
        try clientKill(ctx)
    case "unblock":
        // CLIENT UNBLOCK id [TIMEOUT|ERROR]
        guard ctx.args.count == 3 || ctx.args.count == 4 else { throw ReplyError.wrongArity("client|unblock") }
        var error = false
        if ctx.args.count == 4 {
            switch ctx.option(3) {
            case "timeout": error = false
            case "error": error = true
            default: throw ReplyError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
            }
        }
        let id = try ctx.integer(2)
        c.replyInteger(ctx.server.unblockByRequest(id, error: error) ? 1 : 0)
    case "pause":
        // CLIENT PAUSE timeout [WRITE|ALL]
        guard ctx.args.count == 3 || ctx.args.count == 4 else { throw ReplyError.wrongArity("client|pause") }
        var type = Server.PauseType.all
        if ctx.args.count == 4 {
            switch ctx.option(3) {
            case "write": type = .write
            case "all": type = .all
            default: throw ReplyError("ERR CLIENT PAUSE mode must be WRITE or ALL")
            }
        }
        guard let milliseconds = parseStrictInt64(ctx.args[2]) else {
            throw ReplyError("ERR timeout is not an integer or out of range")
        }
        guard milliseconds >= 0 else { throw ReplyError("ERR timeout is negative") }
        ctx.server.pauseClients(until: milliseconds == 0 ? 0 : Server.nowMilliseconds() + milliseconds, type: type)
        c.replyOK()
    case "unpause":
        try arity(2)
        ctx.server.unpauseClients()
        c.replyOK()
    case "no-evict":
        try arity(3)
        switch ctx.option(2) {
        case "on": c.noEvict = true
        case "off": c.noEvict = false
        default: throw ReplyError.syntax
        }
        c.replyOK()
    case "reply":
        // CLIENT REPLY ON|OFF|SKIP: OFF and SKIP answer nothing (Server.execute drops the replies).
        try arity(3)
        switch ctx.option(2) {
        case "on":
            c.replyOff = false
            c.replySkipNext = false
            c.replySkipping = false
            c.replyOK()
        case "off": c.replyOff = true
        case "skip": if !c.replyOff { c.replySkipNext = true }
        default: throw ReplyError.syntax
        }
    case "setinfo":
        // Redis 7.2's client library report (redis-py sends it on connect).
        try arity(4)
        let attribute = ctx.option(2)
        guard attribute == "lib-name" || attribute == "lib-ver" else {
            throw ReplyError("ERR Unrecognized option '\(ctx.quoted(2))'")
        }
        c.replyOK()
    case "help":
        c.replyHelp([
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GETNAME", "    Return the name of the current connection.",
            "ID", "    Return the ID of the current connection.",
            "INFO", "    Return information about the current client connection.",
            "LIST", "    Return information about client connections.",
            "NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
            "PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "SETNAME <name>", "    Assign the name <name> to the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]", "    Unblock the specified blocked client.",
            "UNPAUSE", "    Stop the current client pause, resuming traffic.",
        ])
    default:
        if try clientTrackingSubcommand(ctx, sub) { return }
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "client")
    }
}

/// CLIENT KILL addr:port, or CLIENT KILL [ID id] [ADDR addr] [LADDR addr]
/// [TYPE normal] [USER default] [SKIPME yes|no]: closes matching clients (a
/// client killing itself gets its reply first).
private func clientKill(_ ctx: CommandContext) throws {
    let me = ctx.connection
    if ctx.args.count == 3 {
        let address = ctx.text(2)
        guard let victim = ctx.server.allConnections.first(where: { $0.peer == address }) else {
            throw ReplyError("ERR No such client")
        }
        me.replyOK()
        ctx.server.kill(victim, by: me)
        return
    }
    guard ctx.args.count >= 4, ctx.args.count % 2 == 0 else { throw ReplyError.syntax }
    var id: Int64?, address: String?, local: String?, skipMe = true, user: ACLUser?
    var type: String?
    for i in stride(from: 2, to: ctx.args.count, by: 2) {
        let value = ctx.text(i + 1)
        switch ctx.option(i) {
        case "id":
            guard let n = parseStrictInt64(ctx.args[i + 1]), n > 0 else {
                throw ReplyError("ERR client-id should be greater than 0")
            }
            id = n
        case "addr": address = value
        case "laddr": local = value
        case "type":
            guard let named = clientType(named: value) else { throw ReplyError("ERR Unknown client type '\(value)'") }
            type = named
        case "user":
            guard let named = ctx.server.acl.user(value) else { throw ReplyError("ERR No such user '\(value)'") }
            user = named
        case "skipme":
            switch value.lowercased() {
            case "yes": skipMe = true
            case "no": skipMe = false
            default: throw ReplyError.syntax
            }
        default:
            throw ReplyError.syntax
        }
    }
    let victims = ctx.server.allConnections.filter { c in
        (type.map { c.clientType == $0 } ?? true) && (user.map { c.user === $0 } ?? true) && (id.map { c.id == $0 } ?? true) && (address.map { c.peer == $0 } ?? true)
            && (local.map { c.local == $0 } ?? true) && !(skipMe && c === me)
    }
    me.replyInteger(victims.count)
    for victim in victims { ctx.server.kill(victim, by: me) }
}

/// A client type as CLIENT LIST and CLIENT KILL name it (Redis's
/// getClientTypeByName): `slave` is `replica`; nil for an unknown name.
private func clientType(named name: String) -> String? {
    switch name.lowercased() {
    case "normal", "master", "pubsub": return name.lowercased()
    case "slave", "replica": return "replica"
    default: return nil
    }
}

extension Connection {
    /// Redis's client type: a SYNC feed is "replica", a subscribed client
    /// "pubsub", the others "normal" (this server has no master link).
    var clientType: String { isReplica ? "replica" : subscriptions.active ? "pubsub" : "normal" }
}

/// WAIT numreplicas timeout: this server has no replicas, so no write ever
/// reaches one: 0, at once (Redis would wait out the timeout for any
/// numreplicas above 0).
private func wait(_ ctx: CommandContext) throws {
    if ctx.server.replicaLink != nil {
        throw ReplyError("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a "
            + "replica is configured to be writable (which is not the default) writes to replicas are just local "
            + "and are not propagated.")
    }
    let count = try ctx.integer(1)
    guard let timeout = parseStrictInt64(ctx.args[2]) else { throw ReplyError("ERR timeout is not an integer or out of range") }
    guard timeout >= 0 else { throw ReplyError("ERR timeout is negative") }
    ctx.server.waitForReplicas(ctx.connection, count: Int(clamping: count), timeout: timeout, mayBlock: ctx.mayBlock)
}
