import Foundation
import KVCacheClient
import Testing

/// Expiry, keyspace and named-cache calls against the real server.
@Suite("Expiry and keys")
struct ExpiryAndKeyTests {
    @Test func expireThenTTLCountsDown() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v")
        #expect(try client.ttl("k") == -1)
        #expect(try client.expire("k", seconds: 100))
        #expect((99...100).contains(try client.ttl("k")))
        #expect(try client.ttl("missing") == -2)
        #expect(try client.expire("missing", seconds: 100) == false)
    }

    @Test func pexpireThenPTTL() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v")
        #expect(try client.pexpire("k", milliseconds: 9000))
        #expect((8000...9000).contains(try client.pttl("k")))
        #expect(try client.pttl("missing") == -2)
    }

    @Test func expireAtAndPexpireAtTakeUnixTimes() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.mset([("a", "1"), ("b", "2")])
        let now = Int64(Date().timeIntervalSince1970)
        #expect(try client.expireAt("a", unixSeconds: now + 100))
        #expect((98...100).contains(try client.ttl("a")))
        #expect(try client.pexpireAt("b", unixMilliseconds: (now + 200) * 1000))
        #expect((198...200).contains(try client.ttl("b")))
        #expect(try client.expireAt("a", unixSeconds: now - 10))  // in the past: deleted
        #expect(try client.exists("a") == 0)
    }

    @Test func expireConditionsFollowRedis() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v")
        #expect(try client.expire("k", seconds: 100, .ifHasExpiry) == false)
        #expect(try client.expire("k", seconds: 100, .ifNoExpiry))
        #expect(try client.expire("k", seconds: 50, .ifLater) == false)
        #expect(try client.expire("k", seconds: 200, .ifLater))
        #expect(try client.expire("k", seconds: 300, .ifSooner) == false)
        #expect(try client.expire("k", seconds: 10, .ifSooner))
        #expect((9...10).contains(try client.ttl("k")))
    }

    @Test func persistRemovesTheExpiry() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v", expiry: .seconds(100))
        #expect(try client.persist("k"))
        #expect(try client.persist("k") == false)
        #expect(try client.ttl("k") == -1)
    }

    @Test func anExpiredKeyIsGone() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v", expiry: .milliseconds(100))
        Thread.sleep(forTimeInterval: 0.25)
        #expect(try client.get("k") == nil)
        #expect(try client.exists("k") == 0)
    }

    @Test func delAndExistsCountKeys() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.mset([("a", "1"), ("b", "2")])
        #expect(try client.exists("a", "b", "missing", "a") == 3)
        #expect(try client.del("a", "missing") == 1)
        #expect(try client.del(["a", "b"]) == 1)
        #expect(try client.dbsize() == 0)
    }

    @Test func keysMatchesAGlob() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.mset([("user:1", "a"), ("user:2", "b"), ("session:1", "c")])
        let users = try client.keys("user:*").map { String(decoding: $0, as: UTF8.self) }
        #expect(users.sorted() == ["user:1", "user:2"])
        #expect(try client.keys().count == 3)
    }

    @Test func scanOneStepReturnsACursor() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.mset((0..<50).map { ("k\($0)", "v") })
        let page = try client.scan(cursor: 0, count: 10)
        #expect(page.cursor != 0)
        #expect(!page.keys.isEmpty)
    }

    @Test func scanKeysVisitsEveryKeyOnce() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.mset((0..<1000).map { ("k\($0)", "v") })
        try client.set("other", "v")
        let keys = try client.scanKeys(match: "k*", count: 37).map { String(decoding: $0, as: UTF8.self) }
        #expect(keys.count == 1000)
        #expect(Set(keys) == Set((0..<1000).map { "k\($0)" }))
    }

    @Test func forEachKeyWalksThePages() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.mset((0..<300).map { ("k\($0)", "v") })
        var seen = 0
        try client.forEachKey(count: 50, type: "string") { _ in seen += 1 }
        #expect(seen == 300)
    }

    @Test func renameMovesTheValue() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("old", "v")
        try client.rename("old", to: "new")
        #expect(try client.getString("new") == "v")
        #expect(throws: KVCacheClientError.server("ERR no such key")) { try client.rename("old", to: "x") }
    }

    @Test func renameNXRefusesAnExistingTarget() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.mset([("a", "1"), ("b", "2")])
        #expect(try client.renameNX("a", to: "b") == false)
        #expect(try client.renameNX("a", to: "c"))
        #expect(try client.getString("c") == "1")
    }

    @Test func typeNamesStringOrNone() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v")
        #expect(try client.type("k") == "string")
        #expect(try client.type("missing") == "none")
    }

    @Test func selectByNameAndIndexIsolatesKeys() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "db0")
        try client.select("sessions")
        #expect(try client.get("k") == nil)
        try client.set("k", "sessions")
        try client.select(3)
        try client.set("k", "db3")
        try client.select(0)
        #expect(try client.getString("k") == "db0")
        try client.select("sessions")
        #expect(try client.getString("k") == "sessions")
        #expect(try server.client(cache: "db3").getString("k") == "db3")  // SELECT 3 is the cache db3
    }

    @Test func selectOutOfRangeIsTheServersError() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(throws: KVCacheClientError.server("ERR DB index is out of range")) { try client.select(99) }
    }

    @Test func flushdbEmptiesOnlyTheSelectedCache() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v")
        try client.select("other")
        try client.set("k", "v")
        try client.flushdb()
        #expect(try client.dbsize() == 0)
        try client.select(0)
        #expect(try client.dbsize() == 1)
    }

    @Test func flushallEmptiesEveryCache() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("k", "v")
        try client.select("other")
        try client.set("k", "v")
        try client.flushall()
        #expect(try client.dbsize() == 0)
        try client.select(0)
        #expect(try client.dbsize() == 0)
    }

    @Test func infoCachesListsTheCaches() throws {
        let server = try TestServer()
        let client = try server.client(cache: "sessions")
        try client.set("k", "v")
        // INFO keyspace has Redis's numbered caches; INFO caches has every cache.
        #expect(try client.info("keyspace") == "# Keyspace\r\n")
        let info = try client.info("caches")
        #expect(info.hasPrefix("# Caches"))
        #expect(info.contains("cache_sessions:keys=1,"))
    }
}
