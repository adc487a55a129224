import Foundation
import Testing
@testable import SQLiteKVCache

@Suite("SQLiteKVCache basics")
struct BasicTests {
    let dir = TemporaryDirectory()

    func cache(_ handle: String = "test", capacity: Int = 0) -> SQLiteKVCache {
        SQLiteKVCache(handle: handle, directory: dir.path, diskCapacity: capacity)
    }

    @Test func roundTrip() throws {
        let c = cache()
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        try c.put(key: bytes("k"), storageDate: date, metadata: bytes("meta"), value: bytes("value"))
        let entry = try #require(try c.get(key: bytes("k")))
        #expect(entry.key == bytes("k"))
        #expect(entry.value == bytes("value"))
        #expect(entry.metadata == bytes("meta"))
        #expect(entry.storageDate == date)
    }

    @Test func missingKeyIsNil() throws {
        #expect(try cache().get(key: bytes("absent")) == nil)
    }

    @Test func overwriteReplacesEverything() throws {
        let c = cache()
        try c.put(key: bytes("k"), storageDate: Date(timeIntervalSince1970: 1), metadata: bytes("m1"), value: bytes("v1"))
        try c.put(key: bytes("k"), storageDate: Date(timeIntervalSince1970: 2), metadata: bytes("m2"), value: bytes("value2"))
        let entry = try #require(try c.get(key: bytes("k")))
        #expect(entry.value == bytes("value2"))
        #expect(entry.metadata == bytes("m2"))
        #expect(entry.storageDate == Date(timeIntervalSince1970: 2))
        #expect(try c.count() == 1)
        #expect(try c.contentBytes() == 1 + 6 + 2)
    }

    @Test func clearRemovesEverything() throws {
        let c = cache()
        for i in 0..<20 { try c.put(key: bytes("k\(i)"), storageDate: Date(), metadata: [], value: bytes("v")) }
        try c.clear()
        #expect(try c.count() == 0)
        #expect(try c.contentBytes() == 0)
        #expect(try c.get(key: bytes("k3")) == nil)
    }

    @Test func distinctKeysStayDistinct() throws {
        let c = cache()
        try c.put(key: bytes("a"), storageDate: Date(), metadata: [], value: bytes("1"))
        try c.put(key: bytes("b"), storageDate: Date(), metadata: [], value: bytes("2"))
        #expect(try c.get(key: bytes("a"))?.value == bytes("1"))
        #expect(try c.get(key: bytes("b"))?.value == bytes("2"))
    }

    @Test func emptyValueAndMetadataAreNotNil() throws {
        let c = cache()
        try c.put(key: bytes("empty"), storageDate: Date(), metadata: [], value: [])
        let entry = try #require(try c.get(key: bytes("empty")))
        #expect(entry.value == [])
        #expect(entry.metadata == [])
    }

    @Test func deleteRemovesOnlyThatKey() throws {
        let c = cache()
        try c.put(key: bytes("a"), storageDate: Date(), metadata: [], value: bytes("1"))
        try c.put(key: bytes("b"), storageDate: Date(), metadata: [], value: bytes("2"))
        #expect(try c.delete(key: bytes("a")))
        #expect(try c.get(key: bytes("a")) == nil)
        #expect(try c.get(key: bytes("b")) != nil)
        #expect(try c.count() == 1)
    }

    @Test func deleteOfMissingKeyIsFalse() throws {
        let c = cache()
        #expect(try c.delete(key: bytes("nothing")) == false)
        #expect(try c.count() == 0)
    }

    @Test func persistsAcrossInstances() throws {
        do {
            let c = cache("persist")
            try c.put(key: bytes("k"), storageDate: Date(timeIntervalSince1970: 5), metadata: bytes("m"), value: bytes("v"))
            c.close()
        }
        let reopened = cache("persist")
        let entry = try #require(try reopened.get(key: bytes("k")))
        #expect(entry.value == bytes("v"))
        #expect(try reopened.count() == 1)
        #expect(try reopened.contentBytes() == 3)
    }

    @Test func handlesInOneDirectoryAreIndependent() throws {
        let a = cache("alpha"), b = cache("beta")
        try a.put(key: bytes("k"), storageDate: Date(), metadata: [], value: bytes("from-a"))
        #expect(try b.get(key: bytes("k")) == nil)
        try b.put(key: bytes("k"), storageDate: Date(), metadata: [], value: bytes("from-b"))
        #expect(try a.get(key: bytes("k"))?.value == bytes("from-a"))
        try a.clear()
        #expect(try b.get(key: bytes("k"))?.value == bytes("from-b"))
        #expect(FileManager.default.fileExists(atPath: dir.file("alpha.sqlite")))
        #expect(FileManager.default.fileExists(atPath: dir.file("beta.sqlite")))
    }

    @Test(arguments: ["'; DROP TABLE entries; --", "🔥🗝️ key", "nul\0inside", "\0", "long-key"])
    func adversarialKeysRoundTrip(key: String) throws {
        // "long-key" stands for a 100 KB key (kept out of the test's printed name).
        let key = key == "long-key" ? String(repeating: "x", count: 100_000) : key
        let c = cache()
        try c.put(key: bytes(key), storageDate: Date(), metadata: bytes(key), value: bytes(key))
        try c.put(key: bytes("other"), storageDate: Date(), metadata: [], value: bytes("o"))
        let entry = try #require(try c.get(key: bytes(key)))
        #expect(entry.key == bytes(key))
        #expect(entry.value == bytes(key))
        #expect(try c.count() == 2)
        #expect(try c.delete(key: bytes(key)))
        #expect(try c.get(key: bytes("other"))?.value == bytes("o"))
    }

    @Test func secondInstanceOnSameFileIsRefused() throws {
        let first = cache("owned")
        try first.open()
        let second = cache("owned")
        #expect(throws: SQLiteKVCache.Error.cacheLocked(handle: "owned", lockPath: dir.file("owned.sqlite-lock"))) {
            try second.get(key: bytes("k"))
        }
        // The refusal is kept, and the first owner is unharmed.
        #expect(throws: SQLiteKVCache.Error.self) { try second.put(key: bytes("k"), storageDate: Date(), metadata: [], value: []) }
        try first.put(key: bytes("k"), storageDate: Date(), metadata: [], value: bytes("v"))
        #expect(try first.get(key: bytes("k"))?.value == bytes("v"))
        first.close()
        // Once the owner closes, a new instance can take the cache.
        #expect(try cache("owned").get(key: bytes("k"))?.value == bytes("v"))
    }

    @Test func closedInstanceThrowsUnavailable() throws {
        let c = cache()
        try c.open()
        c.close()
        #expect(throws: SQLiteKVCache.Error.databaseUnavailable(reason: "cache 'test' is closed")) {
            try c.get(key: bytes("k"))
        }
    }

    @Test func openingADirectoryAsFileFailsUniformly() throws {
        // A directory where the cache file should be: SQLite cannot open it.
        try FileManager.default.createDirectory(atPath: dir.file("broken.sqlite"), withIntermediateDirectories: true)
        let c = cache("broken")
        var first: SQLiteKVCache.Error?
        do { _ = try c.get(key: bytes("k")) } catch { first = error }
        guard case .databaseUnavailable(let reason)? = first else {
            Issue.record("expected databaseUnavailable, got \(String(describing: first))")
            return
        }
        #expect(reason.contains("broken.sqlite"))
        // Every later call gets the same error.
        #expect(throws: first!) { try c.put(key: bytes("k"), storageDate: Date(), metadata: [], value: []) }
        #expect(throws: first!) { try c.clear() }
    }
}

@Suite("Handles")
struct HandleTests {
    @Test(arguments: ["a", "db0", "sessions", "with.dots", "under_score", "dash-ed", String(repeating: "z", count: 64)])
    func validHandles(handle: String) throws {
        #expect(try SQLiteKVCache.canonicalHandle(handle) == handle)
    }

    @Test func handlesAreLowercased() throws {
        #expect(try SQLiteKVCache.canonicalHandle("Sessions") == "sessions")
        let dir = TemporaryDirectory()
        let upper = SQLiteKVCache(handle: "MiXeD", directory: dir.path, diskCapacity: 0)
        try upper.put(key: bytes("k"), storageDate: Date(), metadata: [], value: bytes("v"))
        upper.close()
        #expect(FileManager.default.fileExists(atPath: dir.file("mixed.sqlite")))
        let lower = SQLiteKVCache(handle: "mixed", directory: dir.path, diskCapacity: 0)
        #expect(try lower.get(key: bytes("k"))?.value == bytes("v"))
    }

    @Test(arguments: ["", ".", "..", "../x", "/etc/passwd", "a/b", "nul\0byte", "space here", "é",
                      String(repeating: "z", count: 65), "star*", "back\\slash"])
    func invalidHandlesAreRejected(handle: String) throws {
        #expect(throws: SQLiteKVCache.Error.invalidHandle(handle)) { try SQLiteKVCache.canonicalHandle(handle) }
        let dir = TemporaryDirectory()
        let c = SQLiteKVCache(handle: handle, directory: dir.path, diskCapacity: 0)
        #expect(throws: SQLiteKVCache.Error.invalidHandle(handle)) { try c.get(key: bytes("k")) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }
}

@Suite("Errors")
struct ErrorTests {
    @Test func descriptionsRenderThroughSQLite() {
        #expect(SQLiteKVCache.Error.writeFailed(sqliteCode: 10).description == "SQLite write failed: disk I/O error (code 10)")
        #expect(SQLiteKVCache.Error.writeFailed(sqliteCode: 13).description
            == "SQLite write failed: database or disk is full (code 13)")
        #expect(SQLiteKVCache.Error.readFailed(sqliteCode: 11).description
            == "SQLite read failed: database disk image is malformed (code 11)")
        #expect(SQLiteKVCache.Error.databaseUnavailable(reason: "x").description == "cache unavailable: x")
        #expect(SQLiteKVCache.Error.invalidHandle("../x").description
            == "invalid cache name '../x': use 1 to 64 of a-z 0-9 . _ - (not '.' or '..')")
        #expect(SQLiteKVCache.Error.cacheLocked(handle: "a", lockPath: "/d/a.sqlite-lock").description
            == "cache 'a' is already open in another instance or process (lock held on /d/a.sqlite-lock)")
        #expect(SQLiteKVCache.Error.entryTooLarge(size: 11, capacity: 10).description
            == "entry of 11 bytes is larger than the cache capacity of 10 bytes")
        #expect(SQLiteKVCache.Error.capacityExceeded(capacity: 10).description
            == "cache is at its capacity of 10 bytes and its policy is noeviction")
    }

    @Test func localizedDescriptionMatchesDescription() {
        let error: any Error = SQLiteKVCache.Error.writeFailed(sqliteCode: 10)
        #expect(error.localizedDescription == "SQLite write failed: disk I/O error (code 10)")
    }
}
