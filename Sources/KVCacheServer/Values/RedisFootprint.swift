import RESP

/// What a value would take in Redis 7.0's memory, as `MEMORY USAGE` reports
/// it there (object.c `objectComputeSize` plus the key's sds and its
/// `dictEntry`), with jemalloc 5.3's size classes: Debian's redis-server
/// answers `MEMORY USAGE` this way, so a client comparing the two servers,
/// or sizing a Redis from this one, reads the same figure. Collections are
/// sampled as Redis samples them: the first `samples` elements (0 = all)
/// stand for the average one.
///
/// Checked against redis-server 7.0.15 by test_memory.py: strings exactly,
/// collections within the tolerance that test states.
enum RedisFootprint {
    /// sizeof(robj), sizeof(dictEntry), sizeof(dict) (7.0), sizeof(quicklist),
    /// sizeof(quicklistNode), zset + zskiplist, a skiplist's 32-level header.
    static let object = 16, dictEntry = 24, dict = 56, quicklist = 40, quicklistNode = 40
    static let zsetAndSkiplist = 16 + 32, skiplistHeader = 640
    /// The bytes Redis packs into one list node (`list-max-listpack-size -2`).
    static let listNodeBytes = 8192

    /// The size class jemalloc gives a request of `n` bytes: 8, then steps
    /// of 16 to 128, then four classes per doubling (160 192 224 256 320 …).
    static func allocation(_ n: Int) -> Int {
        if n <= 8 { return 8 }
        if n <= 128 { return (n + 15) & ~15 }
        var base = 128
        while base * 2 < n { base *= 2 }
        let step = base / 4
        return base + (n - base + step - 1) / step * step
    }

    /// An sds string of `length` bytes as `sdsnewlen` allocates it: the
    /// smallest header for the length, the bytes and a terminating NUL.
    static func sds(_ length: Int) -> Int {
        let header = length < 32 ? 1 : length < 256 ? 3 : length < 65536 ? 5 : length < 1 << 32 ? 9 : 17
        return allocation(header + length + 1)
    }

    /// The key's own cost: its sds and the main dictionary's entry.
    static func key(_ length: Int) -> Int { sds(length) + dictEntry }

    /// A string value as SET leaves it: an integer inside the object (`int`),
    /// up to 44 bytes in one allocation with it (`embstr`), else `raw`.
    static func string(_ value: [UInt8]) -> Int {
        if value.count <= 20, parseStrictInt64(value) != nil { return object }
        if value.count <= 44 { return allocation(object + 3 + value.count + 1) }
        return object + sds(value.count)
    }

    /// One element's bytes in a listpack: its encoding (integers packed as
    /// 7, 13, 16, 24, 32 or 64 bits, strings after a 1, 2 or 5 byte header)
    /// and the back-length that lets a listpack be walked backwards.
    static func listpackEntry(_ element: [UInt8]) -> Int {
        let encoded: Int
        if element.count <= 20, let n = parseStrictInt64(element) {
            switch n {
            case 0...127: encoded = 1
            case -4096...4095: encoded = 2
            case -32768...32767: encoded = 3
            case -8_388_608...8_388_607: encoded = 4
            case -2_147_483_648...2_147_483_647: encoded = 5
            default: encoded = 9
            }
        } else {
            encoded = element.count + (element.count < 64 ? 1 : element.count < 4096 ? 2 : 5)
        }
        let back = encoded < 128 ? 1 : encoded < 16384 ? 2 : encoded < 2_097_152 ? 3 : encoded < 268_435_456 ? 4 : 5
        return encoded + back
    }

    /// A listpack holding `entries`: a 6-byte header, the entries, an end byte.
    static func listpack<S: Sequence>(_ entries: S) -> Int where S.Element == [UInt8] {
        allocation(7 + entries.reduce(0) { $0 + listpackEntry($1) })
    }

    /// A quicklist: elements packed into nodes of up to 8 KiB, the first
    /// `samples` nodes standing for the rest.
    static func list<S: Sequence>(_ elements: S, count: Int, samples: Int) -> Int where S.Element == [UInt8] {
        var nodes: [Int] = []  // each sampled node's listpack bytes
        var current = 7, inNode = 0, seen = 0
        let limit = samples == 0 ? Int.max : samples
        for element in elements {
            let size = listpackEntry(element)
            if inNode > 0, current + size > listNodeBytes {
                nodes.append(current)
                if nodes.count == limit { break }
                current = 7
                inNode = 0
            }
            current += size
            inNode += 1
            seen += 1
        }
        if inNode > 0, nodes.count < limit { nodes.append(current) }
        guard !nodes.isEmpty else { return object + quicklist }
        let sampled = nodes.reduce(0) { $0 + quicklistNode + allocation($1) }
        let average = Double(sampled) / Double(nodes.count)
        // The node count, from the elements seen per sampled node.
        let perNode = Double(seen) / Double(nodes.count)
        let total = max(Double(nodes.count), (Double(count) / perNode).rounded(.up))
        return object + quicklist + Int(average * total)
    }

    /// A set of integers (`intset`): an 8-byte header and each member at the
    /// width of the widest.
    static func intset(_ members: [Int64]) -> Int {
        let width = members.reduce(2) { w, n in
            n >= -32768 && n <= 32767 ? w : n >= -2_147_483_648 && n <= 2_147_483_647 ? max(w, 4) : 8
        }
        return object + allocation(8 + members.count * width)
    }

    /// A dictionary's table: its struct and a slot per power of two at or
    /// above the count (four at least), as Redis's expansion leaves it.
    static func table(count: Int) -> Int { dict + 8 * slots(count: count) }

    /// A dictionary's slots for `count` entries: the power of two at or
    /// above it, four at least.
    static func slots(count: Int) -> Int {
        var slots = 4
        while slots < count { slots *= 2 }
        return slots
    }

    /// The average of `sampled` per-element costs, scaled to `count`.
    static func scaled(_ sampled: [Int], count: Int) -> Int {
        guard !sampled.isEmpty else { return 0 }
        return Int(Double(sampled.reduce(0, +)) / Double(sampled.count) * Double(count))
    }

    /// A set kept as a hash table of members.
    static func hashtableSet<S: Sequence>(_ members: S, count: Int, samples: Int) -> Int where S.Element == [UInt8] {
        let costs = members.prefix(samples == 0 ? Int.max : samples).map { dictEntry + sds($0.count) }
        return object + table(count: count) + scaled(costs, count: count)
    }

    /// A hash kept as a hash table of field and value.
    static func hashtableHash<S: Sequence>(_ pairs: S, count: Int, samples: Int) -> Int
    where S.Element == ([UInt8], [UInt8]) {
        let costs = pairs.prefix(samples == 0 ? Int.max : samples).map { dictEntry + sds($0.0.count) + sds($0.1.count) }
        return object + table(count: count) + scaled(costs, count: count)
    }

    /// A sorted set kept as a skiplist beside a member-to-score table; a
    /// node's levels are random in Redis, so the average node (1.33 levels,
    /// 52 bytes) stands for each.
    static func skiplist<S: Sequence>(_ members: S, count: Int, samples: Int) -> Int where S.Element == [UInt8] {
        let costs = members.prefix(samples == 0 ? Int.max : samples).map { sds($0.count) + dictEntry + 52 }
        return object + zsetAndSkiplist + table(count: count) + skiplistHeader + scaled(costs, count: count)
    }

    /// A score as a sorted set's listpack stores it: Redis's shortest
    /// round-trip text of the double, packed as an integer when it is one.
    static func scoreEntry(_ score: Double) -> [UInt8] {
        if score == score.rounded(), abs(score) < 1e17 { return Array(String(Int64(score)).utf8) }
        return Array("\(score)".utf8)
    }
}

extension RedisFootprint {
    /// A stream as Redis's objectComputeSize counts one: the object and
    /// its `stream` struct (80 bytes), its radix tree (16 bytes per key
    /// and 244 per node, Redis's own estimate), the listpacks' allocations
    /// (the first `samples` averaged for all but the last, which counts as
    /// it is), and per group its struct, its pending list's tree and
    /// NACKs (24 bytes each), per consumer its struct, name and tree.
    static func stream(_ stream: StreamValue, samples: Int) -> Int {
        func tree(_ ids: [StreamID]) -> Int { ids.count * 16 + RaxShape.nodeCount(ids) * (4 + 8 * 30) }
        var size = object + 80 + tree(stream.nodes.map(\.master))
        let wanted = samples == 0 ? stream.nodes.count : samples
        let sampled = stream.nodes.prefix(wanted)
        var listpacks = sampled.reduce(0) { $0 + $1.allocated }
        if stream.nodes.count <= sampled.count {
            size += listpacks
        } else {
            if !sampled.isEmpty { listpacks /= sampled.count }
            size += listpacks * (stream.nodes.count - 1) + stream.nodes[stream.nodes.count - 1].allocated
        }
        for group in stream.groups.values {
            size += 40 + tree(group.pel.ids) + 24 * group.pel.count
            for consumer in group.consumers.values {
                size += 24 + consumer.name.count + tree(consumer.pending.ids)
            }
        }
        return size
    }
}
