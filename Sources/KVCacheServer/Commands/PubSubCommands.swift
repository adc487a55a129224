import RESP

/// SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE,
/// SUNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB: Redis 7.0's Pub/Sub
/// (`pubsub.c`). The state lives in `Server.pubsub` and each client's
/// `subscriptions`; messages are pushes (`Server/PubSub.swift`).
let pubsubCommands: [Command] = [
    Command(name: "subscribe", arity: -2, flags: ["pubsub", "noscript", "loading", "stale"], firstKey: 0, lastKey: 0,
            step: 0, group: "pubsub", summary: "Listens for messages published to channels.", handler: subscribe),
    Command(name: "unsubscribe", arity: -1, flags: ["pubsub", "noscript", "loading", "stale"], firstKey: 0, lastKey: 0,
            step: 0, group: "pubsub", summary: "Stops listening to messages posted to channels.", handler: unsubscribe),
    Command(name: "psubscribe", arity: -2, flags: ["pubsub", "noscript", "loading", "stale"], firstKey: 0, lastKey: 0,
            step: 0, group: "pubsub", summary: "Listens for messages published to channels that match one or more patterns.",
            handler: psubscribe),
    Command(name: "punsubscribe", arity: -1, flags: ["pubsub", "noscript", "loading", "stale"], firstKey: 0, lastKey: 0,
            step: 0, group: "pubsub", summary: "Stops listening to messages published to channels that match patterns.",
            handler: punsubscribe),
    Command(name: "ssubscribe", arity: -2, flags: ["pubsub", "noscript", "loading", "stale"], firstKey: 1, lastKey: -1,
            step: 1, group: "pubsub", summary: "Listens for messages published to shard channels.", handler: ssubscribe),
    Command(name: "sunsubscribe", arity: -1, flags: ["pubsub", "noscript", "loading", "stale"], firstKey: 1, lastKey: -1,
            step: 1, group: "pubsub", summary: "Stops listening to messages posted to shard channels.", handler: sunsubscribe),
    Command(name: "publish", arity: 3, flags: ["pubsub", "loading", "stale", "fast", "may_replicate"], firstKey: 0,
            lastKey: 0, step: 0, group: "pubsub", summary: "Posts a message to a channel.", handler: publish),
    Command(name: "spublish", arity: 3, flags: ["pubsub", "loading", "stale", "fast", "may_replicate"], firstKey: 1,
            lastKey: 1, step: 1, group: "pubsub", summary: "Posts a message to a shard channel.", handler: spublish),
    Command(name: "pubsub", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0, group: "pubsub",
            summary: "A container for Pub/Sub commands.", handler: pubsubCommand,
            subcommands: ["channels", "help", "numpat", "numsub", "shardchannels", "shardnumsub"]),
]

private func names(_ ctx: CommandContext) -> [[UInt8]] {
    (1..<ctx.args.count).map { ctx.args.bytes($0) }
}

/// Redis refuses (S|P)SUBSCRIBE to a client that must get one reply per
/// command (EXEC's commands allow SUBSCRIBE and PSUBSCRIBE, for backward
/// compatibility, but not SSUBSCRIBE).
private func subscribe(_ ctx: CommandContext) throws {
    ctx.server.subscribe(ctx.connection, to: names(ctx), .channel)
}

private func psubscribe(_ ctx: CommandContext) throws {
    ctx.server.subscribe(ctx.connection, to: names(ctx), .pattern)
}

private func ssubscribe(_ ctx: CommandContext) throws {
    if ctx.server.persistence.transactionDepth > 0 {
        throw ReplyError("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
    }
    ctx.server.subscribe(ctx.connection, to: names(ctx), .shard)
}

private func unsubscribe(_ ctx: CommandContext) throws {
    ctx.server.unsubscribe(ctx.connection, from: ctx.args.count == 1 ? nil : names(ctx), .channel)
}

private func punsubscribe(_ ctx: CommandContext) throws {
    ctx.server.unsubscribe(ctx.connection, from: ctx.args.count == 1 ? nil : names(ctx), .pattern)
}

private func sunsubscribe(_ ctx: CommandContext) throws {
    ctx.server.unsubscribe(ctx.connection, from: ctx.args.count == 1 ? nil : names(ctx), .shard)
}

private func publish(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(ctx.server.publish(ctx.args.bytes(1), ctx.args.bytes(2)))
}

private func spublish(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(ctx.server.publish(ctx.args.bytes(1), ctx.args.bytes(2), shard: true))
}

/// PUBSUB CHANNELS [pattern] | NUMSUB [channel …] | NUMPAT |
/// SHARDCHANNELS [pattern] | SHARDNUMSUB [channel …] | HELP.
private func pubsubCommand(_ ctx: CommandContext) throws {
    let c = ctx.connection
    let args = ctx.args
    let pubsub = ctx.server.pubsub
    let sub = ctx.option(1)
    func syntaxError() -> ReplyError {
        ReplyError("ERR unknown subcommand or wrong number of arguments for '\(String(keepingBytes: args[1].prefix(128)))'. "
            + "Try PUBSUB HELP.")
    }
    func channelList(_ table: [[UInt8]: [Connection]]) throws {
        guard args.count <= 3 else { throw syntaxError() }
        let pattern = args.count == 3 ? args.bytes(2) : nil
        let matching = table.keys.filter { pattern == nil || globMatch(pattern!, $0) }
        c.replyBulkArray(matching)
    }
    func numsub(_ table: [[UInt8]: [Connection]]) {
        c.replyArrayHeader((args.count - 2) * 2)
        for i in 2..<args.count {
            let channel = args.bytes(i)
            c.replyBulk(channel)
            c.replyInteger(table[channel]?.count ?? 0)
        }
    }
    switch sub {
    case "help":
        guard args.count == 2 else { throw ReplyError.wrongArity("pubsub|help") }
        c.replyHelp([
            "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
            "HELP",
            "    Prints this help.",
        ])
    case "channels": try channelList(pubsub.channels)
    case "shardchannels": try channelList(pubsub.shardChannels)
    case "numsub": numsub(pubsub.channels)
    case "shardnumsub": numsub(pubsub.shardChannels)
    case "numpat":
        guard args.count == 2 else { throw ReplyError.wrongArity("pubsub|numpat") }
        c.replyInteger(pubsub.patterns.count)
    default:
        throw ReplyError.unknownSubcommand(args[1], of: "pubsub")
    }
}
