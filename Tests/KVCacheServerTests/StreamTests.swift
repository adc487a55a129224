import Foundation
import SQLiteKVCache
import Testing
@testable import KVCacheServer

private func hex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = text.startIndex
    while i < text.endIndex {
        let j = text.index(i, offsetBy: 2)
        out.append(UInt8(text[i..<j], radix: 16)!)
        i = j
    }
    return out
}

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

private func id(_ ms: UInt64, _ seq: UInt64) -> StreamID { StreamID(ms: ms, seq: seq) }

/// Every entry's ID and fields, in order.
private func contents(_ s: StreamValue) -> [(String, [String])] {
    var out: [(String, [String])] = []
    s.forEach { e in
        out.append((e.id.text, s.fields(of: e).map { String(decoding: $0, as: UTF8.self) }))
        return true
    }
    return out
}

private func streamEntry(_ stream: StreamValue) -> StoredEntry {
    StoredEntry(key: bytes("s"), row: Row(storageDate: 0, expiresAt: nil, kind: .stream, metadata: [], value: .live(stream)))
}

@Suite("Stream IDs")
struct StreamIDTests {
    @Test(arguments: [
        ("1-2", id(1, 2)), ("5", id(5, 0)), ("18446744073709551615-18446744073709551615", .max),
        ("+7-1", id(7, 1)), (" 3-4", id(3, 4)), ("007-1", id(7, 1)),
    ])
    func parsesAsRedis(text: String, expected: StreamID) throws {
        #expect(try StreamIDParse.strict(bytes(text)) == expected)
    }

    @Test(arguments: ["", "-", "+", "1-", "-1", "a-1", "1-b", "1-2-3", "18446744073709551616-0", "1.5"])
    func refusesWhatRedisRefuses(text: String) {
        #expect(throws: ReplyError.invalidStreamID) { try StreamIDParse.strict(bytes(text)) }
    }

    @Test func rangeBoundsAndSpecialIDs() throws {
        #expect(try StreamIDParse.parse(bytes("-"), strict: false).id == .zero)
        #expect(try StreamIDParse.parse(bytes("+"), strict: false).id == .max)
        #expect(try StreamIDParse.rangeBound(bytes("(1-5"), missingSeq: 0, start: true) == id(1, 6))
        #expect(try StreamIDParse.rangeBound(bytes("(3"), missingSeq: .max, start: false) == id(3, .max - 1))
        #expect(try StreamIDParse.rangeBound(bytes("(0-0"), missingSeq: 0, start: false) == nil)
        #expect(try StreamIDParse.rangeBound(bytes("7"), missingSeq: .max, start: false) == id(7, .max))
        let auto = try StreamIDParse.parse(bytes("9-*"), strict: true, allowAutoSeq: true)
        #expect(auto.id == id(9, 0) && !auto.seqGiven)
        #expect(StreamID.next(after: id(10, 4), now: 9) == id(10, 5))
        #expect(StreamID.next(after: id(10, 4), now: 11) == id(11, 0))
        #expect(StreamID.max.successor == nil && StreamID.zero.predecessor == nil)
        #expect(id(1, 2).bigEndianBytes == [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2])
        #expect(StreamID(bigEndian: id(1, 2).bigEndianBytes) == id(1, 2))
    }
}

@Suite("Listpacks")
struct ListpackTests {
    @Test(arguments: [
        ("0", [0x00]), ("127", [0x7f]), ("128", [0xc0, 0x80]), ("-1", [0xdf, 0xff]), ("4095", [0xcf, 0xff]),
        ("-4096", [0xd0, 0x00]), ("32767", [0xf1, 0xff, 0x7f]), ("8388607", [0xf2, 0xff, 0xff, 0x7f]),
        ("2147483647", [0xf3, 0xff, 0xff, 0xff, 0x7f]), ("abc", [0x83, 0x61, 0x62, 0x63]), ("01", [0x82, 0x30, 0x31]),
    ])
    func encodesElementsAsRedis(text: String, encoding: [Int]) {
        var out: [UInt8] = []
        Listpack.encode(bytes(text), into: &out)
        #expect(out == encoding.map { UInt8($0) })
    }

    @Test func appendsWalksBothWaysAndReplaces() throws {
        var lp = Listpack.empty()
        let values = ["1", "hello", String(repeating: "x", count: 200), "-70000", String(repeating: "y", count: 5000)]
        for v in values { Listpack.append(&lp, bytes(v)) }
        #expect(Listpack.totalBytes(lp) == lp.count && Listpack.storedCount(lp) == 5 && Listpack.isValid(lp))
        var forward: [String] = [], p = Listpack.first(lp)
        while let at = p {
            forward.append(String(decoding: Listpack.bytes(lp, at: at), as: UTF8.self))
            p = Listpack.next(lp, at)
        }
        #expect(forward == values)
        var backward: [String] = [], q = Listpack.last(lp)
        while let at = q {
            backward.append(String(decoding: Listpack.bytes(lp, at: at), as: UTF8.self))
            q = Listpack.prev(lp, at)
        }
        #expect(backward == values.reversed())
        // An integer that needs more bytes moves what follows it.
        #expect(Listpack.replaceInteger(&lp, at: Listpack.first(lp)!, 100_000) == 3)
        #expect(Listpack.integer(lp, Listpack.first(lp)!) == 100_000 && Listpack.isValid(lp))
        #expect(try Listpack.elements(lp).map { String(decoding: $0, as: UTF8.self) } == ["100000"] + values.dropFirst())
    }

    @Test func refusesMalformedListpacks() {
        var lp = Listpack.empty()
        Listpack.append(&lp, bytes("abc"))
        var wrongTotal = lp
        wrongTotal[0] += 1
        var wrongBacklen = lp
        wrongBacklen[wrongBacklen.count - 2] = 9
        var wrongCount = lp
        wrongCount[4] = 2
        for bad in [wrongTotal, wrongBacklen, wrongCount, Array(lp.dropLast()), [0xff]] {
            #expect(!Listpack.isValid(bad))
        }
    }
}

@Suite("Stream values")
struct StreamValueTests {
    var limits = EncodingLimits()

    @Test func appendsWithRedisIDRules() throws {
        let s = StreamValue()
        #expect(try s.append([bytes("a"), bytes("1")], id: id(5, 3), seqGiven: true, now: 0, limits: limits) == id(5, 3))
        #expect(try s.append([bytes("a"), bytes("2")], id: id(5, 0), seqGiven: false, now: 0, limits: limits) == id(5, 4))
        #expect(try s.append([bytes("a"), bytes("3")], id: id(9, 0), seqGiven: false, now: 0, limits: limits) == id(9, 0))
        #expect(try s.append([bytes("a"), bytes("4")], id: nil, seqGiven: true, now: 3, limits: limits) == id(9, 1))
        #expect(try s.append([bytes("a"), bytes("5")], id: nil, seqGiven: true, now: 20, limits: limits) == id(20, 0))
        #expect(throws: StreamValue.AppendFailure.notGreater) {
            try s.append([bytes("b"), bytes("x")], id: id(20, 0), seqGiven: true, now: 0, limits: limits)
        }
        _ = try s.append([bytes("b"), bytes("x")], id: id(30, .max), seqGiven: true, now: 0, limits: limits)
        // The generated sequence would overflow: Redis answers "too large" then.
        #expect(throws: StreamValue.AppendFailure.tooLarge) {
            try s.append([bytes("b"), bytes("x")], id: id(30, 0), seqGiven: false, now: 0, limits: limits)
        }
        #expect(s.length == 6 && s.entriesAdded == 6 && s.firstID == id(5, 3) && s.lastID == id(30, .max))
        #expect(contents(s).map(\.1) == [["a", "1"], ["a", "2"], ["a", "3"], ["a", "4"], ["a", "5"], ["b", "x"]])
    }

    @Test func nodesSplitAtTheEntryAndByteLimits() throws {
        var small = limits
        small.streamNodeMaxEntries = 3
        let s = StreamValue()
        for i in 1...10 { _ = try s.append([bytes("f"), bytes("\(i)")], id: id(UInt64(i), 0), seqGiven: true, now: 0, limits: small) }
        #expect(s.nodes.count == 4 && s.nodes.map(\.master) == [id(1, 0), id(4, 0), id(7, 0), id(10, 0)])
        var tiny = limits
        tiny.streamNodeMaxBytes = 100
        let t = StreamValue()
        for i in 1...10 {
            _ = try t.append([bytes("f"), Array(repeating: 65, count: 30)], id: id(UInt64(i), 0), seqGiven: true, now: 0, limits: tiny)
        }
        #expect(t.nodes.allSatisfy { $0.lp.count < 100 + 40 } && t.nodes.count > 3)
        // A full node is allocated to fit, the last one keeps its 100 bytes up front (the byte limit is below 4096).
        #expect(t.nodes.last!.allocated == RedisFootprint.allocation(max(100, t.nodes.last!.lp.count)))
    }

    @Test func deletesMarkTombstonesAndDropEmptiedNodes() throws {
        var small = limits
        small.streamNodeMaxEntries = 2
        let s = StreamValue()
        for i in 1...5 { _ = try s.append([bytes("f"), bytes("\(i)")], id: id(UInt64(i), 0), seqGiven: true, now: 0, limits: small) }
        #expect(s.delete(id(1, 0)) && !s.delete(id(1, 0)) && !s.delete(id(9, 0)))
        s.noteDeleted([id(1, 0)], firstWasDeleted: true)
        #expect(s.firstID == id(2, 0) && s.maxDeletedID == id(1, 0) && s.nodes.count == 3)
        #expect(s.delete(id(2, 0)))  // the node's last live entry: the node goes
        s.noteDeleted([id(2, 0)], firstWasDeleted: true)
        #expect(s.nodes.count == 2 && s.firstID == id(3, 0) && s.length == 3)
        #expect(s.edgeID(first: false, skipTombstones: true) == id(5, 0))
        #expect(contents(s).map(\.0) == ["3-0", "4-0", "5-0"])
        #expect(contents(s).map(\.0).reversed() == {
            var ids: [String] = []
            s.forEach(reverse: true) { ids.append($0.id.text); return true }
            return ids
        }())
    }

    @Test func trimsAsRedisDoes() throws {
        let make = { () throws -> StreamValue in
            let s = StreamValue()
            for i in 1...1000 {
                _ = try s.append([bytes("item"), bytes("\(i)")], id: id(UInt64(i), 0), seqGiven: true, now: 0, limits: self.limits)
            }
            return s
        }
        // Exact, approximate (whole nodes of 100), limited, by ID.
        let exact = try make()
        #expect(exact.trim(StreamTrim(strategy: .maxLength(666), approximate: false, limit: 0)) == 334 && exact.length == 666)
        #expect(exact.firstID == id(335, 0))
        let approx = try make()
        #expect(approx.trim(StreamTrim(strategy: .maxLength(555), approximate: true, limit: 10_000)) == 400)
        #expect(approx.length == 600 && approx.nodes.count == 6)
        let limited = try make()
        #expect(limited.trim(StreamTrim(strategy: .maxLength(0), approximate: true, limit: 250)) == 200)
        let byID = try make()
        #expect(byID.trim(StreamTrim(strategy: .minID(id(995, 0)), approximate: false, limit: 0)) == 994)
        #expect(contents(byID).first?.0 == "995-0" && byID.length == 6)
    }

    @Test func encodingRoundTripsAndItsSizeIsKeptExactly() throws {
        var small = limits
        small.streamNodeMaxEntries = 4
        let s = StreamValue()
        func check() throws {
            #expect(s.encodedSize == s.encoded().count)
            let back = try StreamValue(decoding: s.encoded())
            #expect(back.encoded() == s.encoded())
        }
        for i in 1...20 {
            _ = try s.append(i % 3 == 0 ? [bytes("other"), bytes("\(i)")] : [bytes("f"), bytes("\(i)"), bytes("g"), bytes("x")],
                             id: id(UInt64(i), 0), seqGiven: true, now: 0, limits: small)
            try check()
        }
        s.groups[bytes("g1")] = StreamGroup(name: bytes("g1"), lastID: .zero, entriesRead: -1)
        s.groups[bytes("g1")]!.createConsumer(bytes("alice"), now: 7)
        s.groups[bytes("g1")]!.createConsumer(bytes("bob"), now: 8)
        for i in 1...6 { s.groups[bytes("g1")]!.deliver(id(UInt64(i), 0), to: bytes(i % 2 == 0 ? "alice" : "bob"), now: 100) }
        try check()
        s.groups[bytes("g1")]!.claim(id(3, 0), by: bytes("alice"), deliveryTime: 5, deliveryCount: 9)
        let acknowledged = s.groups[bytes("g1")]!.acknowledge(id(2, 0))
        #expect(acknowledged)
        let pendingOfBob = s.groups[bytes("g1")]!.deleteConsumer(bytes("bob"))
        #expect(pendingOfBob == 2)
        try check()
        _ = s.trim(StreamTrim(strategy: .maxLength(7), approximate: false, limit: 0))
        _ = s.delete(id(18, 0))
        try check()
        let back = try StreamValue(decoding: s.encoded())
        #expect(back.groups[bytes("g1")]!.pel.ids == [id(3, 0), id(4, 0), id(6, 0)])
        #expect(back.groups[bytes("g1")]!.nack(id(3, 0)) == StreamNACK(deliveryTime: 5, deliveryCount: 9, consumer: bytes("alice")))
        #expect(back.groups[bytes("g1")]!.consumer(bytes("alice"))!.pending.count == 3)
        #expect(throws: ReplyError.corruptValue) { try StreamValue(decoding: Array(s.encoded().dropLast())) }
    }

    @Test func groupCountersFollowRedis() throws {
        let s = StreamValue()
        for i in 1...5 { _ = try s.append([bytes("f"), bytes("v")], id: id(UInt64(i), 0), seqGiven: true, now: 0, limits: limits) }
        s.groups[bytes("g")] = StreamGroup(name: bytes("g"), lastID: .zero, entriesRead: -1)
        #expect(s.lag(of: s.groups[bytes("g")]!) == 5)
        s.advance(bytes("g"), to: id(1, 0))
        #expect(s.groups[bytes("g")]!.entriesRead == 1 && s.lag(of: s.groups[bytes("g")]!) == 4)
        _ = s.delete(id(3, 0))
        s.noteDeleted([id(3, 0)], firstWasDeleted: false)
        // A tombstone ahead: the counter is no longer known, nor the lag.
        s.advance(bytes("g"), to: id(2, 0))
        #expect(s.groups[bytes("g")]!.entriesRead == -1 && s.lag(of: s.groups[bytes("g")]!) == nil)
        s.advance(bytes("g"), to: id(5, 0))
        #expect(s.groups[bytes("g")]!.entriesRead == 5 && s.lag(of: s.groups[bytes("g")]!) == 0)
    }

    @Test func pendingMapsStayOrderedThroughInsertsAndRemoves() {
        var map = SortedIDMap<Int>()
        var model: [StreamID: Int] = [:]
        var rng = SystemRandomNumberGenerator()
        for i in 0..<3000 {
            let key = id(UInt64.random(in: 0..<800, using: &rng), 0)
            if i % 3 == 2 {
                #expect((map.remove(key) != nil) == (model.removeValue(forKey: key) != nil))
            } else {
                #expect(map.insert(key, i) == (model[key] == nil))
                if model[key] == nil { model[key] = i }
            }
        }
        #expect(map.ids == model.keys.sorted() && map.count == model.count)
        let sorted = model.keys.sorted()
        if let pivot = sorted.dropFirst(sorted.count / 2).first {
            #expect(map.lowerBound(pivot)?.id == pivot)
            #expect(map.lowerBound(StreamID(ms: pivot.ms, seq: 1))?.id == sorted.first { $0 > pivot })
        }
    }

    /// XINFO STREAM's radix-tree-nodes on redis-server with stream-node-max-entries 1
    /// after XADD of 1-0 … n-0.
    @Test(arguments: [(1, 2), (2, 6), (3, 8), (4, 10), (20, 42), (300, 604)])
    func radixTreeNodeCounts(keys: Int, nodes: Int) {
        #expect(RaxShape.nodeCount((1...keys).map { id(UInt64($0), 0) }) == nodes)
    }
}

@Suite("Streams in RDB")
struct StreamRDBTests {
    /// XADD s 1-1 a 1 b 2; XADD s 1-2 a 3 b 4; XADD s 5-0 other x; XDEL s 1-2 (redis-server 7.0.15).
    static let plain = "130110000000000000000100000000000000014042420000001900020101010201816102816202000102010001000101"
        + "010201050103010001010103010401050100010401dfff020101856f74686572068178020601ff0205000101010203000a00d19ac9096aa72cda"
    /// XADD g 10-0 f v; XADD g 11-0 f w; XGROUP CREATE g grp 0;
    /// XCLAIM g grp alice 0 10-0 TIME 1000 RETRYCOUNT 3 FORCE JUSTID.
    static let withGroup = "130110000000000000000a000000000000000028280000000f0002010001010181660200010201000100018176020401"
        + "0201010100018177020401ff020b000a000000020103677270000081ffffffffffffffff01000000000000000a0000000000000000e803000000"
        + "000000030105616c696365d266b433a201000001000000000000000a00000000000000000a00e5b0b8d61d77bbf2"

    @Test func dumpsAStreamByteForByteAsRedis() throws {
        let (kind, value) = try RDB.load(hex(Self.plain), limits: EncodingLimits())
        #expect(kind == .stream)
        let s = try StreamValue(decoding: value)
        #expect(contents(s).map(\.0) == ["1-1", "5-0"] && s.length == 2 && s.maxDeletedID == id(1, 2))
        #expect(try RDB.dump(streamEntry(s)) == hex(Self.plain))
        // MEMORY USAGE of the key after RESTORE on redis-server: 712 (listpacks allocated to fit).
        #expect(RedisFootprint.stream(s, samples: 5) + RedisFootprint.key(1) == 712)
        // Built by its commands it has the same bytes, and Redis's 4096-byte
        // node allocated up front: MEMORY USAGE 4728 there.
        let built = StreamValue()
        for (i, pairs) in [(id(1, 1), ["a", "1", "b", "2"]), (id(1, 2), ["a", "3", "b", "4"]), (id(5, 0), ["other", "x"])] {
            _ = try built.append(pairs.map(bytes), id: i, seqGiven: true, now: 0, limits: EncodingLimits())
        }
        #expect(built.delete(id(1, 2)))
        built.noteDeleted([id(1, 2)], firstWasDeleted: false)
        #expect(try RDB.dump(streamEntry(built)) == hex(Self.plain))
        #expect(RedisFootprint.stream(built, samples: 5) + RedisFootprint.key(1) == 4728)
    }

    @Test func restoresGroupsConsumersAndPendingEntries() throws {
        #expect(RDB.verify(hex(Self.withGroup)))
        let (_, value) = try RDB.load(hex(Self.withGroup), limits: EncodingLimits())
        let s = try StreamValue(decoding: value)
        let group = s.groups[bytes("grp")]!
        #expect(group.entriesRead == -1 && group.lastID == .zero && s.lag(of: group) == 2)
        #expect(group.nack(id(10, 0)) == StreamNACK(deliveryTime: 1000, deliveryCount: 3, consumer: bytes("alice")))
        #expect(group.consumer(bytes("alice"))!.seenTime == 1_796_163_790_546)
        #expect(try RDB.dump(streamEntry(s)) == hex(Self.withGroup))
        // MEMORY USAGE of the key after RESTORE on redis-server: 1781.
        #expect(RedisFootprint.stream(s, samples: 5) + RedisFootprint.key(1) == 1781)
    }

    @Test func loadsRedis6Streams() throws {
        // unit/type/stream-cgroups' "Loading from legacy (Redis <= v6.2.x, rdb_ver < 10) persistence".
        let payload = hex("0f011000000000000000010000000000000000c3404a405716570000002300020104010101846461746105000103010020010381610204"
            + "200a0001400a0062600a0002400a0063600a4022018164200a4039200a0065600a0005400a0066200a00ff020600020267310500040000"
            + "00000000000100000000000000003ef783437a01000001000000000000000200000000000000003ef783437a0100000100000000000000"
            + "0400000000000000003ef783437a01000001000000000000000500000000000000003ef783437a0100000101036331313ef783437a0100"
            + "00040000000000000001000000000000000000000000000000020000000000000000000000000000000400000000000000000000000000"
            + "00000500000000000000000267320000000009003d52ef6867521dfa")
        #expect(RDB.verify(payload))
        let (_, value) = try RDB.load(payload, limits: EncodingLimits())
        let s = try StreamValue(decoding: value)
        #expect(s.entriesAdded == 2 && s.maxDeletedID == .zero && s.length == 2)
        #expect(s.groups[bytes("g1")]!.entriesRead == 1 && s.groups[bytes("g2")]!.entriesRead == 0)
        #expect(s.lag(of: s.groups[bytes("g1")]!) == 1 && s.lag(of: s.groups[bytes("g2")]!) == 2)
    }

    @Test func refusesCorruptStreamPayloads() throws {
        var bad = hex(Self.plain)
        bad[30] ^= 0x40  // inside the first listpack
        let body = Array(bad[..<(bad.count - 8)])
        var fixed = body
        withUnsafeBytes(of: RDB.crc64(body).littleEndian) { fixed.append(contentsOf: $0) }
        #expect(throws: RDB.BadFormat.self) { try RDB.load(fixed, limits: EncodingLimits()) }
    }
}
