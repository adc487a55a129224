import CChecksum

/// CRC-32C (Castagnoli), the checksum of each log record: the CPU's crc32
/// instruction where it has one (SSE4.2: several bytes per cycle, which a
/// replay of a large log feels), otherwise sliced by 8 in Swift, about a
/// byte per cycle.
enum CRC32C {
    private static let hardware = kv_crc32c_hardware_available() != 0
    /// Eight tables of 256 entries, one after the other.
    private static let table: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            table[i] = crc
        }
        for t in 1..<8 {
            for i in 0..<256 {
                let previous = table[(t - 1) * 256 + i]
                table[t * 256 + i] = (previous >> 8) ^ table[Int(previous & 0xff)]
            }
        }
        return table
    }()

    /// The checksum of `bytes`, continuing from `crc` (0 to start).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard hardware else { return portableChecksum(bytes, continuing: crc) }
        return kv_crc32c_hardware(crc, bytes.baseAddress, bytes.count)
    }

    /// The same checksum without the crc32 instruction.
    static func portableChecksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var crc = ~crc
        var i = 0
        let count = bytes.count
        table.withUnsafeBufferPointer { t in
            while count - i >= 8 {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                let low = UInt32(truncatingIfNeeded: word) ^ crc
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc = t[7 * 256 + Int(low & 0xff)] ^ t[6 * 256 + Int((low >> 8) & 0xff)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xff)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xff)] ^ t[2 * 256 + Int((high >> 8) & 0xff)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xff)] ^ t[Int(high >> 24)]
                i += 8
            }
            while i < count {
                crc = (crc >> 8) ^ t[Int((crc ^ UInt32(bytes[i])) & 0xff)]
                i += 1
            }
        }
        return ~crc
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
