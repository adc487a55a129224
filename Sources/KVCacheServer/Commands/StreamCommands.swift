import RESP
import SQLiteKVCache

/// The stream commands, as Redis 7.0's t_stream.c: XADD, XLEN, XRANGE,
/// XREVRANGE, XDEL, XTRIM and XSETID here; XREAD and XREADGROUP in
/// StreamReadCommands; the consumer groups' in StreamGroupCommands; XINFO
/// in StreamInfoCommand. A stream is never deleted for being empty. Each
/// change is logged and propagated as Redis propagates it: XADD with the
/// ID it chose and an approximate trim as the exact one it did
/// (`MAXLEN = <length>`), XREADGROUP and the claims as XCLAIM forms.
let streamCommands: [Command] = [
    Command(name: "xadd", arity: -5, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Appends a new message to a stream. Creates the key if it doesn't exist.", handler: xadd),
    Command(name: "xlen", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Return the number of messages in a stream.", handler: xlen),
    Command(name: "xrange", arity: -4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Returns the messages from a stream within a range of IDs.",
            handler: { try xrange($0, reverse: false) }),
    Command(name: "xrevrange", arity: -4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Returns the messages from a stream within a range of IDs in reverse order.",
            handler: { try xrange($0, reverse: true) }),
    Command(name: "xdel", arity: -3, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Returns the number of messages after removing them from a stream.", handler: xdel),
    Command(name: "xtrim", arity: -4, flags: ["write"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "Deletes messages from the beginning of a stream.", handler: xtrim),
    Command(name: "xsetid", arity: -3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "stream", summary: "An internal command for replicating stream values.", handler: xsetid),
]

// MARK: Replies

extension Connection {
    /// A listpack element as a bulk string (an integer in decimal).
    func replyListpackElement(_ lp: [UInt8], _ element: Listpack.Element) {
        switch element {
        case .int(let v): replyBulk(String(v))
        case .string(let range): replyBulk(lp[range])
        }
    }

    /// One entry as Redis replies with it: [id, [field, value, …]].
    func replyStreamEntry(_ stream: StreamValue, _ e: StreamValue.Entry) {
        replyArrayHeader(2)
        replyBulk(e.id.text)
        replyArrayHeader(2 * e.fieldCount)
        let lp = stream.nodes[e.node].lp
        stream.forEachField(e) { field, value in
            replyListpackElement(lp, field)
            replyListpackElement(lp, value)
        }
    }
}

// MARK: XADD and XTRIM's arguments

/// XADD's and XTRIM's options (Redis's streamParseAddOrTrimArgsOrReply).
struct StreamAddTrimArguments {
    var trim: StreamTrim?
    /// The argument holding the trim's count or ID (rewritten when approximate).
    var trimArgument = 0
    var noMakeStream = false
    /// XADD's ID: nil for `*`; its sequence nil for `<ms>-*`.
    var id: StreamID?
    var seqGiven = true
    /// Where XADD's ID is (the fields follow it).
    var idIndex = 0

    init(_ ctx: CommandContext, xadd: Bool) throws(ReplyError) {
        let args = ctx.args
        var i = 2
        var limit: Int64 = 0
        var limitGiven = false
        var strategy: StreamTrim.Strategy?
        var approximate = false
        /// MAXLEN or MINID at `i`: refuses the other one given before, and
        /// steps over its `~` (approximate) or `=`.
        func trimOption(more: Int) throws(ReplyError) {
            if strategy != nil {
                throw ReplyError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
            }
            approximate = false
            if more >= 2 && args[i + 1].elementsEqual([UInt8(ascii: "~")]) {
                approximate = true
                i += 1
            } else if more >= 2 && args[i + 1].elementsEqual([UInt8(ascii: "=")]) {
                i += 1
            }
        }
        while i < args.count {
            let more = args.count - 1 - i
            let opt = args.option(i)
            if xadd && args[i].elementsEqual([UInt8(ascii: "*")]) {
                break
            } else if opt == "maxlen" && more > 0 {
                try trimOption(more: more)
                let maxLength = try args.integer(i + 1)
                guard maxLength >= 0 else { throw ReplyError("ERR The MAXLEN argument must be >= 0.") }
                i += 1
                strategy = .maxLength(Int(maxLength))
                trimArgument = i
            } else if opt == "minid" && more > 0 {
                try trimOption(more: more)
                strategy = .minID(try StreamIDParse.strict(args[i + 1]))
                i += 1
                trimArgument = i
            } else if opt == "limit" && more > 0 {
                limit = try args.integer(i + 1)
                guard limit >= 0 else { throw ReplyError("ERR The LIMIT argument must be >= 0.") }
                limitGiven = true
                i += 1
            } else if xadd && opt == "nomkstream" {
                noMakeStream = true
            } else if xadd {
                let parsed = try StreamIDParse.parse(args[i], strict: true, allowAutoSeq: true)
                id = parsed.id
                seqGiven = parsed.seqGiven
                break
            } else {
                throw ReplyError.syntax
            }
            i += 1
        }
        idIndex = i
        if limit != 0 && strategy == nil {
            throw ReplyError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
        }
        if !xadd && strategy == nil {
            throw ReplyError("ERR syntax error, XTRIM must be called with a trimming strategy")
        }
        if ctx.server.persistence.replaying {
            // A replayed command was rewritten to its exact effect: no bound applies.
            limit = 0
        } else if limitGiven {
            guard approximate else { throw ReplyError("ERR syntax error, LIMIT cannot be used without the special ~ option") }
        } else if approximate {
            // Redis bounds an approximate trim's work to 100 nodes.
            limit = 100 &* Int64(ctx.limits.streamNodeMaxEntries)
            if limit <= 0 { limit = 10000 }
            if limit > 1_000_000 { limit = 1_000_000 }
        } else {
            limit = 0
        }
        if let strategy { trim = StreamTrim(strategy: strategy, approximate: approximate, limit: Int(limit)) }
    }

    /// The command's arguments as logged and propagated after an
    /// approximate trim: `~` becomes `=` and the count what is left (or
    /// the ID of the first entry left), so a replay trims the same entries.
    func rewritingTrim(_ args: inout [[UInt8]], _ stream: StreamValue) {
        guard let trim, trim.approximate else { return }
        args[trimArgument - 1] = [UInt8(ascii: "=")]
        switch trim.strategy {
        case .maxLength: args[trimArgument] = Array(String(stream.length).utf8)
        case .minID: args[trimArgument] = stream.edgeID(first: true, skipTombstones: false).bytes
        }
    }
}

// MARK: The commands

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value …]
private func xadd(_ ctx: CommandContext) throws {
    let parsed = try StreamAddTrimArguments(ctx, xadd: true)
    let fieldsAt = parsed.idIndex + 1
    let pairs = ctx.args.count - fieldsAt
    guard pairs >= 2, pairs % 2 == 0 else { throw ReplyError.wrongArity("xadd") }
    if let id = parsed.id, parsed.seqGiven, id.isZero {
        throw ReplyError("ERR The ID specified in XADD must be greater than 0-0")
    }
    let key = ctx.args.bytes(1)
    let keyspace = ctx.keyspace
    let loaded = try keyspace.loadStream(key, read: false)
    if loaded == nil && parsed.noMakeStream {
        ctx.connection.replyNull()
        return
    }
    let stream = loaded?.value ?? StreamValue()
    if stream.lastID == .max {
        throw ReplyError("ERR The stream has exhausted the last possible ID, unable to add more items")
    }
    let id: StreamID
    do {
        id = try stream.append((fieldsAt..<ctx.args.count).map { ctx.args.bytes($0) }, id: parsed.id,
                               seqGiven: parsed.seqGiven, now: UInt64(max(0, Server.nowMilliseconds())), limits: ctx.limits)
    } catch .notGreater {
        throw ReplyError("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    } catch {
        throw ReplyError("ERR Elements are too large to be stored")
    }
    let trimmed = parsed.trim.map { stream.trim($0) } ?? 0
    if loaded == nil {
        try keyspace.addStream(stream, at: key)
    } else {
        try keyspace.streamChanged(stream, at: key, modifiesKey: true)
        if ctx.server.blockedCount > 0 { ctx.server.signalKeyAsReady(ctx.cache.name, key) }
    }
    keyspace.notifyStream("xadd", key)
    if trimmed > 0 { keyspace.notifyStream("xtrim", key) }
    // Logged and propagated with the ID it chose and the trim it did.
    var logged = ctx.args.copies
    parsed.rewritingTrim(&logged, stream)
    if parsed.id == nil || !parsed.seqGiven { logged[parsed.idIndex] = id.bytes }
    if logged != ctx.args.copies { ctx.server.persistence.logCommand(as: logged) }
    ctx.connection.replyBulk(id.text)
}

private func xlen(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.loadStream(ctx.args.bytes(1), read: true)?.value.length ?? 0)
}

/// XRANGE key start end [COUNT count], XREVRANGE key end start [COUNT count].
private func xrange(_ ctx: CommandContext, reverse: Bool) throws {
    let (startAt, endAt) = reverse ? (3, 2) : (2, 3)
    guard let start = try StreamIDParse.rangeBound(ctx.args[startAt], missingSeq: 0, start: true) else {
        throw ReplyError("ERR invalid start ID for the interval")
    }
    guard let end = try StreamIDParse.rangeBound(ctx.args[endAt], missingSeq: .max, start: false) else {
        throw ReplyError("ERR invalid end ID for the interval")
    }
    var count: Int64 = -1
    var j = 4
    while j < ctx.args.count {
        guard ctx.option(j) == "count", j + 1 < ctx.args.count else { throw ReplyError.syntax }
        count = max(0, try ctx.integer(j + 1))
        j += 2
    }
    guard let stream = try ctx.keyspace.loadStream(ctx.args.bytes(1), read: true)?.value else {
        ctx.connection.replyArrayHeader(0)
        return
    }
    if count == 0 {
        ctx.connection.replyNullArray()
        return
    }
    replyRange(ctx.connection, stream, from: start, to: end, count: count < 0 ? 0 : Int(count), reverse: reverse)
}

/// The entries from `start` to `end` as an array, at most `count` (0: all).
func replyRange(_ c: Connection, _ stream: StreamValue, from start: StreamID, to end: StreamID, count: Int, reverse: Bool) {
    var found: [StreamValue.Entry] = []
    stream.forEach(from: start, to: end, reverse: reverse) { e in
        found.append(e)
        return count == 0 || found.count < count
    }
    c.replyArrayHeader(found.count)
    for e in found { c.replyStreamEntry(stream, e) }
}

/// XDEL key id [id …]
private func xdel(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    guard let (stream, _) = try ctx.keyspace.loadStream(key, read: false) else {
        ctx.connection.replyInteger(0)
        return
    }
    let ids = try (2..<ctx.args.count).map { i throws(ReplyError) in try StreamIDParse.strict(ctx.args[i]) }
    var deleted: [StreamID] = []
    var firstWasDeleted = false
    for id in ids where stream.delete(id) {
        if id == stream.firstID { firstWasDeleted = true }
        deleted.append(id)
    }
    if !deleted.isEmpty {
        stream.noteDeleted(deleted, firstWasDeleted: firstWasDeleted)
        try ctx.keyspace.streamChanged(stream, at: key, modifiesKey: true)
        ctx.keyspace.notifyStream("xdel", key)
    }
    ctx.connection.replyInteger(deleted.count)
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
private func xtrim(_ ctx: CommandContext) throws {
    let parsed = try StreamAddTrimArguments(ctx, xadd: false)
    let key = ctx.args.bytes(1)
    guard let (stream, _) = try ctx.keyspace.loadStream(key, read: false), let trim = parsed.trim else {
        ctx.connection.replyInteger(0)
        return
    }
    let deleted = stream.trim(trim)
    if deleted > 0 {
        try ctx.keyspace.streamChanged(stream, at: key, modifiesKey: true)
        ctx.keyspace.notifyStream("xtrim", key)
        var logged = ctx.args.copies
        parsed.rewritingTrim(&logged, stream)
        if trim.approximate { ctx.server.persistence.logCommand(as: logged) }
    }
    ctx.connection.replyInteger(deleted)
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
private func xsetid(_ ctx: CommandContext) throws {
    let id = try StreamIDParse.strict(ctx.args[2])
    var entriesAdded: Int64 = -1
    var maxDeleted = StreamID.zero
    var i = 3
    while i < ctx.args.count {
        let more = ctx.args.count - 1 - i
        switch ctx.option(i) {
        case "entriesadded" where more > 0:
            entriesAdded = try ctx.integer(i + 1)
            guard entriesAdded >= 0 else { throw ReplyError("ERR entries_added must be positive") }
        case "maxdeletedid" where more > 0:
            maxDeleted = try StreamIDParse.strict(ctx.args[i + 1])
            guard id >= maxDeleted else {
                throw ReplyError("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
            }
        default:
            throw ReplyError.syntax
        }
        i += 2
    }
    let key = ctx.args.bytes(1)
    guard let (stream, _) = try ctx.keyspace.loadStream(key, read: false) else { throw ReplyError.noSuchKey }
    if stream.length > 0 {
        guard id >= stream.lastValidID else {
            throw ReplyError("ERR The ID specified in XSETID is smaller than the target stream top item")
        }
        if entriesAdded != -1 && Int64(stream.length) > entriesAdded {
            throw ReplyError("ERR The entries_added specified in XSETID is smaller than the target stream length")
        }
    }
    stream.lastID = id
    if entriesAdded != -1 { stream.entriesAdded = UInt64(entriesAdded) }
    if !maxDeleted.isZero { stream.maxDeletedID = maxDeleted }
    try ctx.keyspace.streamChanged(stream, at: key, modifiesKey: false)
    ctx.keyspace.notifyStream("xsetid", key)
    ctx.connection.replyOK()
}
