import Testing
@testable import KVCacheServer

private func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = hex.startIndex
    while i < hex.endIndex {
        let next = hex.index(i, offsetBy: 2)
        out.append(UInt8(hex[i..<next], radix: 16)!)
        i = next
    }
    return out
}

/// FNV-1a over a value: a fingerprint to compare with what redis-server 7.0.15 made.
private func fingerprint(_ value: [UInt8]) -> UInt64 {
    var h: UInt64 = 1469598103934665603
    for byte in value { h = (h ^ UInt64(byte)) &* 1099511628211 }
    return h
}

private func hll(adding elements: [String], maxBytes: Int = HyperLogLog.defaultSparseMaxBytes) throws -> HyperLogLog {
    var hll = HyperLogLog()
    for element in elements { _ = try hll.add(Array(element.utf8), sparseMaxBytes: maxBytes) }
    hll.invalidateCache()
    return hll
}

/// HyperLogLogs in Redis's exact bytes: the expected values were made by
/// redis-server 7.0.15 (PFADD, then GET) for the same elements.
@Suite("HyperLogLog")
struct HyperLogLogTests {
    @Test func emptyIsSparseXZeroRuns() throws {
        let empty = HyperLogLog()
        #expect(empty.bytes == bytes(hex: "48594c4c01000000000000000000000" + "07fff"))
        #expect(empty.isSparse)
        #expect(try empty.count() == 0)
        #expect(empty.decodedOpcodes() == "Z:16384")
    }

    @Test func threeElementsMatchRedisBytes() throws {
        var three = try hll(adding: ["a", "b", "c"])
        #expect(three.bytes == bytes(hex: "48594c4c01000000000000000000008060f38050b1844bfb80425a"))
        #expect(three.cachedCardinality == nil)
        let card = try three.count()
        #expect(card == 3)
        three.setCachedCardinality(card)
        #expect(three.bytes == bytes(hex: "48594c4c01000000030000000000000060f38050b1844bfb80425a"))
    }

    @Test func sparseThousandMatchesRedis() throws {
        // PFADD of "0"…"999", then PFCOUNT (which caches the count), then GET.
        var h = try hll(adding: (0..<1000).map(String.init))
        #expect(h.isSparse)
        #expect(h.bytes.count == 1923)
        #expect(try h.count() == 1001)
        h.setCachedCardinality(1001)
        #expect(fingerprint(h.bytes) == 18002217244654610496)
    }

    @Test func denseHundredThousandMatchesRedis() throws {
        var h = try hll(adding: (1...100_000).map(String.init))
        #expect(!h.isSparse)
        #expect(h.bytes.count == HyperLogLog.denseSize)
        #expect(try h.count() == 99562)
        h.setCachedCardinality(99562)
        #expect(fingerprint(h.bytes) == 7909661104494560596)
    }

    @Test func sparseAndDenseAgree() throws {
        for n in [0, 1, 10, 100, 700] {
            let elements = (0..<n).map { "e\($0)" }
            let sparse = try hll(adding: elements)
            var dense = HyperLogLog()
            try dense.convertToDense()
            for element in elements { _ = try dense.add(Array(element.utf8), sparseMaxBytes: 3000) }
            #expect(sparse.isSparse && !dense.isSparse)
            #expect(try sparse.count() == dense.count())
            var converted = sparse
            try converted.convertToDense()
            #expect(converted.registers() == dense.registers())
        }
    }

    @Test func mergeMatchesRedisPFMERGE() throws {
        let three = try hll(adding: ["a", "b", "c"])
        let thousand = try hll(adding: (0..<1000).map(String.init))
        var max = [UInt8](repeating: 0, count: HyperLogLog.registerCount)
        try three.merge(into: &max)
        try thousand.merge(into: &max)
        var merged = HyperLogLog()
        for (i, value) in max.enumerated() where value != 0 { _ = try merged.set(i, Int(value), sparseMaxBytes: 3000) }
        merged.invalidateCache()
        #expect(HyperLogLog.count(registers: max) == 1004)
        #expect(try merged.count() == 1004)
        merged.setCachedCardinality(1004)
        #expect(fingerprint(merged.bytes) == 1181497565894195183)
    }

    @Test func murmurHashIsRedis() {
        // hllPatLen of "a": register and run as Redis computes them.
        let (register, count) = HyperLogLog.patternLength(Array("a".utf8))
        var h = HyperLogLog()
        _ = try? h.sparseSet(register, count, maxBytes: 3000)
        #expect(h.bytes == (try? hll(adding: ["a"]).bytes))
        #expect(HyperLogLog.murmurHash64A([UInt8](), seed: 0) == 0)
    }

    @Test func validation() {
        #expect(throws: HyperLogLog.Failure.notHLL) { try HyperLogLog(validating: Array("hello".utf8)) }
        var wrongMagic = HyperLogLog().bytes
        wrongMagic[0] = 0x30
        #expect(throws: HyperLogLog.Failure.notHLL) { try HyperLogLog(validating: wrongMagic) }
        var badEncoding = HyperLogLog().bytes
        badEncoding[4] = 2
        #expect(throws: HyperLogLog.Failure.notHLL) { try HyperLogLog(validating: badEncoding) }
        var shortDense = HyperLogLog().bytes
        shortDense[4] = 0
        #expect(throws: HyperLogLog.Failure.notHLL) { try HyperLogLog(validating: shortDense) }
    }

    @Test func corruptSparseRegistersAreDetected() throws {
        var tail = try hll(adding: ["a", "b", "c"]).bytes
        tail += Array("hello".utf8)
        let damaged = try HyperLogLog(validating: tail)
        #expect(throws: HyperLogLog.Failure.corrupt) { try damaged.count() }
        // XZERO runs that overflow the register count.
        var overflow = Array(HyperLogLog().bytes[0..<16])
        for _ in 0..<3 { overflow += [0x7f, 0xff] }
        overflow.append(0xff)
        let long = try HyperLogLog(validating: overflow)
        var max = [UInt8](repeating: 0, count: HyperLogLog.registerCount)
        #expect(throws: HyperLogLog.Failure.corrupt) { try long.merge(into: &max) }
        var copy = long
        #expect(throws: HyperLogLog.Failure.corrupt) { try copy.convertToDense() }
    }

    @Test func largeRegisterPromotesToDense() throws {
        var h = HyperLogLog()
        #expect(try h.sparseSet(5, 33, maxBytes: 3000))
        #expect(!h.isSparse)
        #expect(h.registers()[5] == 33)
        var small = HyperLogLog()
        _ = try small.sparseSet(100, 3, maxBytes: 20)
        #expect(!small.isSparse, "past hll-sparse-max-bytes the HLL turns dense")
    }
}
