import Foundation
import Testing
@testable import SQLiteKVCache

@Suite("Value kinds")
struct ValueKindTests {
    let dir = TemporaryDirectory()

    func cache(_ handle: String = "kinds", memoryTier: Int = 16 << 20) -> SQLiteKVCache {
        var configuration = SQLiteKVCache.Configuration()
        configuration.memoryTierBytes = memoryTier
        return SQLiteKVCache(handle: handle, directory: dir.path, configuration: configuration)
    }

    func entry(_ key: String, _ value: String, _ kind: ValueKind, expiresAt: Int64? = nil) -> SQLiteKVCache.Entry {
        SQLiteKVCache.Entry(key: bytes(key), storageDate: Date(timeIntervalSince1970: 1_700_000_000), metadata: bytes("m"),
                            value: bytes(value), expiresAt: expiresAt, kind: kind)
    }

    @Test func theReferencePutStoresAString() throws {
        let c = cache()
        try c.put(key: bytes("k"), storageDate: Date(), metadata: [], value: bytes("v"))
        #expect(try c.get(key: bytes("k"))?.kind == .string)
    }

    @Test(arguments: [0, 16 << 20])
    func everyKindRoundTripsThroughTheFileAndTheTier(tier: Int) throws {
        let c = cache(memoryTier: tier)
        for kind in ValueKind.allCases { try c.put(entry("k\(kind.rawValue)", "v\(kind.rawValue)", kind)) }
        for kind in ValueKind.allCases {
            let got = try #require(try c.get(key: bytes("k\(kind.rawValue)")))
            #expect(got == entry("k\(kind.rawValue)", "v\(kind.rawValue)", kind))
        }
        // contentSize is still key + value + metadata: the kind costs nothing.
        #expect(try c.contentBytes() == ValueKind.allCases.count * (2 + 2 + 1))
    }

    @Test func kindPersistsAcrossInstances() throws {
        do {
            let c = cache()
            try c.put(entry("list", "abc", .list))
            try c.put(entry("zset", "xyz", .zset, expiresAt: 4_000_000_000_000))
            c.close()
        }
        let c = cache()
        #expect(try c.get(key: bytes("list"))?.kind == .list)
        let zset = try #require(try c.get(key: bytes("zset")))
        #expect(zset.kind == .zset)
        #expect(zset.expiresAt == 4_000_000_000_000)
        #expect(RawDatabase(path: dir.file("kinds.sqlite")).scalar("SELECT kind FROM entries WHERE key = CAST('list' AS BLOB)") == "1")
    }

    @Test func overwritingChangesTheKind() throws {
        let c = cache(memoryTier: 0)
        try c.put(entry("k", "a", .hash))
        try c.put(entry("k", "b", .set))
        #expect(try c.get(key: bytes("k"))?.kind == .set)
        try c.put(key: bytes("k"), storageDate: Date(), metadata: [], value: bytes("s"))
        #expect(try c.get(key: bytes("k"))?.kind == .string)
        #expect(try c.count() == 1)
    }

    @Test func deferredWritesKeepTheKind() throws {
        do {
            let c = cache()
            try c.setDeferredWrites(true)
            try c.beginBatch()
            try c.put(entry("a", "1", .list))
            try c.put(entry("b", "2", .hash))
            try c.put(entry("a", "3", .zset))
            #expect(try c.get(key: bytes("a"))?.kind == .zset)
            #expect(try c.pendingWrites().count == 2)
            try c.commitBatch()
            c.close()
        }
        let c = cache(memoryTier: 0)
        #expect(try c.get(key: bytes("a")) == entry("a", "3", .zset))
        #expect(try c.get(key: bytes("b")) == entry("b", "2", .hash))
    }

    @Test func scanFiltersByKind() throws {
        let c = cache()
        for i in 0..<30 { try c.put(entry("k\(i)", "v", ValueKind.allCases[i % 5])) }
        var cursor: UInt64 = 0
        var lists: [String] = []
        repeat {
            let step = try c.scan(cursor: cursor, count: 7, kind: .list)
            lists += step.keys.map { String(decoding: $0, as: UTF8.self) }
            cursor = step.next
        } while cursor != 0
        #expect(Set(lists) == Set((0..<30).filter { $0 % 5 == 1 }.map { "k\($0)" }))
        #expect(lists.count == 6)
    }

    @Test func anOldSchemaIsRecreated() throws {
        do {
            let raw = RawDatabase(path: dir.file("old.sqlite"))
            raw.execute("""
                CREATE TABLE entries(digest BLOB PRIMARY KEY NOT NULL, size INTEGER NOT NULL, storage_date REAL NOT NULL,
                    seq INTEGER NOT NULL, expires_at INTEGER, key BLOB NOT NULL, metadata BLOB NOT NULL,
                    value BLOB NOT NULL) WITHOUT ROWID;
                PRAGMA user_version = 1;
                """)
        }
        let c = SQLiteKVCache(handle: "old", directory: dir.path, diskCapacity: 0)
        try c.put(entry("k", "v", .hash))
        #expect(try c.get(key: bytes("k"))?.kind == .hash)
        c.close()
        #expect(RawDatabase(path: dir.file("old.sqlite")).scalar("PRAGMA user_version") == "\(CacheFile.schemaVersion)")
    }

    /// A file of an older schema version (2 or 3) holding "k" = "v".
    func writeOldFile(_ name: String, version: Int) {
        let statsColumns = version >= 3 ? ",\n    applied_lsn INTEGER NOT NULL DEFAULT 0, file_id INTEGER NOT NULL DEFAULT 0" : ""
        let stats = version >= 3 ? "1, 1, 2, 2, 0, 0, 0, 77" : "1, 1, 2, 2, 0, 0"
        RawDatabase(path: dir.file("\(name).sqlite")).execute("""
                PRAGMA journal_mode=WAL;
                CREATE TABLE entries(digest BLOB PRIMARY KEY NOT NULL, size INTEGER NOT NULL, storage_date REAL NOT NULL,
                    seq INTEGER NOT NULL, expires_at INTEGER, key BLOB NOT NULL, metadata BLOB NOT NULL,
                    value BLOB NOT NULL, kind INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
                CREATE INDEX entries_by_age ON entries(storage_date, seq);
                CREATE INDEX entries_by_expiry ON entries(expires_at) WHERE expires_at IS NOT NULL;
                CREATE TABLE stats(id INTEGER PRIMARY KEY CHECK (id = 1), entries INTEGER NOT NULL, bytes INTEGER NOT NULL,
                    next_seq INTEGER NOT NULL, volatile INTEGER NOT NULL, expires_sum REAL NOT NULL\(statsColumns));
                INSERT INTO stats VALUES (\(stats));
                INSERT INTO entries VALUES (x'\(KeyHasher().digest(bytes("k")).bytes.map { String(format: "%02x", $0) }.joined())',
                    2, 1700000000, 1, NULL, x'6b', x'', x'76', 0);
                PRAGMA user_version = \(version);
                """)
    }

    @Test func aVersion2FileIsMigratedWithItsEntries() throws {
        writeOldFile("two", version: 2)
        let c = SQLiteKVCache(handle: "two", directory: dir.path, diskCapacity: 0)
        #expect(try c.get(key: bytes("k"))?.value == bytes("v"))
        #expect(try c.count() == 1)
        c.close()
        let raw = RawDatabase(path: dir.file("two.sqlite"))
        #expect(raw.scalar("PRAGMA user_version") == "\(CacheFile.schemaVersion)")
        #expect(raw.scalar("SELECT file_id != 0 FROM stats") == "1")
    }

    @Test func aVersion3FileGainsTheWrittenColumnsWithItsEntries() throws {
        writeOldFile("three", version: 3)
        let c = SQLiteKVCache(handle: "three", directory: dir.path, diskCapacity: 0)
        #expect(try c.get(key: bytes("k"))?.value == bytes("v"))
        try c.put(key: bytes("k"), storageDate: Date(timeIntervalSince1970: 1_800_000_000), metadata: [], value: bytes("w"))
        #expect(try c.get(key: bytes("k"))?.value == bytes("w"))
        #expect(try c.count() == 1)
        c.close()
        let raw = RawDatabase(path: dir.file("three.sqlite"))
        #expect(raw.scalar("PRAGMA user_version") == "\(CacheFile.schemaVersion)")
        #expect(raw.scalar("SELECT file_id FROM stats") == "77")
        #expect(raw.scalar("SELECT storage_date || '/' || written_date FROM entries") == "1700000000.0/1800000000.0")
    }
}
