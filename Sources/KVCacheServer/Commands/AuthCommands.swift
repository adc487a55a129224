import CCrypto
import RESP

/// AUTH and RESET; HELLO's AUTH option shares `authenticate`.
let authCommands: [Command] = [
    Command(name: "auth", arity: -2, flags: ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
            firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "Authenticates the connection.", handler: auth),
    Command(name: "reset", arity: 1, flags: ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
            firstKey: 0, lastKey: 0, step: 0,
            group: "connection", summary: "Resets the connection.", handler: reset),
]

extension Server {
    /// True when `connection` must authenticate before running most commands.
    func authRequired(_ connection: Connection) -> Bool {
        !config.requirePass.isEmpty && !connection.authenticated
    }

    /// Checks credentials for the one user, `default`, in constant time, and
    /// marks the connection authenticated when they match. With no password
    /// set, the default user takes any password (as Redis's `nopass`).
    /// - Returns: whether they matched; a mismatch is counted for INFO.
    func authenticate(_ connection: Connection, user: [UInt8], password: [UInt8]) -> Bool {
        let matches = user == Array("default".utf8)
            && (config.requirePass.isEmpty || constantTimeEqual(password, Array(config.requirePass.utf8)))
        if matches {
            connection.authenticated = true
            connection.parser.limits.unauthenticated = false
        } else {
            stats.authFailures += 1
        }
        return matches
    }
}

/// Compares two secrets without an early exit: both are hashed to SHA-256
/// and the digests compared with OpenSSL's CRYPTO_memcmp, so neither the
/// position of a difference nor the length leaks through timing.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { out in
                EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        precondition(ok == 1 && length == 32, "SHA-256 failed in OpenSSL")
        return digest
    }
    let (x, y) = (sha256(a), sha256(b))
    return x.withUnsafeBytes { p in y.withUnsafeBytes { q in CRYPTO_memcmp(p.baseAddress, q.baseAddress, 32) == 0 } }
}

extension ReplyError {
    static let wrongPass = ReplyError("WRONGPASS invalid username-password pair or user is disabled.")
    static let noAuth = ReplyError("NOAUTH Authentication required.")
}

/// AUTH password | AUTH username password
private func auth(_ ctx: CommandContext) throws {
    guard ctx.args.count <= 3 else { throw ReplyError.syntax }
    let user: [UInt8], password: [UInt8]
    if ctx.args.count == 2 {
        guard !ctx.server.config.requirePass.isEmpty else {
            throw ReplyError("ERR AUTH <password> called without any password configured for the default user. "
                + "Are you sure your configuration is correct?")
        }
        (user, password) = (Array("default".utf8), ctx.args.bytes(1))
    } else {
        (user, password) = (ctx.args.bytes(1), ctx.args.bytes(2))
    }
    guard ctx.server.authenticate(ctx.connection, user: user, password: password) else {
        ctx.server.logger.verbose("Failed AUTH from \(ctx.connection.peer)")
        throw ReplyError.wrongPass
    }
    ctx.connection.replyOK()
}

/// RESET: back to a fresh connection's state (no MULTI, no WATCH, no
/// MONITOR, db0, RESP2, no name, and unauthenticated when a password is set).
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
    c.authenticated = ctx.server.config.requirePass.isEmpty
    c.parser.limits.unauthenticated = !c.authenticated
    ctx.server.unsubscribeAll(c)
    ctx.server.disableTracking(c)
    c.replyOff = false
    c.replySkipNext = false
    c.replySimple("RESET")
}
