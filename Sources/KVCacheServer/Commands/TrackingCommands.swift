import RESP

/// CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO (Redis 7.0's
/// networking.c); the state is `Server/Tracking.swift`.
/// - Returns: false when `sub` is none of them.
func clientTrackingSubcommand(_ ctx: CommandContext, _ sub: String) throws -> Bool {
    let c = ctx.connection
    let args = ctx.args
    switch sub {
    case "tracking":
        guard args.count >= 3 else { throw ReplyError.wrongArity("client|tracking") }
        try clientTracking(ctx)
    case "caching":
        guard args.count == 3 else { throw ReplyError.wrongArity("client|caching") }
        guard let t = c.tracking else {
            throw ReplyError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
                + "OPTOUT mode enabled")
        }
        switch ctx.option(2) {
        case "yes":
            guard t.optin else {
                throw ReplyError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
            }
            t.caching = true
        case "no":
            guard t.optout else {
                throw ReplyError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
            }
            t.caching = true
        default:
            throw ReplyError.syntax
        }
        c.replyOK()
    case "getredir":
        guard args.count == 2 else { throw ReplyError.wrongArity("client|getredir") }
        c.replyInteger(c.tracking.map { $0.redirect } ?? -1)
    case "trackinginfo":
        guard args.count == 2 else { throw ReplyError.wrongArity("client|trackinginfo") }
        let t = c.tracking
        var flags = ["on"]
        if let t {
            if t.bcast { flags.append("bcast") }
            if t.optin { flags.append("optin"); if t.caching { flags.append("caching-yes") } }
            if t.optout { flags.append("optout"); if t.caching { flags.append("caching-no") } }
            if t.noloop { flags.append("noloop") }
            if t.brokenRedirect { flags.append("broken_redirect") }
        } else {
            flags = ["off"]
        }
        c.reply(.map([
            (.bulk(Array("flags".utf8)), .set(flags.map { .bulk(Array($0.utf8)) })),
            (.bulk(Array("redirect".utf8)), .integer(t.map { $0.redirect } ?? -1)),
            (.bulk(Array("prefixes".utf8)), .array((t?.prefixes ?? []).map { .bulk($0) })),
        ]))
    default:
        return false
    }
    return true
}

/// CLIENT TRACKING on|off [REDIRECT id] [BCAST] [PREFIX p …] [OPTIN] [OPTOUT] [NOLOOP].
private func clientTracking(_ ctx: CommandContext) throws {
    let c = ctx.connection
    let args = ctx.args
    var redirect: Int64 = 0
    var target: Connection?
    var bcast = false, optin = false, optout = false, noloop = false
    var prefixes: [[UInt8]] = []
    var j = 3
    while j < args.count {
        let more = args.count - 1 - j
        switch ctx.option(j) {
        case "redirect" where more > 0:
            j += 1
            guard redirect == 0 else { throw ReplyError("ERR A client can only redirect to a single other client") }
            redirect = try ctx.integer(j)
            guard let found = ctx.server.allConnections.first(where: { $0.id == redirect && !$0.closed }) else {
                throw ReplyError("ERR The client ID you want redirect to does not exist")
            }
            target = found
        case "bcast": bcast = true
        case "optin": optin = true
        case "optout": optout = true
        case "noloop": noloop = true
        case "prefix" where more > 0:
            j += 1
            prefixes.append(args.bytes(j))
        default:
            throw ReplyError.syntax
        }
        j += 1
    }
    switch ctx.option(2) {
    case "on":
        guard bcast || prefixes.isEmpty else { throw ReplyError("ERR PREFIX option requires BCAST mode to be enabled") }
        if let t = c.tracking, t.bcast != bcast {
            throw ReplyError("ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
                + "and then re-enabling it with a different mode.")
        }
        if bcast && (optin || optout) { throw ReplyError("ERR OPTIN and OPTOUT are not compatible with BCAST") }
        if optin && optout { throw ReplyError("ERR You can't specify both OPTIN mode and OPTOUT mode") }
        if let t = c.tracking, (optin && t.optout) || (optout && t.optin) {
            throw ReplyError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
                + "and then re-enabling it with a different mode.")
        }
        if bcast { try checkPrefixCollisions(c, prefixes) }
        ctx.server.enableTracking(c, redirect: redirect, redirectTarget: target, bcast: bcast, optin: optin,
                                  optout: optout, noloop: noloop, prefixes: prefixes)
    case "off":
        ctx.server.disableTracking(c)
    default:
        throw ReplyError.syntax
    }
    c.replyOK()
}

/// Redis's checkPrefixCollisionsOrReply: a client's prefixes must not overlap.
private func checkPrefixCollisions(_ c: Connection, _ prefixes: [[UInt8]]) throws {
    func overlap(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let n = min(a.count, b.count)
        return a.prefix(n) == b.prefix(n)
    }
    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
    for (i, prefix) in prefixes.enumerated() {
        for existing in c.tracking?.prefixes ?? [] where overlap(existing, prefix) {
            throw ReplyError("ERR Prefix '\(text(prefix))' overlaps with an existing prefix '\(text(existing))'. "
                + "Prefixes for a single client must not overlap.")
        }
        for other in prefixes[(i + 1)...] where overlap(prefix, other) {
            throw ReplyError("ERR Prefix '\(text(prefix))' overlaps with another provided prefix '\(text(other))'. "
                + "Prefixes for a single client must not overlap.")
        }
    }
}
