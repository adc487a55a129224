import RESP

/// SETBIT, GETBIT, BITCOUNT and LCS over string values, as Redis 7.0.
let bitCommands: [Command] = [
    Command(name: "setbit", arity: 4, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "bitmap", summary: "Sets or clears the bit at offset of a string value.", handler: setbit),
    Command(name: "getbit", arity: 3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "bitmap", summary: "Returns a bit value by offset.", handler: getbit),
    Command(name: "bitcount", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "bitmap", summary: "Counts the set bits in a string.", handler: bitcount),
    Command(name: "lcs", arity: -3, flags: ["readonly"], firstKey: 1, lastKey: 2, step: 1,
            group: "string", summary: "Finds the longest common substring.", handler: lcs),
]

/// A bit offset: a non-negative integer whose byte is within proto-max-bulk-len.
private func bitOffset(_ ctx: CommandContext, _ index: Int) throws -> Int {
    guard let offset = parseStrictInt64(ctx.args[index]), offset >= 0,
          (offset >> 3) < Int64(ctx.server.config.protoMaxBulkLen) else {
        throw ReplyError("ERR bit offset is not an integer or out of range")
    }
    return Int(offset)
}

private func setbit(_ ctx: CommandContext) throws {
    let offset = try bitOffset(ctx, 2)
    guard let on = parseStrictInt64(ctx.args[3]), on & ~1 == 0 else {
        throw ReplyError("ERR bit is not an integer or out of range")
    }
    let old = try ctx.keyspace.lookupWrite(ctx.args.bytes(1), as: .string)
    var value = old?.value ?? []
    let byte = offset >> 3
    if value.count <= byte { value.append(contentsOf: repeatElement(0, count: byte + 1 - value.count)) }
    let mask = UInt8(1) << UInt8(7 - offset & 7)
    let previous = value[byte] & mask != 0
    if on == 1 { value[byte] |= mask } else { value[byte] &= ~mask }
    if old?.value != value { try ctx.update(old, key: ctx.args.bytes(1), value: value) }
    ctx.connection.replyInteger(previous ? 1 : 0)
}

private func getbit(_ ctx: CommandContext) throws {
    let offset = try bitOffset(ctx, 2)
    let value = try ctx.keyspace.lookupRead(ctx.args.bytes(1), as: .string)?.value ?? []
    let byte = offset >> 3
    let set = byte < value.count && value[byte] & (UInt8(1) << UInt8(7 - offset & 7)) != 0
    ctx.connection.replyInteger(set ? 1 : 0)
}

/// BITCOUNT key [start end [BYTE|BIT]]
private func bitcount(_ ctx: CommandContext) throws {
    // As Redis: a missing key answers 0 before the arguments are looked at.
    guard let value = try ctx.keyspace.lookupRead(ctx.args.bytes(1), as: .string)?.value else {
        ctx.connection.replyInteger(0)
        return
    }
    guard ctx.args.count == 2 || ctx.args.count == 4 || ctx.args.count == 5 else { throw ReplyError.syntax }
    guard ctx.args.count > 2 else {
        ctx.connection.replyInteger(value.reduce(0) { $0 + $1.nonzeroBitCount })
        return
    }
    var start = try ctx.integer(2)
    var end = try ctx.integer(3)
    if start < 0 && end < 0 && start > end {
        ctx.connection.replyInteger(0)
        return
    }
    var isBit = false
    if ctx.args.count == 5 {
        switch ctx.option(4) {
        case "bit": isBit = true
        case "byte": isBit = false
        default: throw ReplyError.syntax
        }
    }
    let total = Int64(value.count) << (isBit ? 3 : 0)
    if start < 0 { start += total }
    if end < 0 { end += total }
    start = max(start, 0)
    end = max(end, 0)
    if end >= total { end = total - 1 }
    guard start <= end else {
        ctx.connection.replyInteger(0)
        return
    }
    var count = 0
    if isBit {
        for bit in start...end where value[Int(bit >> 3)] & (UInt8(1) << UInt8(7 - bit & 7)) != 0 { count += 1 }
    } else {
        for byte in value[Int(start)...Int(end)] { count += byte.nonzeroBitCount }
    }
    ctx.connection.replyInteger(count)
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the classic
/// dynamic-programming table, walked back as Redis does.
private func lcs(_ ctx: CommandContext) throws {
    let entryA = try ctx.keyspace.lookupStored(ctx.args.bytes(1), read: true)
    let entryB = try ctx.keyspace.lookupStored(ctx.args.bytes(2), read: true)
    if entryA.map({ $0.row.kind != .string }) == true || entryB.map({ $0.row.kind != .string }) == true {
        throw ReplyError("ERR The specified keys must contain string values")
    }
    let a = entryA?.row.value.bytes ?? []
    let b = entryB?.row.value.bytes ?? []
    var getLen = false, getIdx = false, withMatchLen = false
    var minMatchLen: Int64 = 0
    var j = 3
    while j < ctx.args.count {
        switch ctx.option(j) {
        case "idx": getIdx = true
        case "len": getLen = true
        case "withmatchlen": withMatchLen = true
        case "minmatchlen" where j + 1 < ctx.args.count:
            minMatchLen = max(0, try ctx.integer(j + 1))
            j += 1
        default: throw ReplyError.syntax
        }
        j += 1
    }
    if getLen && getIdx { throw ReplyError("ERR If you want both the length and indexes, please just use IDX.") }
    let width = b.count + 1
    guard (a.count + 1) * width * 4 <= ctx.server.config.protoMaxBulkLen else {
        throw ReplyError("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
    }
    var table = [UInt32](repeating: 0, count: (a.count + 1) * width)
    for i in stride(from: 1, through: a.count, by: 1) {
        for k in stride(from: 1, through: b.count, by: 1) {
            table[i * width + k] = a[i - 1] == b[k - 1]
                ? table[(i - 1) * width + k - 1] + 1
                : max(table[(i - 1) * width + k], table[i * width + k - 1])
        }
    }
    let length = Int(table[a.count * width + b.count])
    if getLen {
        ctx.connection.replyInteger(length)
        return
    }
    var result = [UInt8](repeating: 0, count: length)
    var matches: [RESPValue] = []
    var idx = length
    var i = a.count, k = b.count
    var aStart = a.count, aEnd = 0, bStart = 0, bEnd = 0
    while i > 0 && k > 0 {
        var emit = false
        if a[i - 1] == b[k - 1] {
            result[idx - 1] = a[i - 1]
            if aStart == a.count {
                (aStart, aEnd, bStart, bEnd) = (i - 1, i - 1, k - 1, k - 1)
            } else if aStart == i && bStart == k {
                aStart -= 1
                bStart -= 1
            } else {
                emit = true
            }
            if aStart == 0 || bStart == 0 { emit = true }
            idx -= 1; i -= 1; k -= 1
        } else {
            if table[(i - 1) * width + k] > table[i * width + k - 1] { i -= 1 } else { k -= 1 }
            if aStart != a.count { emit = true }
        }
        if emit {
            let matchLength = aEnd - aStart + 1
            if minMatchLen == 0 || Int64(matchLength) >= minMatchLen {
                var match: [RESPValue] = [.array([.integer(Int64(aStart)), .integer(Int64(aEnd))]),
                                          .array([.integer(Int64(bStart)), .integer(Int64(bEnd))])]
                if withMatchLen { match.append(.integer(Int64(matchLength))) }
                matches.append(.array(match))
            }
            aStart = a.count
        }
    }
    if getIdx {
        ctx.connection.reply(.map([(.bulk(Array("matches".utf8)), .array(matches)),
                                   (.bulk(Array("len".utf8)), .integer(Int64(length)))]))
    } else {
        ctx.connection.replyBulk(result)
    }
}
