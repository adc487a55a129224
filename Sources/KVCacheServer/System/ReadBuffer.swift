#if canImport(Glibc)
import Glibc
#endif

/// A connection's input bytes: a malloc'd region holding unconsumed bytes
/// at `[start, end)`. Grows only as bytes actually arrive; consumed space is
/// reclaimed by moving the tail to the front.
final class ReadBuffer {
    private var storage: UnsafeMutableRawPointer?
    private(set) var capacity = 0
    private var start = 0
    private var end = 0

    deinit { free(storage) }

    /// Bytes received and not yet consumed.
    var count: Int { end - start }

    /// Memory held, for INFO and limits.
    var allocated: Int { capacity }

    /// Calls `body` with the unconsumed bytes; `body` returns how many it consumed.
    func consume(_ body: (UnsafeRawBufferPointer) throws -> Int) rethrows {
        let view = UnsafeRawBufferPointer(start: storage.map { $0 + start }, count: end - start)
        let used = try body(view)
        precondition(used >= 0 && used <= end - start)
        start += used
        if start == end { start = 0; end = 0 }
    }

    /// Reads from `fd` into free space of at least `chunk` bytes.
    /// - Returns: bytes read (0 at end of stream), or `.wouldBlock`.
    func read(from fd: Int32, chunk: Int) throws(SystemError) -> IOResult<Int> {
        try read(chunk: chunk) { space throws(SystemError) in try Posix.read(fd, space) }
    }

    /// Fills free space of at least `chunk` bytes with `reader` (a socket or a TLS session).
    func read(chunk: Int, _ reader: (UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int>) throws(SystemError) -> IOResult<Int> {
        reserve(chunk)
        let space = UnsafeMutableRawBufferPointer(start: storage! + end, count: capacity - end)
        let result = try reader(space)
        if case .done(let n) = result { end += n }
        return result
    }

    /// Appends `bytes` (read elsewhere) after the unconsumed ones.
    func append(_ bytes: [UInt8]) {
        reserve(bytes.count)
        bytes.withUnsafeBytes { storage!.advanced(by: end).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        end += bytes.count
    }

    /// Makes room for `chunk` more bytes after `end`, compacting first.
    func reserve(_ chunk: Int) {
        if capacity - end >= chunk { return }
        if start > 0 {
            if end > start, let storage { memmove(storage, storage + start, end - start) }
            end -= start
            start = 0
            if capacity - end >= chunk { return }
        }
        var newCapacity = max(capacity, 4096)
        while newCapacity - end < chunk { newCapacity *= 2 }
        guard let grown = realloc(storage, newCapacity) else { fatalError("out of memory growing a read buffer to \(newCapacity) bytes") }
        storage = grown
        capacity = newCapacity
    }

    /// Frees the memory of an empty buffer that grew past `keep` bytes.
    func shrinkIfIdle(keep: Int) {
        guard count == 0, capacity > keep else { return }
        free(storage)
        storage = nil
        capacity = 0
        start = 0
        end = 0
    }
}
