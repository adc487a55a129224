import Foundation
import Testing
@testable import SQLiteKVCache

/// The engine's change reports (`Configuration.onChange`), for embedded users.
@Suite("SQLiteKVCache change observer")
struct ChangeObserverTests {
    let dir = TemporaryDirectory()

    final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [CacheEvent] = []
        func add(_ event: CacheEvent) { lock.lock(); seen.append(event); lock.unlock() }
        var events: [CacheEvent] { lock.lock(); defer { lock.unlock() }; return seen }
    }

    func cache(capacity: Int = 0, _ recorder: Recorder) -> SQLiteKVCache {
        var configuration = SQLiteKVCache.Configuration(diskCapacity: capacity)
        configuration.onChange = { recorder.add($0) }
        return SQLiteKVCache(handle: "observed", directory: dir.path, configuration: configuration)
    }

    @Test func putDeleteAndClearAreReported() throws {
        let recorder = Recorder()
        let c = cache(recorder)
        try c.put(key: bytes("a"), storageDate: Date(), metadata: [], value: bytes("1"))
        #expect(try c.delete(key: bytes("a")))
        #expect(try !c.delete(key: bytes("a")))
        try c.clear()
        #expect(recorder.events == [.stored(key: bytes("a")), .deleted(key: bytes("a")), .cleared])
    }

    @Test func expiryIsReportedWhenARemovalFindsIt() throws {
        let recorder = Recorder()
        let c = cache(recorder)
        let past = Int64(Date().timeIntervalSince1970 * 1000) - 1000
        try c.put(key: bytes("old"), storageDate: Date(), metadata: [], value: bytes("x"), expiresAt: past)
        #expect(try c.get(key: bytes("old")) == nil)
        #expect(recorder.events == [.stored(key: bytes("old")), .expired(key: bytes("old"))])
    }

    @Test func evictionToCapacityIsReported() throws {
        let recorder = Recorder()
        let c = cache(capacity: 4000, recorder)
        for i in 0..<6 {
            try c.put(key: bytes("k\(i)"), storageDate: Date(timeIntervalSince1970: Double(1000 + i)), metadata: [],
                      value: [UInt8](repeating: 120, count: 1000))
        }
        let evicted = recorder.events.compactMap { event -> [UInt8]? in
            if case .evicted(let key) = event { return key } else { return nil }
        }
        #expect(evicted == [bytes("k0"), bytes("k1"), bytes("k2")])
    }
}
