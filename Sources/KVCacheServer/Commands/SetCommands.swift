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
    let old = try ctx.keyspace.lookupWrite(key, as: .set)
    if let old, try EncodedLayout(old.value).large {
        // A hashtable set keeps insertion order: new members are appended to its bytes.
        let set = try EncodedLookup(old.value, kind: .set)
        var added: [[UInt8]] = []
        var seen = Set<[UInt8]>()
        for member in ctx.args[2...] where !set.contains(member) {
            let bytes = member.bytes
            if seen.insert(bytes).inserted { added.append(bytes) }
        }
        if !added.isEmpty {
            var bytes = CollectionCodec.header(large: true, count: set.count + added.count, capacity: old.value.count)
            bytes.append(contentsOf: set.body)
            for member in added { CollectionCodec.appendElement(member, to: &bytes) }
            try ctx.keyspace.storeCollection(key, kind: .set, bytes, isEmpty: false, old: old)
        }
        ctx.connection.replyInteger(added.count)
        return
    }
    let found = try old.map { (try SetValue(decoding: $0.value), $0) }
    var set = found?.0 ?? SetValue()
    var added = 0
    for member in ctx.args[2...] where set.add(member.bytes, limits: ctx.limits) { added += 1 }
    if added > 0 { try ctx.keyspace.store(set, at: key, replacing: found?.1) }
    ctx.connection.replyInteger(added)
}

private func srem(_ ctx: CommandContext) throws {
    guard let (found, old) = try ctx.keyspace.loadSet(ctx.args.bytes(1)) else {
        ctx.connection.replyInteger(0)
        return
    }
    var set = found
    var removed = 0
    for member in ctx.args[2...] where set.remove(member.bytes) {
        removed += 1
        if set.isEmpty { break }
    }
    if removed > 0 { try ctx.keyspace.store(set, at: ctx.args.bytes(1), replacing: old) }
    ctx.connection.replyInteger(removed)
}

/// Members as Redis lists them: an intset in numeric order (as kept), a
/// hashtable in no particular order (insertion order here).
private func replySet(_ ctx: CommandContext, _ members: [[UInt8]]) {
    RESPEncoder.setHeader(members.count, into: &ctx.connection.output, version: ctx.connection.protocolVersion)
    for member in members { ctx.connection.replyBulk(member) }
}

private func smembers(_ ctx: CommandContext) throws {
    replySet(ctx, try ctx.keyspace.loadSet(ctx.args.bytes(1), read: true)?.0.members ?? [])
}

private func sismember(_ ctx: CommandContext) throws {
    let set = try ctx.keyspace.lookupEncoded(ctx.args.bytes(1), of: .set)
    ctx.connection.replyInteger(set?.contains(ctx.args[2]) == true ? 1 : 0)
}

private func smismember(_ ctx: CommandContext) throws {
    let set = try ctx.keyspace.lookupEncoded(ctx.args.bytes(1), of: .set)
    ctx.connection.replyArrayHeader(ctx.args.count - 2)
    for member in ctx.args[2...] { ctx.connection.replyInteger(set?.contains(member) == true ? 1 : 0) }
}

private func scard(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.collectionCount(ctx.args.bytes(1), of: .set))
}

/// `count` distinct members at random (all of them, in order, when count covers the set).
private func randomMembers(_ set: SetValue, _ count: Int) -> [[UInt8]] {
    if count >= set.count { return set.members }
    var indices = Array(set.members.indices)
    for i in 0..<count { indices.swapAt(i, Int.random(in: i..<indices.count)) }
    return indices.prefix(count).map { set.members[$0] }
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
        ctx.connection.replyBulk(set.members[Int.random(in: 0..<set.count)])
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
        ctx.connection.replyBulkArray(randomMembers(set, Int(requested)))
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
        c.replyBulk(set.members[Int.random(in: 0..<set.count)])
        if c.pendingOutput > bound {
            if hard == 0 { c.closeAfterReply = true }
            break
        }
    }
}

/// SPOP key [count]
private func spop(_ ctx: CommandContext) throws {
    guard ctx.args.count <= 3 else { throw ReplyError.syntax }
    let key = ctx.args.bytes(1)
    guard ctx.args.count == 3 else {
        guard let (found, old) = try ctx.keyspace.loadSet(key) else {
            ctx.connection.replyNull()
            return
        }
        var set = found
        let member = set.members[Int.random(in: 0..<set.count)]
        set.remove(member)
        try ctx.keyspace.store(set, at: key, replacing: old)
        ctx.connection.replyBulk(member)
        return
    }
    guard let requested = parseStrictInt64(ctx.args[2]), requested >= 0 else {
        throw ReplyError("ERR value is out of range, must be positive")
    }
    guard let (found, old) = try ctx.keyspace.loadSet(key), requested > 0 else {
        replySet(ctx, [])
        return
    }
    var set = found
    let popped = randomMembers(set, Int(requested))
    for member in popped { set.remove(member) }
    try ctx.keyspace.store(set, at: key, replacing: old)
    replySet(ctx, popped)
}

/// SMOVE source destination member
private func smove(_ ctx: CommandContext) throws {
    let (source, destination, member) = (ctx.args.bytes(1), ctx.args.bytes(2), ctx.args.bytes(3))
    // As Redis: a missing source answers 0 before either type is checked.
    guard try ctx.keyspace.exists(source) else {
        ctx.connection.replyInteger(0)
        return
    }
    guard let (found, old) = try ctx.keyspace.loadSet(source) else {
        ctx.connection.replyInteger(0)
        return
    }
    let to = try ctx.keyspace.loadSet(destination)
    if source == destination {
        ctx.connection.replyInteger(found.contains(member) ? 1 : 0)
        return
    }
    var sourceSet = found
    guard sourceSet.remove(member) else {
        ctx.connection.replyInteger(0)
        return
    }
    try ctx.keyspace.store(sourceSet, at: source, replacing: old)
    var destinationSet = to?.0 ?? SetValue()
    if destinationSet.add(member, limits: ctx.limits) { try ctx.keyspace.store(destinationSet, at: destination, replacing: to?.1) }
    ctx.connection.replyInteger(1)
}
