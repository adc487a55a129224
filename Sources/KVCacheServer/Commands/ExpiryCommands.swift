import RESP

/// EXPIRE and friends, TTL and friends, PERSIST.
let expiryCommands: [Command] = [
    Command(name: "expire", arity: -3, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Sets a key's time to live in seconds.", handler: { try expire($0, .seconds) }),
    Command(name: "pexpire", arity: -3, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Sets a key's time to live in milliseconds.", handler: { try expire($0, .milliseconds) }),
    Command(name: "expireat", arity: -3, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Sets a key's expiry as a Unix time in seconds.", handler: { try expire($0, .unixSeconds) }),
    Command(name: "pexpireat", arity: -3, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Sets a key's expiry as a Unix time in milliseconds.",
            handler: { try expire($0, .unixMilliseconds) }),
    Command(name: "ttl", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Returns a key's time to live in seconds.", handler: { try ttl($0, ms: false, absolute: false) }),
    Command(name: "pttl", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Returns a key's time to live in milliseconds.", handler: { try ttl($0, ms: true, absolute: false) }),
    Command(name: "expiretime", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Returns a key's expiry as a Unix time in seconds.",
            handler: { try ttl($0, ms: false, absolute: true) }),
    Command(name: "pexpiretime", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Returns a key's expiry as a Unix time in milliseconds.",
            handler: { try ttl($0, ms: true, absolute: true) }),
    Command(name: "persist", arity: 2, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Removes a key's expiry.", handler: persist),
]

/// EXPIRE key n [NX|XX|GT|LT], in Redis 7.0's order: options, integer,
/// overflow, lookup, conditions; a time already past deletes the key.
private func expire(_ ctx: CommandContext, _ form: ExpiryForm) throws {
    var nx = false, xx = false, gt = false, lt = false
    for i in 3..<ctx.args.count {
        switch ctx.option(i) {
        case "nx": nx = true
        case "xx": xx = true
        case "gt": gt = true
        case "lt": lt = true
        default: throw ReplyError("ERR Unsupported option \(ctx.quoted(i))")
        }
    }
    if nx && (xx || gt || lt) {
        throw ReplyError("ERR NX and XX, GT or LT options at the same time are not compatible")
    }
    if gt && lt { throw ReplyError("ERR GT and LT options at the same time are not compatible") }
    var when = try ctx.integer(2)
    let invalid = ReplyError.invalidExpireTime(ctx.commandName)
    if form.inSeconds {
        guard when <= Int64.max / 1000 && when >= Int64.min / 1000 else { throw invalid }
        when *= 1000
    }
    let now = ctx.now
    if form.isRelative {
        guard when <= Int64.max - now else { throw invalid }
        when += now
    }
    guard let entry = try ctx.keyspace.lookupStored(ctx.args.bytes(1), read: false) else {
        ctx.connection.replyInteger(0)
        return
    }
    let current = entry.row.expiresAt
    if (nx && current != nil) || (xx && current == nil)
        || (gt && (current == nil || when <= current!))
        || (lt && current != nil && when >= current!) {
        ctx.connection.replyInteger(0)
        return
    }
    try ctx.keyspace.expire(ctx.args.bytes(1), at: when, now: now,
                            options: ctx.server.replicationFeeding ? (3..<ctx.args.count).map { ctx.args.bytes($0) } : [])
    ctx.connection.replyInteger(1)
}

private func ttl(_ ctx: CommandContext, ms: Bool, absolute: Bool) throws {
    switch try ctx.keyspace.expiry(ctx.args.bytes(1)) {
    case .noKey:
        ctx.connection.replyInteger(-2)
    case .persistent:
        ctx.connection.replyInteger(-1)
    case .at(let expiresAt):
        let value = max(0, absolute ? expiresAt : expiresAt - ctx.now)
        ctx.connection.replyInteger(ms ? value : (value + 500) / 1000)
    }
}

private func persist(_ ctx: CommandContext) throws {
    guard let entry = try ctx.keyspace.lookupStored(ctx.args.bytes(1), read: false), entry.row.expiresAt != nil else {
        ctx.connection.replyInteger(0)
        return
    }
    try ctx.keyspace.setExpiry(ctx.args.bytes(1), nil)
    ctx.connection.replyInteger(1)
}
