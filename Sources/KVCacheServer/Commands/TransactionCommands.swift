import RESP
import SQLiteKVCache

/// A client's open MULTI: the queued requests (copies of their arguments),
/// and whether queueing failed.
final class Transaction {
    var commands: [[[UInt8]]] = []
    var failed = false
    /// The queued commands' argument bytes and a pointer per argument
    /// (Redis's `mstate.argv_len_sums`: CLIENT LIST's multi-mem).
    var queuedBytes = 0

    func queue(_ args: [[UInt8]]) {
        commands.append(args)
        queuedBytes += args.reduce(0) { $0 + $1.count + 8 }
    }
}

/// A key WATCH recorded, and whether it was live then (a live key gone by
/// EXEC expired or was evicted: the transaction fails, as in Redis).
struct WatchedKey {
    let cache: OpenCache
    let key: [UInt8]
    let existed: Bool
}

/// MULTI, EXEC, DISCARD, WATCH, UNWATCH. The commands of an EXEC run one
/// after another on the loop thread, so nothing interleaves, and they are
/// one record of the log. WATCH is Redis's: every change to a key through
/// `Keyspace` marks the clients watching it (`Server.touchWatchedKey`), so
/// EXEC fails after any write to a watched key, even one that leaves its
/// value as it was.
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
    ctx.server.unwatchAll(ctx.connection)
    ctx.connection.replyOK()
}

private func exec(_ ctx: CommandContext) throws {
    let c = ctx.connection
    guard let transaction = c.transaction else { throw ReplyError("ERR EXEC without MULTI") }
    c.transaction = nil
    let dirty = try c.dirtyCAS || ctx.server.watchedKeyVanished(c)
    ctx.server.unwatchAll(c)
    if transaction.failed {
        throw ReplyError("EXECABORT Transaction discarded because of previous errors.")
    }
    if dirty {
        c.replyNullArray()
        return
    }
    c.replyArrayHeader(transaction.commands.count)
    // The transaction's changes are one record of the log: a replay applies all or none.
    ctx.server.persistence.beginTransaction()
    ctx.server.denyBlocking += 1
    c.runningExec = true
    for request in transaction.commands {
        Arguments.withCopy(of: request) { ctx.server.execute($0, for: c) }
    }
    c.runningExec = false
    ctx.server.denyBlocking -= 1
    if let lsn = ctx.server.persistence.endTransaction() { c.awaitingLSN = lsn }
}

/// WATCH key [key ...]: EXEC then fails if any of them changed.
private func watch(_ ctx: CommandContext) throws {
    guard ctx.connection.transaction == nil else { throw ReplyError("ERR WATCH inside MULTI is not allowed") }
    for key in ctx.args.dropFirst() {
        let key = key.bytes
        if ctx.connection.watched.contains(where: { $0.cache === ctx.cache && $0.key == key }) { continue }
        ctx.connection.watched.append(WatchedKey(cache: ctx.cache, key: key, existed: try ctx.keyspace.exists(key)))
        ctx.server.watchers[CacheKey(cache: ctx.cache.name, key: key), default: []].append(ctx.connection)
    }
    ctx.connection.replyOK()
}

private func unwatch(_ ctx: CommandContext) throws {
    ctx.server.unwatchAll(ctx.connection)
    ctx.connection.replyOK()
}

extension Server {
    /// A key changed: every client watching it will see its EXEC fail.
    func touchWatchedKey(_ cache: String, _ key: [UInt8]) {
        guard let clients = watchers[CacheKey(cache: cache, key: key)] else { return }
        for client in clients {
            client.dirtyCAS = true
            unwatchAll(client, keepDirty: true)  // nothing more to learn from its keys
        }
    }

    /// Every watched key of `cache` that `isLive` says is there changes
    /// (FLUSHDB, FLUSHALL, SWAPDB).
    func touchWatchedKeys(in cache: String, where isLive: ([UInt8]) -> Bool) {
        for id in watchers.keys where id.cache == cache && isLive(id.key) { touchWatchedKey(cache, id.key) }
    }

    /// Forgets a client's watched keys (EXEC, DISCARD, UNWATCH, RESET, its close).
    func unwatchAll(_ client: Connection, keepDirty: Bool = false) {
        if !keepDirty { client.dirtyCAS = false }
        for watched in client.watched {
            let id = CacheKey(cache: watched.cache.name, key: watched.key)
            guard var clients = watchers[id] else { continue }
            clients.removeAll { $0 === client }
            watchers[id] = clients.isEmpty ? nil : clients
        }
        client.watched = []
    }

    /// Whether a key that was live when watched is gone (expired or
    /// evicted, which no command signals), as Redis's isWatchedKeyExpired.
    func watchedKeyVanished(_ client: Connection) throws -> Bool {
        for watched in client.watched where watched.existed {
            if try !Keyspace(server: self, cache: watched.cache).exists(watched.key) { return true }
        }
        return false
    }
}
