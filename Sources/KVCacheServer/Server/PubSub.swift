import RESP

/// Names in the order they were added, with O(1) membership: a client's
/// channels or patterns (Redis keeps them in a dict or a list; the order
/// only shows in an UNSUBSCRIBE without arguments).
struct OrderedNames {
    private(set) var names: [[UInt8]] = []
    private var members: Set<[UInt8]> = []

    var count: Int { names.count }
    var isEmpty: Bool { names.isEmpty }
    func contains(_ name: [UInt8]) -> Bool { members.contains(name) }

    /// - Returns: whether it was not there yet.
    mutating func insert(_ name: [UInt8]) -> Bool {
        guard members.insert(name).inserted else { return false }
        names.append(name)
        return true
    }

    /// - Returns: whether it was there.
    mutating func remove(_ name: [UInt8]) -> Bool {
        guard members.remove(name) != nil else { return false }
        names.removeAll { $0 == name }
        return true
    }
}

/// One client's subscriptions (Redis's `c->pubsub_channels`,
/// `pubsub_patterns`, `pubsubshard_channels`).
struct Subscriptions {
    var channels = OrderedNames()
    var patterns = OrderedNames()
    var shardChannels = OrderedNames()
    /// Over its output limit: closed before the next replies are sent
    /// (Redis's CLIENT_CLOSE_ASAP), and sent nothing more.
    var doomed = false

    /// Redis's `clientSubscriptionsCount`: what SUBSCRIBE and PSUBSCRIBE report.
    var count: Int { channels.count + patterns.count }
    /// Redis's CLIENT_PUBSUB flag: subscribed to anything.
    var active: Bool { count + shardChannels.count > 0 }
}

/// The server's side of Pub/Sub (Redis's `server.pubsub_channels`,
/// `pubsub_patterns`, `pubsubshard_channels`): who listens to what, in
/// subscription order. Channels are server-wide, as in Redis: they are not
/// scoped by cache (keyspace notifications carry the cache in their name).
final class PubSub {
    var channels: [[UInt8]: [Connection]] = [:]
    var patterns: [[UInt8]: [Connection]] = [:]
    var shardChannels: [[UInt8]: [Connection]] = [:]
    /// Subscribers past their output limit, to close before replies are sent.
    var doomed: [Connection] = []
    /// Clients subscribed to anything: while 0, no command needs the
    /// subscribed-context check (a hot-path shortcut).
    var subscribedClients = 0

    /// The commands a RESP2 client may run while subscribed.
    static let allowedWhileSubscribed: Set<String> = [
        "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe",
        "ping", "quit", "reset",
    ]

    enum Kind {
        case channel, pattern, shard

        var subscribeWord: [UInt8] {
            switch self {
            case .channel: Array("subscribe".utf8)
            case .pattern: Array("psubscribe".utf8)
            case .shard: Array("ssubscribe".utf8)
            }
        }
        var unsubscribeWord: [UInt8] {
            switch self {
            case .channel: Array("unsubscribe".utf8)
            case .pattern: Array("punsubscribe".utf8)
            case .shard: Array("sunsubscribe".utf8)
            }
        }
    }

    func table(_ kind: Kind) -> [[UInt8]: [Connection]] {
        switch kind {
        case .channel: channels
        case .pattern: patterns
        case .shard: shardChannels
        }
    }

    private func modify(_ kind: Kind, _ body: (inout [[UInt8]: [Connection]]) -> Void) {
        switch kind {
        case .channel: body(&channels)
        case .pattern: body(&patterns)
        case .shard: body(&shardChannels)
        }
    }

    /// Adds `client` to `name`'s listeners (the caller has checked it was not one).
    func add(_ client: Connection, to name: [UInt8], _ kind: Kind) {
        modify(kind) { $0[name, default: []].append(client) }
    }

    /// Removes `client` from `name`'s listeners; a name nobody listens to goes.
    func remove(_ client: Connection, from name: [UInt8], _ kind: Kind) {
        modify(kind) { table in
            guard var list = table[name] else { return }
            list.removeAll { $0 === client }
            table[name] = list.isEmpty ? nil : list
        }
    }
}

// MARK: Messages

/// The encoded frames of Pub/Sub: an array in RESP2, a push in RESP3.
enum PubSubFrame {
    static func header(_ count: Int, version: Int, into out: inout [UInt8]) {
        out.append(version >= 3 ? UInt8(ascii: ">") : UInt8(ascii: "*"))
        out.append(contentsOf: Array(String(count).utf8))
        out.append(contentsOf: [13, 10])
    }

    /// `subscribe|unsubscribe|… <name or null> <count>`.
    static func confirmation(_ word: [UInt8], _ name: [UInt8]?, count: Int, version: Int) -> [UInt8] {
        var out: [UInt8] = []
        header(3, version: version, into: &out)
        RESPEncoder.bulk(word, into: &out)
        if let name { RESPEncoder.bulk(name, into: &out) } else { RESPEncoder.null(into: &out, version: version) }
        RESPEncoder.integer(count, into: &out)
        return out
    }

    /// `message|smessage <channel> <payload>` or `pmessage <pattern> <channel> <payload>`.
    static func message(_ word: String, pattern: [UInt8]?, channel: [UInt8], payload: [UInt8], version: Int) -> [UInt8] {
        var out: [UInt8] = []
        header(pattern == nil ? 3 : 4, version: version, into: &out)
        RESPEncoder.bulk(word, into: &out)
        if let pattern { RESPEncoder.bulk(pattern, into: &out) }
        RESPEncoder.bulk(channel, into: &out)
        RESPEncoder.bulk(payload, into: &out)
        return out
    }
}

extension Connection {
    /// Appends a push (a Pub/Sub frame): it reaches the client even while
    /// CLIENT REPLY silences the command running (Redis's CLIENT_PUSHING).
    func push(_ frame: [UInt8]) {
        if silenced > 0 { heldPushes.append(contentsOf: frame) } else { output.append(contentsOf: frame) }
    }
}

extension Server {
    /// SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE: subscribes `client` to each name,
    /// confirming each (Redis's pubsubSubscribeChannel/Pattern).
    func subscribe(_ client: Connection, to names: [[UInt8]], _ kind: PubSub.Kind) {
        let wasActive = client.subscriptions.active
        defer { if !wasActive && client.subscriptions.active { pubsub.subscribedClients += 1 } }
        for name in names {
            let added: Bool
            switch kind {
            case .channel: added = client.subscriptions.channels.insert(name)
            case .pattern: added = client.subscriptions.patterns.insert(name)
            case .shard: added = client.subscriptions.shardChannels.insert(name)
            }
            if added { pubsub.add(client, to: name, kind) }
            let count = kind == .shard ? client.subscriptions.shardChannels.count : client.subscriptions.count
            client.push(PubSubFrame.confirmation(kind.subscribeWord, name, count: count, version: client.protocolVersion))
        }
    }

    /// UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE: from each name, or from all
    /// (empty `names`); one confirmation per name, or one with a null name
    /// when there was nothing to leave. `notify` false: silently (RESET, close).
    func unsubscribe(_ client: Connection, from names: [[UInt8]]?, _ kind: PubSub.Kind, notify: Bool = true) {
        let wasActive = client.subscriptions.active
        defer { if wasActive && !client.subscriptions.active { pubsub.subscribedClients -= 1 } }
        let targets: [[UInt8]]
        if let names {
            targets = names
        } else {
            switch kind {
            case .channel: targets = client.subscriptions.channels.names
            case .pattern: targets = client.subscriptions.patterns.names
            case .shard: targets = client.subscriptions.shardChannels.names
            }
        }
        if names == nil {
            // From all: each name leaves the server's table, the client's set empties at once.
            let others = kind == .shard ? 0 : (kind == .channel ? client.subscriptions.patterns.count
                                                                 : client.subscriptions.channels.count)
            for (i, name) in targets.enumerated() {
                pubsub.remove(client, from: name, kind)
                if notify {
                    let count = (targets.count - i - 1) + others
                    client.push(PubSubFrame.confirmation(kind.unsubscribeWord, name, count: count,
                                                         version: client.protocolVersion))
                }
            }
            switch kind {
            case .channel: client.subscriptions.channels = OrderedNames()
            case .pattern: client.subscriptions.patterns = OrderedNames()
            case .shard: client.subscriptions.shardChannels = OrderedNames()
            }
        } else {
            for name in targets {
                let removed: Bool
                switch kind {
                case .channel: removed = client.subscriptions.channels.remove(name)
                case .pattern: removed = client.subscriptions.patterns.remove(name)
                case .shard: removed = client.subscriptions.shardChannels.remove(name)
                }
                if removed { pubsub.remove(client, from: name, kind) }
                if notify {
                    let count = kind == .shard ? client.subscriptions.shardChannels.count : client.subscriptions.count
                    client.push(PubSubFrame.confirmation(kind.unsubscribeWord, name, count: count,
                                                         version: client.protocolVersion))
                }
            }
        }
        if notify && targets.isEmpty {
            let count = kind == .shard ? client.subscriptions.shardChannels.count : client.subscriptions.count
            client.push(PubSubFrame.confirmation(kind.unsubscribeWord, nil, count: count, version: client.protocolVersion))
        }
    }

    /// Drops every subscription of `client`, telling it nothing (a closing
    /// client, RESET).
    func unsubscribeAll(_ client: Connection) {
        guard client.subscriptions.active else { return }
        unsubscribe(client, from: nil, .channel, notify: false)
        unsubscribe(client, from: nil, .pattern, notify: false)
        unsubscribe(client, from: nil, .shard, notify: false)
    }

    /// PUBLISH and SPUBLISH (and keyspace notifications): sends `payload` to
    /// the subscribers of `channel` and, unless `shard`, of every pattern
    /// matching it (Redis's pubsubPublishMessage).
    /// - Returns: how many deliveries were made (Redis's receivers).
    @discardableResult
    func publish(_ channel: [UInt8], _ payload: [UInt8], shard: Bool = false) -> Int {
        var receivers = 0
        if let list = shard ? pubsub.shardChannels[channel] : pubsub.channels[channel] {
            var frames: [[UInt8]?] = [nil, nil]
            let word = shard ? "smessage" : "message"
            for client in list {
                receivers += 1
                let v = client.protocolVersion >= 3 ? 1 : 0
                if frames[v] == nil {
                    frames[v] = PubSubFrame.message(word, pattern: nil, channel: channel, payload: payload,
                                                    version: client.protocolVersion)
                }
                deliver(frames[v]!, to: client)
            }
        }
        if shard || pubsub.patterns.isEmpty { return receivers }
        for (pattern, list) in pubsub.patterns where globMatch(pattern, channel) {
            var frames: [[UInt8]?] = [nil, nil]
            for client in list {
                receivers += 1
                let v = client.protocolVersion >= 3 ? 1 : 0
                if frames[v] == nil {
                    frames[v] = PubSubFrame.message("pmessage", pattern: pattern, channel: channel, payload: payload,
                                                    version: client.protocolVersion)
                }
                deliver(frames[v]!, to: client)
            }
        }
        return receivers
    }

    /// Appends a message to a subscriber's output and queues it to be sent.
    /// A subscriber past its output limit is marked to be closed (Redis's
    /// closeClientOnOutputBufferLimitReached, async): here when its socket
    /// is known to be full, else once the end of the iteration has sent
    /// what the socket takes (`checkSubscriberLimit`), so one iteration's
    /// batch of messages to a reading client does not count against it.
    private func deliver(_ frame: [UInt8], to client: Connection) {
        guard !client.closed, !client.subscriptions.doomed else { return }
        client.push(frame)
        queueReplies(client)
        if client.waitingToWrite && outputLimitReached(client) { doom(client) }
    }

    private func doom(_ client: Connection) {
        guard !client.subscriptions.doomed else { return }
        client.subscriptions.doomed = true
        pubsub.doomed.append(client)
    }

    /// After a send: marks a subscriber whose unsent output is past its limit.
    func checkSubscriberLimit(_ client: Connection) {
        if client.subscriptions.active && !client.closed && client.pendingOutput > 0 && outputLimitReached(client) {
            doom(client)
        }
    }

    /// Whether a client's unsent output passes its class's hard limit, or
    /// its soft limit for longer than allowed (the soft clock starts here).
    func outputLimitReached(_ client: Connection, now: Int64 = Server.nowMilliseconds()) -> Bool {
        let limit = client.subscriptions.active ? config.pubsubOutputBufferLimit : config.outputBufferLimit
        let pending = client.pendingOutput + client.heldPushes.count
        if limit.hard > 0 && pending > limit.hard { return true }
        if limit.soft > 0 && pending > limit.soft {
            let since = client.overSoftLimitSince ?? now
            client.overSoftLimitSince = since
            return now - since > Int64(limit.softSeconds) * 1000
        }
        client.overSoftLimitSince = nil
        return false
    }

    /// Closes the subscribers marked past their output limit.
    func closeDoomedSubscribers() {
        let doomed = pubsub.doomed
        pubsub.doomed = []
        for client in doomed where !client.closed {
            logger.warning("Client id=\(client.id) addr=\(client.peer) scheduled to be closed ASAP for overcoming "
                + "of output buffer limits (\(client.pendingOutput + client.heldPushes.count) bytes unsent).")
            stats.outputLimitDisconnections += 1
            close(client)
        }
    }
}
