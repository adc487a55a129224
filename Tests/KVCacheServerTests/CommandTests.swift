import RESP
import Testing
@testable import KVCacheServer

private func args(_ words: [String]) -> [[UInt8]] { words.map { Array($0.utf8) } }

/// SET's option parser, and commands through the in-process server where
/// what matters is the key-access layer (hits and misses, WRONGTYPE,
/// expiry, cross-cache operations).
@Suite("Commands, in process")
struct CommandTests {
    /// SET/GETEX options after the value (or key), as Redis 7's
    /// parseExtendedStringArgumentsOrReply takes them: the flags set, or nil for a syntax error.
    static let setOptions: [([String], StringSetOptions.Command, String?)] = [
        ([], .set, ""),
        (["NX"], .set, "nx"),
        (["xx", "GET"], .set, "xx get"),
        (["nx", "nx"], .set, "nx"),
        (["nx", "xx"], .set, nil),
        (["EX", "10"], .set, "ex@1"),
        (["px", "10", "get"], .set, "get px@1"),
        (["ex", "1", "ex", "2"], .set, "ex@3"),
        (["ex", "1", "px", "2"], .set, nil),
        (["ex"], .set, nil),
        (["keepttl"], .set, "keepttl"),
        (["keepttl", "ex", "1"], .set, nil),
        (["ex", "1", "keepttl"], .set, nil),
        (["exat", "1", "nx", "get"], .set, "nx get exat@1"),
        (["persist"], .set, nil),
        (["persist"], .getex, "persist"),
        (["persist", "ex", "1"], .getex, nil),
        (["pxat", "5"], .getex, "pxat@1"),
        (["nx"], .getex, nil),
        (["keepttl"], .getex, nil),
        (["bogus"], .set, nil),
    ]

    /// A request's name packed from its bytes in place is the table's
    /// packed name of the same name in any case (the lookup's fast path).
    @Test(arguments: ["get", "SET", "HinCrByFloat", "eval_ro", "x", "client|list", String(repeating: "a", count: 32)])
    func packedNamesFromBytesMatchTheTables(name: String) {
        let bytes = Array(name.utf8)
        let inPlace = bytes.withUnsafeBytes { PackedCommandName(bytes: $0) }
        #expect(inPlace != nil && inPlace == PackedCommandName(Array(name.lowercased().utf8)))
        #expect(Array(repeating: UInt8(ascii: "a"), count: 33).withUnsafeBytes { PackedCommandName(bytes: $0) } == nil)
    }

    @Test(arguments: setOptions.indices)
    func setOptionsParseAsRedis(index: Int) {
        let (words, command, expected) = Self.setOptions[index]
        let result: String? = Arguments.withCopy(of: args(words)) { arguments in
            guard let options = try? StringSetOptions(arguments, from: 0, for: command) else { return nil }
            var flags: [String] = []
            if options.nx { flags.append("nx") }
            if options.xx { flags.append("xx") }
            if options.get { flags.append("get") }
            if options.keepTTL { flags.append("keepttl") }
            if options.persist { flags.append("persist") }
            if let (form, at) = options.expiry {
                let name = switch form { case .seconds: "ex"; case .milliseconds: "px"; case .unixSeconds: "exat"; case .unixMilliseconds: "pxat" }
                flags.append("\(name)@\(at)")
            }
            return flags.joined(separator: " ")
        }
        #expect(result == expected, "\(words)")
    }

    static let setReplies: [([String], RESPValue)] = [
        (["SET", "k", "v", "EX", "0"], .error("ERR invalid expire time in 'set' command")),
        (["SET", "k", "v", "px", "-5"], .error("ERR invalid expire time in 'set' command")),
        (["SET", "k", "v", "EX", "9223372036854775807"], .error("ERR invalid expire time in 'set' command")),
        (["SET", "k", "v", "EX", "ten"], .error("ERR value is not an integer or out of range")),
        (["SET", "k", "v", "NX", "XX"], .error("ERR syntax error")),
        (["SET", "k", "v", "GET"], .bulk(nil)),
        (["SET", "k", "v", "XX"], .bulk(nil)),
        (["GETEX", "missing", "PERSIST"], .bulk(nil)),
        // As Redis: a missing key answers nil before the time is looked at.
        (["GETEX", "missing", "EX", "0"], .bulk(nil)),
    ]

    @Test(arguments: setReplies.indices)
    func setAndGetexReplies(index: Int) throws {
        let (words, reply) = Self.setReplies[index]
        let client = try InProcessServer().client()
        #expect(try client.call(bytes: args(words)) == reply)
    }

    @Test func getexSetsClearsOrRefusesTheExpiry() throws {
        let client = try InProcessServer().client()
        try client.call("SET", "k", "v")
        #expect(try client.call("GETEX", "k", "EX", "0") == .error("ERR invalid expire time in 'getex' command"))
        #expect(try client.call("GETEX", "k", "PX", "50000") == .bulk("v"))
        #expect(try client.call("TTL", "k") == .integer(50))
        #expect(try client.call("GETEX", "k", "PERSIST") == .bulk("v"))
        #expect(try client.call("TTL", "k") == .integer(-1))
        #expect(try client.call("GETEX", "k", "PXAT", "1") == .bulk("v"))
        #expect(try client.call("EXISTS", "k") == .integer(0))
    }

    @Test func readsCountHitsAndMissesWritesDoNot() throws {
        let server = try InProcessServer()
        let client = try server.client()
        try client.call("SET", "a", "1")
        try client.call("GET", "a")           // hit
        try client.call("GET", "b")           // miss
        try client.call("EXISTS", "a", "b")   // hit, miss
        try client.call("TYPE", "a")          // hit
        try client.call("SETNX", "a", "2")    // not counted
        try client.call("SET", "a", "3", "GET")  // not counted
        try client.call("INCR", "n")          // not counted
        #expect(server.server.stats.keyspaceHits == 3)
        #expect(server.server.stats.keyspaceMisses == 2)
    }

    @Test func wrongTypeIsTheKeyspacesAnswer() throws {
        let client = try InProcessServer().client()
        try client.call("RPUSH", "l", "x")
        let wrongType = RESPValue.error("WRONGTYPE Operation against a key holding the wrong kind of value")
        #expect(try client.call("GET", "l") == wrongType)
        #expect(try client.call("SADD", "l", "m") == wrongType)
        #expect(try client.call("HGET", "l", "f") == wrongType)
        #expect(try client.call("SET", "l", "v", "GET") == wrongType)
        #expect(try client.call("MGET", "l") == .array([.bulk(nil)]))
        #expect(try client.call("SET", "l", "v") == .ok)
        #expect(try client.call("TYPE", "l") == .simpleString("string"))
    }

    @Test func keysMoveCopyAndSwapBetweenCaches() throws {
        let client = try InProcessServer().client()
        try client.call("SET", "k", "v", "EX", "100")
        #expect(try client.call("MOVE", "k", "1") == .integer(1))
        #expect(try client.call("EXISTS", "k") == .integer(0))
        try client.call("SELECT", "1")
        #expect(try client.call("TTL", "k") == .integer(100))
        #expect(try client.call("COPY", "k", "k2", "DB", "0") == .integer(1))
        #expect(try client.call("COPY", "k", "k2", "DB", "0") == .integer(0))
        #expect(try client.call("RENAME", "k", "r") == .ok)
        #expect(try client.call("RENAMENX", "r", "r") == .integer(0))
        #expect(try client.call("RENAME", "nope", "x") == .error("ERR no such key"))
        #expect(try client.call("SWAPDB", "0", "1") == .ok)
        #expect(try client.call("GET", "k2") == .bulk("v"))
        #expect(try client.call("FLUSHALL") == .ok)
        #expect(try client.call("DBSIZE") == .integer(0))
    }

    @Test func emptiedCollectionsAreDeleted() throws {
        let client = try InProcessServer().client()
        #expect(try client.call("SADD", "s", "a", "b") == .integer(2))
        #expect(try client.call("SREM", "s", "a", "b") == .integer(2))
        #expect(try client.call("EXISTS", "s") == .integer(0))
        #expect(try client.call("HSET", "h", "f", "v") == .integer(1))
        #expect(try client.call("HDEL", "h", "f") == .integer(1))
        #expect(try client.call("TYPE", "h") == .simpleString("none"))
    }

    @Test func queuedCommandsAreCopiesOfTheirArguments() throws {
        // MULTI keeps its requests past the read buffer's reuse.
        let client = try InProcessServer().client()
        try client.call("MULTI")
        for i in 0..<20 { #expect(try client.call("SET", "k\(i)", String(repeating: "x", count: i * 100)) == .simpleString("QUEUED")) }
        guard case .array(let replies?) = try client.call("EXEC") else {
            Issue.record("EXEC did not answer an array")
            return
        }
        #expect(replies.count == 20 && replies.allSatisfy { $0 == .ok })
        #expect(try client.call("STRLEN", "k19") == .integer(1900))
    }
}
