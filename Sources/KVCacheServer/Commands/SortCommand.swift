#if canImport(Glibc)
import Glibc
#endif
import RESP
import SQLiteKVCache

/// SORT and SORT_RO, as Redis 7.0's sort.c: the elements of a list, set or
/// sorted set, sorted as numbers (or ALPHA, as bytes), by themselves or by
/// keys a BY pattern names (`weight_*`, `obj_*->field`: in the same
/// cache), with LIMIT, GET patterns (`#` is the element), and STORE (a
/// list, replacing the destination, or deleting it when empty).
let sortCommands: [Command] = [
    Command(name: "sort", arity: -2, flags: ["write", "denyoom", "movablekeys"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Sorts the elements of a list, set or sorted set, optionally storing the result.",
            handler: { try sort($0, readOnly: false) }),
    Command(name: "sort_ro", arity: -2, flags: ["readonly", "movablekeys"], firstKey: 1, lastKey: 1, step: 1,
            group: "generic", summary: "Sorts the elements of a list, set or sorted set.",
            handler: { try sort($0, readOnly: true) }),
]

/// The value a SORT pattern names for `element` (Redis's
/// lookupKeyByPattern): `#` is the element; otherwise the first `*` is
/// replaced by it, and `->field` after it reads a hash's field; nil when
/// the pattern has no `*`, the key is missing or of another kind.
private func lookupByPattern(_ ctx: CommandContext, _ pattern: [UInt8], _ element: [UInt8]) throws -> [UInt8]? {
    if pattern == [UInt8(ascii: "#")] { return element }
    guard let star = pattern.firstIndex(of: UInt8(ascii: "*")) else { return nil }
    var keyEnd = pattern.count
    var field: [UInt8]?
    var i = star + 1
    while i + 1 < pattern.count {
        if pattern[i] == UInt8(ascii: "-") && pattern[i + 1] == UInt8(ascii: ">") {
            if i + 2 < pattern.count {
                field = Array(pattern[(i + 2)...])
                keyEnd = i
            }
            break
        }
        i += 1
    }
    let key = Array(pattern[..<star]) + element + Array(pattern[(star + 1)..<keyEnd])
    guard let entry = try ctx.keyspace.lookupStored(key, read: true) else { return nil }
    if let field {
        guard entry.row.kind == .hash, let hash = try collectionValue(of: entry) as? HashValue else { return nil }
        return hash[field]
    }
    guard entry.row.kind == .string else { return nil }
    return entry.row.value.bytes
}

/// One element being sorted, and what it sorts by.
private struct SortItem {
    var element: [UInt8]
    var score = 0.0
    var by: [UInt8]?
}

/// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE destination]
private func sort(_ ctx: CommandContext, readOnly: Bool) throws {
    var desc = false, alpha = false, dontSort = false
    var limitStart = 0, limitCount = -1
    var sortBy: [UInt8]?
    var storeKey: [UInt8]?
    var gets: [[UInt8]] = []
    var j = 2
    while j < ctx.args.count {
        let left = ctx.args.count - j - 1
        switch ctx.option(j) {
        case "asc": desc = false
        case "desc": desc = true
        case "alpha": alpha = true
        case "limit" where left >= 2:
            limitStart = Int(try ctx.integer(j + 1))
            limitCount = Int(try ctx.integer(j + 2))
            j += 2
        case "store" where !readOnly && left >= 1:
            storeKey = ctx.args.bytes(j + 1)
            j += 1
        case "by" where left >= 1:
            sortBy = ctx.args.bytes(j + 1)
            dontSort = !sortBy!.contains(UInt8(ascii: "*"))
            if !dontSort && !ctx.server.hasFullReadAccess(ctx.connection, ctx.args) {
                throw ReplyError("ERR BY option of SORT denied due to insufficient ACL permissions.")
            }
            j += 1
        case "get" where left >= 1:
            if !ctx.server.hasFullReadAccess(ctx.connection, ctx.args) {
                throw ReplyError("ERR GET option of SORT denied due to insufficient ACL permissions.")
            }
            gets.append(ctx.args.bytes(j + 1))
            j += 1
        default:
            throw ReplyError.syntax
        }
        j += 1
    }
    let source = try ctx.keyspace.lookupStored(ctx.args.bytes(1), read: true)
    if let source, ![ValueKind.list, .set, .zset].contains(source.row.kind) { throw ReplyError.wrongType }
    let value = try source.flatMap { try collectionValue(of: $0) }
    // A set has no order of its own: "not sorting" it for a STORE or a
    // script sorts it as bytes, so the result is the same wherever it is
    // replayed (Redis's sortCommandGeneric).
    if dontSort && value is SetValue && (storeKey != nil || ctx.server.scripting.isScriptClient(ctx.connection)) {
        dontSort = false
        alpha = true
        sortBy = nil
    }
    let length = (value as? LiveCollection)?.count ?? 0
    var start = min(max(limitStart, 0), length)
    let count = min(max(limitCount, -1), length)
    var end = count < 0 ? length - 1 : start + count - 1
    if start >= length {
        start = length - 1
        end = length - 2
    }
    if end >= length { end = length - 1 }
    var items: [SortItem] = []
    switch value {
    case let list as ListValue:
        if dontSort {
            if end >= start {
                for i in start...end { items.append(SortItem(element: list[desc ? list.count - 1 - i : i])) }
                end -= start
                start = 0
            }
        } else {
            items = list.items.map { SortItem(element: $0) }
        }
    case let set as SetValue:
        items = set.allMembers.map { SortItem(element: $0) }
    case let zset as ZSetValue:
        if dontSort {
            if end >= start {
                items = zset.elements(desc ? (zset.count - 1 - end)..<(zset.count - start) : start..<(end + 1), reverse: desc)
                    .map { SortItem(element: $0.member) }
                end -= start
                start = 0
            }
        } else {
            items = zset.lazyUnorderedMembers.map { SortItem(element: $0) }
        }
    default:
        break
    }
    var conversionError = false
    if !dontSort {
        for i in items.indices {
            let byValue: [UInt8]
            if let sortBy {
                guard let found = try lookupByPattern(ctx, sortBy, items[i].element) else { continue }
                byValue = found
            } else {
                byValue = items[i].element
            }
            if alpha {
                if sortBy != nil { items[i].by = byValue }
            } else if let score = parseSortScore(byValue) {
                items[i].score = score
            } else {
                conversionError = true
            }
        }
        let bySort = sortBy != nil
        items.sort { a, b in
            var c: Int
            if !alpha {
                c = a.score > b.score ? 1 : a.score < b.score ? -1 : compareBytes(a.element, b.element)
            } else if bySort {
                switch (a.by, b.by) {
                case (nil, nil): c = 0
                case (nil, _): c = -1
                case (_, nil): c = 1
                case (let x?, let y?): c = compareBytes(x, y)
                }
            } else {
                c = compareBytes(a.element, b.element)
            }
            return desc ? c > 0 : c < 0
        }
    }
    if conversionError { throw ReplyError("ERR One or more scores can't be converted into double") }
    let selected = end >= start ? Array(items[start...end]) : []
    if let storeKey {
        let list = ListValue()
        for item in selected {
            if gets.isEmpty {
                list.append(item.element)
            } else {
                for pattern in gets { list.append(try lookupByPattern(ctx, pattern, item.element) ?? []) }
            }
        }
        try ctx.keyspace.storeNew(list, of: .list, at: storeKey)
        ctx.connection.replyInteger(list.count)
        return
    }
    let c = ctx.connection
    c.replyArrayHeader(gets.isEmpty ? selected.count : selected.count * gets.count)
    for item in selected {
        if gets.isEmpty { c.replyBulk(item.element) }
        for pattern in gets { c.replyOptionalBulk(try lookupByPattern(ctx, pattern, item.element)) }
    }
}

/// A sort weight as Redis reads one (`strtod` over the whole value, no
/// overflow, no NaN); "" is 0.
private func parseSortScore(_ bytes: [UInt8]) -> Double? {
    (bytes + [0]).withUnsafeBufferPointer { buffer -> Double? in
        let start = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
        var end: UnsafeMutablePointer<CChar>?
        errno = 0
        let value = strtod(start, &end)
        guard let end, end.pointee == 0, errno != ERANGE, !value.isNaN else { return nil }
        return value
    }
}
