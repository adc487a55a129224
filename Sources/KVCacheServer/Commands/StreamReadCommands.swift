import RESP
import SQLiteKVCache

/// XREAD and XREADGROUP, as Redis 7.0's xreadCommand and its blocked
/// clients' serving (blocked.c's serveClientsBlockedOnStreamKey). With
/// `BLOCK` and nothing to serve, the client waits for the IDs it resolved
/// (`$` as the stream's last ID then; `>` as its group's last delivered ID
/// when served) and is served from the first key that gets an entry past
/// its ID, at most `COUNT` (1000 by default) entries. Inside MULTI it
/// answers as on a timeout; in a script `BLOCK` is an error.
let streamReadCommands: [Command] = [
    Command(name: "xread", arity: -4, flags: ["readonly", "blocking", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "stream", summary: "Returns messages from multiple streams with IDs greater than the ones requested.",
            handler: { try xread($0, group: false) }),
    Command(name: "xreadgroup", arity: -7, flags: ["write", "blocking", "movablekeys"], firstKey: 0, lastKey: 0, step: 0,
            group: "stream", summary: "Returns new or historical messages from a stream for a consumer in a group.",
            handler: { try xread($0, group: true) }),
]

/// What a blocked XREAD or XREADGROUP waits for (Redis's bpop stream fields).
struct StreamWait {
    /// Per key, the ID it waits past (`>`: the greatest ID).
    var ids: [[UInt8]: StreamID]
    /// At most this many entries (COUNT, or 1000).
    var count: Int
    var group: [UInt8]?
    var consumer: [UInt8]
    var noAck: Bool
}

/// XREAD [COUNT n] [BLOCK ms] STREAMS key … id …
/// XREADGROUP GROUP group consumer [COUNT n] [BLOCK ms] [NOACK] STREAMS key … id …
private func xread(_ ctx: CommandContext, group withGroup: Bool) throws {
    if let state = ctx.connection.blocked, state.retrying, let wait = state.stream, let key = state.readyKey {
        try serveBlocked(ctx, state, wait, key)
        return
    }
    let args = ctx.args
    var timeout: Int64 = -1, count: Int64 = 0
    var streamsAt = 0, keyCount = 0
    var groupName: [UInt8]?, consumer: [UInt8] = []
    var noAck = false
    var i = 1
    parsing: while i < args.count {
        let more = args.count - i - 1
        switch args.option(i) {
        case "block" where more > 0:
            if ctx.server.scripting.isScriptClient(ctx.connection) {
                throw ReplyError("ERR \(args.quoted(0)) command is not allowed with BLOCK option from scripts")
            }
            i += 1
            guard let ms = parseStrictInt64(args[i]) else { throw ReplyError("ERR timeout is not an integer or out of range") }
            guard ms >= 0 else { throw ReplyError("ERR timeout is negative") }
            timeout = ms
        case "count" where more > 0:
            i += 1
            count = max(0, try args.integer(i))
        case "streams" where more > 0:
            streamsAt = i + 1
            let n = args.count - streamsAt
            guard n % 2 == 0 else {
                throw ReplyError("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
            }
            keyCount = n / 2
            break parsing
        case "group" where more >= 2:
            guard withGroup else {
                throw ReplyError("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
            }
            groupName = args.bytes(i + 1)
            consumer = args.bytes(i + 2)
            i += 2
        case "noack":
            guard withGroup else {
                throw ReplyError("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
            }
            noAck = true
        default:
            throw ReplyError.syntax
        }
        i += 1
    }
    guard streamsAt > 0 else { throw ReplyError.syntax }
    if withGroup && groupName == nil { throw ReplyError("ERR Missing GROUP option for XREADGROUP") }

    // The keys are looked up and the IDs resolved in order: the first
    // wrong type, missing group or bad ID answers.
    let keys = (0..<keyCount).map { args.bytes(streamsAt + $0) }
    var ids: [StreamID] = []
    for k in 0..<keyCount {
        let stream = try ctx.keyspace.loadStream(keys[k], read: true)?.value
        if let groupName, stream?.groups[groupName] == nil {
            throw ReplyError("NOGROUP No such key '\(String(keepingBytes: keys[k]))' or consumer group "
                + "'\(String(keepingBytes: groupName))' in XREADGROUP with GROUP option")
        }
        let idArg = args[streamsAt + keyCount + k]
        if idArg.elementsEqual([UInt8(ascii: "$")]) {
            if withGroup {
                throw ReplyError("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history "
                    + "of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would "
                    + "just return an empty result set.")
            }
            ids.append(stream?.lastID ?? .zero)
        } else if idArg.elementsEqual([UInt8(ascii: ">")]) {
            guard withGroup else {
                throw ReplyError("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
                    + "<consumer> option.")
            }
            ids.append(.max)
        } else {
            ids.append(try StreamIDParse.strict(idArg))
        }
    }

    // Served at once from every key that has something.
    let c = ctx.connection
    let effects = StreamEffects()
    let mark = c.output.count
    var served = 0
    for k in 0..<keyCount {
        guard let stream = try ctx.keyspace.loadStream(keys[k], read: groupName == nil)?.value else { continue }
        var gt = ids[k]
        var history = false
        var serve = false
        if let groupName, let group = stream.groups[groupName] {
            if gt != .max {
                serve = true
                history = true
            } else if stream.length > 0, stream.lastValidID > group.lastID {
                serve = true
                gt = group.lastID
            }
        } else if groupName == nil, stream.length > 0, stream.lastValidID > gt {
            serve = true
        }
        guard serve else { continue }
        served += 1
        if c.protocolVersion == 2 { c.replyArrayHeader(2) }
        c.replyBulk(keys[k])
        let start = gt.successor ?? .zero
        if let groupName {
            effects.changed = false
            let now = ctx.server.persistence.recordNow()
            if ctx.lookupOrCreateConsumer(consumer, in: groupName, of: stream, key: keys[k], now: now) {
                let create = StreamEffects.createConsumer(key: keys[k], group: groupName, consumer: consumer)
                if noAck { effects.both(create) } else { effects.logOnly(create) }
            }
            if history {
                replyHistory(c, stream, key: keys[k], group: groupName, consumer: consumer, from: start,
                             count: Int(count), now: now, effects: effects)
            } else {
                replyGroupRange(c, stream, key: keys[k], group: groupName, consumer: consumer, from: start,
                                count: Int(count), noAck: noAck, now: now, effects: effects)
            }
            if effects.changed { try ctx.keyspace.streamChanged(stream, at: keys[k], modifiesKey: false) }
        } else {
            replyRange(c, stream, from: start, to: .max, count: Int(count), reverse: false)
        }
    }
    if served > 0 {
        c.insertHeader(at: mark, count: served, map: true)
        if withGroup { effects.commit(ctx) }
        return
    }
    if withGroup { effects.commit(ctx) }
    guard timeout >= 0 else {
        c.replyNullArray()
        return
    }
    var waits: [[UInt8]: StreamID] = [:]
    for k in 0..<keyCount where waits[keys[k]] == nil { waits[keys[k]] = ids[k] }
    let wait = StreamWait(ids: waits, count: count > 0 ? Int(count) : 1000, group: groupName, consumer: consumer,
                          noAck: noAck)
    ctx.block(on: keys, kind: .stream, deadline: timeout > 0 ? Server.nowMilliseconds() + timeout : nil, stream: wait)
}

/// Serves a blocked client from `key`, which was readied: entries past
/// the ID it waits for (its group's last delivered ID for `>`), or an
/// error for an XREADGROUP whose stream or group went; otherwise it waits on.
private func serveBlocked(_ ctx: CommandContext, _ state: BlockState, _ wait: StreamWait, _ key: [UInt8]) throws {
    let stream: StreamValue?
    do {
        stream = try ctx.keyspace.loadStream(key, read: false)?.value
    } catch let error as ReplyError where error == .wrongType {
        stream = nil
    }
    guard let stream else {
        if wait.group != nil { throw ReplyError("UNBLOCKED the stream key no longer exists") }
        state.waitingAgain = true
        return
    }
    var gt = wait.ids[key] ?? .zero
    if let groupName = wait.group {
        guard let group = stream.groups[groupName] else {
            throw ReplyError("NOGROUP the consumer group this client was blocked on no longer exists")
        }
        gt = group.lastID
    }
    guard stream.lastID > gt else {
        state.waitingAgain = true
        return
    }
    let c = ctx.connection
    let start = gt.successor ?? .zero
    let effects = StreamEffects()
    let now = ctx.server.persistence.recordNow()
    if let groupName = wait.group,
       ctx.lookupOrCreateConsumer(wait.consumer, in: groupName, of: stream, key: key, now: now) {
        let create = StreamEffects.createConsumer(key: key, group: groupName, consumer: wait.consumer)
        if wait.noAck { effects.both(create) } else { effects.logOnly(create) }
    }
    if c.protocolVersion == 2 {
        c.replyArrayHeader(1)
        c.replyArrayHeader(2)
    } else {
        c.replyMapHeader(1)
    }
    c.replyBulk(key)
    if let groupName = wait.group {
        replyGroupRange(c, stream, key: key, group: groupName, consumer: wait.consumer, from: start, count: wait.count,
                        noAck: wait.noAck, now: now, effects: effects)
        if effects.changed { try ctx.keyspace.streamChanged(stream, at: key, modifiesKey: false) }
        effects.commit(ctx)
    } else {
        replyRange(c, stream, from: start, to: .max, count: wait.count, reverse: false)
    }
}

/// Entries from `start` for a consumer of `group` (Redis's
/// streamReplyWithRange with a group): the group's last delivered ID and
/// read counter follow; unless `noAck`, each entry becomes pending for the
/// consumer (taken from another one that had it), propagated as XCLAIM;
/// with `noAck`, the new last ID is propagated as XGROUP SETID.
func replyGroupRange(_ c: Connection, _ stream: StreamValue, key: [UInt8], group: [UInt8], consumer: [UInt8],
                     from start: StreamID, count: Int, noAck: Bool, now: Int64, effects: StreamEffects) {
    let mark = c.output.count
    var n = 0
    var lastIDMoved = false
    let before = stream.groups[group].map { ($0.lastID, $0.entriesRead) }
    stream.forEach(from: start) { e in
        if let g = stream.groups[group], e.id > g.lastID {
            stream.advance(group, to: e.id)
            effects.changed = true
            if noAck { lastIDMoved = true }
        }
        c.replyStreamEntry(stream, e)
        if !noAck {
            stream.groups[group]!.deliver(e.id, to: consumer, now: now)
            let g = stream.groups[group]!
            effects.both(StreamEffects.xclaim(key: key, group: group, id: e.id.bytes, nack: g.nack(e.id)!, lastID: g.lastID))
        }
        n += 1
        return count == 0 || n < count
    }
    // Redis propagates the new last ID after a NOACK read; the log also
    // gets it after any read that moved it, with the read counter the
    // XCLAIMs do not carry, so a replay's counter is the same.
    if let g = stream.groups[group], let before, before.0 != g.lastID || before.1 != g.entriesRead {
        let setID = StreamEffects.setID(key: key, group: g)
        if lastIDMoved { effects.both(setID) } else { effects.logOnly(setID) }
    }
    c.insertHeader(at: mark, count: n)
}

/// Entries from a consumer's own pending list, from `start` (Redis's
/// streamReplyWithRangeFromConsumerPEL): each one still in the stream is
/// delivered again (its time and count change, logged as XCLAIM but, as in
/// Redis, not propagated); one deleted since shows as [id, nil].
private func replyHistory(_ c: Connection, _ stream: StreamValue, key: [UInt8], group: [UInt8], consumer: [UInt8],
                          from start: StreamID, count: Int, now: Int64, effects: StreamEffects) {
    var ids: [StreamID] = []
    stream.groups[group]?.consumer(consumer)?.pending.forEach(from: start) { id, _ in
        ids.append(id)
        return count == 0 || ids.count < count
    }
    c.replyArrayHeader(ids.count)
    for id in ids {
        if let e = stream.find(id) {
            c.replyStreamEntry(stream, e)
            stream.groups[group]!.redeliver(id, now: now)
            let g = stream.groups[group]!
            effects.logOnly(StreamEffects.xclaim(key: key, group: group, id: id.bytes, nack: g.nack(id)!, lastID: g.lastID))
        } else {
            c.replyArrayHeader(2)
            c.replyBulk(id.text)
            c.replyNullArray()
        }
    }
}
