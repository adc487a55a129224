import Testing
@testable import RESP

/// Feeds `input` to a fresh parser, either all at once or one byte at a time,
/// keeping unconsumed bytes like a connection does.
func parseAll(_ input: [UInt8], byteByByte: Bool, limits: RequestLimits = RequestLimits()) throws(ProtocolError) -> [[[UInt8]]] {
    var parser = RequestParser(limits: limits)
    var pending: [UInt8] = []
    var requests: [[[UInt8]]] = []
    let chunks: [[UInt8]] = byteByByte ? input.map { [$0] } : [input]
    for chunk in chunks {
        pending.append(contentsOf: chunk)
        var index = 0
        let result = pending.withUnsafeBytes { raw in
            Result { () throws(ProtocolError) -> [[[UInt8]]] in
                var found: [[[UInt8]]] = []
                while let request = try parser.next(raw, index: &index) { found.append(request) }
                return found
            }
        }
        requests.append(contentsOf: try result.get())
        pending.removeFirst(index)
    }
    return requests
}

func words(_ list: String...) -> [[UInt8]] { list.map { Array($0.utf8) } }

@Suite("Request parser")
struct RequestParserTests {
    static let frames: [(String, [[[UInt8]]])] = [
        ("*1\r\n$4\r\nPING\r\n", [words("PING")]),
        ("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n", [words("SET", "k", "hello")]),
        ("*2\r\n$3\r\nGET\r\n$0\r\n\r\n", [words("GET", "")]),
        ("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n", [words("PING"), words("ECHO", "hi")]),
        ("PING\r\n", [words("PING")]),
        ("PING\n", [words("PING")]),
        ("SET a 1\r\nGET a\r\n", [words("SET", "a", "1"), words("GET", "a")]),
        ("SET \"a b\" 'c d'\r\n", [words("SET", "a b", "c d")]),
        ("SET k \"\\x41\\n\\t\\\\\"\r\n", [words("SET", "k", "A\n\t\\")]),
        ("SET k 'it\\'s'\r\n", [words("SET", "k", "it's")]),
        ("  spaced   out  \r\n", [words("spaced", "out")]),
        ("\r\n\r\nPING\r\n", [words("PING")]),
        ("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", [words("PING")]),
        ("*-10\r\nPING\r\n", [words("PING")]),
        ("SET k \"\"\r\n", [words("SET", "k", "")]),
    ]

    @Test(arguments: frames.indices)
    func parsesAllAtOnce(index: Int) throws {
        let (input, expected) = Self.frames[index]
        #expect(try parseAll(Array(input.utf8), byteByByte: false) == expected)
    }

    @Test(arguments: frames.indices)
    func parsesByteByByte(index: Int) throws {
        let (input, expected) = Self.frames[index]
        #expect(try parseAll(Array(input.utf8), byteByByte: true) == expected)
    }

    @Test func binaryPayloadIsKeptExactly() throws {
        let payload = (0...255).map { UInt8($0) }
        var frame = Array("*2\r\n$4\r\nECHO\r\n$256\r\n".utf8)
        frame += payload + Array("\r\n".utf8)
        for byteByByte in [false, true] {
            #expect(try parseAll(frame, byteByByte: byteByByte) == [[Array("ECHO".utf8), payload]])
        }
    }

    @Test func partialFrameIsNotReparsed() throws {
        // The bytes of an unfinished frame stay with the caller (the index
        // stays at its first byte), but what was read of it is never read
        // again: the header bytes are spoiled before the second call, and
        // the request still comes out whole.
        var parser = RequestParser()
        var buffer = Array("*2\r\n$3\r\nGET\r\n$5\r\nhel".utf8)
        var index = 0
        let first = try buffer.withUnsafeBytes { raw throws(ProtocolError) in try parser.next(raw, index: &index) }
        #expect(first == nil)
        #expect(index == 0)
        #expect(parser.isMidRequest)
        #expect(parser.pendingArgumentCount == 1)
        #expect(parser.pendingArgumentBytes == 3)
        for i in 0..<4 { buffer[i] = UInt8(ascii: "!") }  // "*2\r\n" is never looked at again
        buffer += Array("lo\r\n".utf8)
        let second = try buffer.withUnsafeBytes { raw throws(ProtocolError) in try parser.next(raw, index: &index) }
        #expect(second == words("GET", "hello"))
        #expect(index == buffer.count)
        #expect(!parser.isMidRequest)
        #expect(parser.pendingArgumentCount == 0)
    }

    @Test func argumentsAreRangesOfTheFrame() throws {
        // A request's arguments are where they lie in the buffer, counted
        // from its frame's first byte; the frame may move between calls.
        var parser = RequestParser()
        let frame = Array("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n".utf8)
        let prefix = Array("PING\r\n".utf8)
        var index = 0
        let requests = try (prefix + frame.prefix(20)).withUnsafeBytes { raw throws(ProtocolError) -> [RequestParser.Request?] in
            [try parser.nextRequest(raw, index: &index), try parser.nextRequest(raw, index: &index)]
        }
        #expect(requests == [.inline(words("PING")), nil])
        #expect(index == prefix.count)
        // The caller drops what was consumed and moves the frame to the front.
        var moved = Array(frame.prefix(20)) + frame.dropFirst(20)
        moved = [0x20, 0x20] + moved  // two bytes of something else before it
        var at = 2
        let request = try moved.withUnsafeBytes { raw throws(ProtocolError) in try parser.nextRequest(raw, index: &at) }
        #expect(request == .multibulk(frame: 2))
        #expect(parser.argumentRanges == [8..<11, 17..<18, 24..<29])
        #expect(at == moved.count)
    }

    static let errors: [(String, ProtocolError)] = [
        ("*3000000000\r\n", .invalidMultibulkLength),
        ("*20000000\r\n", .invalidMultibulkLength),
        ("*1048577\r\n", .invalidMultibulkLength),
        ("*abc\r\n", .invalidMultibulkLength),
        ("*1\r\n$2000000000\r\n", .invalidBulkLength),
        ("*1\r\n$-1\r\n", .invalidBulkLength),
        ("*1\r\n$x\r\n", .invalidBulkLength),
        ("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", .expectedDollar(got: UInt8(ascii: "f"))),
        ("SET \"a\r\n", .unbalancedQuotes),
        ("SET 'a\r\n", .unbalancedQuotes),
        ("SET \"a\"b\r\n", .unbalancedQuotes),
    ]

    @Test(arguments: errors.indices)
    func malformedInputThrows(index: Int) {
        let (input, expected) = Self.errors[index]
        for byteByByte in [false, true] {
            #expect(throws: expected) { try parseAll(Array(input.utf8), byteByByte: byteByByte) }
        }
    }

    @Test func errorMessagesAreRedisTexts() {
        #expect(ProtocolError.invalidMultibulkLength.message == "Protocol error: invalid multibulk length")
        #expect(ProtocolError.invalidBulkLength.message == "Protocol error: invalid bulk length")
        #expect(ProtocolError.tooBigInlineRequest.message == "Protocol error: too big inline request")
        #expect(ProtocolError.tooBigMultibulkCountString.message == "Protocol error: too big mbulk count string")
        #expect(ProtocolError.expectedDollar(got: UInt8(ascii: "f")).message == "Protocol error: expected '$', got 'f'")
        #expect(ProtocolError.unbalancedQuotes.message == "Protocol error: unbalanced quotes in request")
    }

    @Test func inlineLineOver64KiBIsRefused() {
        let input = [UInt8](repeating: UInt8(ascii: "a"), count: 64 * 1024 + 1)
        #expect(throws: ProtocolError.tooBigInlineRequest) { try parseAll(input, byteByByte: false) }
    }

    @Test func countLineOver64KiBIsRefused() {
        let input = Array("*".utf8) + [UInt8](repeating: UInt8(ascii: "1"), count: 64 * 1024 + 1)
        #expect(throws: ProtocolError.tooBigMultibulkCountString) { try parseAll(input, byteByByte: false) }
        let bulk = Array("*1\r\n$".utf8) + [UInt8](repeating: UInt8(ascii: "1"), count: 64 * 1024 + 1)
        #expect(throws: ProtocolError.tooBigBulkCountString) { try parseAll(bulk, byteByByte: false) }
    }

    @Test func bulkLimitIsConfigurable() throws {
        let limits = RequestLimits(maxBulkLength: 10)
        #expect(try parseAll(Array("*1\r\n$10\r\n0123456789\r\n".utf8), byteByByte: false, limits: limits)
            == [words("0123456789")])
        #expect(throws: ProtocolError.invalidBulkLength) {
            try parseAll(Array("*1\r\n$11\r\n".utf8), byteByByte: false, limits: limits)
        }
    }

    @Test func hugeCountAllocatesNothingUpFront() throws {
        // A count of a million with no elements behind it waits for bytes and
        // holds no memory for them.
        var parser = RequestParser()
        let head = Array("*1000000\r\n".utf8)
        var index = 0
        let result = try head.withUnsafeBytes { raw throws(ProtocolError) in try parser.next(raw, index: &index) }
        #expect(result == nil)
        #expect(parser.pendingArgumentBytes == 0)
        #expect(parser.isMidRequest)
    }
}

@Suite("Integers")
struct IntegerParsingTests {
    @Test(arguments: [("0", Int64(0)), ("1", 1), ("-1", -1), ("9223372036854775807", Int64.max),
                      ("-9223372036854775808", Int64.min), ("42", 42)])
    func accepts(text: String, value: Int64) {
        #expect(parseStrictInt64(Array(text.utf8)) == value)
    }

    @Test(arguments: ["", "-", "+1", " 1", "1 ", "01", "-0", "1.0", "9223372036854775808", "-9223372036854775809", "abc"])
    func refuses(text: String) {
        #expect(parseStrictInt64(Array(text.utf8)) == nil)
    }
}
