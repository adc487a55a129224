import Foundation
import RESP
import SQLiteKVCache

/// String commands: GET and SET with their options, the multi-key forms,
/// ranges, and counters. Every read-modify-write runs on the loop thread
/// inside the iteration's transaction, so it is atomic.
let stringCommands: [Command] = [
    Command(name: "get", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Returns the string value of a key.", handler: get),
    Command(name: "set", arity: -3, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Sets the string value of a key, with optional expiry and conditions.", handler: set),
    Command(name: "setnx", arity: 3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Sets a key only when it does not exist.", handler: setnx),
    Command(name: "setex", arity: 4, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Sets a key and its expiry in seconds.", handler: { try setex($0, .seconds) }),
    Command(name: "psetex", arity: 4, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Sets a key and its expiry in milliseconds.", handler: { try setex($0, .milliseconds) }),
    Command(name: "getex", arity: -2, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Returns a key's value and sets or clears its expiry.", handler: getex),
    Command(name: "getdel", arity: 2, flags: ["write", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Returns a key's value and deletes it.", handler: getdel),
    Command(name: "getset", arity: 3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Sets a key and returns its previous value.", handler: getset),
    Command(name: "mget", arity: -2, flags: ["readonly", "fast"], firstKey: 1, lastKey: -1, step: 1,
            group: "string", summary: "Returns the values of several keys.", handler: mget),
    Command(name: "mset", arity: -3, flags: ["write", "denyoom"], firstKey: 1, lastKey: -1, step: 2,
            group: "string", summary: "Sets several keys at once.", handler: mset),
    Command(name: "msetnx", arity: -3, flags: ["write", "denyoom"], firstKey: 1, lastKey: -1, step: 2,
            group: "string", summary: "Sets several keys only when none of them exists.", handler: msetnx),
    Command(name: "append", arity: 3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Appends to a key's value.", handler: append),
    Command(name: "strlen", arity: 2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Returns the length of a key's value.", handler: strlen),
    Command(name: "getrange", arity: 4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Returns a substring of a key's value.", handler: getrange),
    Command(name: "substr", arity: 4, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Returns a substring of a key's value (old name of GETRANGE).", handler: getrange),
    Command(name: "setrange", arity: 4, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Overwrites part of a key's value at an offset.", handler: setrange),
    Command(name: "incr", arity: 2, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Increments a key's integer value by one.", handler: { try incrBy($0, 1) }),
    Command(name: "decr", arity: 2, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Decrements a key's integer value by one.", handler: { try incrBy($0, -1) }),
    Command(name: "incrby", arity: 3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Increments a key's integer value.", handler: { try incrBy($0, $0.integer(2)) }),
    Command(name: "decrby", arity: 3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Decrements a key's integer value.", handler: decrby),
    Command(name: "incrbyfloat", arity: 3, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "string", summary: "Increments a key's floating-point value.", handler: incrbyfloat),
]

extension CommandContext {
    /// Stores a new string value for a key, keeping the expiry and metadata
    /// of `old` (the entry it replaces, if any).
    func update(_ old: SQLiteKVCache.Entry?, key: [UInt8], value: [UInt8]) throws {
        try keyspace.set(key, value, expiresAt: old?.expiresAt, metadata: old?.metadata ?? [])
    }

    var now: Int64 { Server.nowMilliseconds() }

    /// Fails when a string would pass `proto-max-bulk-len`.
    func checkStringLength(_ length: Int) throws {
        guard length <= server.config.protoMaxBulkLen else {
            throw ReplyError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        }
    }
}

/// What SET and GETEX options ask for.
struct StringSetOptions {
    var nx = false, xx = false, get = false, keepTTL = false, persist = false
    /// The expiry's form and the index of its argument (the time, parsed
    /// later, as Redis parses it after the options).
    var expiry: (form: ExpiryForm, argument: Int)?

    enum Command { case set, getex }

    /// No options.
    init() {}

    /// Parses options from `args[start...]` exactly as Redis 7's
    /// `parseExtendedStringArgumentsOrReply`: a repeated option is allowed,
    /// conflicting ones are a syntax error.
    init(_ args: Arguments, from start: Int, for command: Command) throws(ReplyError) {
        var j = start
        while j < args.count {
            let option = args.option(j)
            let hasNext = j + 1 < args.count
            let expiryForm = expiry?.form
            func expiryAllowed(_ form: ExpiryForm) -> Bool {
                !keepTTL && !persist && (expiryForm == nil || expiryForm == form) && hasNext
            }
            switch option {
            case "nx" where !xx && command == .set: nx = true
            case "xx" where !nx && command == .set: xx = true
            case "get" where command == .set: get = true
            case "keepttl" where !persist && expiryForm == nil && command == .set: keepTTL = true
            case "persist" where command == .getex && expiryForm == nil && !keepTTL: persist = true
            case "ex" where expiryAllowed(.seconds): expiry = (.seconds, j + 1); j += 1
            case "px" where expiryAllowed(.milliseconds): expiry = (.milliseconds, j + 1); j += 1
            case "exat" where expiryAllowed(.unixSeconds): expiry = (.unixSeconds, j + 1); j += 1
            case "pxat" where expiryAllowed(.unixMilliseconds): expiry = (.unixMilliseconds, j + 1); j += 1
            default: throw .syntax
            }
            j += 1
        }
    }
}

private func get(_ ctx: CommandContext) throws {
    let connection = ctx.connection
    let found = try ctx.keyspace.readValue(ctx.args[1], as: .string) { value in
        switch value {
        case .bytes(let bytes): connection.replyBulk(bytes)
        case .live(let live): connection.replyBulk(live.encoded())
        }
    }
    if !found { connection.replyNull() }
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]
private func set(_ ctx: CommandContext) throws {
    let options = ctx.args.count > 3 ? try StringSetOptions(ctx.args, from: 3, for: .set) : StringSetOptions()
    let expiresAt = try options.expiry.map { try ctx.absoluteExpiry(ctx.args[$0.argument], $0.form, now: ctx.now) }
    // The old entry matters only to NX, XX, GET and KEEPTTL.
    let needsOld = options.nx || options.xx || options.get || options.keepTTL
    if !needsOld {
        // The plain SET: key and value go from the request to the engine.
        try ctx.keyspace.set(ctx.args[1], ctx.args[2], expiresAt: expiresAt)
        // Propagated as SET key value PXAT <ms> (Redis 7.0: five arguments) unless given as PXAT.
        if let expiresAt, let expiry = options.expiry, expiry.form != .unixMilliseconds {
            ctx.server.propagateAs(setWithPXAT(ctx.args.bytes(1), ctx.args.bytes(2), expiresAt))
        }
        return ctx.connection.replyOK()
    }
    let key = ctx.args.bytes(1)
    let old = try ctx.keyspace.lookupStored(key, read: false)
    // GET answers the old value first, so a collection fails before NX or XX is looked at.
    if options.get, let old, old.row.kind != .string { throw ReplyError.wrongType }
    let oldValue = options.get ? old?.row.value.bytes : nil
    if (options.nx && old != nil) || (options.xx && old == nil) {
        if options.get { ctx.connection.replyOptionalBulk(oldValue) } else { ctx.connection.replyNull() }
        return
    }
    try ctx.keyspace.set(key, ctx.args.bytes(2), expiresAt: options.keepTTL ? old?.row.expiresAt : expiresAt)
    // Propagated as SET key value PXAT <ms> (Redis 7.0: five arguments) unless given as PXAT.
    if let expiresAt, let expiry = options.expiry, expiry.form != .unixMilliseconds {
        ctx.server.propagateAs(setWithPXAT(key, ctx.args.bytes(2), expiresAt))
    } else if options.get && options.expiry == nil {
        // Without its GETs, as Redis's setGenericCommand.
        ctx.server.propagateAs(ctx.args.indices.filter { $0 < 3 || ctx.option($0) != "get" }.map { ctx.args.bytes($0) })
    }
    if options.get { ctx.connection.replyOptionalBulk(oldValue) } else { ctx.connection.replyOK() }
}

private func setnx(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.add(ctx.args.bytes(1), ctx.args.bytes(2)) ? 1 : 0)
}

private func setex(_ ctx: CommandContext, _ form: ExpiryForm) throws {
    let expiresAt = try ctx.absoluteExpiry(ctx.args[2], form, now: ctx.now)
    try ctx.keyspace.set(ctx.args.bytes(1), ctx.args.bytes(3), expiresAt: expiresAt)
    ctx.server.propagateAs(setWithPXAT(ctx.args.bytes(1), ctx.args.bytes(3), expiresAt))
    ctx.connection.replyOK()
}

/// SET key value PXAT <ms>: how SET with an expiry, SETEX and PSETEX propagate.
private func setWithPXAT(_ key: [UInt8], _ value: [UInt8], _ expiresAt: Int64) -> [[UInt8]] {
    [Array("SET".utf8), key, value, Array("PXAT".utf8), Array(String(expiresAt).utf8)]
}

/// GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST]
private func getex(_ ctx: CommandContext) throws {
    let options = try StringSetOptions(ctx.args, from: 2, for: .getex)
    let key = ctx.args.bytes(1)
    guard let entry = try ctx.keyspace.lookupRead(key, as: .string) else {
        ctx.connection.replyNull()
        return
    }
    let now = ctx.now
    if let expiry = options.expiry {
        try ctx.keyspace.expire(key, at: try ctx.absoluteExpiry(ctx.args[expiry.argument], expiry.form, now: now), now: now)
    } else if options.persist && entry.expiresAt != nil {
        try ctx.keyspace.setExpiry(key, nil)
        ctx.server.propagateAs([Array("PERSIST".utf8), key])
    }
    ctx.connection.replyBulk(entry.value)
}

private func getdel(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    guard let entry = try ctx.keyspace.lookupRead(key, as: .string) else {
        ctx.connection.replyNull()
        return
    }
    try ctx.keyspace.delete(key)
    ctx.server.propagateAs([Array("DEL".utf8), key])
    ctx.connection.replyBulk(entry.value)
}

private func getset(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    let old = try ctx.keyspace.lookupWrite(key, as: .string)
    try ctx.keyspace.set(key, ctx.args.bytes(2), expiresAt: nil)
    // Propagated as SET, as Redis 7 does.
    ctx.server.propagateAs([Array("SET".utf8), key, ctx.args.bytes(2)])
    ctx.connection.replyOptionalBulk(old?.value)
}

private func mget(_ ctx: CommandContext) throws {
    var values: [[UInt8]?] = []
    // A key holding a collection reads as nil, as in Redis.
    for key in ctx.args.dropFirst() {
        let entry = try ctx.keyspace.lookupStored(key.bytes, read: true)
        values.append(entry?.row.kind == .string ? entry?.row.value.bytes : nil)
    }
    ctx.connection.replyArrayHeader(values.count)
    for value in values { ctx.connection.replyOptionalBulk(value) }
}

private func mset(_ ctx: CommandContext) throws {
    guard ctx.args.count % 2 == 1 else { throw ReplyError.wrongArity(ctx.commandName) }
    for i in stride(from: 1, to: ctx.args.count, by: 2) {
        try ctx.keyspace.set(ctx.args.bytes(i), ctx.args.bytes(i + 1), expiresAt: nil)
    }
    ctx.connection.replyOK()
}

private func msetnx(_ ctx: CommandContext) throws {
    guard ctx.args.count % 2 == 1 else { throw ReplyError.wrongArity(ctx.commandName) }
    for i in stride(from: 1, to: ctx.args.count, by: 2) where try ctx.keyspace.exists(ctx.args.bytes(i)) {
        ctx.connection.replyInteger(0)
        return
    }
    for i in stride(from: 1, to: ctx.args.count, by: 2) {
        try ctx.keyspace.set(ctx.args.bytes(i), ctx.args.bytes(i + 1), expiresAt: nil)
    }
    ctx.connection.replyInteger(1)
}

private func append(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    let old = try ctx.keyspace.lookupWrite(key, as: .string)
    let value = (old?.value ?? []) + ctx.args[2]
    try ctx.checkStringLength(value.count)
    try ctx.update(old, key: key, value: value)
    ctx.connection.replyInteger(value.count)
}

private func strlen(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(try ctx.keyspace.lookupRead(ctx.args.bytes(1), as: .string)?.value.count ?? 0)
}

/// GETRANGE key start end: inclusive, negative from the end, clamped as Redis 7.0 does.
private func getrange(_ ctx: CommandContext) throws {
    var start = try ctx.integer(2)
    var end = try ctx.integer(3)
    let value = try ctx.keyspace.lookupRead(ctx.args.bytes(1), as: .string)?.value ?? []
    let length = Int64(value.count)
    if start < 0 { start += length }
    if end < 0 { end += length }
    start = max(start, 0)
    end = max(end, 0)
    if end >= length { end = length - 1 }
    guard length > 0, start <= end else {
        ctx.connection.replyBulk([UInt8]())
        return
    }
    ctx.connection.replyBulk(Array(value[Int(start)...Int(end)]))
}

private func setrange(_ ctx: CommandContext) throws {
    let offset = try ctx.integer(2)
    guard offset >= 0 else { throw ReplyError("ERR offset is out of range") }
    let patch = ctx.args[3]
    let key = ctx.args.bytes(1)
    let old = try ctx.keyspace.lookupWrite(key, as: .string)
    if patch.isEmpty {
        ctx.connection.replyInteger(old?.value.count ?? 0)
        return
    }
    let (end, overflow) = offset.addingReportingOverflow(Int64(patch.count))
    guard !overflow, end <= Int64(ctx.server.config.protoMaxBulkLen) else {
        throw ReplyError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    }
    var value = old?.value ?? []
    if value.count < Int(end) { value.append(contentsOf: repeatElement(0, count: Int(end) - value.count)) }
    value.replaceSubrange(Int(offset)..<Int(end), with: patch)
    try ctx.update(old, key: key, value: value)
    ctx.connection.replyInteger(value.count)
}

private func incrBy(_ ctx: CommandContext, _ increment: Int64) throws {
    let key = ctx.args.bytes(1)
    let old = try ctx.keyspace.lookupWrite(key, as: .string)
    var current: Int64 = 0
    if let old {
        guard let parsed = parseStrictInt64(old.value) else { throw ReplyError.notInteger }
        current = parsed
    }
    let (result, overflow) = current.addingReportingOverflow(increment)
    guard !overflow else { throw ReplyError.overflow }
    try ctx.update(old, key: key, value: Array(String(result).utf8))
    ctx.connection.replyInteger(result)
}

private func decrby(_ ctx: CommandContext) throws {
    let decrement = try ctx.integer(2)
    guard decrement != .min else { throw ReplyError("ERR decrement would overflow") }
    try incrBy(ctx, -decrement)
}

private func incrbyfloat(_ ctx: CommandContext) throws {
    // As Redis: the key's type first, then its value, then the increment.
    let key = ctx.args.bytes(1)
    let old = try ctx.keyspace.lookupWrite(key, as: .string)
    var current: LongDouble = 0
    if let old {
        guard let parsed = parseLongDouble(old.value) else { throw ReplyError.notFloat }
        current = parsed
    }
    guard let increment = parseLongDouble(ctx.args[2]) else { throw ReplyError.notFloat }
    let result = current + increment
    guard result.isFinite else { throw ReplyError("ERR increment would produce NaN or Infinity") }
    let text = formatLongDouble(result)
    try ctx.update(old, key: key, value: text)
    // Propagated as the value it made, so replicas do not redo float arithmetic.
    ctx.server.propagateAs([Array("SET".utf8), key, text, Array("KEEPTTL".utf8)])
    ctx.connection.replyBulk(text)
}
