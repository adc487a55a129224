import RESP
import SQLiteKVCache

/// Consumer groups, as Redis 7.0's t_stream.c: XGROUP, XACK, XPENDING,
/// XCLAIM and XAUTOCLAIM. XGROUP and XACK are logged and propagated as
/// themselves; a claim as the XCLAIM forms Redis propagates (see
/// StreamEffects). None of them tells WATCH or client-side caching (Redis
/// calls signalModifiedKey only when XGROUP CREATE … MKSTREAM makes the key).
let streamGroupCommands: [Command] = [
    Command(name: "xgroup", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0,
            group: "stream", summary: "A container for consumer groups commands.", handler: xgroup,
            subcommands: ["create", "createconsumer", "delconsumer", "destroy", "help", "setid"]),
    Command(name: "xack", arity: -4, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Returns the number of messages that were successfully acknowledged.", handler: xack),
    Command(name: "xpending", arity: -3, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Returns the information and entries from a stream consumer group's pending entries list.",
            handler: xpending),
    Command(name: "xclaim", arity: -6, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Changes, or acquires, ownership of a message in a consumer group.", handler: xclaim),
    Command(name: "xautoclaim", arity: -6, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Changes, or acquires, ownership of messages in a consumer group.", handler: xautoclaim),
]

private func quoted(_ bytes: [UInt8]) -> String { String(keepingBytes: bytes) }

/// Redis's addReplySubcommandSyntaxError.
private func subcommandSyntaxError(_ ctx: CommandContext) -> ReplyError {
    ReplyError("ERR unknown subcommand or wrong number of arguments for '\(String(keepingBytes: ctx.args[1].prefix(128)))'. "
        + "Try \(ctx.args.text(0).uppercased()) HELP.")
}

/// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP
private func xgroup(_ ctx: CommandContext) throws {
    let sub = ctx.option(1)
    let arities = ["create": -5, "setid": -5, "destroy": 4, "createconsumer": 5, "delconsumer": 5, "help": 2]
    guard let arity = arities[sub] else { throw ReplyError.unknownSubcommand(ctx.args[1], of: "xgroup") }
    let n = ctx.args.count
    guard arity >= 0 ? n == arity : n >= -arity else { throw ReplyError.wrongArity("xgroup|\(sub)") }
    if sub == "help" {
        ctx.connection.replyHelp("xgroup", [
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ])
        return
    }
    var makeStream = false
    var entriesRead = StreamGroup.unknownEntriesRead
    var i = 5
    while i < n {
        if sub == "create" && ctx.option(i) == "mkstream" {
            makeStream = true
            i += 1
        } else if sub == "create" || sub == "setid", ctx.option(i) == "entriesread", i + 1 < n {
            entriesRead = try ctx.integer(i + 1)
            guard entriesRead >= 0 || entriesRead == StreamGroup.unknownEntriesRead else {
                throw ReplyError("ERR value for ENTRIESREAD must be positive or -1")
            }
            i += 2
        } else {
            throw subcommandSyntaxError(ctx)
        }
    }
    let key = ctx.args.bytes(2), name = ctx.args.bytes(3)
    let keyspace = ctx.keyspace
    let stream = try keyspace.loadStream(key, read: false)?.value
    if !makeStream {
        guard let stream else {
            throw ReplyError("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to "
                + "use the MKSTREAM option to create an empty stream automatically.")
        }
        if stream.groups[name] == nil && ["setid", "createconsumer", "delconsumer"].contains(sub) {
            throw ReplyError("NOGROUP No such consumer group '\(quoted(name))' for key name '\(quoted(key))'")
        }
    }
    let c = ctx.connection
    switch sub {
    case "create" where n <= 8:
        let id = ctx.args[4].elementsEqual([UInt8(ascii: "$")]) ? stream?.lastID ?? .zero : try StreamIDParse.strict(ctx.args[4])
        let target = stream ?? StreamValue()
        guard target.groups[name] == nil else { throw ReplyError("BUSYGROUP Consumer Group name already exists") }
        target.groups[name] = StreamGroup(name: name, lastID: id, entriesRead: entriesRead)
        if stream == nil { try keyspace.addStream(target, at: key) } else {
            try keyspace.streamChanged(target, at: key, modifiesKey: false)
        }
        keyspace.notifyStream("xgroup-create", key)
        c.replyOK()
    case "setid" where n == 5 || n == 7:
        guard let stream else { throw subcommandSyntaxError(ctx) }
        let id = ctx.args[4].elementsEqual([UInt8(ascii: "$")]) ? stream.lastID
            : try StreamIDParse.parse(ctx.args[4], strict: false).id
        stream.groups[name]!.lastID = id
        stream.groups[name]!.entriesRead = entriesRead
        try keyspace.streamChanged(stream, at: key, modifiesKey: false)
        keyspace.notifyStream("xgroup-setid", key)
        c.replyOK()
    case "destroy":
        guard let stream, stream.groups.removeValue(forKey: name) != nil else {
            c.replyInteger(0)
            return
        }
        try keyspace.streamChanged(stream, at: key, modifiesKey: false)
        keyspace.notifyStream("xgroup-destroy", key)
        // XREADGROUP clients blocked on the group get -NOGROUP.
        if ctx.server.blockedCount > 0 { ctx.server.signalKeyAsReady(ctx.cache.name, key) }
        c.replyInteger(1)
    case "createconsumer":
        guard let stream else { throw subcommandSyntaxError(ctx) }
        let consumer = ctx.args.bytes(4)
        guard stream.groups[name]!.createConsumer(consumer, now: ctx.server.persistence.recordNow()) else {
            c.replyInteger(0)
            return
        }
        try keyspace.streamChanged(stream, at: key, modifiesKey: false)
        keyspace.notifyStream("xgroup-createconsumer", key)
        c.replyInteger(1)
    case "delconsumer":
        guard let stream else { throw subcommandSyntaxError(ctx) }
        guard let pending = stream.groups[name]!.deleteConsumer(ctx.args.bytes(4)) else {
            c.replyInteger(0)
            return
        }
        try keyspace.streamChanged(stream, at: key, modifiesKey: false)
        keyspace.notifyStream("xgroup-delconsumer", key)
        c.replyInteger(pending)
    default:
        throw subcommandSyntaxError(ctx)
    }
}

/// XACK key group id [id …]
private func xack(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1), name = ctx.args.bytes(2)
    guard let stream = try ctx.keyspace.loadStream(key, read: false)?.value, stream.groups[name] != nil else {
        ctx.connection.replyInteger(0)
        return
    }
    // Every ID is checked before any is acknowledged: all or nothing.
    let ids = try (3..<ctx.args.count).map { i throws(ReplyError) in try StreamIDParse.strict(ctx.args[i]) }
    var acknowledged = 0
    for id in ids where stream.groups[name]!.acknowledge(id) { acknowledged += 1 }
    if acknowledged > 0 { try ctx.keyspace.streamChanged(stream, at: key, modifiesKey: false) }
    ctx.connection.replyInteger(acknowledged)
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
private func xpending(_ ctx: CommandContext) throws {
    let n = ctx.args.count
    guard n == 3 || (6...9).contains(n) else { throw ReplyError.syntax }
    var minIdle: Int64 = 0, count: Int64 = 0
    var start = StreamID.zero, end = StreamID.max
    var consumer: [UInt8]?
    if n >= 6 {
        var at = 3
        if ctx.option(3) == "idle" {
            minIdle = try ctx.integer(4)
            guard n >= 8 else { throw ReplyError.syntax }
            at += 2
        }
        count = max(0, try ctx.integer(at + 2))
        guard let s = try StreamIDParse.rangeBound(ctx.args[at], missingSeq: 0, start: true) else {
            throw ReplyError("ERR invalid start ID for the interval")
        }
        guard let e = try StreamIDParse.rangeBound(ctx.args[at + 1], missingSeq: .max, start: false) else {
            throw ReplyError("ERR invalid end ID for the interval")
        }
        (start, end) = (s, e)
        if at + 3 < n { consumer = ctx.args.bytes(at + 3) }
    }
    let key = ctx.args.bytes(1), name = ctx.args.bytes(2)
    guard let stream = try ctx.keyspace.loadStream(key, read: true)?.value, let group = stream.groups[name] else {
        throw ReplyError("NOGROUP No such key '\(quoted(key))' or consumer group '\(quoted(name))'")
    }
    let c = ctx.connection
    if n == 3 {
        c.replyArrayHeader(4)
        c.replyInteger(group.pel.count)
        guard let first = group.pel.first, let last = group.pel.last else {
            c.replyNull()
            c.replyNull()
            c.replyNullArray()
            return
        }
        c.replyBulk(first.text)
        c.replyBulk(last.text)
        let owners = group.sortedConsumers.filter { !$0.pending.isEmpty }
        c.replyArrayHeader(owners.count)
        for owner in owners {
            c.replyArrayHeader(2)
            c.replyBulk(owner.name)
            c.replyBulk(String(owner.pending.count))
        }
        return
    }
    var ids: [StreamID] = []
    let now = Server.nowMilliseconds()
    func collect(_ id: StreamID, _ nack: StreamNACK) -> Bool {
        guard count > 0, id <= end else { return false }
        if minIdle != 0 && now - nack.deliveryTime < minIdle { return true }
        ids.append(id)
        count -= 1
        return true
    }
    if let consumer {
        guard let owner = group.consumer(consumer) else {
            c.replyArrayHeader(0)
            return
        }
        owner.pending.forEach(from: start) { id, _ in collect(id, group.nack(id)!) }
    } else {
        group.pel.forEach(from: start, collect)
    }
    c.replyArrayHeader(ids.count)
    for id in ids {
        let nack = group.nack(id)!
        c.replyArrayHeader(4)
        c.replyBulk(id.text)
        c.replyBulk(nack.consumer)
        c.replyInteger(max(0, now - nack.deliveryTime))
        c.replyInteger(Int64(bitPattern: nack.deliveryCount))
    }
}

/// XCLAIM key group consumer min-idle-time id [id …] [IDLE ms] [TIME ms]
///   [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]
private func xclaim(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1), name = ctx.args.bytes(2), consumer = ctx.args.bytes(3)
    guard let stream = try ctx.keyspace.loadStream(key, read: false)?.value, stream.groups[name] != nil else {
        throw ReplyError("NOGROUP No such key '\(quoted(key))' or consumer group '\(quoted(name))'")
    }
    guard let parsedIdle = parseStrictInt64(ctx.args[4]) else {
        throw ReplyError("ERR Invalid min-idle-time argument for XCLAIM")
    }
    let minIdle = max(0, parsedIdle)
    // The IDs run until an argument is not one; options follow.
    var ids: [(id: StreamID, arg: [UInt8])] = []
    var j = 5
    while j < ctx.args.count, let id = try? StreamIDParse.strict(ctx.args[j]) {
        ids.append((id, ctx.args.bytes(j)))
        j += 1
    }
    let now = ctx.server.persistence.recordNow()
    var deliveryTime: Int64 = -1, retryCount: Int64 = -1
    var force = false, justID = false
    var lastID = StreamID.zero
    func number(_ i: Int, _ option: String) throws(ReplyError) -> Int64 {
        guard let v = parseStrictInt64(ctx.args[i]) else { throw ReplyError("ERR Invalid \(option) option argument for XCLAIM") }
        return v
    }
    while j < ctx.args.count {
        let more = ctx.args.count - 1 - j
        switch ctx.option(j) {
        case "force": force = true
        case "justid": justID = true
        case "idle" where more > 0:
            j += 1
            deliveryTime = now &- (try number(j, "IDLE"))
        case "time" where more > 0:
            j += 1
            deliveryTime = try number(j, "TIME")
        case "retrycount" where more > 0:
            j += 1
            retryCount = try number(j, "RETRYCOUNT")
        case "lastid" where more > 0:
            j += 1
            lastID = try StreamIDParse.strict(ctx.args[j])
        default:
            throw ReplyError("ERR Unrecognized XCLAIM option '\(ctx.args.quoted(j))'")
        }
        j += 1
    }
    let effects = StreamEffects()
    var propagateLastID = false
    if lastID > stream.groups[name]!.lastID {
        stream.groups[name]!.lastID = lastID
        propagateLastID = true
    }
    if deliveryTime == -1 || deliveryTime < 0 || deliveryTime > now { deliveryTime = now }
    let c = ctx.connection
    let mark = c.output.count
    var claimed = 0
    var consumerReady = false
    for (id, arg) in ids {
        let nack = stream.groups[name]!.nack(id)
        guard let entry = stream.find(id) else {
            // Gone from the stream: its pending entry goes too.
            if let nack {
                effects.both(StreamEffects.xclaim(key: key, group: name, id: arg, nack: nack, lastID: stream.groups[name]!.lastID))
                propagateLastID = false
                stream.groups[name]!.acknowledge(id)
            }
            continue
        }
        guard nack != nil || force else { continue }
        if let nack, minIdle > 0, now - nack.deliveryTime < minIdle { continue }
        if !consumerReady {
            ctx.lookupOrCreateConsumer(consumer, in: name, of: stream, key: key, now: now)
            consumerReady = true
        }
        let old = nack?.deliveryCount ?? 1
        let count = retryCount >= 0 ? UInt64(bitPattern: retryCount) : justID ? old : old &+ 1
        stream.groups[name]!.claim(id, by: consumer, deliveryTime: deliveryTime, deliveryCount: count)
        if justID { c.replyBulk(id.text) } else { c.replyStreamEntry(stream, entry) }
        claimed += 1
        let group = stream.groups[name]!
        effects.both(StreamEffects.xclaim(key: key, group: name, id: arg, nack: group.nack(id)!, lastID: group.lastID))
        propagateLastID = false
    }
    if propagateLastID { effects.both(StreamEffects.setID(key: key, group: stream.groups[name]!)) }
    c.insertHeader(at: mark, count: claimed)
    if effects.changed || consumerReady { try ctx.keyspace.streamChanged(stream, at: key, modifiesKey: false) }
    effects.commit(ctx)
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
private func xautoclaim(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1), name = ctx.args.bytes(2), consumer = ctx.args.bytes(3)
    guard let parsedIdle = parseStrictInt64(ctx.args[4]) else {
        throw ReplyError("ERR Invalid min-idle-time argument for XAUTOCLAIM")
    }
    let minIdle = max(0, parsedIdle)
    guard var cursor = try StreamIDParse.rangeBound(ctx.args[5], missingSeq: 0, start: true) else {
        throw ReplyError("ERR invalid start ID for the interval")
    }
    var count = 100
    var justID = false
    var j = 6
    while j < ctx.args.count {
        let more = ctx.args.count - 1 - j
        switch ctx.option(j) {
        case "count" where more > 0:
            guard let v = parseStrictInt64(ctx.args[j + 1]), v >= 1, v <= Int64.max / 16 else {
                throw ReplyError("ERR COUNT must be > 0")
            }
            count = Int(v)
            j += 1
        case "justid":
            justID = true
        default:
            throw ReplyError.syntax
        }
        j += 1
    }
    guard let stream = try ctx.keyspace.loadStream(key, read: false)?.value, stream.groups[name] != nil else {
        throw ReplyError("NOGROUP No such key '\(quoted(key))' or consumer group '\(quoted(name))'")
    }
    let c = ctx.connection
    let effects = StreamEffects()
    let now = ctx.server.persistence.recordNow()
    var attempts = count * 10
    var deleted: [StreamID] = []
    var consumerReady = false
    c.replyArrayHeader(3)
    let claimedMark = c.output.count
    var claimed = 0
    var more = true
    while attempts > 0 && count > 0 && more {
        attempts -= 1
        guard let (id, nack) = stream.groups[name]!.pel.lowerBound(cursor) else { more = false; break }
        if let next = id.successor { cursor = next } else { more = false }
        guard let entry = stream.find(id) else {
            effects.both(StreamEffects.xclaim(key: key, group: name, id: id.bytes, nack: nack, lastID: stream.groups[name]!.lastID))
            stream.groups[name]!.acknowledge(id)
            deleted.append(id)
            count -= 1
            continue
        }
        if minIdle > 0 && now - nack.deliveryTime < minIdle { continue }
        if !consumerReady {
            ctx.lookupOrCreateConsumer(consumer, in: name, of: stream, key: key, now: now)
            consumerReady = true
        }
        stream.groups[name]!.claim(id, by: consumer, deliveryTime: now,
                                   deliveryCount: justID ? nack.deliveryCount : nack.deliveryCount &+ 1)
        if justID { c.replyBulk(id.text) } else { c.replyStreamEntry(stream, entry) }
        claimed += 1
        count -= 1
        let group = stream.groups[name]!
        effects.both(StreamEffects.xclaim(key: key, group: name, id: id.bytes, nack: group.nack(id)!, lastID: group.lastID))
    }
    // The cursor: the first pending entry not looked at, or 0-0.
    let next = more ? stream.groups[name]!.pel.lowerBound(cursor)?.id ?? .zero : .zero
    c.insertHeader(at: claimedMark, count: claimed)
    var cursorReply: [UInt8] = []
    RESPEncoder.bulk(next.bytes, into: &cursorReply)
    c.output.insert(contentsOf: cursorReply, at: claimedMark)
    c.replyArrayHeader(deleted.count)
    for id in deleted { c.replyBulk(id.text) }
    if effects.changed || consumerReady { try ctx.keyspace.streamChanged(stream, at: key, modifiesKey: false) }
    effects.commit(ctx)
}
