import RESP
import SQLiteKVCache

/// SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and LCS over string
/// values, as Redis 7.0's bitops.c.
let bitCommands: [Command] = [
    Command(name: "setbit", arity: 4, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "bitmap", summary: "Sets or clears the bit at offset of a string value.", handler: setbit),
    Command(name: "getbit", arity: 3, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "bitmap", summary: "Returns a bit value by offset.", handler: getbit),
    Command(name: "bitcount", arity: -2, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "bitmap", summary: "Counts the set bits in a string.", handler: bitcount),
    Command(name: "lcs", arity: -3, flags: ["readonly"], firstKey: 1, lastKey: 2, step: 1,
            group: "string", summary: "Finds the longest common substring.", handler: lcs),
    Command(name: "bitpos", arity: -3, flags: ["readonly"], firstKey: 1, lastKey: 1, step: 1,
            group: "bitmap", summary: "Finds the first set or clear bit in a string.", handler: bitpos),
    Command(name: "bitop", arity: -4, flags: ["write", "denyoom"], firstKey: 2, lastKey: -1, step: 1,
            group: "bitmap", summary: "Performs bitwise operations on strings and stores the result.", handler: bitop),
    Command(name: "bitfield", arity: -2, flags: ["write", "denyoom"], firstKey: 1, lastKey: 1, step: 1,
            group: "bitmap", summary: "Performs arbitrary bitfield integer operations on strings.",
            handler: { try bitfield($0, readOnly: false) }),
    Command(name: "bitfield_ro", arity: -2, flags: ["readonly", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "bitmap", summary: "Performs arbitrary read-only bitfield integer operations on strings.",
            handler: { try bitfield($0, readOnly: true) }),
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

/// BITPOS key bit [start [end [BYTE|BIT]]]: the first bit set to `bit`
/// in the range; looking for 0 past the string's end without an explicit
/// end, the string counts as padded with zeros.
private func bitpos(_ ctx: CommandContext) throws {
    let bit = try ctx.integer(2)
    guard bit == 0 || bit == 1 else { throw ReplyError("ERR The bit argument must be 1 or 0.") }
    guard let value = try ctx.keyspace.lookupRead(ctx.args.bytes(1), as: .string)?.value else {
        ctx.connection.replyInteger(bit == 1 ? -1 : 0)
        return
    }
    var start: Int64 = 0, end: Int64 = Int64(value.count) - 1
    var isBit = false, endGiven = false
    let total = Int64(value.count)
    switch ctx.args.count {
    case 3:
        break
    case 4, 5, 6:
        start = try ctx.integer(3)
        if ctx.args.count == 6 {
            switch ctx.option(5) {
            case "bit": isBit = true
            case "byte": isBit = false
            default: throw ReplyError.syntax
            }
        }
        var length = total
        if ctx.args.count >= 5 {
            end = try ctx.integer(4)
            endGiven = true
        } else {
            end = isBit ? (total << 3) + 7 : total - 1
        }
        if isBit { length <<= 3 }
        if start < 0 { start += length }
        if end < 0 { end += length }
        if start < 0 { start = 0 }
        if end < 0 { end = 0 }
        if end >= length { end = length - 1 }
    default:
        throw ReplyError.syntax
    }
    guard start <= end else {
        ctx.connection.replyInteger(-1)
        return
    }
    let firstBit = isBit ? start : start << 3
    let lastBit = isBit ? end : (end << 3) + 7
    let wanted = UInt8(bit)
    var position = firstBit
    while position <= lastBit {
        let byte = value[Int(position >> 3)]
        // Whole bytes that cannot hold the bit are skipped at once.
        if position & 7 == 0 && position + 7 <= lastBit && byte == (wanted == 1 ? 0 : 0xff) {
            position += 8
            continue
        }
        if (byte >> (7 - UInt8(position & 7))) & 1 == wanted {
            ctx.connection.replyInteger(position)
            return
        }
        position += 1
    }
    ctx.connection.replyInteger(bit == 1 || endGiven ? -1 : lastBit + 1)
}

/// BITOP AND|OR|XOR|NOT destkey key [key ...]: stores the result (as long
/// as the longest input, shorter ones padded with zeros), or deletes the
/// destination when every input is empty; answers the result's length.
private func bitop(_ ctx: CommandContext) throws {
    enum Op { case and, or, xor, not }
    let op: Op
    switch ctx.option(1) {
    case "and": op = .and
    case "or": op = .or
    case "xor": op = .xor
    case "not": op = .not
    default: throw ReplyError.syntax
    }
    if op == .not && ctx.args.count != 4 { throw ReplyError("ERR BITOP NOT must be called with a single source key.") }
    var sources: [[UInt8]] = []
    for i in 3..<ctx.args.count {
        sources.append(try ctx.keyspace.lookupRead(ctx.args.bytes(i), as: .string)?.value ?? [])
    }
    let length = sources.map(\.count).max() ?? 0
    let destination = ctx.args.bytes(2)
    guard length > 0 else {
        try ctx.keyspace.delete(destination)
        ctx.connection.replyInteger(0)
        return
    }
    var result = [UInt8](repeating: 0, count: length)
    for j in 0..<length {
        var output: UInt8 = j < sources[0].count ? sources[0][j] : 0
        if op == .not { output = ~output }
        for source in sources.dropFirst() {
            let byte: UInt8 = j < source.count ? source[j] : 0
            switch op {
            case .and: output &= byte
            case .or: output |= byte
            case .xor: output ^= byte
            case .not: break
            }
        }
        result[j] = output
    }
    try ctx.keyspace.set(destination, result, expiresAt: nil)
    ctx.connection.replyInteger(length)
}

/// One BITFIELD operation.
private struct BitfieldOp {
    enum Kind { case get, set, incrby }
    enum Overflow { case wrap, sat, fail }
    var kind: Kind
    var signed: Bool
    var bits: Int
    var offset: Int
    var value: Int64
    var overflow: Overflow
}

/// BITFIELD key [GET type offset] [SET type offset value] [INCRBY type
/// offset increment] [OVERFLOW WRAP|SAT|FAIL] ..., and BITFIELD_RO (GET
/// only): integers of 1 to 64 bits (u1..u63, i1..i64) at any bit offset
/// (`#n` counts in units of the type's width).
private func bitfield(_ ctx: CommandContext, readOnly: Bool) throws {
    var ops: [BitfieldOp] = []
    var overflow = BitfieldOp.Overflow.wrap
    var highestWrite = -1
    var j = 2
    while j < ctx.args.count {
        let left = ctx.args.count - j - 1
        let kind: BitfieldOp.Kind
        switch ctx.option(j) {
        case "get" where left >= 2: kind = .get
        case "set" where left >= 3: kind = .set
        case "incrby" where left >= 3: kind = .incrby
        case "overflow" where left >= 1:
            switch ctx.option(j + 1) {
            case "wrap": overflow = .wrap
            case "sat": overflow = .sat
            case "fail": overflow = .fail
            default: throw ReplyError("ERR Invalid OVERFLOW type specified")
            }
            j += 2
            continue
        default:
            throw ReplyError.syntax
        }
        let typeError = ReplyError("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
        let type = ctx.args.bytes(j + 1)
        guard let sign = type.first, sign == UInt8(ascii: "i") || sign == UInt8(ascii: "u"),
              let bits = parseStrictInt64(type.dropFirst()), bits >= 1, bits <= (sign == UInt8(ascii: "i") ? 64 : 63) else {
            throw typeError
        }
        let offsetError = ReplyError("ERR bit offset is not an integer or out of range")
        var offsetText = ctx.args.bytes(j + 2)[...]
        let byWidth = offsetText.first == UInt8(ascii: "#")
        if byWidth { offsetText = offsetText.dropFirst() }
        guard var offset = parseStrictInt64(offsetText) else { throw offsetError }
        if byWidth {
            let (scaled, overflowed) = offset.multipliedReportingOverflow(by: bits)
            guard !overflowed else { throw offsetError }
            offset = scaled
        }
        guard offset >= 0, (offset >> 3) < Int64(ctx.server.config.protoMaxBulkLen) else { throw offsetError }
        var value: Int64 = 0
        if kind != .get {
            highestWrite = max(highestWrite, Int(offset + bits - 1))
            value = try ctx.integer(j + 3)
        }
        ops.append(BitfieldOp(kind: kind, signed: sign == UInt8(ascii: "i"), bits: Int(bits), offset: Int(offset),
                              value: value, overflow: overflow))
        j += kind == .get ? 3 : 4
    }
    let key = ctx.args.bytes(1)
    var old: SQLiteKVCache.Entry?
    var bytes: [UInt8]
    var dirty = false
    if highestWrite < 0 {
        bytes = try ctx.keyspace.lookupRead(key, as: .string)?.value ?? []
    } else {
        if readOnly { throw ReplyError("ERR BITFIELD_RO only supports the GET subcommand") }
        old = try ctx.keyspace.lookupWrite(key, as: .string)
        bytes = old?.value ?? []
        let needed = highestWrite / 8 + 1
        if old == nil || bytes.count < needed {
            bytes.append(contentsOf: repeatElement(0, count: max(0, needed - bytes.count)))
            dirty = true
        }
    }
    var changes = 0
    ctx.connection.replyArrayHeader(ops.count)
    for op in ops {
        if op.kind == .get {
            let raw = getBits(bytes, op.offset, op.bits)
            ctx.connection.replyInteger(op.signed ? signExtend(raw, op.bits) : Int64(bitPattern: raw))
            continue
        }
        let old = getBits(bytes, op.offset, op.bits)
        let (newValue, reply, failed) = op.signed ? signedChange(signExtend(old, op.bits), op)
            : unsignedChange(old, op)
        guard !failed else {
            ctx.connection.replyNull()
            continue
        }
        ctx.connection.replyInteger(reply)
        setBits(&bytes, op.offset, op.bits, newValue)
        if dirty || newValue != old { changes += 1 }
    }
    if dirty || changes > 0 { try ctx.update(old, key: key, value: bytes) }
}

/// `bits` bits from bit `offset` (most significant first), reading zeros past the end.
private func getBits(_ bytes: [UInt8], _ offset: Int, _ bits: Int) -> UInt64 {
    var value: UInt64 = 0
    for j in 0..<bits {
        let position = offset + j
        let byte = position >> 3 < bytes.count ? bytes[position >> 3] : 0
        value = value << 1 | UInt64((byte >> (7 - UInt8(position & 7))) & 1)
    }
    return value
}

private func setBits(_ bytes: inout [UInt8], _ offset: Int, _ bits: Int, _ value: UInt64) {
    for j in 0..<bits {
        let position = offset + j
        let mask = UInt8(1) << (7 - UInt8(position & 7))
        if (value >> UInt64(bits - 1 - j)) & 1 == 1 { bytes[position >> 3] |= mask } else { bytes[position >> 3] &= ~mask }
    }
}

private func signExtend(_ raw: UInt64, _ bits: Int) -> Int64 {
    var value = raw
    if bits < 64 && value & (UInt64(1) << UInt64(bits - 1)) != 0 { value |= UInt64.max << UInt64(bits) }
    return Int64(bitPattern: value)
}

/// A SET or INCRBY on an unsigned field, as Redis's checkUnsignedBitfieldOverflow:
/// the bits to store, the reply (the old value for SET, the new for INCRBY),
/// and whether it failed (OVERFLOW FAIL).
private func unsignedChange(_ old: UInt64, _ op: BitfieldOp) -> (UInt64, Int64, Bool) {
    let max: UInt64 = (UInt64(1) << UInt64(op.bits)) - 1
    let value = op.kind == .incrby ? old : UInt64(bitPattern: op.value)
    let increment = op.kind == .incrby ? op.value : 0
    var result = value &+ UInt64(bitPattern: increment)
    let over = value > max || (increment > 0 && UInt64(increment) > max &- value)
    let under = !over && increment < 0 && increment.magnitude > value
    if over || under {
        switch op.overflow {
        case .fail: return (0, 0, true)
        case .sat: result = over ? max : 0
        case .wrap: result &= max
        }
    }
    return (result, op.kind == .incrby ? Int64(bitPattern: result) : Int64(bitPattern: old), false)
}

/// The same for a signed field (checkSignedBitfieldOverflow).
private func signedChange(_ old: Int64, _ op: BitfieldOp) -> (UInt64, Int64, Bool) {
    let max: Int64 = op.bits == 64 ? .max : (Int64(1) << Int64(op.bits - 1)) - 1
    let min = -max - 1
    let value = op.kind == .incrby ? old : op.value
    let increment = op.kind == .incrby ? op.value : 0
    let (sum, overflowed) = value.addingReportingOverflow(increment)
    let over = overflowed ? increment > 0 : sum > max
    let under = overflowed ? increment < 0 : sum < min
    var result = UInt64(bitPattern: value) &+ UInt64(bitPattern: increment)
    if over || under {
        switch op.overflow {
        case .fail: return (0, 0, true)
        case .sat: result = UInt64(bitPattern: over ? max : min)
        case .wrap: break
        }
    }
    let stored = op.bits < 64 ? result & ((UInt64(1) << UInt64(op.bits)) - 1) : result
    return (stored, op.kind == .incrby ? signExtend(stored, op.bits) : old, false)
}
