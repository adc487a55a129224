import RESP
import SQLiteKVCache

/// A client's open MULTI: the queued requests (copies of their arguments),
/// and whether queueing failed.
final class Transaction {
    var commands: [[[UInt8]]] = []
    var failed = false
}

/// What WATCH saw of a key: the entry (or its absence) when watched.
struct WatchedKey {
    let cache: OpenCache
    let key: [UInt8]
    let seen: SQLiteKVCache.Entry?
}

/// MULTI, EXEC, DISCARD, WATCH, UNWATCH. The commands of an EXEC run one
/// after another on the loop thread, inside the iteration's transaction,
/// so nothing interleaves and they commit together.
let transactionCommands: [Command] = [
    Command(name: "multi", arity: 1, flags: ["noscript", "loading", "stale", "fast", "allow_busy"], firstKey: 0, lastKey: 0, step: 0,
            group: "transactions", summary: "Starts a transaction.", handler: multi),
    Command(name: "exec", arity: 1, flags: ["noscript", "loading", "stale", "skip_slowlog"], firstKey: 0, lastKey: 0, step: 0,
            group: "transactions", summary: "Executes all commands in a transaction.", handler: exec),
    Command(name: "discard", arity: 1, flags: ["noscript", "loading", "stale", "fast", "allow_busy"], firstKey: 0, lastKey: 0, step: 0,
            group: "transactions", summary: "Discards a transaction.", handler: discard),
    Command(name: "watch", arity: -2, flags: ["noscript", "loading", "stale", "fast", "allow_busy"], firstKey: 1, lastKey: -1, step: 1,
            group: "transactions", summary: "Monitors changes to keys to determine the execution of a transaction.", handler: watch),
    Command(name: "unwatch", arity: 1, flags: ["noscript", "loading", "stale", "fast", "allow_busy"], firstKey: 0, lastKey: 0, step: 0,
            group: "transactions", summary: "Forgets about watched keys of a transaction.", handler: unwatch),
]

private func multi(_ ctx: CommandContext) throws {
    guard ctx.connection.transaction == nil else { throw ReplyError("ERR MULTI calls can not be nested") }
    ctx.connection.transaction = Transaction()
    ctx.connection.replyOK()
}

private func discard(_ ctx: CommandContext) throws {
    guard ctx.connection.transaction != nil else { throw ReplyError("ERR DISCARD without MULTI") }
    ctx.connection.transaction = nil
    ctx.connection.watched = []
    ctx.connection.replyOK()
}

private func exec(_ ctx: CommandContext) throws {
    let c = ctx.connection
    guard let transaction = c.transaction else { throw ReplyError("ERR EXEC without MULTI") }
    c.transaction = nil
    let watched = c.watched
    c.watched = []
    if transaction.failed {
        throw ReplyError("EXECABORT Transaction discarded because of previous errors.")
    }
    for watch in watched {
        let now = try ctx.keyspace(of: watch.cache).peek(watch.key)
        if now != watch.seen {
            c.replyNullArray()
            return
        }
    }
    c.replyArrayHeader(transaction.commands.count)
    // The transaction's changes are one record of the log: a replay applies all or none.
    ctx.server.persistence.beginTransaction()
    for request in transaction.commands {
        Arguments.withCopy(of: request) { ctx.server.execute($0, for: c) }
    }
    if let lsn = ctx.server.persistence.endTransaction() { c.awaitingLSN = lsn }
}

/// WATCH key [key ...]: EXEC then fails if any of them changed (a write
/// stamps a new storage date, so even an equal value counts as a change).
private func watch(_ ctx: CommandContext) throws {
    guard ctx.connection.transaction == nil else { throw ReplyError("ERR WATCH inside MULTI is not allowed") }
    for key in ctx.args.dropFirst() {
        let key = key.bytes
        ctx.connection.watched.append(WatchedKey(cache: ctx.cache, key: key, seen: try ctx.keyspace.peek(key)))
    }
    ctx.connection.replyOK()
}

private func unwatch(_ ctx: CommandContext) throws {
    ctx.connection.watched = []
    ctx.connection.replyOK()
}
