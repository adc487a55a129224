import Foundation
import KVCacheClient
import KVCacheClientEmbedded
import SQLiteKVCache
import Testing

/// Whole entries (KVCACHE.PUT / KVCACHE.GET) and the API shared with the
/// embedded engine.
@Suite("Entries and the engine's API")
struct EntryTests {
    let key = Array("https://example.com/".utf8)
    let headers = Array("content-type: text/html\r\n".utf8)
    let body = Array("<html>hello</html>".utf8)
    let date = Date(timeIntervalSince1970: 1_700_000_000.5)

    @Test func putThenGetReturnsTheWholeEntry() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.put(key: key, storageDate: date, metadata: headers, value: body)
        let entry = try #require(try client.get(key: key))
        #expect(entry == KVCacheClient.Entry(key: key, storageDate: date, metadata: headers, value: body))
        #expect(try client.get(key) == body)  // GET sees the value
    }

    @Test func getOfAMissingKeyIsNil() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.get(key: key) == nil)
    }

    @Test func storageDatesKeepMilliseconds() throws {
        let server = try TestServer()
        let client = try server.client()
        let precise = Date(timeIntervalSince1970: 1_234_567_890.123)
        try client.put(key: key, storageDate: precise, metadata: [], value: [])
        let stored = try #require(try client.get(key: key)).storageDate
        #expect(abs(stored.timeIntervalSince(precise)) < 0.0005)
    }

    @Test func putWithExpiresAtSetsTheTTL() throws {
        let server = try TestServer()
        let client = try server.client()
        let at = Int64((Date().timeIntervalSince1970 + 100) * 1000)
        try client.put(key: key, storageDate: Date(), metadata: [], value: body, expiresAt: at)
        #expect((98...100).contains(try client.ttl(key)))
    }

    @Test func putWithAnExpiryOptionSetsTheTTL() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.put(key: key, storageDate: Date(), metadata: [], value: body, expiry: .seconds(30))
        #expect((29...30).contains(try client.ttl(key)))
        try client.put(key: key, storageDate: Date(), metadata: headers, value: body, expiry: .keepTTL)
        #expect(try client.ttl(key) > 0)
    }

    @Test func deleteSaysWhetherThereWasAnEntry() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.put(key: key, storageDate: date, metadata: headers, value: body)
        #expect(try client.delete(key: key))
        #expect(try client.delete(key: key) == false)
        #expect(try client.get(key: key) == nil)
    }

    @Test func clearEmptiesOnlyTheClientsCache() throws {
        let server = try TestServer()
        let client = try server.client(cache: "responses")
        let other = try server.client()
        try client.put(key: key, storageDate: date, metadata: headers, value: body)
        try other.set("k", "v")
        try client.clear()
        #expect(try client.dbsize() == 0)
        #expect(try other.dbsize() == 1)
    }

    /// A program written once against the protocol.
    static func cacheResponse(in cache: any KeyValueCache, url: String, headers: [UInt8], body: [UInt8]) throws -> [UInt8]? {
        let key = Array(url.utf8)
        try cache.put(key: key, storageDate: Date(timeIntervalSince1970: 1_700_000_000), metadata: headers, value: body)
        guard let entry = try cache.get(key: key) else { return nil }
        #expect(entry.key == key)
        #expect(entry.storageDate == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(entry.metadata == headers)
        #expect(try cache.delete(key: key))
        #expect(try cache.get(key: key) == nil)
        try cache.put(key: key, storageDate: Date(), metadata: [], value: body, expiresAt: nil)
        try cache.clear()
        #expect(try cache.get(key: key) == nil)
        return entry.value
    }

    @Test func theSameCodeRunsOnTheEmbeddedEngine() throws {
        let directory = FileManager.default.temporaryDirectory.path + "/kvcache-embedded-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let cache: any KeyValueCache = SQLiteKVCache(handle: "responses", directory: directory, diskCapacity: 0)
        #expect(try Self.cacheResponse(in: cache, url: "https://example.com/", headers: headers, body: body) == body)
    }

    @Test func theSameCodeRunsOnTheServer() throws {
        let server = try TestServer()
        let cache: any KeyValueCache = try KVCacheClient(port: server.port, cache: "responses")
        #expect(try Self.cacheResponse(in: cache, url: "https://example.com/", headers: headers, body: body) == body)
    }

    @Test func concreteCallsWithoutExpiryResolveOnBoth() throws {
        // The protocol's four-argument put beside each type's own defaulted
        // one: a plain call must compile and work on either concrete type.
        let directory = FileManager.default.temporaryDirectory.path + "/kvcache-embedded-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let engine = SQLiteKVCache(handle: "c", directory: directory, diskCapacity: 0)
        try engine.put(key: key, storageDate: date, metadata: headers, value: body)
        #expect(try engine.get(key: key)?.value == body)
        let server = try TestServer()
        let client = try server.client()
        try client.put(key: key, storageDate: date, metadata: headers, value: body)
        #expect(try client.get(key: key)?.value == body)
    }
}
