/// Stores little-endian integers and bytes at a moving pointer: the log's
/// encoder sizes an op, grows its buffer once (`appendZeros`), then fills it
/// with one pass of stores. The pointer must stay inside the buffer's
/// `withUnsafeMutableBytes` closure and the room grown for the op.
struct ByteCursor {
    private(set) var pointer: UnsafeMutableRawPointer

    init(_ pointer: UnsafeMutableRawPointer) {
        self.pointer = pointer
    }

    @inline(__always)
    mutating func put<T: FixedWidthInteger>(_ value: T) {
        pointer.storeBytes(of: value.littleEndian, as: T.self)
        pointer += MemoryLayout<T>.size
    }

    @inline(__always)
    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        if let base = bytes.baseAddress, bytes.count > 0 { pointer.copyMemory(from: base, byteCount: bytes.count) }
        pointer += bytes.count
    }
}

/// Zero bytes to copy from: `append(contentsOf:)` of a raw buffer is a
/// memcpy, where appending `repeatElement(0, count:)` ran a generic loop
/// (~340 instructions for 28 bytes).
nonisolated(unsafe) private let zeroPage: UnsafeRawBufferPointer = {
    let page = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 64)
    page.initializeMemory(as: UInt8.self, repeating: 0)
    return UnsafeRawBufferPointer(page)
}()

extension Array where Element == UInt8 {
    /// Appends `count` zero bytes, growing the capacity geometrically (a
    /// `reserveCapacity` of the exact size would make repeated appends quadratic).
    @inline(__always)
    mutating func appendZeros(_ count: Int) {
        let needed = self.count + count
        if capacity < needed { reserveCapacity(Swift.max(needed, capacity * 2)) }
        var left = count
        while left > 0 {
            let chunk = Swift.min(left, zeroPage.count)
            append(contentsOf: UnsafeRawBufferPointer(rebasing: zeroPage[..<chunk]))
            left -= chunk
        }
    }
}
