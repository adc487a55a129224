#if canImport(Glibc)
import Glibc
#endif

/// INCRBYFLOAT computes in C's `long double`, as Redis does (80-bit on
/// x86_64, so 10.5 + 0.1 prints as 10.6, not 10.59999999999999964).
#if arch(x86_64) || arch(i386)
typealias LongDouble = Float80
#else
typealias LongDouble = Double
#endif

/// Parses a float the way Redis's `string2ld` does (`strtold`, whole
/// string, no leading space, no NaN, no overflow to infinity).
/// - Returns: nil for anything Redis refuses as "not a valid float".
func parseLongDouble(_ bytes: some Collection<UInt8>) -> LongDouble? {
    guard !bytes.isEmpty, bytes.count < 5 * 1024, !bytes.contains(0) else { return nil }
    if let first = bytes.first, first == 0x20 || (first >= 0x09 && first <= 0x0d) { return nil }
    return (Array(bytes) + [0]).withUnsafeBufferPointer { buffer -> LongDouble? in
        let start = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
        var end: UnsafeMutablePointer<CChar>?
        errno = 0
        #if arch(x86_64) || arch(i386)
        let value = strtold(start, &end)
        #else
        let value = strtod(start, &end)
        #endif
        guard let end, end.pointee == 0 else { return nil }
        if errno == ERANGE && (value.isInfinite || value == 0) { return nil }
        if value.isNaN { return nil }
        return value
    }
}

/// Formats like Redis's `ld2string(…, LD_STR_HUMAN)`: `%.17Lf`, trailing
/// zeros and a trailing point removed, `-0` as `0`.
func formatLongDouble(_ value: LongDouble) -> [UInt8] {
    var buffer = [CChar](repeating: 0, count: 5 * 1024)
    let written = withVaList([value]) { args in
        buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, "%.17Lf", args) }
    }
    var text = Array(buffer.prefix(Int(max(0, min(written, Int32(buffer.count - 1))))).map { UInt8(bitPattern: $0) })
    if text.contains(UInt8(ascii: ".")) {
        while text.last == UInt8(ascii: "0") { text.removeLast() }
        if text.last == UInt8(ascii: ".") { text.removeLast() }
    }
    if text == Array("-0".utf8) { text = [UInt8(ascii: "0")] }
    return text
}
