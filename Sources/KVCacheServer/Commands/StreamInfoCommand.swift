import RESP
import SQLiteKVCache

/// XINFO STREAM|GROUPS|CONSUMERS|HELP, as Redis 7.0's xinfoCommand: maps
/// (flat arrays in RESP2) in Redis's field order.
let streamInfoCommands: [Command] = [
    Command(name: "xinfo", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0,
            group: "stream", summary: "A container for stream introspection commands.", handler: xinfo,
            subcommands: ["consumers", "groups", "help", "stream"]),
]

private func xinfo(_ ctx: CommandContext) throws {
    let sub = ctx.option(1)
    let arities = ["consumers": 4, "groups": 3, "stream": -3, "help": 2]
    guard let arity = arities[sub] else { throw ReplyError.unknownSubcommand(ctx.args[1], of: "xinfo") }
    let n = ctx.args.count
    guard arity >= 0 ? n == arity : n >= -arity else { throw ReplyError.wrongArity("xinfo|\(sub)") }
    let c = ctx.connection
    if sub == "help" {
        c.replyHelp("xinfo", [
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ])
        return
    }
    let key = ctx.args.bytes(2)
    guard let stream = try ctx.keyspace.loadStream(key, read: true)?.value else { throw ReplyError.noSuchKey }
    switch sub {
    case "consumers":
        let name = ctx.args.bytes(3)
        guard let group = stream.groups[name] else {
            throw ReplyError("NOGROUP No such consumer group '\(String(keepingBytes: name))' for key name "
                + "'\(String(keepingBytes: key))'")
        }
        let now = Server.nowMilliseconds()
        let consumers = group.sortedConsumers
        c.replyArrayHeader(consumers.count)
        for consumer in consumers {
            c.replyMapHeader(3)
            c.replyBulk("name")
            c.replyBulk(consumer.name)
            c.replyBulk("pending")
            c.replyInteger(consumer.pending.count)
            c.replyBulk("idle")
            c.replyInteger(max(0, now - consumer.seenTime))
        }
    case "groups":
        let names = stream.sortedGroupNames
        c.replyArrayHeader(names.count)
        for name in names {
            let group = stream.groups[name]!
            c.replyMapHeader(6)
            c.replyBulk("name")
            c.replyBulk(name)
            c.replyBulk("consumers")
            c.replyInteger(group.consumers.count)
            c.replyBulk("pending")
            c.replyInteger(group.pel.count)
            c.replyBulk("last-delivered-id")
            c.replyBulk(group.lastID.text)
            replyReadCounterAndLag(c, stream, group)
        }
    default:
        try streamInfo(ctx, stream)
    }
}

/// A group's `entries-read` and `lag`, each nil when it cannot be known.
private func replyReadCounterAndLag(_ c: Connection, _ stream: StreamValue, _ group: StreamGroup) {
    c.replyBulk("entries-read")
    if group.entriesRead != StreamGroup.unknownEntriesRead { c.replyInteger(group.entriesRead) } else { c.replyNull() }
    c.replyBulk("lag")
    if let lag = stream.lag(of: group) { c.replyInteger(lag) } else { c.replyNull() }
}

/// XINFO STREAM key [FULL [COUNT count]]
private func streamInfo(_ ctx: CommandContext, _ stream: StreamValue) throws {
    let options = ctx.args.count - 3
    var full = false
    var count: Int64 = 10
    if options > 0 {
        let syntax = ReplyError("ERR unknown subcommand or wrong number of arguments for "
            + "'\(String(keepingBytes: ctx.args[1].prefix(128)))'. Try XINFO HELP.")
        guard options == 1 || options == 3, ctx.option(3) == "full" else { throw syntax }
        if options == 3 {
            guard ctx.option(4) == "count" else { throw syntax }
            count = try ctx.integer(5)
            if count < 0 { count = 10 }
        }
        full = true
    }
    let c = ctx.connection
    c.replyMapHeader(full ? 9 : 10)
    c.replyBulk("length")
    c.replyInteger(stream.length)
    c.replyBulk("radix-tree-keys")
    c.replyInteger(stream.nodes.count)
    c.replyBulk("radix-tree-nodes")
    c.replyInteger(RaxShape.nodeCount(stream.nodes.map(\.master)))
    c.replyBulk("last-generated-id")
    c.replyBulk(stream.lastID.text)
    c.replyBulk("max-deleted-entry-id")
    c.replyBulk(stream.maxDeletedID.text)
    c.replyBulk("entries-added")
    c.replyInteger(Int64(bitPattern: stream.entriesAdded))
    c.replyBulk("recorded-first-entry-id")
    c.replyBulk(stream.firstID.text)
    guard full else {
        c.replyBulk("groups")
        c.replyInteger(stream.groups.count)
        for (label, reverse) in [("first-entry", false), ("last-entry", true)] {
            c.replyBulk(label)
            var edge: StreamValue.Entry?
            stream.forEach(reverse: reverse) { edge = $0; return false }
            if let edge { c.replyStreamEntry(stream, edge) } else { c.replyNull() }
        }
        return
    }
    let limit = Int(count)
    c.replyBulk("entries")
    replyRange(c, stream, from: .zero, to: .max, count: limit, reverse: false)
    c.replyBulk("groups")
    let names = stream.sortedGroupNames
    c.replyArrayHeader(names.count)
    for name in names {
        let group = stream.groups[name]!
        c.replyMapHeader(7)
        c.replyBulk("name")
        c.replyBulk(name)
        c.replyBulk("last-delivered-id")
        c.replyBulk(group.lastID.text)
        replyReadCounterAndLag(c, stream, group)
        c.replyBulk("pel-count")
        c.replyInteger(group.pel.count)
        c.replyBulk("pending")
        var pending: [(StreamID, StreamNACK)] = []
        group.pel.forEach { id, nack in
            pending.append((id, nack))
            return limit == 0 || pending.count < limit
        }
        c.replyArrayHeader(pending.count)
        for (id, nack) in pending {
            c.replyArrayHeader(4)
            c.replyBulk(id.text)
            c.replyBulk(nack.consumer)
            c.replyInteger(nack.deliveryTime)
            c.replyInteger(Int64(bitPattern: nack.deliveryCount))
        }
        c.replyBulk("consumers")
        let consumers = group.sortedConsumers
        c.replyArrayHeader(consumers.count)
        for consumer in consumers {
            c.replyMapHeader(4)
            c.replyBulk("name")
            c.replyBulk(consumer.name)
            c.replyBulk("seen-time")
            c.replyInteger(consumer.seenTime)
            c.replyBulk("pel-count")
            c.replyInteger(consumer.pending.count)
            c.replyBulk("pending")
            var ids: [StreamID] = []
            consumer.pending.forEach { id, _ in
                ids.append(id)
                return limit == 0 || ids.count < limit
            }
            c.replyArrayHeader(ids.count)
            for id in ids {
                let nack = group.nack(id)!
                c.replyArrayHeader(3)
                c.replyBulk(id.text)
                c.replyInteger(nack.deliveryTime)
                c.replyInteger(Int64(bitPattern: nack.deliveryCount))
            }
        }
    }
}
