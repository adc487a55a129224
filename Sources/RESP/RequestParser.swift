#if canImport(Glibc)
import Glibc
#endif

/// An incremental parser for client requests: RESP2 multibulk arrays of bulk
/// strings, and inline commands (a line of words, Redis's quoting rules).
///
/// A multibulk request's arguments are not copied: the parser records where
/// each lies in the caller's buffer (`argumentRanges`, counted from the
/// first byte of the request's frame), so a server hands its handlers views
/// of its read buffer. The caller therefore keeps the bytes of an
/// unfinished frame: `index` stays at the frame's first byte until the
/// frame is complete, and the next call passes the same frame again (at any
/// position, with more bytes after it). Offsets from the frame's start stay
/// valid however the caller moves or grows its buffer in between.
///
/// State lives in the parser, one per connection, so a partial frame resumes
/// where it stopped: a count line or bulk header, once read, is never read
/// again. Limits are enforced as bytes arrive; nothing is allocated from a
/// count or length read off the wire.
public struct RequestParser: Sendable {
    public var limits: RequestLimits

    /// A complete request.
    public enum Request: Equatable, Sendable {
        /// A multibulk request whose frame starts at offset `frame` of the
        /// buffer given; its arguments are `argumentRanges`, counted from
        /// there. Valid until the next call.
        case multibulk(frame: Int)
        /// An inline request's words (unquoted and unescaped, so copied out).
        case inline([[UInt8]])
    }

    /// Elements still to read of the current multibulk request; 0 between requests.
    private var multibulkRemaining = 0
    /// Length of the bulk whose header was read; -1 when the next header is due.
    private var bulkLength = -1
    /// How far the unfinished frame has been read, from its first byte; after
    /// a complete one, the frame's length.
    private var frameParsed = 0
    /// The arguments of the current (or just completed) multibulk request,
    /// as byte ranges counted from its frame's first byte.
    public private(set) var argumentRanges: [Range<Int>] = []
    /// Payload bytes of the arguments read so far of the unfinished request.
    public private(set) var pendingArgumentBytes = 0

    /// Ranges kept between requests: a request with more arguments than this
    /// leaves its array to be freed when the next request starts.
    private static let keptRangeCapacity = 1024

    public init(limits: RequestLimits = RequestLimits()) {
        self.limits = limits
    }

    /// Arguments read so far of the unfinished request.
    public var pendingArgumentCount: Int { multibulkRemaining > 0 ? argumentRanges.count : 0 }

    /// True when a request has been partly read.
    public var isMidRequest: Bool { multibulkRemaining > 0 }

    /// While a bulk's header is read and its payload is not all here: the
    /// bytes the unfinished frame needs, from its first byte, through that
    /// payload and its CRLF (nil otherwise).
    public var frameBytesAwaited: Int? {
        guard multibulkRemaining > 0, bulkLength >= 0 else { return nil }
        return frameParsed + bulkLength + 2
    }

    /// Reads the next complete request from `buffer[index...]`.
    ///
    /// - Returns: the request (never empty), or nil when more bytes are
    ///   needed. Empty inline lines and `*0`/`*-1` are skipped.
    /// - Postcondition: `index` is past the request returned and anything
    ///   skipped; when nil is returned it is at the first byte of the
    ///   unfinished request (whose bytes the caller must pass again, from
    ///   that byte, in the next call).
    /// - Throws: `ProtocolError`; the connection should reply and close.
    public mutating func nextRequest(_ buffer: UnsafeRawBufferPointer, index: inout Int) throws(ProtocolError) -> Request? {
        while index < buffer.count {
            if multibulkRemaining == 0 {
                if buffer[index] == UInt8(ascii: "*") {
                    guard let started = try readMultibulkCount(buffer, frame: index) else { return nil }
                    if !started {  // *0 or negative: nothing to run
                        index += frameParsed
                        frameParsed = 0
                        continue
                    }
                } else {
                    guard let line = try readInline(buffer, index: &index) else { return nil }
                    if line.isEmpty { continue }
                    return .inline(line)
                }
            }
            guard try readBulks(buffer, frame: index) else { return nil }
            let frame = index
            index += frameParsed
            frameParsed = 0
            return .multibulk(frame: frame)
        }
        return nil
    }

    /// Reads the next complete request, its arguments copied out of
    /// `buffer`: for tests and tools; a server uses `nextRequest`.
    public mutating func next(_ buffer: UnsafeRawBufferPointer, index: inout Int) throws(ProtocolError) -> [[UInt8]]? {
        switch try nextRequest(buffer, index: &index) {
        case nil: return nil
        case .inline(let words): return words
        case .multibulk(let frame):
            return argumentRanges.map { range in
                [UInt8](UnsafeRawBufferPointer(rebasing: buffer[(frame + range.lowerBound)..<(frame + range.upperBound)]))
            }
        }
    }

    // MARK: Multibulk

    /// Reads `*<count>\r\n` at `frame`.
    /// - Returns: nil if the line is incomplete; false for a count ≤ 0; true
    ///   when elements follow. Either way the line's length is in `frameParsed`.
    private mutating func readMultibulkCount(_ buffer: UnsafeRawBufferPointer, frame: Int) throws(ProtocolError) -> Bool? {
        let cr: Int, count: Int64
        if let (value, at) = quickDecimal(buffer, from: frame + 1) {
            (count, cr) = (Int64(value), at)
            guard count <= Int64(limits.maxMultibulkCount) else { throw .invalidMultibulkLength }
        } else {
            guard let found = find(UInt8(ascii: "\r"), in: buffer, from: frame) else {
                if buffer.count - frame > limits.maxInlineLength { throw .tooBigMultibulkCountString }
                return nil
            }
            let digits = UnsafeRawBufferPointer(rebasing: buffer[(frame + 1)..<found])
            guard let value = parseStrictInt64(digits), value <= Int64(limits.maxMultibulkCount) else {
                throw .invalidMultibulkLength
            }
            (count, cr) = (value, found)
        }
        guard cr + 1 < buffer.count else { return nil }  // wait for the \n
        if limits.unauthenticated && count > Int64(RequestLimits.unauthenticatedMultibulkCount) {
            throw .unauthenticatedMultibulkLength
        }
        frameParsed = cr + 2 - frame
        guard count > 0 else { return false }
        multibulkRemaining = Int(count)
        bulkLength = -1
        if argumentRanges.capacity > Self.keptRangeCapacity {
            argumentRanges = []
        } else if !argumentRanges.isEmpty {
            // Dropped from the end: removeAll(keepingCapacity:) took the
            // generic replaceSubrange path, ~70 instructions a request.
            argumentRanges.removeLast(argumentRanges.count)
        }
        argumentRanges.reserveCapacity(min(Int(count), 16))
        pendingArgumentBytes = 0
        return true
    }

    /// Reads bulk strings of the frame at `frame`, from where the last call
    /// stopped, until the request is complete or bytes run out.
    /// - Returns: whether the request is complete.
    private mutating func readBulks(_ buffer: UnsafeRawBufferPointer, frame: Int) throws(ProtocolError) -> Bool {
        var index = frame + frameParsed
        defer { frameParsed = index - frame }
        while multibulkRemaining > 0 {
            if bulkLength < 0 {
                guard index < buffer.count else { return false }
                let cr: Int, length: Int64
                if buffer[index] == UInt8(ascii: "$"), let (value, at) = quickDecimal(buffer, from: index + 1) {
                    guard at + 1 < buffer.count else { return false }
                    (length, cr) = (Int64(value), at)
                    guard length <= Int64(limits.maxBulkLength) else { throw .invalidBulkLength }
                } else {
                    guard let found = find(UInt8(ascii: "\r"), in: buffer, from: index) else {
                        if buffer.count - index > limits.maxInlineLength { throw .tooBigBulkCountString }
                        return false
                    }
                    guard found + 1 < buffer.count else { return false }
                    guard buffer[index] == UInt8(ascii: "$") else { throw .expectedDollar(got: buffer[index]) }
                    let digits = UnsafeRawBufferPointer(rebasing: buffer[(index + 1)..<found])
                    guard let value = parseStrictInt64(digits), value >= 0, value <= Int64(limits.maxBulkLength) else {
                        throw .invalidBulkLength
                    }
                    (length, cr) = (value, found)
                }
                if limits.unauthenticated && length > Int64(RequestLimits.unauthenticatedBulkLength) {
                    throw .unauthenticatedBulkLength
                }
                bulkLength = Int(length)
                index = cr + 2
            }
            // The payload and its \r\n must both be here (the \r\n is skipped, as Redis does).
            guard buffer.count - index >= bulkLength + 2 else { return false }
            argumentRanges.append((index - frame)..<(index - frame + bulkLength))
            pendingArgumentBytes += bulkLength
            index += bulkLength + 2
            bulkLength = -1
            multibulkRemaining -= 1
        }
        pendingArgumentBytes = 0
        return true
    }

    // MARK: Inline

    /// Reads one inline line (ending in \n, an optional \r before it removed).
    /// - Returns: nil if no full line yet; the split words otherwise (empty for a blank line).
    private func readInline(_ buffer: UnsafeRawBufferPointer, index: inout Int) throws(ProtocolError) -> [[UInt8]]? {
        guard let newline = find(UInt8(ascii: "\n"), in: buffer, from: index) else {
            if buffer.count - index > limits.maxInlineLength { throw .tooBigInlineRequest }
            return nil
        }
        var end = newline
        if end > index && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: buffer[index..<end])
        guard let words = splitArguments(line) else { throw .unbalancedQuotes }
        index = newline + 1
        return words
    }

    /// The common case of a count or length line, without memchr and the
    /// general integer parser: 1 to 18 decimal digits, no leading zero
    /// (but "0" itself), then `\r`. Returns the value and the `\r`'s index,
    /// or nil for anything else, which the general path then judges (a
    /// sign, an error, a line not complete yet).
    @inline(__always)
    private func quickDecimal(_ buffer: UnsafeRawBufferPointer, from start: Int) -> (Int, Int)? {
        var value = 0
        var i = start
        let end = Swift.min(buffer.count, start + 19)
        while i < end {
            let c = buffer[i]
            if c == UInt8(ascii: "\r") {
                guard i > start, i == start + 1 || buffer[start] != UInt8(ascii: "0") else { return nil }
                return (value, i)
            }
            let digit = c &- UInt8(ascii: "0")
            guard digit <= 9 else { return nil }
            value = value &* 10 &+ Int(digit)
            i += 1
        }
        return nil
    }

    private func find(_ byte: UInt8, in buffer: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start < buffer.count, let base = buffer.baseAddress else { return nil }
        guard let hit = memchr(base + start, Int32(byte), buffer.count - start) else { return nil }
        return base.distance(to: UnsafeRawPointer(hit))
    }
}

/// Splits a line into words the way Redis's `sdssplitargs` does: blanks
/// separate words; "double quotes" take \n \r \t \b \a \xHH and \\ escapes;
/// 'single quotes' take \' only; a closing quote must end the word.
/// - Returns: nil for unbalanced quotes (or a closing quote not followed by a blank).
public func splitArguments(_ line: UnsafeRawBufferPointer) -> [[UInt8]]? {
    func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09 || c == 0x0b || c == 0x0c }
    func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
    var words: [[UInt8]] = []
    var i = 0
    // Redis splits a C string: a NUL byte ends the line.
    let n = line.firstIndex(of: 0) ?? line.count
    while true {
        while i < n && isSpace(line[i]) { i += 1 }
        if i >= n { return words }
        var word: [UInt8] = []
        var inDouble = false, inSingle = false, done = false
        while !done {
            if inDouble {
                guard i < n else { return nil }
                let c = line[i]
                if c == UInt8(ascii: "\\") && i + 3 < n && line[i + 1] == UInt8(ascii: "x"),
                   let hi = hexValue(line[i + 2]), let lo = hexValue(line[i + 3]) {
                    word.append(hi << 4 | lo)
                    i += 3
                } else if c == UInt8(ascii: "\\") && i + 1 < n {
                    i += 1
                    switch line[i] {
                    case UInt8(ascii: "n"): word.append(0x0a)
                    case UInt8(ascii: "r"): word.append(0x0d)
                    case UInt8(ascii: "t"): word.append(0x09)
                    case UInt8(ascii: "b"): word.append(0x08)
                    case UInt8(ascii: "a"): word.append(0x07)
                    default: word.append(line[i])
                    }
                } else if c == UInt8(ascii: "\"") {
                    // The closing quote must be followed by a blank or the end.
                    if i + 1 < n && !isSpace(line[i + 1]) { return nil }
                    done = true
                } else {
                    word.append(c)
                }
            } else if inSingle {
                guard i < n else { return nil }
                let c = line[i]
                if c == UInt8(ascii: "\\") && i + 1 < n && line[i + 1] == UInt8(ascii: "'") {
                    i += 1
                    word.append(UInt8(ascii: "'"))
                } else if c == UInt8(ascii: "'") {
                    if i + 1 < n && !isSpace(line[i + 1]) { return nil }
                    done = true
                } else {
                    word.append(c)
                }
            } else {
                if i >= n { done = true; break }
                let c = line[i]
                switch c {
                case 0x20, 0x0a, 0x0d, 0x09, 0x00: done = true
                case UInt8(ascii: "\""): inDouble = true
                case UInt8(ascii: "'"): inSingle = true
                default: word.append(c)
                }
            }
            if i < n { i += 1 }
        }
        words.append(word)
    }
}
