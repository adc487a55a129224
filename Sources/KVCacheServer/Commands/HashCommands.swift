import RESP
import SQLiteKVCache

/// Hash commands, as Redis 7.0's t_hash.c. A hash that becomes empty is deleted.
let hashCommands: [Command] = [
    Command(name: "hset", arity: -4, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Sets the values of one or more fields in a hash.", handler: { try hset($0, okReply: false) }),
    Command(name: "hmset", arity: -4, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Sets the values of multiple fields (old form of HSET).", handler: { try hset($0, okReply: true) }),
    Command(name: "hsetnx", arity: 4, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Sets the value of a field only when the field does not exist.", handler: hsetnx),
    Command(name: "hget", arity: 3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Returns the value of a field in a hash.", handler: hget),
    Command(name: "hmget", arity: -3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Returns the values of several fields in a hash.", handler: hmget),
    Command(name: "hgetall", arity: 2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Returns all fields and values of a hash.", handler: { try hgetall($0, keys: true, values: true) }),
    Command(name: "hkeys", arity: 2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Returns all fields of a hash.", handler: { try hgetall($0, keys: true, values: false) }),
    Command(name: "hvals", arity: 2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Returns all values of a hash.", handler: { try hgetall($0, keys: false, values: true) }),
    Command(name: "hdel", arity: -3, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Deletes one or more fields from a hash.", handler: hdel),
    Command(name: "hlen", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Returns the number of fields in a hash.", handler: hlen),
    Command(name: "hexists", arity: 3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Determines whether a field exists in a hash.", handler: hexists),
    Command(name: "hstrlen", arity: 3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Returns the length of the value of a field.", handler: hstrlen),
    Command(name: "hincrby", arity: 4, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Increments the integer value of a field in a hash.", handler: hincrby),
    Command(name: "hincrbyfloat", arity: 4, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hash", summary: "Increments the floating-point value of a field in a hash.", handler: hincrbyfloat),
]

/// HSET key field value [field value ...] (HMSET answers OK instead of the count).
private func hset(_ ctx: CommandContext, okReply: Bool) throws {
    guard ctx.args.count % 2 == 0 else { throw ReplyError.wrongArity(ctx.commandName) }
    let key = ctx.args.bytes(1)
    let loaded = try ctx.keyspace.loadHash(key)
    let hash = loaded?.value ?? HashValue()
    var created = 0
    // As Redis's hashTypeTryConversion: the arguments' lengths are checked first.
    hash.noteWrite(longestWritten: ctx.args[2...].map(\.count).max() ?? 0, limits: ctx.limits)
    for i in stride(from: 2, to: ctx.args.count, by: 2) where hash.set(ctx.args.bytes(i), ctx.args.bytes(i + 1)) { created += 1 }
    hash.noteWrite(longestWritten: 0, limits: ctx.limits)
    try ctx.keyspace.store(hash, at: key, replacing: loaded?.entry)
    if okReply { ctx.connection.replyOK() } else { ctx.connection.replyInteger(created) }
}

private func hsetnx(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    let loaded = try ctx.keyspace.loadHash(key)
    let hash = loaded?.value ?? HashValue()
    let (field, value) = (ctx.args.bytes(2), ctx.args.bytes(3))
    guard !hash.contains(field) else {
        ctx.connection.replyInteger(0)
        return
    }
    hash.noteWrite(longestWritten: max(field.count, value.count), limits: ctx.limits)
    hash.set(field, value)
    hash.noteWrite(longestWritten: 0, limits: ctx.limits)
    try ctx.keyspace.store(hash, at: key, replacing: loaded?.entry)
    ctx.connection.replyInteger(1)
}

private func hget(_ ctx: CommandContext) throws {
    ctx.connection.replyOptionalBulk(try ctx.keyspace.loadHash(ctx.args.bytes(1), read: true)?.value[ctx.args.bytes(2)])
}

private func hmget(_ ctx: CommandContext) throws {
    let hash = try ctx.keyspace.loadHash(ctx.args.bytes(1), read: true)?.value
    ctx.connection.replyArrayHeader(ctx.args.count - 2)
    for field in ctx.args[2...] { ctx.connection.replyOptionalBulk(hash?[field.bytes]) }
}

/// HGETALL (a map in RESP3), HKEYS and HVALS (arrays).
private func hgetall(_ ctx: CommandContext, keys: Bool, values: Bool) throws {
    let c = ctx.connection
    guard let hash = try ctx.keyspace.loadHash(ctx.args.bytes(1), read: true)?.value else {
        if keys && values { c.replyMapHeader(0) } else { c.replyArrayHeader(0) }
        return
    }
    if keys && values {
        c.replyMapHeader(hash.count)
        hash.forEach { pair in
            c.replyBulk(pair.field)
            c.replyBulk(pair.value)
        }
    } else {
        c.replyBulkArray(keys ? hash.fields : hash.values)
    }
}

private func hdel(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    guard let (hash, old) = try ctx.keyspace.loadHash(key) else {
        ctx.connection.replyInteger(0)
        return
    }
    var removed = 0
    for field in ctx.args[2...] where hash.remove(field.bytes) {
        removed += 1
        if hash.isEmpty { break }
    }
    if removed > 0 { try ctx.keyspace.store(hash, at: key, replacing: old) }
    ctx.connection.replyInteger(removed)
}

private func hlen(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.collectionCount(ctx.args.bytes(1), of: .hash))
}

private func hexists(_ ctx: CommandContext) throws {
    let hash = try ctx.keyspace.loadHash(ctx.args.bytes(1), read: true)?.value
    ctx.connection.replyInteger(hash?.contains(ctx.args.bytes(2)) == true ? 1 : 0)
}

private func hstrlen(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.loadHash(ctx.args.bytes(1), read: true)?.value[ctx.args.bytes(2)]?.count ?? 0)
}

private func hincrby(_ ctx: CommandContext) throws {
    let increment = try ctx.integer(3)
    let key = ctx.args.bytes(1), field = ctx.args.bytes(2)
    let loaded = try ctx.keyspace.loadHash(key)
    let hash = loaded?.value ?? HashValue()
    var current: Int64 = 0
    if let old = hash[field] {
        guard let parsed = parseStrictInt64(old) else { throw ReplyError("ERR hash value is not an integer") }
        current = parsed
    }
    let (result, overflow) = current.addingReportingOverflow(increment)
    guard !overflow else { throw ReplyError.overflow }
    let text = Array(String(result).utf8)
    hash.set(field, text)
    hash.noteWrite(longestWritten: max(field.count, text.count), limits: ctx.limits)
    try ctx.keyspace.store(hash, at: key, replacing: loaded?.entry)
    ctx.connection.replyInteger(result)
}

private func hincrbyfloat(_ ctx: CommandContext) throws {
    guard let increment = parseLongDouble(ctx.args[3]) else { throw ReplyError.notFloat }
    guard increment.isFinite else { throw ReplyError("ERR value is NaN or Infinity") }
    let key = ctx.args.bytes(1), field = ctx.args.bytes(2)
    let loaded = try ctx.keyspace.loadHash(key)
    let hash = loaded?.value ?? HashValue()
    var current: LongDouble = 0
    if let old = hash[field] {
        guard let parsed = parseLongDouble(old) else { throw ReplyError("ERR hash value is not a float") }
        current = parsed
    }
    let result = current + increment
    guard result.isFinite else { throw ReplyError("ERR increment would produce NaN or Infinity") }
    let text = formatLongDouble(result)
    hash.set(field, text)
    hash.noteWrite(longestWritten: max(field.count, text.count), limits: ctx.limits)
    try ctx.keyspace.store(hash, at: key, replacing: loaded?.entry)
    ctx.server.propagateAs([Array("HSET".utf8), key, field, text])
    ctx.connection.replyBulk(text)
}
