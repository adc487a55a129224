import Foundation
import RESP
import SQLiteKVCache

/// Keys as a whole: DEL, EXISTS, KEYS, SCAN, RANDOMKEY, TYPE, RENAME, COPY,
/// MOVE, TOUCH, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, TIME.
let keyspaceCommands: [Command] = [
    Command(name: "del", arity: -2, flags: ["write"], firstKey: 1, lastKey: -1, step: 1,
            group: "generic", summary: "Deletes one or more keys.", handler: del),
    Command(name: "unlink", arity: -2, flags: ["write", "fast"], firstKey: 1, lastKey: -1, step: 1,
            group: "generic", summary: "Deletes one or more keys (at once here, as DEL).", handler: del),
    Command(name: "exists", arity: -2, flags: ["readonly", "fast"], firstKey: 1, lastKey: -1, step: 1,
            group: "generic", summary: "Counts the given keys that exist.", handler: exists),
    Command(name: "touch", arity: -2, flags: ["readonly", "fast"], firstKey: 1, lastKey: -1, step: 1,
            group: "generic", summary: "Marks keys as used (for LRU) and counts those that exist.", handler: touch),
    Command(name: "type", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Returns the type of a key's value.", handler: type),
    Command(name: "keys", arity: 2, flags: ["readonly"], firstKey: 0, lastKey: 0, step: 0,
            group: "generic", summary: "Returns the keys matching a pattern.", handler: keys),
    Command(name: "scan", arity: -2, flags: ["readonly"], firstKey: 0, lastKey: 0, step: 0,
            group: "generic", summary: "Iterates over the keys of the selected cache.", handler: scan),
    Command(name: "randomkey", arity: 1, flags: ["readonly"], firstKey: 0, lastKey: 0, step: 0,
            group: "generic", summary: "Returns a random key.", handler: randomkey),
    Command(name: "rename", arity: 3, flags: ["write"], firstKey: 1, lastKey: 2, step: 1,
            group: "generic", summary: "Renames a key, overwriting the destination.", handler: { try rename($0, nx: false) }),
    Command(name: "renamenx", arity: 3, flags: ["write", "fast"], firstKey: 1, lastKey: 2, step: 1,
            group: "generic", summary: "Renames a key only when the new name is free.", handler: { try rename($0, nx: true) }),
    Command(name: "copy", arity: -3, flags: ["write", "denyoom"], firstKey: 1, lastKey: 2, step: 1,
            group: "generic", summary: "Copies a key, optionally to another cache.", handler: copy),
    Command(name: "move", arity: 3, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Moves a key to another cache.", handler: move),
    Command(name: "dbsize", arity: 1, flags: ["readonly", "fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Returns the number of keys in the selected cache.", handler: dbsize),
    Command(name: "flushdb", arity: -1, flags: ["write"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Removes every key of the selected cache.", handler: flushdb),
    Command(name: "flushall", arity: -1, flags: ["write"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Removes every key of every cache.", handler: flushall),
    Command(name: "swapdb", arity: 3, flags: ["write", "fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Swaps the contents of two caches.", handler: swapdb),
    Command(name: "time", arity: 1, flags: ["loading", "stale", "fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Returns the server time.", handler: time),
]

private func del(_ ctx: CommandContext) throws {
    var removed = 0
    for key in ctx.args.dropFirst() where try ctx.keyspace.delete(key.bytes) { removed += 1 }
    ctx.connection.replyInteger(removed)
}

private func exists(_ ctx: CommandContext) throws {
    var found = 0
    for key in ctx.args.dropFirst() {
        if try ctx.keyspace.exists(key.bytes, counted: true) { found += 1 }
    }
    ctx.connection.replyInteger(found)
}

private func touch(_ ctx: CommandContext) throws {
    var found = 0
    for key in ctx.args.dropFirst() where try ctx.keyspace.touch(key.bytes) { found += 1 }
    ctx.connection.replyInteger(found)
}

private func type(_ ctx: CommandContext) throws {
    ctx.connection.replySimple(try ctx.keyspace.lookupStored(ctx.args.bytes(1), read: true, touch: false)?.row.kind.typeName ?? "none")
}

/// True when a glob pattern matches everything, so matching can be skipped.
private func matchesAll(_ pattern: Argument) -> Bool { pattern == [UInt8(ascii: "*")] }

private func keys(_ ctx: CommandContext) throws {
    let pattern = ctx.args.bytes(1)
    var keys = try ctx.keyspace.keys()
    if !matchesAll(ctx.args[1]) { keys.removeAll { !globMatch(pattern, $0) } }
    ctx.connection.replyBulkArray(keys)
}

/// Parses a SCAN cursor as Redis does with `strtoul`: optional sign, digits,
/// nothing else; the empty string is 0 and negatives wrap.
func parseScanCursor(_ bytes: Argument) -> UInt64? {
    var digits = bytes[...]
    var negative = false
    if let first = digits.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
        negative = first == UInt8(ascii: "-")
        digits = digits.dropFirst()
    }
    var value: UInt64 = 0
    for byte in digits {
        guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
        let (times10, o1) = value.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
        guard !o1 && !o2 else { return nil }
        value = sum
    }
    return negative ? 0 &- value : value
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
private func scan(_ ctx: CommandContext) throws {
    guard let cursor = parseScanCursor(ctx.args[1]) else { throw ReplyError("ERR invalid cursor") }
    var count = 10
    var pattern: [UInt8]?
    var typeName: String?
    var i = 2
    while i < ctx.args.count {
        let hasValue = i + 1 < ctx.args.count
        switch ctx.option(i) {
        case "count" where hasValue:
            let value = try ctx.integer(i + 1)
            guard value >= 1 else { throw ReplyError.syntax }
            count = Int(min(value, 1 << 30))
        case "match" where hasValue:
            pattern = matchesAll(ctx.args[i + 1]) ? nil : ctx.args.bytes(i + 1)
        case "type" where hasValue:
            typeName = ctx.option(i + 1)
        default:
            throw ReplyError.syntax
        }
        i += 2
    }
    // An unknown TYPE matches nothing, as in Redis 7.0.
    let kind = typeName.map { ValueKind(typeName: $0) }
    var (keys, next) = try ctx.keyspace.scan(cursor: cursor, count: count, kind: kind ?? nil)
    if let pattern { keys.removeAll { !globMatch(pattern, $0) } }
    if let kind, kind == nil { keys.removeAll() }
    ctx.connection.replyArrayHeader(2)
    ctx.connection.replyBulk(String(next))
    ctx.connection.replyBulkArray(keys)
}

private func randomkey(_ ctx: CommandContext) throws {
    ctx.connection.replyOptionalBulk(try ctx.keyspace.randomKey())
}

private func rename(_ ctx: CommandContext, nx: Bool) throws {
    switch try ctx.keyspace.rename(ctx.args.bytes(1), to: ctx.args.bytes(2), replace: !nx) {
    case .noSuchKey: throw ReplyError.noSuchKey
    case .sameKey: if nx { ctx.connection.replyInteger(0) } else { ctx.connection.replyOK() }
    case .destinationExists: ctx.connection.replyInteger(0)
    case .renamed: if nx { ctx.connection.replyInteger(1) } else { ctx.connection.replyOK() }
    }
}

extension CommandContext {
    /// Checks a MOVE, COPY DB or SWAPDB argument without resolving it: a DB
    /// index that fits an int, or the name of a cache that already exists.
    /// - Throws: `message` (or Redis's not-an-integer / int-range texts).
    func checkTarget(_ argument: Argument, message: String? = nil) throws(ReplyError) {
        if let index = parseStrictInt64(argument) {
            guard index >= Int64(Int32.min) && index <= Int64(Int32.max) else {
                throw message.map { ReplyError("ERR \($0)") } ?? .intOutOfRange
            }
            return
        }
        let name = String(decoding: argument, as: UTF8.self).lowercased()
        guard !CacheRegistry.looksNumeric(argument), SQLiteKVCache.isValidHandle(name),
              server.registry.known.contains(name) else {
            throw message.map { ReplyError("ERR \($0)") } ?? .notInteger
        }
    }

    /// The cache a checked target argument names (range-checked as SELECT).
    func targetCache(_ argument: Argument) throws(ReplyError) -> OpenCache {
        try checkTarget(argument)
        return try server.registry.cache(selecting: argument)
    }
}

/// COPY source destination [DB destination-db] [REPLACE]
private func copy(_ ctx: CommandContext) throws {
    var target = ctx.cache
    var replace = false
    var i = 3
    while i < ctx.args.count {
        if ctx.option(i) == "replace" {
            replace = true
        } else if ctx.option(i) == "db" && i + 1 < ctx.args.count {
            target = try ctx.targetCache(ctx.args[i + 1])
            i += 1
        } else {
            throw ReplyError.syntax
        }
        i += 1
    }
    let (source, destination) = (ctx.args.bytes(1), ctx.args.bytes(2))
    if target === ctx.cache && source == destination {
        throw ReplyError("ERR source and destination objects are the same")
    }
    let copied = try ctx.keyspace.copy(source, to: destination, in: ctx.keyspace(of: target), replace: replace)
    ctx.connection.replyInteger(copied ? 1 : 0)
}

private func move(_ ctx: CommandContext) throws {
    let target = try ctx.targetCache(ctx.args[2])
    if target === ctx.cache { throw ReplyError("ERR source and destination objects are the same") }
    ctx.connection.replyInteger(try ctx.keyspace.move(ctx.args.bytes(1), to: ctx.keyspace(of: target)) ? 1 : 0)
}

private func dbsize(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.count())
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
    try ctx.keyspace.flush()
    ctx.connection.replyOK()
}

private func flushall(_ ctx: CommandContext) throws {
    try checkFlushMode(ctx)
    try Keyspace.flushAll(ctx.server)
    ctx.connection.replyOK()
}

private func swapdb(_ ctx: CommandContext) throws {
    // Both are parsed before either is range-checked, as in Redis.
    try ctx.checkTarget(ctx.args[1], message: "invalid first DB index")
    try ctx.checkTarget(ctx.args[2], message: "invalid second DB index")
    let first = try ctx.server.registry.cache(selecting: ctx.args[1])
    let second = try ctx.server.registry.cache(selecting: ctx.args[2])
    if first !== second {
        try ctx.keyspace(of: first).swap(with: ctx.keyspace(of: second))
    }
    ctx.connection.replyOK()
}

private func time(_ ctx: CommandContext) throws {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    ctx.connection.replyArrayHeader(2)
    ctx.connection.replyBulk(String(now.tv_sec))
    ctx.connection.replyBulk(String(now.tv_nsec / 1000))
}
