import RESP

/// What a consumer-group command logs and propagates instead of itself, as
/// Redis propagates them (t_stream.c's streamPropagateXCLAIM,
/// streamPropagateGroupID, streamPropagateConsumerCreation): each delivery
/// or claim as an idempotent XCLAIM, a NOACK read's new last ID as XGROUP
/// SETID, a NOACK read's new consumer as XGROUP CREATECONSUMER.
///
/// The log (`log`) gets those and two more, so a replay after a crash keeps
/// what Redis's own AOF loses: a consumer an XREADGROUP made without
/// delivering to it, and the new delivery time and count of entries read
/// again from a consumer's history. The replication feed (`feed`) gets
/// exactly Redis's.
final class StreamEffects {
    private(set) var log: [[[UInt8]]] = []
    private(set) var feed: [[[UInt8]]] = []
    /// Whether the stream changed (the caller then stores it).
    var changed = false

    /// A command both logged and propagated.
    func both(_ command: [[UInt8]]) {
        log.append(command)
        feed.append(command)
        changed = true
    }

    /// A command logged only.
    func logOnly(_ command: [[UInt8]]) {
        log.append(command)
        changed = true
    }

    /// The XCLAIM that gives `id`'s NACK to its consumer as it is now:
    /// `XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID LASTID last`.
    /// - Parameter id: the ID as the command had it (XCLAIM propagates its argument as typed).
    static func xclaim(key: [UInt8], group: [UInt8], id: [UInt8], nack: StreamNACK, lastID: StreamID) -> [[UInt8]] {
        [Array("XCLAIM".utf8), key, group, nack.consumer, [UInt8(ascii: "0")], id,
         Array("TIME".utf8), Array(String(nack.deliveryTime).utf8),
         Array("RETRYCOUNT".utf8), Array(String(nack.deliveryCount).utf8),
         Array("FORCE".utf8), Array("JUSTID".utf8), Array("LASTID".utf8), lastID.bytes]
    }

    /// `XGROUP SETID key group last ENTRIESREAD n`.
    static func setID(key: [UInt8], group: StreamGroup) -> [[UInt8]] {
        [Array("XGROUP".utf8), Array("SETID".utf8), key, group.name, group.lastID.bytes,
         Array("ENTRIESREAD".utf8), Array(String(group.entriesRead).utf8)]
    }

    /// `XGROUP CREATECONSUMER key group consumer`.
    static func createConsumer(key: [UInt8], group: [UInt8], consumer: [UInt8]) -> [[UInt8]] {
        [Array("XGROUP".utf8), Array("CREATECONSUMER".utf8), key, group, consumer]
    }

    /// Hands the forms to the log and the feed (the command itself is
    /// neither logged nor propagated).
    func commit(_ ctx: CommandContext) {
        ctx.server.persistence.logCommands(as: log)
        ctx.server.propagateAs(commands: feed)
    }
}

extension CommandContext {
    /// The consumer `name` of `group` in `stream`, seen now (Redis's
    /// streamLookupConsumer), or made (streamCreateConsumer: the
    /// `xgroup-createconsumer` event).
    /// - Returns: whether it was made.
    @discardableResult
    func lookupOrCreateConsumer(_ name: [UInt8], in group: [UInt8], of stream: StreamValue, key: [UInt8],
                                now: Int64) -> Bool {
        if stream.groups[group]?.consumer(name) != nil {
            stream.groups[group]!.touchConsumer(name, now: now)
            return false
        }
        stream.groups[group]!.createConsumer(name, now: now)
        keyspace.notifyStream("xgroup-createconsumer", key)
        return true
    }
}

extension Connection {
    /// Inserts an array (or, in RESP3 with `map`, a map) header of `count`
    /// before what was written since `mark` (Redis's deferred lengths).
    func insertHeader(at mark: Int, count: Int, map: Bool = false) {
        var header: [UInt8] = []
        if map && protocolVersion >= 3 { RESPEncoder.mapHeader(count, into: &header, version: protocolVersion) }
        else { RESPEncoder.arrayHeader(count, into: &header) }
        output.insert(contentsOf: header, at: mark)
    }
}
