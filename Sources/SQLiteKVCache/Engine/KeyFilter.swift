import Foundation
import Synchronization

/// A blocked Bloom filter of key digests: `mightContain` is never false for
/// a digest inserted, and true for one never inserted with a probability
/// of about 0.3% at its capacity (16 bits a key, 6 bits set in one 512-bit
/// block, so a probe reads one cache line). A digest is SHA-256, already
/// uniform: its words are the hashes, nothing is hashed again.
final class KeyFilter: @unchecked Sendable {
    static let bitsPerKey = 16
    static let wordsPerBlock = 8

    /// How many keys it was sized for.
    let capacity: Int
    /// Inserts so far (a key inserted twice counts twice).
    private(set) var inserted = 0
    private var words: [UInt64]
    private let blocks: UInt64

    init(capacity: Int) {
        self.capacity = max(1024, capacity)
        let blockCount = (self.capacity * Self.bitsPerKey + 511) / 512
        blocks = UInt64(blockCount)
        words = [UInt64](repeating: 0, count: blockCount * Self.wordsPerBlock)
    }

    /// Bytes the filter takes.
    var memoryBytes: Int { words.count * 8 + 64 }

    var isFull: Bool { inserted >= capacity }

    @inline(__always)
    private func block(_ digest: KeyDigest) -> Int {
        Int(digest.w1.multipliedFullWidth(by: blocks).high) * Self.wordsPerBlock
    }

    func insert(_ digest: KeyDigest) {
        let base = block(digest)
        var bits = digest.w2
        words.withUnsafeMutableBufferPointer { w in
            for _ in 0..<6 {
                let position = Int(bits & 511)
                w[base + position >> 6] |= 1 << UInt64(position & 63)
                bits >>= 9
            }
        }
        inserted += 1
    }

    func mightContain(_ digest: KeyDigest) -> Bool {
        let base = block(digest)
        var bits = digest.w2
        return words.withUnsafeBufferPointer { w in
            for _ in 0..<6 {
                let position = Int(bits & 511)
                if w[base + position >> 6] & (1 << UInt64(position & 63)) == 0 { return false }
                bits >>= 9
            }
            return true
        }
    }

    /// Adds every digest `other` holds (a filter of the same capacity).
    func formUnion(_ other: KeyFilter) {
        precondition(other.words.count == words.count, "a union of filters of different sizes")
        other.words.withUnsafeBufferPointer { o in
            words.withUnsafeMutableBufferPointer { w in
                for i in 0..<w.count { w[i] |= o[i] }
            }
        }
        inserted += other.inserted
    }
}

/// Which keys a cache's file may hold, so a write or read of a key memory
/// does not hold skips SQLite when the file cannot have it (a new key: the
/// whole of an ingest). Layers of `KeyFilter`s: the first built from a scan
/// of the file's digests, on a thread of its own (the loop asks the file
/// until it is done), then a layer twice as large each time the last one
/// fills. Deletes leave their bits, so after inserts of four times the
/// keys the cache holds, the filter is built again from a new scan (the
/// old one answers meanwhile).
///
/// The rule that keeps it exact (never "absent" for a key the file holds):
/// every key written to the table with a row is inserted (`KeyTable.write`)
/// before any batch can carry it to the file, and a build also takes the
/// keys written from its start (into `building`) and every key not yet
/// applied when it started. Owner thread only, but for the scan's result.
final class FileKeys {
    /// The filters answering now; empty while none is built (then every
    /// question goes to the file).
    private var layers: [KeyFilter] = []
    /// A build in progress: the layers taking the inserts since it started,
    /// and the scan of the file.
    private var building: (layers: [KeyFilter], scan: FileKeyScan)?
    /// Bumped when the file is emptied or exchanged: a scan started before is stale.
    private var generation = 0
    /// Builds started (for tests and INFO).
    private(set) var builds = 0
    /// Lookups the filter answered "absent", sparing a read of the file.
    private(set) var spared = 0

    var isReady: Bool { !layers.isEmpty }

    var memoryBytes: Int {
        (layers + (building?.layers ?? [])).reduce(0) { $0 + $1.memoryBytes }
    }

    /// Whether the file may hold `digest` (true while no filter is built).
    func mayHold(_ digest: KeyDigest) -> Bool {
        if building != nil { collectScan() }
        guard !layers.isEmpty else { return true }
        for layer in layers where layer.mightContain(digest) { return true }
        spared += 1
        return false
    }

    /// A key is written with a row: the file may hold it from now on.
    func insert(_ digest: KeyDigest) {
        if !layers.isEmpty { Self.insert(digest, into: &layers) }
        if building != nil { Self.insert(digest, into: &building!.layers) }
    }

    private static func insert(_ digest: KeyDigest, into layers: inout [KeyFilter]) {
        if layers[layers.count - 1].isFull { layers.append(KeyFilter(capacity: layers[layers.count - 1].capacity * 2)) }
        layers[layers.count - 1].insert(digest)
    }

    /// The file was emptied (a clear reached it, or it is new): nothing is
    /// in it but what is inserted from now on.
    func reset(expecting keys: Int = 0) {
        generation += 1
        building = nil
        layers = [KeyFilter(capacity: max(1 << 16, 2 * keys))]
    }

    /// The file under this engine changed identity (SWAPDB exchanged it, a
    /// rollback reloaded it): forget what was known until a new build.
    func invalidate() {
        generation += 1
        building = nil
        layers = []
    }

    /// Whether a build should start: none yet, or the layers took far more
    /// inserts than the cache holds keys (deleted keys' bits make false
    /// positives).
    func wantsBuild(keys: Int) -> Bool {
        guard building == nil else { return false }
        guard !layers.isEmpty else { return true }
        let inserted = layers.reduce(0) { $0 + $1.inserted }
        return inserted > 4 * max(keys, 1 << 16)
    }

    /// Starts a build: a scan of `path` (whose stats row must name
    /// `fileID`) on a thread of its own, sized for `keys`, with `unapplied`
    /// (the keys written but not yet in the file, listed now) inserted
    /// there too (after a replay of the log, hundreds of thousands).
    func startBuild(path: String, fileID: UInt64, keys: Int, unapplied: [KeyDigest]) {
        let capacity = max(1 << 16, 2 * keys)
        builds += 1
        building = ([KeyFilter(capacity: capacity)],
                    FileKeyScan(path: path, fileID: fileID, capacity: capacity, generation: generation, unapplied: unapplied))
    }

    /// Takes a finished scan: its filter and the inserts since it started
    /// become the layers. A failed or stale scan is dropped (the layers
    /// before it go on answering; a later write asks for a build again).
    private func collectScan() {
        guard let (fresh, scan) = building, let outcome = scan.outcome else { return }
        building = nil
        guard scan.generation == generation, case .success(let scanned) = outcome else { return }
        fresh[0].formUnion(scanned)
        layers = fresh
    }

    /// Waits for a build in progress (tests, and a `SAVE` that wants exact figures).
    func waitForBuild() {
        building?.scan.wait()
        if building != nil { collectScan() }
    }
}

/// One scan of a cache file's digests on a thread of its own, into a
/// filter: the file's second reader, opened for the scan and closed after,
/// reading the small age index (it holds every digest) in one transaction.
final class FileKeyScan: @unchecked Sendable {
    enum Failure: Swift.Error { case failed(String), otherFile }

    let generation: Int
    private let done = Atomic<Bool>(false)
    private var result: Result<KeyFilter, Failure>?
    private let finished = DispatchSemaphore(value: 0)

    init(path: String, fileID: UInt64, capacity: Int, generation: Int, unapplied: [KeyDigest]) {
        self.generation = generation
        let thread = Thread { [self] in
            // Background work: at the lowest priority (nice is per thread on
            // Linux), so on a busy or single core the loop keeps its time (a
            // replay of the log ran 1.2x longer beside a scan at nice 0) and
            // lookups go to the file until the scan is done.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
            result = Self.scan(path: path, fileID: fileID, capacity: capacity).map { filter in
                for digest in unapplied { filter.insert(digest) }
                return filter
            }
            done.store(true, ordering: .releasing)
            finished.signal()
        }
        thread.name = "kvcache-keyscan"
        thread.start()
    }

    /// The scan's outcome once it is done (nil before).
    var outcome: Result<KeyFilter, Failure>? {
        done.load(ordering: .acquiring) ? result : nil
    }

    func wait() {
        guard !done.load(ordering: .acquiring) else { return }
        finished.wait()
        finished.signal()
    }

    private static func scan(path: String, fileID: UInt64, capacity: Int) -> Result<KeyFilter, Failure> {
        let filter = KeyFilter(capacity: capacity)
        do {
            let connection = try SQLiteConnection(path: path, create: false)
            defer { connection.close() }
            connection.setBusyTimeout(milliseconds: 5000)
            try connection.execute("PRAGMA query_only=1")
            try connection.execute("PRAGMA cache_size=-2048")
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            guard let id = try connection.scalarInt("SELECT file_id FROM stats WHERE id = 1"), UInt64(bitPattern: id) == fileID else {
                return .failure(.otherFile)
            }
            let stmt = try connection.statement("SELECT digest FROM entries INDEXED BY entries_by_age")
            defer { stmt.reset() }
            while try stmt.step() { filter.insert(stmt.digest(0)) }
            return .success(filter)
        } catch {
            return .failure(.failed("\(error)"))
        }
    }
}
