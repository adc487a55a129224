/// Looking ahead in a request buffer without parsing for real: a server
/// that wants to start work for the requests a pipeline holds (the memory
/// reads of their key lookups) before it runs them one by one.
extension RequestParser {
    /// Calls `body` with the first two arguments (the command's name and
    /// the argument after it, nil when there is none) of each complete
    /// multibulk request in `buffer` from `start`, at most `limit` of them.
    /// Stops at the first thing that is not a complete, well-formed
    /// multibulk request of at most `maxArguments` arguments (an inline
    /// request, an unfinished one, a bad header, a long one: stepping over
    /// it would read it all): what it reports is a hint, and `nextRequest`
    /// judges the same bytes again.
    /// - Returns: the number of requests reported.
    @discardableResult
    public static func peekRequests(_ buffer: UnsafeRawBufferPointer, from start: Int, limit: Int, maxArguments: Int = 8,
                                    _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer?) -> Void) -> Int {
        precondition(start >= 0 && start <= buffer.count, "peekRequests from outside the buffer")
        let end = buffer.count
        var i = start
        var reported = 0
        // A decimal after the marker at `i`, ending in CRLF; moves `i` past the CRLF.
        func header(_ marker: UInt8) -> Int? {
            guard i < end, buffer[i] == marker else { return nil }
            var j = i + 1
            var value = 0
            while j < end, buffer[j] != UInt8(ascii: "\r") {
                let digit = buffer[j] &- UInt8(ascii: "0")
                guard digit < 10, j - i <= 18 else { return nil }
                value = value * 10 + Int(digit)
                j += 1
            }
            guard j > i + 1, j + 1 < end, buffer[j + 1] == UInt8(ascii: "\n") else { return nil }
            i = j + 2
            return value
        }
        while reported < limit {
            guard let count = header(UInt8(ascii: "*")), count > 0, count <= maxArguments else { break }
            var name = UnsafeRawBufferPointer(start: nil, count: 0)
            var second: UnsafeRawBufferPointer?
            var complete = true
            for argument in 0..<count {
                guard let length = header(UInt8(ascii: "$")), length <= end - i - 2,
                      buffer[i + length] == UInt8(ascii: "\r"), buffer[i + length + 1] == UInt8(ascii: "\n") else {
                    complete = false
                    break
                }
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[i..<(i + length)])
                if argument == 0 { name = bytes } else if argument == 1 { second = bytes }
                i += length + 2
            }
            guard complete else { break }
            body(name, second)
            reported += 1
        }
        return reported
    }
}
