import Foundation
import KVCacheClient
import Testing

/// The typed string calls against the real server.
@Suite("String commands")
struct StringCommandTests {
    @Test func setThenGetRoundTripsBytesAndText() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.set("greeting", "hello world"))
        #expect(try client.getString("greeting") == "hello world")
        let binary: [UInt8] = [0, 13, 10, 255, 128]
        try client.set(binary, binary)
        #expect(try client.get(binary) == binary)
        try client.set("empty", "")
        #expect(try client.get("empty") == [])
        #expect(try client.get("missing") == nil)
    }

    @Test func setWithExSetsASecondsTTL() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v", expiry: .seconds(100))
        #expect((99...100).contains(try client.ttl("k")))
    }

    @Test func setWithPxSetsAMillisecondsTTL() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v", expiry: .milliseconds(5000))
        #expect((4000...5000).contains(try client.pttl("k")))
    }

    @Test func setWithAnAbsoluteTimeExpiresThen() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v", expiry: .at(Date().addingTimeInterval(50)))
        #expect((49...50).contains(try client.ttl("k")))
        try client.set("k2", "v", expiry: .unixSeconds(Int64(Date().timeIntervalSince1970) + 100))
        #expect((98...100).contains(try client.ttl("k2")))
    }

    @Test func setNXWritesOnlyANewKey() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.set("k", "first", condition: .ifNotExists))
        #expect(try client.set("k", "second", condition: .ifNotExists) == false)
        #expect(try client.getString("k") == "first")
    }

    @Test func setXXWritesOnlyAnExistingKey() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.set("k", "v", condition: .ifExists) == false)
        #expect(try client.get("k") == nil)
        try client.set("k", "v")
        #expect(try client.set("k", "w", condition: .ifExists))
        #expect(try client.getString("k") == "w")
    }

    @Test func setKeepTTLKeepsTheExpiry() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v", expiry: .seconds(100))
        try client.set("k", "w", expiry: .keepTTL)
        #expect(try client.ttl("k") > 0)
        try client.set("k", "x")
        #expect(try client.ttl("k") == -1)
    }

    @Test func aBadOptionComboIsTheServersSyntaxError() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(throws: KVCacheClientError.server("ERR syntax error")) {
            try client.set("k", "v", expiry: .persist)
        }
    }

    @Test func msetAndMgetKeepOrderAndMisses() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.mset([("a", "1"), ("b", "2")])
        #expect(try client.mget(["a", "missing", "b"]) == [Array("1".utf8), nil, Array("2".utf8)])
    }

    @Test func msetNXSetsAllOrNone() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.msetNX([("a", "1"), ("b", "2")]))
        #expect(try client.msetNX([("b", "x"), ("c", "3")]) == false)
        #expect(try client.exists("c") == 0)
    }

    @Test func integerCountersCountUpAndDown() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.incr("n") == 1)
        #expect(try client.incrBy("n", 41) == 42)
        #expect(try client.decr("n") == 41)
        #expect(try client.decrBy("n", 50) == -9)
        try client.set("i", 7)
        #expect(try client.incr("i") == 8)
    }

    @Test func incrByFloatReturnsTheNewValue() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("f", "10.5")
        #expect(try client.incrByFloat("f", 0.1) == 10.6)
        #expect(try client.incrByFloat("f", -10.6) == 0)
        #expect(try client.getString("f") == "0")
    }

    @Test func appendAndStrlenMeasureBytes() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.append("k", "Hello") == 5)
        #expect(try client.append("k", " wörld") == 12)
        #expect(try client.strlen("k") == 12)
        #expect(try client.strlen("missing") == 0)
    }

    @Test func getRangeAndSetRangeWorkOnBytes() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "Hello World")
        #expect(try client.getRange("k", 0, 4) == Array("Hello".utf8))
        #expect(try client.getRange("k", -5, -1) == Array("World".utf8))
        #expect(try client.setRange("k", offset: 6, "Redis") == 11)
        #expect(try client.getString("k") == "Hello Redis")
        #expect(try client.setRange("pad", offset: 3, "x") == 4)
        #expect(try client.get("pad") == [0, 0, 0, UInt8(ascii: "x")])
    }

    @Test func getDelReturnsAndRemoves() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v")
        #expect(try client.getDel("k") == Array("v".utf8))
        #expect(try client.getDel("k") == nil)
        #expect(try client.exists("k") == 0)
    }

    @Test func getExSetsAndRemovesTheExpiry() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v")
        #expect(try client.getEx("k", expiry: .seconds(100)) == Array("v".utf8))
        #expect(try client.ttl("k") > 0)
        #expect(try client.getEx("k", expiry: .persist) == Array("v".utf8))
        #expect(try client.ttl("k") == -1)
        #expect(try client.getEx("missing") == nil)
    }

    @Test func aLargeValueRoundTrips() throws {
        let server = try TestServer()
        let client = try server.client()
        let value = (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try client.set("big", value)
        #expect(try client.get("big") == value)
    }
}
