import RESP

/// AUTH and RESET; HELLO's AUTH option shares `authenticate` (ACL/Server+ACL.swift).
let authCommands: [Command] = [
    Command(name: "auth", arity: -2, flags: ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
            firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "Authenticates the connection.", handler: auth),
    Command(name: "reset", arity: 1, flags: ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
            firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "Resets the connection.", handler: reset),
]

extension ReplyError {
    static let wrongPass = ReplyError("WRONGPASS invalid username-password pair or user is disabled.")
    static let noAuth = ReplyError("NOAUTH Authentication required.")
}

/// AUTH password | AUTH username password
private func auth(_ ctx: CommandContext) throws {
    guard ctx.args.count <= 3 else { throw ReplyError.syntax }
    let user: [UInt8], password: [UInt8]
    if ctx.args.count == 2 {
        // Redis's old behaviour for the one-argument form.
        guard !ctx.server.acl.defaultUser.nopass else {
            throw ReplyError("ERR AUTH <password> called without any password configured for the default user. "
                + "Are you sure your configuration is correct?")
        }
        (user, password) = (Array("default".utf8), ctx.args.bytes(1))
    } else {
        (user, password) = (ctx.args.bytes(1), ctx.args.bytes(2))
    }
    try ctx.server.authenticate(ctx.connection, user: user, password: password)
    ctx.connection.replyOK()
}

/// RESET: back to a fresh connection's state (no MULTI, no WATCH, no
/// MONITOR, db0, RESP2, no name, the starting user, unauthenticated when it has a password).
private func reset(_ ctx: CommandContext) throws {
    let c = ctx.connection
    c.transaction = nil
    ctx.server.unwatchAll(c)
    if c.isMonitor {
        c.isMonitor = false
        ctx.server.monitors.removeAll { $0 === c }
    }
    c.cache = try ctx.server.registry.firstCache()
    c.protocolVersion = 2
    c.name = []
    ctx.server.assignStartingUser(c)
    ctx.server.unsubscribeAll(c)
    ctx.server.disableTracking(c)
    c.replyOff = false
    c.replySkipNext = false
    c.replySimple("RESET")
}
