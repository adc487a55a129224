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
    let old = try ctx.keyspace.lookupWrite(key, as: .hash)
    if let old, try EncodedLayout(old.value).large {
        // A hashtable hash: values replaced and fields appended on its bytes, without decoding it.
        let hash = try EncodedLookup(old.value, kind: .hash)
        var replaced: [Int: [UInt8]] = [:]
        var added: [[UInt8]] = [], addedValues: [[UInt8]] = []
        var addedAt: [[UInt8]: Int] = [:]
        for i in stride(from: 2, to: ctx.args.count, by: 2) {
            let (field, value) = (ctx.args.bytes(i), ctx.args.bytes(i + 1))
            if let at = hash.find(field) {
                replaced[at] = value
            } else if let at = addedAt[field] {
                addedValues[at] = value
            } else {
                addedAt[field] = added.count
                added.append(field)
                addedValues.append(value)
            }
        }
        var bytes = CollectionCodec.header(large: true, count: hash.count + added.count, capacity: old.value.count)
        if replaced.isEmpty {
            bytes.append(contentsOf: hash.body)
        } else {
            for i in 0..<hash.count {
                let (field, value) = hash.pair(i)
                CollectionCodec.appendElement(field, to: &bytes)
                if let new = replaced[i] { CollectionCodec.appendElement(new, to: &bytes) } else { CollectionCodec.appendElement(value, to: &bytes) }
            }
        }
        for i in added.indices {
            CollectionCodec.appendElement(added[i], to: &bytes)
            CollectionCodec.appendElement(addedValues[i], to: &bytes)
        }
        try ctx.keyspace.storeCollection(key, kind: .hash, bytes, isEmpty: false, old: old)
        if okReply { ctx.connection.replyOK() } else { ctx.connection.replyInteger(added.count) }
        return
    }
    let found = try old.map { (try HashValue(decoding: $0.value), $0) }
    var hash = found?.0 ?? HashValue()
    var created = 0
    for i in stride(from: 2, to: ctx.args.count, by: 2) where hash.set(ctx.args.bytes(i), ctx.args.bytes(i + 1)) { created += 1 }
    hash.noteWrite(longestWritten: ctx.args[2...].map(\.count).max() ?? 0, limits: ctx.limits)
    try ctx.keyspace.store(hash, at: key, replacing: found?.1)
    if okReply { ctx.connection.replyOK() } else { ctx.connection.replyInteger(created) }
}

private func hsetnx(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    let found = try ctx.keyspace.loadHash(key)
    var hash = found?.0 ?? HashValue()
    let (field, value) = (ctx.args.bytes(2), ctx.args.bytes(3))
    guard hash[field] == nil else {
        ctx.connection.replyInteger(0)
        return
    }
    hash.set(field, value)
    hash.noteWrite(longestWritten: max(field.count, value.count), limits: ctx.limits)
    try ctx.keyspace.store(hash, at: key, replacing: found?.1)
    ctx.connection.replyInteger(1)
}

private func hget(_ ctx: CommandContext) throws {
    if let value = try ctx.keyspace.lookupEncoded(ctx.args.bytes(1), of: .hash)?.value(ctx.args[2]) {
        ctx.connection.replyBulk(value)
    } else {
        ctx.connection.replyNull()
    }
}

private func hmget(_ ctx: CommandContext) throws {
    let hash = try ctx.keyspace.lookupEncoded(ctx.args.bytes(1), of: .hash)
    ctx.connection.replyArrayHeader(ctx.args.count - 2)
    for field in ctx.args[2...] {
        if let value = hash?.value(field) { ctx.connection.replyBulk(value) } else { ctx.connection.replyNull() }
    }
}

/// HGETALL (a map in RESP3), HKEYS and HVALS (arrays).
private func hgetall(_ ctx: CommandContext, keys: Bool, values: Bool) throws {
    let hash = try ctx.keyspace.loadHash(ctx.args.bytes(1), read: true)?.0 ?? HashValue()
    let c = ctx.connection
    if keys && values {
        c.replyMapHeader(hash.count)
        for i in hash.fields.indices {
            c.replyBulk(hash.fields[i])
            c.replyBulk(hash.values[i])
        }
    } else {
        c.replyBulkArray(keys ? hash.fields : hash.values)
    }
}

private func hdel(_ ctx: CommandContext) throws {
    guard let (found, old) = try ctx.keyspace.loadHash(ctx.args.bytes(1)) else {
        ctx.connection.replyInteger(0)
        return
    }
    var hash = found
    var removed = 0
    for field in ctx.args[2...] where hash.remove(field.bytes) {
        removed += 1
        if hash.isEmpty { break }
    }
    if removed > 0 { try ctx.keyspace.store(hash, at: ctx.args.bytes(1), replacing: old) }
    ctx.connection.replyInteger(removed)
}

private func hlen(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.collectionCount(ctx.args.bytes(1), of: .hash))
}

private func hexists(_ ctx: CommandContext) throws {
    let hash = try ctx.keyspace.lookupEncoded(ctx.args.bytes(1), of: .hash)
    ctx.connection.replyInteger(hash?.contains(ctx.args[2]) == true ? 1 : 0)
}

private func hstrlen(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.lookupEncoded(ctx.args.bytes(1), of: .hash)?.value(ctx.args[2])?.count ?? 0)
}

private func hincrby(_ ctx: CommandContext) throws {
    let increment = try ctx.integer(3)
    let key = ctx.args.bytes(1), field = ctx.args.bytes(2)
    let found = try ctx.keyspace.loadHash(key)
    var hash = found?.0 ?? HashValue()
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
    try ctx.keyspace.store(hash, at: key, replacing: found?.1)
    ctx.connection.replyInteger(result)
}

private func hincrbyfloat(_ ctx: CommandContext) throws {
    guard let increment = parseLongDouble(ctx.args[3]) else { throw ReplyError.notFloat }
    guard increment.isFinite else { throw ReplyError("ERR value is NaN or Infinity") }
    let key = ctx.args.bytes(1), field = ctx.args.bytes(2)
    let found = try ctx.keyspace.loadHash(key)
    var hash = found?.0 ?? HashValue()
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
    try ctx.keyspace.store(hash, at: key, replacing: found?.1)
    ctx.connection.replyBulk(text)
}
