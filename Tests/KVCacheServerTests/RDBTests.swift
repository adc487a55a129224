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

private func entry(_ kind: ValueKind, _ value: [UInt8]) -> StoredEntry {
    StoredEntry(key: Array("k".utf8), row: Row(storageDate: 0, expiresAt: nil, kind: kind, metadata: [], value: .bytes(value)))
}

/// DUMP and RESTORE payloads, against what Redis 7.0.15 produced for the
/// same values (`DUMP` of each key, hex).
@Suite("RDB and LZF")
struct RDBTests {
    static let redisStrings: [(String, String)] = [
        ("hello", "000568656c6c6f0a006372df766534200a"),
        ("12345", "00c139300a009d94ea2793fc08b9"),
        (String(repeating: "a", count: 100), "00c3094064016161e057000161610a00e8a3b507b06df271"),
    ]

    @Test(arguments: redisStrings.indices)
    func stringsDumpAsRedisDoes(index: Int) throws {
        let (value, payload) = Self.redisStrings[index]
        #expect(try RDB.dump(entry(.string, Array(value.utf8))) == hex(payload))
        #expect(RDB.verify(hex(payload)))
        let (kind, loaded) = try RDB.load(hex(payload), limits: EncodingLimits())
        #expect(kind == .string && loaded == Array(value.utf8))
    }

    @Test func redisCompactEncodingsLoad() throws {
        let limits = EncodingLimits()
        // RPUSH l a b c: a quicklist of listpacks.
        let (listKind, list) = try RDB.load(hex("12010210100000000300816102816202816302ff0a00c818b90c9533529e"), limits: limits)
        #expect(listKind == .list)
        #expect(Array(try ListValue(decoding: list).items) == [[97], [98], [99]])
        // SADD is 1 2 3: an intset.
        let (setKind, set) = try RDB.load(hex("0b0e02000000030000000100020003000a00a5025ce26d6e4d1b"), limits: limits)
        #expect(setKind == .set)
        #expect(try SetValue(decoding: set).allMembers == [[49], [50], [51]])
        // HSET h f v g w: a listpack.
        let (hashKind, hash) = try RDB.load(hex("1013130000000400816602817602816702817702ff0a00d9dec5c9160fb235"), limits: limits)
        #expect(hashKind == .hash)
        #expect(try HashValue(decoding: hash).values == [[118], [119]])
        // ZADD z 1 a 2.5 b: a listpack.
        let (zsetKind, zset) = try RDB.load(hex("1114140000000400816102010181620283322e3504ff0a00d44c6ea4f644d9d7"), limits: limits)
        #expect(zsetKind == .zset)
        #expect(try ZSetValue(decoding: zset).allElements.map(\.score) == [1, 2.5])
    }

    @Test(arguments: [ValueKind.list, .set, .hash, .zset])
    func collectionsRoundTrip(kind: ValueKind) throws {
        let limits = EncodingLimits()
        let value: [UInt8]
        switch kind {
        case .list: value = ListValue((0..<50).map { Array("item \($0)".utf8) }).encoded()
        case .set:
            let set = SetValue()
            for i in 0..<50 { set.add(Array("m\(i)".utf8), limits: limits) }
            value = set.encoded()
        case .hash:
            let hash = HashValue()
            for i in 0..<50 { hash.set(Array("f\(i)".utf8), Array(String(repeating: "v", count: i).utf8)) }
            hash.settleEncoding(limits: limits)
            value = hash.encoded()
        default:
            let zset = ZSetValue()
            for i in 0..<50 { zset.set(Array("m\(i)".utf8), score: Double(i) / 3) }
            value = zset.encoded()
        }
        let payload = try RDB.dump(entry(kind, value))
        #expect(RDB.verify(payload))
        let (loadedKind, loaded) = try RDB.load(payload, limits: limits)
        #expect(loadedKind == kind && loaded == value)
    }

    @Test func aChangedByteFailsTheChecksum() throws {
        var payload = hex(Self.redisStrings[0].1)
        payload[2] ^= 1
        #expect(!RDB.verify(payload))
        #expect(!RDB.verify([0, 1, 2]))
    }

    @Test func crc64IsRedisCRC() {
        // Redis's crc64.c self-test: crc64(0, "123456789") = 0xe9c6d914c4b8d9ca.
        #expect(RDB.crc64(Array("123456789".utf8)) == 0xe9c6_d914_c4b8_d9ca)
    }

    static let lzfInputs: [[UInt8]] = [
        Array(String(repeating: "abcabcabc", count: 100).utf8),
        Array("The quick brown fox jumps over the lazy dog. The quick brown fox.".utf8),
        (0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7919 % 251) },
        [UInt8](repeating: 0, count: 70_000),
    ]

    @Test(arguments: lzfInputs)
    func lzfRoundTrips(input: [UInt8]) throws {
        let compressed = try #require(LZF.compress(input, limit: input.count))
        #expect(compressed.count < input.count)
        #expect(LZF.decompress(compressed, length: input.count) == input)
        // A wrong length is refused, never overrun.
        #expect(LZF.decompress(compressed, length: input.count - 1) == nil)
    }

    @Test func lzfGivesUpOnIncompressibleInput() {
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<1000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        #expect(LZF.compress(noise, limit: noise.count - 1) == nil)
    }
}
