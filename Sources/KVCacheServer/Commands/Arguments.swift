#if canImport(Glibc)
import Glibc
#endif
import RESP

/// A request's arguments, viewed where they arrived: in the connection's
/// read buffer (a multibulk request, as the parser found it), or in one
/// flat copy (an inline request, a MULTI queue, a test). Nothing is copied
/// per argument to run a command.
///
/// A view, valid only while the command runs: the buffer under it is
/// reused for the next request. A handler copies what it keeps
/// (`bytes(_:)`, `Argument.bytes`): a value it stores, a name it
/// remembers. Neither type may be stored in a property or captured by a
/// closure that outlives the handler; stored properties take `[UInt8]`, so
/// the compiler asks for the copy.
struct Arguments: RandomAccessCollection {
    private let base: UnsafeRawPointer?
    private let ranges: [Range<Int>]

    /// The arguments at `ranges` (offsets from `base`).
    init(base: UnsafeRawPointer?, ranges: [Range<Int>]) {
        self.base = base
        self.ranges = ranges
    }

    /// The multibulk request whose frame starts at `frame` in `buffer`, with
    /// its arguments at `ranges` counted from there (the request parser's record).
    init(frame: Int, in buffer: UnsafeRawBufferPointer, ranges: [Range<Int>]) {
        // The parser records ranges in order: the last one ends furthest.
        precondition(frame >= 0 && frame + (ranges.last?.upperBound ?? 0) <= buffer.count,
                     "an argument outside the read buffer")
        self.init(base: buffer.baseAddress.map { $0 + frame }, ranges: ranges)
    }

    /// Runs `body` with `words` as a request's arguments (one flat copy of them).
    static func withCopy<R>(of words: [[UInt8]], _ body: (Arguments) throws -> R) rethrows -> R {
        var flat: [UInt8] = []
        flat.reserveCapacity(words.reduce(0) { $0 + $1.count })
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(words.count)
        for word in words {
            ranges.append(flat.count..<(flat.count + word.count))
            flat.append(contentsOf: word)
        }
        return try flat.withUnsafeBytes { try body(Arguments(base: $0.baseAddress, ranges: ranges)) }
    }

    var startIndex: Int { 0 }
    var endIndex: Int { ranges.count }

    subscript(index: Int) -> Argument {
        let range = ranges[index]
        return Argument(start: base.map { $0 + range.lowerBound }, count: range.count)
    }

    /// A copy of the argument at `index`, for a handler that keeps it.
    func bytes(_ index: Int) -> [UInt8] { self[index].bytes }

    /// Copies of every argument (a MULTI queue, a test).
    var copies: [[UInt8]] { map(\.bytes) }

    /// The argument at `index` as text (lossy for invalid UTF-8).
    func text(_ index: Int) -> String { self[index].text }

    /// The argument at `index` for an error text that quotes it: bytes that
    /// are not UTF-8 come back to the client as sent (`String(keepingBytes:)`).
    func quoted(_ index: Int) -> String { String(keepingBytes: self[index]) }

    /// The argument at `index`, lowercased ASCII, as text: for option names.
    func option(_ index: Int) -> String { self[index].lowercasedText }

    /// The argument at `index` as a strict 64-bit integer.
    /// - Throws: `value is not an integer or out of range`.
    func integer(_ index: Int) throws(ReplyError) -> Int64 {
        guard let value = parseStrictInt64(self[index]) else { throw .notInteger }
        return value
    }
}

/// One argument's bytes, viewed in place (see `Arguments`: valid only while
/// the command runs; `bytes` is the copy to keep).
struct Argument: RandomAccessCollection, Equatable {
    private let start: UnsafeRawPointer?
    let count: Int

    init(start: UnsafeRawPointer?, count: Int) {
        precondition(count == 0 || start != nil)
        self.start = start
        self.count = count
    }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(index: Int) -> UInt8 {
        precondition(index >= 0 && index < count, "argument index out of range")
        return start.unsafelyUnwrapped.load(fromByteOffset: index, as: UInt8.self)
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: count == 0 ? nil : start, count: count))
    }

    func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        try withUnsafeBytes { raw in try body(raw.bindMemory(to: UInt8.self)) }
    }

    /// A copy of the bytes.
    var bytes: [UInt8] { withUnsafeBytes { [UInt8]($0) } }

    /// The bytes as text (lossy for invalid UTF-8).
    var text: String { withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

    /// The bytes lowercased (ASCII) as text: for option and command names.
    var lowercasedText: String { String(decoding: lazy.map(asciiLower), as: UTF8.self) }

    static func == (a: Argument, b: Argument) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in a.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
    }

    static func == (a: Argument, b: [UInt8]) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in a.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
    }

    static func == (a: [UInt8], b: Argument) -> Bool { b == a }
}
