// Streams in Redis's RDB encoding (rdb.c): DUMP writes
// RDB_TYPE_STREAM_LISTPACKS_2 (19), as Redis 7.0 does; RESTORE reads it and
// the RDB_TYPE_STREAM_LISTPACKS (15) of Redis 5 to 6.2, whose counters the
// loader works out as Redis's does.
//
//     nodes: len, then per node: the master ID (a 16-byte string, big
//            endian) and the listpack (a string, LZF-compressed when that
//            helps, as Redis saves it)
//     len length, len lastID.ms, len lastID.seq
//     (19 only) len firstID.ms, .seq, len maxDeletedID.ms, .seq, len entriesAdded
//     len groups, then per group: string name, len lastID.ms, .seq,
//         (19 only) len entriesRead (-1 as 2^64 - 1),
//         len pending, per entry: 16 raw bytes of ID, 8 bytes of delivery
//             time (ms, little endian), len delivery count
//         len consumers, per consumer: string name, 8 bytes seen time,
//             len pending, per entry: 16 raw bytes of ID

import RESP
import SQLiteKVCache

extension RDB {
    static let streamListpacks: UInt8 = 15
    static let streamListpacks2: UInt8 = 19

    /// The RDB body of `stream` (after its type byte).
    static func appendStream(_ stream: StreamValue, to out: inout [UInt8]) {
        appendLength(stream.nodes.count, to: &out)
        for node in stream.nodes {
            appendString(node.master.bigEndianBytes, to: &out)
            appendString(node.lp, to: &out)
        }
        for value in [UInt64(stream.length), stream.lastID.ms, stream.lastID.seq, stream.firstID.ms, stream.firstID.seq,
                      stream.maxDeletedID.ms, stream.maxDeletedID.seq, stream.entriesAdded] {
            appendLength64(value, to: &out)
        }
        appendLength(stream.groups.count, to: &out)
        for name in stream.sortedGroupNames {
            let group = stream.groups[name]!
            appendString(name, to: &out)
            appendLength64(group.lastID.ms, to: &out)
            appendLength64(group.lastID.seq, to: &out)
            appendLength64(UInt64(bitPattern: group.entriesRead), to: &out)
            appendLength(group.pel.count, to: &out)
            group.pel.forEach { id, nack in
                id.appendBigEndian(to: &out)
                withUnsafeBytes(of: nack.deliveryTime.littleEndian) { out.append(contentsOf: $0) }
                appendLength64(nack.deliveryCount, to: &out)
                return true
            }
            let consumers = group.sortedConsumers
            appendLength(consumers.count, to: &out)
            for consumer in consumers {
                appendString(consumer.name, to: &out)
                withUnsafeBytes(of: consumer.seenTime.littleEndian) { out.append(contentsOf: $0) }
                appendLength(consumer.pending.count, to: &out)
                consumer.pending.forEach { id, _ in
                    id.appendBigEndian(to: &out)
                    return true
                }
            }
        }
    }

    /// Redis's rdbSaveLen of any 64-bit value.
    static func appendLength64(_ value: UInt64, to out: inout [UInt8]) {
        if value <= UInt64(UInt32.max) {
            appendLength(Int(value), to: &out)
        } else {
            out.append(0x81)
            withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
        }
    }

    /// Reads a stream of RDB type 15 or 19, checking each listpack whole
    /// and the groups' pending entries against their consumers.
    static func loadStream(_ reader: inout RDBReader, type: UInt8) throws(BadFormat) -> StreamValue {
        let stream = StreamValue()
        var nodes: [(StreamID, [UInt8])] = []
        let nodeCount = try reader.length64()
        for _ in 0..<nodeCount {
            guard let master = StreamID(bigEndian: try reader.string()) else { throw BadFormat() }
            let lp = try reader.string()
            guard isValidStreamListpack(lp), Listpack.first(lp) != nil else { throw BadFormat() }
            nodes.append((master, lp))
        }
        nodes.sort { $0.0 < $1.0 }
        for i in nodes.indices {
            if i > 0 && nodes[i - 1].0 == nodes[i].0 { throw BadFormat() }
            stream.loadNode(master: nodes[i].0, lp: nodes[i].1)
        }
        let length = try reader.length64()
        let last = StreamID(ms: try reader.length64(), seq: try reader.length64())
        guard length <= UInt64(Int32.max) * 64 else { throw BadFormat() }
        if type == streamListpacks2 {
            let first = StreamID(ms: try reader.length64(), seq: try reader.length64())
            let maxDeleted = StreamID(ms: try reader.length64(), seq: try reader.length64())
            stream.load(length: Int(length), lastID: last, firstID: first, maxDeletedID: maxDeleted,
                        entriesAdded: try reader.length64())
        } else {
            stream.load(length: Int(length), lastID: last, firstID: nil, maxDeletedID: .zero, entriesAdded: length)
        }
        if length > 0 && stream.nodes.isEmpty { throw BadFormat() }
        let groupCount = try reader.length64()
        for _ in 0..<groupCount {
            let name = try reader.string()
            let lastID = StreamID(ms: try reader.length64(), seq: try reader.length64())
            let entriesRead = type == streamListpacks2 ? Int64(bitPattern: try reader.length64())
                : stream.estimatedEntriesRead(at: lastID) ?? StreamGroup.unknownEntriesRead
            guard stream.groups[name] == nil else {
                throw BadFormat(reason: "Duplicated consumer group name \(String(decoding: name, as: UTF8.self))")
            }
            var group = StreamGroup(name: name, lastID: lastID, entriesRead: entriesRead)
            var pending: [StreamID: (time: Int64, count: UInt64)] = [:]
            for _ in 0..<(try reader.length64()) {
                guard let id = StreamID(bigEndian: try reader.take(16)) else { throw BadFormat() }
                let time = try reader.millisecondTime()
                let count = try reader.length64()
                guard pending.updateValue((time, count), forKey: id) == nil else { throw BadFormat() }
            }
            var assigned = Set<StreamID>()
            for _ in 0..<(try reader.length64()) {
                let consumer = try reader.string()
                guard group.createConsumer(consumer, now: try reader.millisecondTime()) else {
                    throw BadFormat(reason: "Duplicate stream consumer detected.")
                }
                for _ in 0..<(try reader.length64()) {
                    guard let id = StreamID(bigEndian: try reader.take(16)) else { throw BadFormat() }
                    guard let nack = pending.removeValue(forKey: id) else {
                        throw BadFormat(reason: assigned.contains(id) ? "Stream consumer PEL entry already has a consumer assigned"
                                                                      : "Consumer entry not found in group global PEL")
                    }
                    assigned.insert(id)
                    guard group.loadPending(id, StreamNACK(deliveryTime: nack.time, deliveryCount: nack.count, consumer: consumer))
                    else { throw BadFormat() }
                }
            }
            // Every pending entry must belong to a consumer.
            guard pending.isEmpty else { throw BadFormat(reason: "Stream CG PEL entry without consumer") }
            stream.groups[name] = group
        }
        return stream
    }

    /// Redis's streamValidateListpackIntegrity, deep: a valid listpack
    /// whose elements make a master entry and entries of the right shape.
    static func isValidStreamListpack(_ lp: [UInt8]) -> Bool {
        guard Listpack.isValid(lp) else { return false }
        func isInteger(_ p: Int) -> Bool {
            if case .string(let r) = Listpack.element(lp, p) { return parseStrictInt64(lp[r]) != nil }
            return true
        }
        var p = Listpack.first(lp)
        func take() -> Int? {
            guard let at = p else { return nil }
            p = Listpack.next(lp, at)
            return at
        }
        guard let countAt = take(), isInteger(countAt), let deletedAt = take(), isInteger(deletedAt),
              let fieldsAt = take(), isInteger(fieldsAt) else { return false }
        let masterFields = Listpack.integer(lp, fieldsAt)
        guard masterFields >= 0 else { return false }
        for _ in 0..<masterFields { guard take() != nil else { return false } }
        guard let zero = take(), isInteger(zero), Listpack.integer(lp, zero) == 0 else { return false }
        var entries = Listpack.integer(lp, countAt) &+ Listpack.integer(lp, deletedAt)
        guard entries >= 0 else { return false }
        while entries > 0 {
            entries -= 1
            guard let flagsAt = take(), isInteger(flagsAt), let ms = take(), isInteger(ms), let seq = take(), isInteger(seq)
            else { return false }
            var fields = masterFields, extra: Int64 = 3
            if Listpack.integer(lp, flagsAt) & StreamValue.flagSameFields == 0 {
                guard let numAt = take(), isInteger(numAt) else { return false }
                fields = Listpack.integer(lp, numAt)
                guard fields >= 0 else { return false }
                for _ in 0..<fields { guard take() != nil else { return false } }
                extra += fields + 1
            }
            for _ in 0..<fields { guard take() != nil else { return false } }
            guard let countElement = take(), isInteger(countElement), Listpack.integer(lp, countElement) == fields + extra
            else { return false }
        }
        return p == nil
    }
}

extension RDBReader {
    /// Redis's rdbLoadLen, any 64-bit value.
    mutating func length64() throws(RDB.BadFormat) -> UInt64 {
        let first = try byte()
        switch first >> 6 {
        case 0: return UInt64(first & 0x3f)
        case 1: return UInt64(first & 0x3f) << 8 | UInt64(try byte())
        case 2:
            let width = first == 0x80 ? 4 : first == 0x81 ? 8 : 0
            guard width > 0 else { throw RDB.BadFormat() }
            var value: UInt64 = 0
            for b in try take(width) { value = value << 8 | UInt64(b) }
            return value
        default:
            throw RDB.BadFormat()
        }
    }

    /// Redis's rdbLoadMillisecondTime: 8 bytes, little endian.
    mutating func millisecondTime() throws(RDB.BadFormat) -> Int64 {
        Int64(bitPattern: try littleEndian(8))
    }
}
