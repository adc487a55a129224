import Foundation
import RESP
import SQLiteKVCache

/// GET, SET, DEL, EXISTS, SELECT, DBSIZE, FLUSHDB, FLUSHALL.
let coreCommands: [Command] = [
    Command(name: "get", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Returns the string value of a key.", handler: get),
    Command(name: "set", arity: -3, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Sets the string value of a key.", handler: set),
    Command(name: "del", arity: -2, flags: ["write"], firstKey: 1, lastKey: -1, step: 1,
            group: "generic", summary: "Deletes one or more keys.", handler: del),
    Command(name: "exists", arity: -2, flags: ["readonly", "fast"], firstKey: 1, lastKey: -1, step: 1,
            group: "generic", summary: "Counts the given keys that exist.", handler: exists),
    Command(name: "dbsize", arity: 1, flags: ["readonly", "fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Returns the number of keys in the selected cache.", handler: dbsize),
    Command(name: "flushdb", arity: -1, flags: ["write"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Removes every key of the selected cache.", handler: flushdb),
    Command(name: "flushall", arity: -1, flags: ["write"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Removes every key of every cache.", handler: flushall),
]

private func get(_ ctx: CommandContext) throws {
    let entry = try ctx.cache.engine.get(key: ctx.args[1])
    ctx.server.countLookup(ctx.cache, hit: entry != nil)
    ctx.connection.replyOptionalBulk(entry?.value)
}

private func set(_ ctx: CommandContext) throws {
    guard ctx.args.count == 3 else { throw ReplyError.syntax }
    let engine = try ctx.server.writable(ctx.cache)
    try engine.put(key: ctx.args[1], storageDate: Date(), metadata: [], value: ctx.args[2])
    ctx.connection.replyOK()
}

private func del(_ ctx: CommandContext) throws {
    let engine = try ctx.server.writable(ctx.cache)
    var removed = 0
    for key in ctx.args.dropFirst() where try engine.delete(key: key) { removed += 1 }
    ctx.connection.replyInteger(removed)
}

private func exists(_ ctx: CommandContext) throws {
    var found = 0
    for key in ctx.args.dropFirst() where try ctx.cache.engine.get(key: key) != nil { found += 1 }
    ctx.connection.replyInteger(found)
}

private func dbsize(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.cache.engine.count())
}

/// FLUSHDB and FLUSHALL take an optional ASYNC or SYNC; both act at once here.
private func checkFlushMode(_ ctx: CommandContext) throws {
    guard ctx.args.count <= 2 else { throw ReplyError.syntax }
    if ctx.args.count == 2 {
        let mode = ctx.option(1)
        guard mode == "async" || mode == "sync" else { throw ReplyError.syntax }
    }
}

private func flushdb(_ ctx: CommandContext) throws {
    try checkFlushMode(ctx)
    try ctx.server.writable(ctx.cache).clear()
    ctx.connection.replyOK()
}

private func flushall(_ ctx: CommandContext) throws {
    try checkFlushMode(ctx)
    for cache in ctx.server.registry.openAllKnown() where cache.openError == nil {
        try ctx.server.writable(cache).clear()
    }
    ctx.connection.replyOK()
}

extension Server {
    /// Counts a read for INFO's keyspace_hits / keyspace_misses.
    func countLookup(_ cache: OpenCache, hit: Bool) {
        if hit {
            stats.keyspaceHits += 1
            cache.hits += 1
        } else {
            stats.keyspaceMisses += 1
            cache.misses += 1
        }
    }
}
