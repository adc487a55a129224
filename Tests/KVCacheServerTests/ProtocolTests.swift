import RESP
import Testing
@testable import KVCacheServer

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

private func frame(_ args: String...) -> String {
    args.reduce("*\(args.count)\r\n") { $0 + "$\($1.utf8.count)\r\n\($1)\r\n" }
}

/// Requests through the server's own read path (socket, read buffer, parser,
/// arguments viewed in the buffer, execution), fed whole and byte by byte.
@Suite("Protocol, in process")
struct ProtocolTests {
    /// A request stream and the replies it must get, whatever the pieces it arrives in.
    static let exchanges: [(String, [RESPValue])] = [
        (frame("PING"), [.simpleString("PONG")]),
        (frame("SET", "k", "hello") + frame("GET", "k"), [.ok, .bulk("hello")]),
        (frame("SET", "k", "") + frame("GET", "k") + frame("STRLEN", "k"), [.ok, .bulk(""), .integer(0)]),
        ("SET a 1\r\nGET a\r\n", [.ok, .bulk("1")]),
        ("SET \"a b\" 'c d'\r\nGET \"a b\"\n", [.ok, .bulk("c d")]),
        ("\r\n\r\nPING\r\n*0\r\n*-1\r\n" + frame("ECHO", "x"), [.simpleString("PONG"), .bulk("x")]),
        (frame("MSET", "a", "1", "b", "2") + frame("MGET", "a", "b", "c"),
         [.ok, .array([.bulk("1"), .bulk("2"), .bulk(nil)])]),
        (frame("MULTI") + frame("SET", "t", "v") + frame("GET", "t") + frame("EXEC"),
         [.ok, .simpleString("QUEUED"), .simpleString("QUEUED"), .array([.ok, .bulk("v")])]),
        (frame("set", "k", "v", "ex", "100") + frame("ttl", "k"), [.ok, .integer(100)]),
        (frame("nosuch", "a", "b"), [.error("ERR unknown command 'nosuch', with args beginning with: 'a' 'b' ")]),
        (frame("GET"), [.error("ERR wrong number of arguments for 'get' command")]),
    ]

    @Test(arguments: exchanges.indices)
    func wholeAndByteByByte(index: Int) throws {
        let (input, expected) = Self.exchanges[index]
        for chunk in [Int.max, 1, 3] {
            let server = try InProcessServer()
            let client = try server.client()
            try client.feed(input, chunk: chunk)
            #expect(try client.replies() == expected, "in pieces of \(chunk)")
        }
    }

    @Test func largeValueArrivingSlowlyStaysIntact() throws {
        // A frame held unfinished while the read buffer grows past its first
        // 64 KiB and is compacted: the arguments parsed before stay valid.
        let value = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        var request = bytes("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$\(value.count)\r\n") + value + bytes("\r\n")
        request += bytes(frame("GET", "big"))
        for chunk in [7_777, 65_536, 100_003] {
            let server = try InProcessServer()
            let client = try server.client()
            try client.feed(request, chunk: chunk)
            #expect(try client.replies() == [.ok, .bulk(value)])
        }
    }

    @Test func pipelineOfManyRequestsInOddPieces() throws {
        let server = try InProcessServer()
        let client = try server.client()
        var stream = ""
        for i in 0..<500 { stream += frame("SET", "k\(i)", String(repeating: "v", count: i)) }
        for i in 0..<500 { stream += "GET k\(i)\r\n" }
        try client.feed(stream, chunk: 997)
        let replies = try client.replies()
        #expect(replies.count == 1000)
        #expect(replies.prefix(500).allSatisfy { $0 == .ok })
        #expect(replies.dropFirst(500).enumerated().allSatisfy { $1 == .bulk(String(repeating: "v", count: $0)) })
    }

    static let protocolErrors: [(String, String)] = [
        ("*3000000000\r\n", "ERR Protocol error: invalid multibulk length"),
        ("*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length"),
        ("*2\r\n$3\r\nGET\r\nxyz\r\n", "ERR Protocol error: expected '$', got 'x'"),
        ("SET \"a\r\n", "ERR Protocol error: unbalanced quotes in request"),
    ]

    @Test(arguments: protocolErrors.indices)
    func protocolErrorRepliesThenCloses(index: Int) throws {
        let (input, text) = Self.protocolErrors[index]
        for chunk in [Int.max, 1] {
            let server = try InProcessServer()
            let client = try server.client()
            try client.feed(frame("PING") + input + frame("PING"), chunk: chunk)
            #expect(try client.replies() == [.simpleString("PONG"), .error(text)])
            #expect(client.closing)
        }
    }

    @Test func queryBufferLimitCountsHeldArguments() throws {
        // Many empty arguments of an unfinished request cost 32 bytes each:
        // past the limit the client is closed.
        let server = try InProcessServer { $0.clientQueryBufferLimit = 1 << 20 }
        let client = try server.client()
        try client.feed("*1000000\r\n")
        let empties = String(repeating: "$0\r\n\r\n", count: 40_000)
        try client.feed(empties, chunk: 6_000)
        #expect(client.connection.closed)
    }

    @Test func overLoopbackOneByteAtATime() throws {
        // The whole loop on a thread: a frame sent a byte per write still
        // gets its one reply.
        let loopback = try LoopbackServer()
        let client = try loopback.client()
        for byte in bytes(frame("SET", "slow", "value") + frame("GET", "slow")) { try client.send(raw: [byte]) }
        #expect(try client.read() == .ok)
        #expect(try client.read() == .bulk("value"))
        try loopback.stop()
    }
}
