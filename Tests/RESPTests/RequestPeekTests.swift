import Testing
@testable import RESP

@Suite("Request look-ahead")
struct RequestPeekTests {
    /// What `peekRequests` reports of `input`: each request's name and second argument as strings.
    func peek(_ input: String, from start: Int = 0, limit: Int = 100) -> [[String]] {
        var seen: [[String]] = []
        Array(input.utf8).withUnsafeBytes { buffer in
            let n = RequestParser.peekRequests(buffer, from: start, limit: limit) { name, second in
                seen.append([String(decoding: name, as: UTF8.self)] + (second.map { [String(decoding: $0, as: UTF8.self)] } ?? []))
            }
            #expect(n == seen.count)
        }
        return seen
    }

    @Test func reportsEachCompleteRequestsFirstTwoArguments() {
        let set = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"
        let pipeline = set + "*2\r\n$3\r\nGET\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n"
        #expect(peek(pipeline) == [["SET", "key"], ["GET", ""], ["PING"]])
        #expect(peek(pipeline, limit: 2) == [["SET", "key"], ["GET", ""]])
        // From the second frame's first byte.
        #expect(peek(pipeline, from: set.utf8.count) == [["GET", ""], ["PING"]])
    }

    @Test func stopsAtWhatIsNotACompleteMultibulkRequest() {
        let get = "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"
        #expect(peek(get + "*2\r\n$3\r\nGET\r\n$1\r\n") == [["GET", "a"]])          // unfinished
        #expect(peek(get + "*2\r\n$3\r\nGET\r\n$5\r\nab\r\n") == [["GET", "a"]])    // length past the end
        #expect(peek(get + "GET b\r\n" + get) == [["GET", "a"]])                    // inline
        #expect(peek(get + "*2\r\n$3\r\nGET\r\n$1\r\nabc\r\n") == [["GET", "a"]])   // no CRLF after the bulk
        #expect(peek(get + "*x\r\n") == [["GET", "a"]])
        #expect(peek(get + "*0\r\n" + get) == [["GET", "a"]])
        #expect(peek(get + "*-1\r\n" + get) == [["GET", "a"]])
        #expect(peek(get + "*2\r\n$-1\r\n" + get) == [["GET", "a"]])
        #expect(peek(get + "*1\r\n$99999999999999999999\r\n") == [["GET", "a"]])
        #expect(peek("*2\r\n$3\r\nGET\r\n$1\r\na\r") == [])
        // A request of more than 8 arguments (the default) is not stepped over.
        let mset = "*9\r\n$4\r\nMSET\r\n" + String(repeating: "$1\r\nx\r\n", count: 8)
        #expect(peek(get + mset + get) == [["GET", "a"]])
        #expect(peek(get + "*8\r\n$4\r\nMSET\r\n" + String(repeating: "$1\r\nx\r\n", count: 7) + get).count == 3)
        #expect(peek("") == [])
    }

    @Test func agreesWithTheParserOnEveryPrefixOfAPipeline() throws {
        let pipeline = Array(("*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$2\r\nv1\r\n*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n"
            + "*4\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n").utf8)
        for end in 0...pipeline.count {
            let prefix = Array(pipeline[..<end])
            let parsed = try parseAll(prefix, byteByByte: false)
            var peeked: [[[UInt8]]] = []
            prefix.withUnsafeBytes { buffer in
                RequestParser.peekRequests(buffer, from: 0, limit: 100) { name, second in
                    peeked.append([Array(name)] + (second.map { [Array($0)] } ?? []))
                }
            }
            #expect(peeked == parsed.map { Array($0.prefix(2)) }, "prefix of \(end) bytes")
        }
    }
}
