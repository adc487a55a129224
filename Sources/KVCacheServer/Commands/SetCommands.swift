import RESP
import SQLiteKVCache

/// Set commands, as Redis 7.0's t_set.c. A set that becomes empty is deleted.
let setCommands: [Command] = [
    Command(name: "sadd", arity: -3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "set", summary: "Adds one or more members to a set.", handler: sadd),
    Command(name: "srem", arity: -3, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "set", summary: "Removes one or more members from a set.", handler: srem),
    Command(name: "smembers", arity: 2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "set", summary: "Returns all members of a set.", handler: smembers),
    Command(name: "sismember", arity: 3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "set", summary: "Determines whether a member belongs to a set.", handler: sismember),
    Command(name: "smismember", arity: -3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "set", summary: "Determines whether multiple members belong to a set.", handler: smismember),
    Command(name: "scard", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "set", summary: "Returns the number of members in a set.", handler: scard),
    Command(name: "srandmember", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "set", summary: "Returns one or more random members from a set.", handler: srandmember),
    Command(name: "spop", arity: -2, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "set", summary: "Removes and returns one or more random members from a set.", handler: spop),
    Command(name: "smove", arity: 4, flags: ["write", "fast"], firstKey: 1, lastKey: 2, step: 1,
            group: "set", summary: "Moves a member from one set to another.", handler: smove),
]

private func sadd(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    let loaded = try ctx.keyspace.loadSet(key)
    let set = loaded?.value ?? SetValue()
    var added = 0
    for member in ctx.args[2...] where set.add(member.bytes, limits: ctx.limits) { added += 1 }
    if added > 0 { try ctx.keyspace.store(set, at: key, replacing: loaded?.entry) }
    ctx.connection.replyInteger(added)
}

private func srem(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    guard let (set, old) = try ctx.keyspace.loadSet(key) else {
        ctx.connection.replyInteger(0)
        return
    }
    var removed = 0
    for member in ctx.args[2...] where set.remove(member.bytes) {
        removed += 1
        if set.isEmpty { break }
    }
    if removed > 0 { try ctx.keyspace.store(set, at: key, replacing: old) }
    ctx.connection.replyInteger(removed)
}

/// Members as a set reply (RESP3's `~`, an array in RESP2).
func replySet(_ ctx: CommandContext, _ members: [[UInt8]]) {
    RESPEncoder.setHeader(members.count, into: &ctx.connection.output, version: ctx.connection.protocolVersion)
    for member in members { ctx.connection.replyBulk(member) }
}

/// SMEMBERS: an intset's members in numeric order, a hashtable's in no particular order.
private func smembers(_ ctx: CommandContext) throws {
    replySet(ctx, try ctx.keyspace.loadSet(ctx.args.bytes(1), read: true)?.value.allMembers ?? [])
}

private func sismember(_ ctx: CommandContext) throws {
    let set = try ctx.keyspace.loadSet(ctx.args.bytes(1), read: true)?.value
    ctx.connection.replyInteger(set?.contains(ctx.args[2]) == true ? 1 : 0)
}

private func smismember(_ ctx: CommandContext) throws {
    let set = try ctx.keyspace.loadSet(ctx.args.bytes(1), read: true)?.value
    ctx.connection.replyArrayHeader(ctx.args.count - 2)
    for member in ctx.args[2...] { ctx.connection.replyInteger(set?.contains(member) == true ? 1 : 0) }
}

private func scard(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.collectionCount(ctx.args.bytes(1), of: .set))
}

/// SRANDMEMBER key [count]: a positive count gives distinct members, a
/// negative one may repeat them.
private func srandmember(_ ctx: CommandContext) throws {
    guard ctx.args.count <= 3 else { throw ReplyError.syntax }
    guard ctx.args.count == 3 else {
        guard let (set, _) = try ctx.keyspace.loadSet(ctx.args.bytes(1), read: true) else {
            ctx.connection.replyNull()
            return
        }
        ctx.connection.replyBulk(set.randomMember(ctx.randomIndex))
        return
    }
    let requested = try ctx.integer(2)
    guard requested != .min else {
        throw ReplyError("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    }
    guard let (set, _) = try ctx.keyspace.loadSet(ctx.args.bytes(1), read: true), requested != 0 else {
        ctx.connection.replyArrayHeader(0)
        return
    }
    guard requested < 0 || requested == 1 else {
        ctx.connection.replyBulkArray(set.distinctRandomMembers(Int(requested), ctx.randomIndex))
        return
    }
    // With repeats: as many as asked, stopping (the client is then closed,
    // as Redis closes it) when the reply passes the output buffer limit.
    let c = ctx.connection
    let hard = ctx.server.config.outputBufferLimit.hard
    let bound = hard > 0 ? hard : 1 << 30
    let count = Int(requested.magnitude)
    c.replyArrayHeader(count)
    for _ in 0..<count {
        c.replyBulk(set.randomMember(ctx.randomIndex))
        if c.pendingOutput > bound {
            if hard == 0 { c.closeAfterReply = true }
            break
        }
    }
}

/// SPOP key [count]: logged as the SREM of what it popped (a replay must
/// remove the same members, not others at random).
private func spop(_ ctx: CommandContext) throws {
    guard ctx.args.count <= 3 else { throw ReplyError.syntax }
    let key = ctx.args.bytes(1)
    var requested: Int?
    if ctx.args.count == 3 {
        guard let n = parseStrictInt64(ctx.args[2]), n >= 0 else {
            throw ReplyError("ERR value is out of range, must be positive")
        }
        requested = Int(n)
    }
    guard let (set, old) = try ctx.keyspace.loadSet(key) else {
        if requested == nil { ctx.connection.replyNull() } else { replySet(ctx, []) }
        return
    }
    if requested == 0 {
        replySet(ctx, [])
        return
    }
    var popped: [[UInt8]]
    if let requested, requested < set.count {
        popped = set.distinctRandomMembers(requested, ctx.randomIndex)
    } else {
        popped = requested == nil ? [set.randomMember(ctx.randomIndex)] : set.allMembers
    }
    for member in popped { set.remove(member) }
    ctx.server.persistence.logCommand(as: [Array("SREM".utf8), key] + popped)
    if ctx.server.replicationFeeding {
        // Redis propagates a pop of the whole set as DEL, others as SREMs of up to 1024 members.
        let srem = [Array("SREM".utf8), key]
        if requested != nil && set.count == 0 {
            ctx.server.propagateAs([Array("DEL".utf8), key])
        } else {
            ctx.server.replication.rewrite = stride(from: 0, to: popped.count, by: 1024).map {
                srem + popped[$0..<min($0 + 1024, popped.count)]
            }
        }
    }
    try ctx.keyspace.store(set, at: key, replacing: old)
    if requested == nil { ctx.connection.replyBulk(popped[0]) } else { replySet(ctx, popped) }
}

/// SMOVE source destination member
private func smove(_ ctx: CommandContext) throws {
    let (source, destination, member) = (ctx.args.bytes(1), ctx.args.bytes(2), ctx.args.bytes(3))
    // As Redis: a missing source answers 0 before either type is checked.
    guard let (sourceSet, old) = try ctx.keyspace.loadSet(source) else {
        ctx.connection.replyInteger(0)
        return
    }
    let to = try ctx.keyspace.loadSet(destination)
    if source == destination {
        ctx.connection.replyInteger(sourceSet.contains(member) ? 1 : 0)
        return
    }
    guard sourceSet.remove(member) else {
        ctx.connection.replyInteger(0)
        return
    }
    try ctx.keyspace.store(sourceSet, at: source, replacing: old)
    let destinationSet = to?.value ?? SetValue()
    if destinationSet.add(member, limits: ctx.limits) {
        try ctx.keyspace.store(destinationSet, at: destination, replacing: to?.entry)
    }
    ctx.connection.replyInteger(1)
}
