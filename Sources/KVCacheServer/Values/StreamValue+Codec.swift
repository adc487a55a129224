// A stream in an entry's value bytes, the form SQLite stores and the log's
// whole-entry records carry. Fixed-width fields, little endian, so the
// encoded size is kept exactly as the stream changes (a sum over its nodes,
// kept as they change, and over its groups):
//
//     u8 version (1)
//     u64 length, id lastID, id firstID, id maxDeletedID, u64 entriesAdded
//     u32 node count, then per node: id master, u32 n, n bytes of listpack
//     u32 group count, then per group (sorted by name):
//         u32 n, name, id lastID, i64 entriesRead,
//         u32 consumer count, per consumer (sorted): u32 n, name, i64 seenTime
//         u32 pending count, per entry (in ID order): id, i64 deliveryTime,
//             u64 deliveryCount, u32 the consumer's index in the list above
//     id = u64 ms, u64 seq
//
// The listpacks are Redis's own, so loading one is a copy of its bytes: a
// stream of a million entries (about 10,000 nodes) loads without parsing
// an entry.

import SQLiteKVCache

extension StreamValue {
    static let version: UInt8 = 1
    /// The fixed part: version, length, three IDs, entries added, node and group counts.
    static let headerBytes = 1 + 8 + 3 * 16 + 8 + 4 + 4
    /// A node's master ID and listpack length.
    static let nodeOverhead = 20
    static let pendingEntryBytes = 16 + 8 + 8 + 4

    static func consumerEncodedSize(_ name: [UInt8]) -> Int { 4 + name.count + 8 }

    static func groupEncodedSize(_ group: StreamGroup) -> Int {
        4 + group.name.count + 16 + 8 + 4 + group.consumerBytes + 4 + pendingEntryBytes * group.pel.count
    }

    var encodedSize: Int {
        Self.headerBytes + nodeBytes + groups.values.reduce(0) { $0 + Self.groupEncodedSize($1) }
    }

    /// About what the value takes in memory: the listpacks, then per node,
    /// pending entry and consumer the structures around them.
    var memoryCost: Int {
        var cost = 128 + nodeBytes + nodes.count * 48
        for group in groups.values {
            cost += 96 + group.name.count + group.pel.count * 96 + group.consumers.count * 80 + group.consumerBytes
        }
        return cost
    }

    func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedSize)
        out.append(Self.version)
        Self.put(UInt64(length), &out)
        for id in [lastID, firstID, maxDeletedID] { Self.put(id, &out) }
        Self.put(entriesAdded, &out)
        Self.put(UInt32(nodes.count), &out)
        for node in nodes {
            Self.put(node.master, &out)
            Self.put(UInt32(node.lp.count), &out)
            out.append(contentsOf: node.lp)
        }
        Self.put(UInt32(groups.count), &out)
        for name in sortedGroupNames {
            let group = groups[name]!
            Self.put(UInt32(name.count), &out)
            out.append(contentsOf: name)
            Self.put(group.lastID, &out)
            Self.put(UInt64(bitPattern: group.entriesRead), &out)
            let consumers = group.sortedConsumers
            var index: [[UInt8]: UInt32] = [:]
            Self.put(UInt32(consumers.count), &out)
            for (i, consumer) in consumers.enumerated() {
                index[consumer.name] = UInt32(i)
                Self.put(UInt32(consumer.name.count), &out)
                out.append(contentsOf: consumer.name)
                Self.put(UInt64(bitPattern: consumer.seenTime), &out)
            }
            Self.put(UInt32(group.pel.count), &out)
            group.pel.forEach { id, nack in
                Self.put(id, &out)
                Self.put(UInt64(bitPattern: nack.deliveryTime), &out)
                Self.put(nack.deliveryCount, &out)
                Self.put(index[nack.consumer] ?? 0, &out)
                return true
            }
        }
        return out
    }

    convenience init(decoding bytes: [UInt8]) throws(ReplyError) {
        self.init()
        var r = ByteReader(bytes)
        guard try r.byte() == Self.version else { throw .corruptValue }
        let length = try r.u64()
        let last = try r.id(), first = try r.id(), maxDeleted = try r.id()
        let added = try r.u64()
        let nodeCount = try r.u32()
        for _ in 0..<nodeCount {
            let master = try r.id()
            let lp = try r.take(Int(try r.u32()))
            guard lp.count >= 7, Listpack.totalBytes(lp) == lp.count, lp[lp.count - 1] == Listpack.end else {
                throw .corruptValue
            }
            loadNode(master: master, lp: lp)
        }
        guard length <= UInt64(Int.max) else { throw .corruptValue }
        load(length: Int(length), lastID: last, firstID: first, maxDeletedID: maxDeleted, entriesAdded: added)
        let groupCount = try r.u32()
        for _ in 0..<groupCount {
            let name = try r.take(Int(try r.u32()))
            var group = StreamGroup(name: name, lastID: try r.id(), entriesRead: Int64(bitPattern: try r.u64()))
            var consumers: [[UInt8]] = []
            for _ in 0..<(try r.u32()) {
                let consumer = try r.take(Int(try r.u32()))
                guard group.createConsumer(consumer, now: Int64(bitPattern: try r.u64())) else { throw .corruptValue }
                consumers.append(consumer)
            }
            for _ in 0..<(try r.u32()) {
                let id = try r.id()
                let time = Int64(bitPattern: try r.u64()), count = try r.u64()
                let index = Int(try r.u32())
                guard index < consumers.count,
                      group.loadPending(id, StreamNACK(deliveryTime: time, deliveryCount: count, consumer: consumers[index]))
                else { throw .corruptValue }
            }
            guard groups.updateValue(group, forKey: name) == nil else { throw .corruptValue }
        }
        guard r.atEnd else { throw .corruptValue }
    }

    private static func put(_ v: UInt64, _ out: inout [UInt8]) {
        for k in 0..<8 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(k)))) }
    }

    private static func put(_ v: UInt32, _ out: inout [UInt8]) {
        for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(k)))) }
    }

    private static func put(_ id: StreamID, _ out: inout [UInt8]) {
        put(id.ms, &out)
        put(id.seq, &out)
    }
}

/// The stream's fixed-width fields, refusing anything short.
private extension ByteReader {
    mutating func u64() throws(ReplyError) -> UInt64 {
        guard bytes.count - index >= 8 else { throw .corruptValue }
        var v: UInt64 = 0
        for k in 0..<8 { v |= UInt64(bytes[index + k]) << (8 * UInt64(k)) }
        index += 8
        return v
    }

    mutating func u32() throws(ReplyError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw .corruptValue }
        var v: UInt32 = 0
        for k in 0..<4 { v |= UInt32(bytes[index + k]) << (8 * UInt32(k)) }
        index += 4
        return v
    }

    mutating func id() throws(ReplyError) -> StreamID {
        StreamID(ms: try u64(), seq: try u64())
    }
}
