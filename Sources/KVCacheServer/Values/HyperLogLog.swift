import Foundation

/// A HyperLogLog in Redis 7.0's representation (`hyperloglog.c`), kept in
/// a string value: a 16-byte header (`HYLL`, the encoding, three zero
/// bytes, the cached cardinality in 8 little-endian bytes whose top bit
/// marks it stale), then the registers. 16,384 registers of 6 bits each,
/// either dense (12,288 bytes) or sparse (run-length opcodes: ZERO
/// `00xxxxxx`, XZERO `01xxxxxx xxxxxxxx`, VAL `1vvvvvxx`). Elements are
/// hashed with Redis's MurmurHash64A (seed 0xadc83b19), so the same
/// elements give the same bytes and the same count as Redis, and a DUMP of
/// one restores on Redis.
///
/// Pure functions of bytes: the commands (`HyperLogLogCommands`) load the
/// string, change it here and store it back.
struct HyperLogLog {
    static let p = 14
    static let q = 64 - p
    static let registerCount = 1 << p
    static let registerMask = UInt64(registerCount - 1)
    static let bits = 6
    static let registerMax = (1 << bits) - 1
    static let headerSize = 16
    static let denseSize = headerSize + (registerCount * bits + 7) / 8
    static let denseEncoding: UInt8 = 0
    static let sparseEncoding: UInt8 = 1
    static let sparseValueMaxValue = 32
    static let sparseValueMaxLength = 4
    static let sparseZeroMaxLength = 64
    static let sparseXZeroMaxLength = 16384
    static let alphaInf = 0.721347520444481703680
    static let defaultSparseMaxBytes = 3000

    /// The whole string value: header and registers.
    var bytes: [UInt8]

    /// What is wrong with a value given as a HyperLogLog.
    enum Failure: Error, Equatable {
        /// Not an HLL at all (Redis answers WRONGTYPE).
        case notHLL
        /// An HLL whose registers are damaged (Redis answers INVALIDOBJ).
        case corrupt
    }

    /// A new, empty HLL: sparse, every register zero (XZERO opcodes), cached count 0.
    init() {
        var value = [UInt8](repeating: 0, count: Self.headerSize)
        value[0] = 0x48; value[1] = 0x59; value[2] = 0x4c; value[3] = 0x4c  // "HYLL"
        value[4] = Self.sparseEncoding
        var left = Self.registerCount
        while left > 0 {
            let run = min(left, Self.sparseXZeroMaxLength)
            Self.appendXZero(run, to: &value)
            left -= run
        }
        bytes = value
    }

    /// Checks a string as Redis's `isHLLObjectOrReply`: the magic, a known
    /// encoding, and the exact size of a dense one. The registers of a
    /// sparse one are checked where they are read.
    /// - Throws: `.notHLL`.
    init(validating value: [UInt8]) throws(Failure) {
        guard value.count >= Self.headerSize, value[0] == 0x48, value[1] == 0x59, value[2] == 0x4c, value[3] == 0x4c,
              value[4] <= Self.sparseEncoding else { throw .notHLL }
        if value[4] == Self.denseEncoding && value.count != Self.denseSize { throw .notHLL }
        bytes = value
    }

    var isSparse: Bool { bytes[4] == Self.sparseEncoding }

    // MARK: The cached cardinality

    /// The cached cardinality, when valid.
    var cachedCardinality: UInt64? {
        guard bytes[15] & 0x80 == 0 else { return nil }
        var card: UInt64 = 0
        for i in 0..<8 { card |= UInt64(bytes[8 + i]) << UInt64(8 * i) }
        return card
    }

    mutating func setCachedCardinality(_ card: UInt64) {
        for i in 0..<8 { bytes[8 + i] = UInt8(truncatingIfNeeded: card >> UInt64(8 * i)) }
    }

    mutating func invalidateCache() { bytes[15] |= 0x80 }

    // MARK: Hashing

    /// Redis's MurmurHash64A (MurmurHash2, 64-bit, read little-endian).
    static func murmurHash64A(_ key: some Collection<UInt8>, seed: UInt32) -> UInt64 {
        let m: UInt64 = 0xc6a4a7935bd1e995
        let r: UInt64 = 47
        let data = Array(key)
        let len = data.count
        var h = UInt64(seed) ^ (UInt64(len) &* m)
        let blocks = len - (len & 7)
        var i = 0
        while i < blocks {
            var k: UInt64 = 0
            for j in 0..<8 { k |= UInt64(data[i + j]) << UInt64(8 * j) }
            k = k &* m
            k ^= k >> r
            k = k &* m
            h ^= k
            h = h &* m
            i += 8
        }
        let tail = len & 7
        if tail > 0 {
            for j in stride(from: tail - 1, through: 0, by: -1) { h ^= UInt64(data[blocks + j]) << UInt64(8 * j) }
            h = h &* m
        }
        h ^= h >> r
        h = h &* m
        h ^= h >> r
        return h
    }

    /// The register an element falls in and the length of its hash's
    /// `000…1` pattern (1 to Q+1), as Redis's `hllPatLen`.
    static func patternLength(_ element: some Collection<UInt8>) -> (register: Int, count: Int) {
        var hash = murmurHash64A(element, seed: 0xadc83b19)
        let index = Int(hash & registerMask)
        hash >>= UInt64(p)
        hash |= 1 << UInt64(q)
        var bit: UInt64 = 1
        var count = 1
        while hash & bit == 0 {
            count += 1
            bit <<= 1
        }
        return (index, count)
    }

    // MARK: Dense registers

    /// Register `index` of dense registers starting at `base` in `value`.
    static func denseRegister(_ value: [UInt8], base: Int, _ index: Int) -> Int {
        let byte = base + index * bits / 8
        let fb = index * bits & 7
        let b0 = Int(value[byte])
        let b1 = byte + 1 < value.count ? Int(value[byte + 1]) : 0
        return ((b0 >> fb) | (b1 << (8 - fb))) & registerMax
    }

    static func setDenseRegister(_ value: inout [UInt8], base: Int, _ index: Int, _ register: Int) {
        let byte = base + index * bits / 8
        let fb = index * bits & 7
        let fb8 = 8 - fb
        value[byte] &= ~UInt8(truncatingIfNeeded: registerMax << fb)
        value[byte] |= UInt8(truncatingIfNeeded: register << fb)
        if byte + 1 < value.count {
            value[byte + 1] &= ~UInt8(truncatingIfNeeded: registerMax >> fb8)
            value[byte + 1] |= UInt8(truncatingIfNeeded: register >> fb8)
        }
    }

    /// Sets a dense register to `count` when that is larger.
    /// - Returns: whether it changed.
    @discardableResult
    mutating func denseSet(_ index: Int, _ count: Int) -> Bool {
        guard count > Self.denseRegister(bytes, base: Self.headerSize, index) else { return false }
        Self.setDenseRegister(&bytes, base: Self.headerSize, index, count)
        return true
    }

    // MARK: Sparse opcodes

    private static func appendXZero(_ length: Int, to out: inout [UInt8]) {
        let l = length - 1
        out.append(UInt8(l >> 8) | 0x40)
        out.append(UInt8(l & 0xff))
    }

    private static func zeroOrXZero(_ length: Int, into out: inout [UInt8]) {
        if length > sparseZeroMaxLength { appendXZero(length, to: &out) } else { out.append(UInt8(length - 1)) }
    }

    private static func valueOpcode(_ value: Int, _ length: Int) -> UInt8 {
        UInt8(((value - 1) << 2) | (length - 1)) | 0x80
    }

    private static func isZero(_ op: UInt8) -> Bool { op & 0xc0 == 0 }
    private static func isXZero(_ op: UInt8) -> Bool { op & 0xc0 == 0x40 }
    private static func isValue(_ op: UInt8) -> Bool { op & 0x80 != 0 }
    private static func valueOf(_ op: UInt8) -> Int { Int((op >> 2) & 0x1f) + 1 }
    private static func valueLength(_ op: UInt8) -> Int { Int(op & 0x3) + 1 }

    /// Walks the sparse opcodes: `run(register, length, value)` for each
    /// run (value 0 for ZERO and XZERO).
    /// - Throws: `.corrupt` when the runs overflow or do not cover every register.
    func forEachSparseRun(_ run: (Int, Int, Int) -> Void) throws(Failure) {
        var i = Self.headerSize
        var index = 0
        let end = bytes.count
        while i < end {
            let op = bytes[i]
            let length: Int, value: Int
            if Self.isZero(op) {
                length = Int(op & 0x3f) + 1
                value = 0
                i += 1
            } else if Self.isXZero(op) {
                guard i + 1 < end else { throw .corrupt }
                length = (Int(op & 0x3f) << 8 | Int(bytes[i + 1])) + 1
                value = 0
                i += 2
            } else {
                length = Self.valueLength(op)
                value = Self.valueOf(op)
                i += 1
            }
            guard length + index <= Self.registerCount else { throw .corrupt }
            run(index, length, value)
            index += length
        }
        guard index == Self.registerCount else { throw .corrupt }
    }

    /// Converts a sparse HLL to dense (the cached cardinality kept), as
    /// Redis's `hllSparseToDense`; a dense one is left as it is.
    /// - Throws: `.corrupt` for damaged sparse registers.
    mutating func convertToDense() throws(Failure) {
        guard isSparse else { return }
        var dense = [UInt8](repeating: 0, count: Self.denseSize)
        for i in 0..<Self.headerSize { dense[i] = bytes[i] }
        dense[4] = Self.denseEncoding
        try forEachSparseRun { start, length, value in
            guard value > 0 else { return }
            for r in start..<(start + length) { Self.setDenseRegister(&dense, base: Self.headerSize, r, value) }
        }
        bytes = dense
    }

    /// Sets a sparse register to `count` when that is larger, as Redis's
    /// `hllSparseSet`: splits the opcode covering it, merges equal
    /// neighbours, and promotes to dense when the value does not fit a VAL
    /// opcode or the string would pass `maxBytes`.
    /// - Returns: whether the registers changed.
    /// - Throws: `.corrupt` for damaged registers.
    mutating func sparseSet(_ index: Int, _ count: Int, maxBytes: Int) throws(Failure) -> Bool {
        if count > Self.sparseValueMaxValue { return try promote(index, count) }
        // Step 1: find the opcode covering the register.
        var p = Self.headerSize
        var end = bytes.count
        var first = 0
        var prev: Int? = nil
        var span = 0
        while p < end {
            var opLength = 1
            let op = bytes[p]
            if Self.isZero(op) {
                span = Int(op & 0x3f) + 1
            } else if Self.isValue(op) {
                span = Self.valueLength(op)
            } else {
                guard p + 1 < end else { throw .corrupt }
                span = (Int(op & 0x3f) << 8 | Int(bytes[p + 1])) + 1
                opLength = 2
            }
            if index <= first + span - 1 { break }
            prev = p
            p += opLength
            first += span
        }
        if span == 0 || p >= end { throw .corrupt }
        let op = bytes[p]
        let isZero = Self.isZero(op), isXZero = Self.isXZero(op), isValue = Self.isValue(op)
        let runLength = isZero ? Int(op & 0x3f) + 1 : isXZero ? span : Self.valueLength(op)
        var updatedInPlace = false
        if isValue {
            if Self.valueOf(op) >= count { return false }  // case A
            if runLength == 1 {  // case B
                bytes[p] = Self.valueOpcode(count, 1)
                updatedInPlace = true
            }
        }
        if !updatedInPlace && isZero && runLength == 1 {  // case C
            bytes[p] = Self.valueOpcode(count, 1)
            updatedInPlace = true
        }
        if !updatedInPlace {
            // Case D: split the opcode into up to three.
            var sequence: [UInt8] = []
            let last = first + span - 1
            if isZero || isXZero {
                if index != first { Self.zeroOrXZero(index - first, into: &sequence) }
                sequence.append(Self.valueOpcode(count, 1))
                if index != last { Self.zeroOrXZero(last - index, into: &sequence) }
            } else {
                let current = Self.valueOf(op)
                if index != first { sequence.append(Self.valueOpcode(current, index - first)) }
                sequence.append(Self.valueOpcode(count, 1))
                if index != last { sequence.append(Self.valueOpcode(current, last - index)) }
            }
            let oldLength = isXZero ? 2 : 1
            let delta = sequence.count - oldLength
            if delta > 0 && bytes.count + delta > maxBytes { return try promote(index, count) }
            bytes.replaceSubrange(p..<(p + oldLength), with: sequence)
            end += delta
        }
        // Step 4: merge adjacent VAL opcodes of the same value (up to five
        // opcodes from the one before the change).
        p = prev ?? Self.headerSize
        var scan = 5
        while p < end && scan > 0 {
            scan -= 1
            let op = bytes[p]
            if Self.isXZero(op) {
                p += 2
                continue
            } else if Self.isZero(op) {
                p += 1
                continue
            }
            if p + 1 < end && Self.isValue(bytes[p + 1]) {
                let v1 = Self.valueOf(op), v2 = Self.valueOf(bytes[p + 1])
                if v1 == v2 {
                    let length = Self.valueLength(op) + Self.valueLength(bytes[p + 1])
                    if length <= Self.sparseValueMaxLength {
                        bytes[p + 1] = Self.valueOpcode(v1, length)
                        bytes.remove(at: p)
                        end -= 1
                        continue
                    }
                }
            }
            p += 1
        }
        invalidateCache()
        return true
    }

    private mutating func promote(_ index: Int, _ count: Int) throws(Failure) -> Bool {
        try convertToDense()
        let changed = denseSet(index, count)
        precondition(changed, "a register promoted to dense must change")
        return true
    }

    // MARK: Adding, counting, merging

    /// Adds one element.
    /// - Returns: whether a register changed (the estimate may have).
    /// - Throws: `.corrupt` for damaged sparse registers.
    mutating func add(_ element: some Collection<UInt8>, sparseMaxBytes: Int) throws(Failure) -> Bool {
        let (index, count) = Self.patternLength(element)
        return try set(index, count, sparseMaxBytes: sparseMaxBytes)
    }

    /// Sets register `index` to `count` when that is larger, in either encoding.
    mutating func set(_ index: Int, _ count: Int, sparseMaxBytes: Int) throws(Failure) -> Bool {
        if isSparse { return try sparseSet(index, count, maxBytes: sparseMaxBytes) }
        return denseSet(index, count)
    }

    /// The histogram of register values (64 slots).
    func histogram() throws(Failure) -> [Int] {
        var histogram = [Int](repeating: 0, count: 64)
        if isSparse {
            try forEachSparseRun { _, length, value in histogram[value] += length }
        } else {
            for r in 0..<Self.registerCount { histogram[Self.denseRegister(bytes, base: Self.headerSize, r)] += 1 }
        }
        return histogram
    }

    /// The estimate from a register histogram (Ertl's improved estimator, as Redis's `hllCount`).
    static func estimate(_ histogram: [Int]) -> UInt64 {
        let m = Double(registerCount)
        var z = m * tau((m - Double(histogram[q + 1])) / m)
        for j in stride(from: q, through: 1, by: -1) {
            z += Double(histogram[j])
            z *= 0.5
        }
        z += m * sigma(Double(histogram[0]) / m)
        return UInt64((alphaInf * m * m / z).rounded(.toNearestOrAwayFromZero))
    }

    private static func sigma(_ value: Double) -> Double {
        var x = value
        if x == 1 { return .infinity }
        var zPrime: Double
        var y = 1.0
        var z = x
        repeat {
            x *= x
            zPrime = z
            z += x * y
            y += y
        } while zPrime != z
        return z
    }

    private static func tau(_ value: Double) -> Double {
        var x = value
        if x == 0 || x == 1 { return 0 }
        var zPrime: Double
        var y = 1.0
        var z = 1 - x
        repeat {
            x = x.squareRoot()
            zPrime = z
            y *= 0.5
            z -= pow(1 - x, 2) * y
        } while zPrime != z
        return z / 3
    }

    /// The estimated cardinality, computed from the registers.
    /// - Throws: `.corrupt` for damaged sparse registers.
    func count() throws(Failure) -> UInt64 {
        Self.estimate(try histogram())
    }

    /// Raises each of `max` (one byte per register) to this HLL's register, as Redis's `hllMerge`.
    /// - Throws: `.corrupt` for damaged sparse registers.
    func merge(into max: inout [UInt8]) throws(Failure) {
        if isSparse {
            try forEachSparseRun { start, length, value in
                guard value > 0 else { return }
                for r in start..<(start + length) where value > Int(max[r]) { max[r] = UInt8(value) }
            }
        } else {
            for r in 0..<Self.registerCount {
                let value = Self.denseRegister(bytes, base: Self.headerSize, r)
                if value > Int(max[r]) { max[r] = UInt8(value) }
            }
        }
    }

    /// The estimate for registers held one per byte (PFCOUNT of several keys).
    static func count(registers: [UInt8]) -> UInt64 {
        var histogram = [Int](repeating: 0, count: 64)
        for value in registers { histogram[Int(value) & 63] += 1 }
        return estimate(histogram)
    }

    /// Every register, dense order (PFDEBUG GETREG, after a conversion to dense).
    func registers() -> [Int] {
        precondition(!isSparse)
        return (0..<Self.registerCount).map { Self.denseRegister(bytes, base: Self.headerSize, $0) }
    }

    /// The sparse opcodes as PFDEBUG DECODE prints them: `z:<len>`, `Z:<len>`, `v:<value>,<len>`.
    func decodedOpcodes() -> String {
        var parts: [String] = []
        var i = Self.headerSize
        while i < bytes.count {
            let op = bytes[i]
            if Self.isZero(op) {
                parts.append("z:\(Int(op & 0x3f) + 1)")
                i += 1
            } else if Self.isXZero(op) {
                let low = i + 1 < bytes.count ? Int(bytes[i + 1]) : 0
                parts.append("Z:\((Int(op & 0x3f) << 8 | low) + 1)")
                i += 2
            } else {
                parts.append("v:\(Self.valueOf(op)),\(Self.valueLength(op))")
                i += 1
            }
        }
        return parts.joined(separator: " ")
    }
}
