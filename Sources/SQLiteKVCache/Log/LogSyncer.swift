#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Fsyncs the log on a thread of its own, as Redis's background I/O
/// thread does, so the owner never waits on the disk: `everysec` asks once
/// a second, `always` once per loop iteration that wrote (and holds those
/// replies until `syncedLSN` passes their records). Requests that arrive
/// while an fsync runs are served together by the next one.
public final class LogSyncer: @unchecked Sendable {
    struct Request {
        /// A descriptor the syncer owns (a dup, or a segment handed over to close).
        var fd: Int32
        var upTo: UInt64
    }

    private let condition = NSCondition()
    private var requests: [Request] = []
    private var directories: [String] = []
    private var unlinks: [String] = []
    private var stopping = false
    private var running = false
    private var thread: Thread?
    private let onSynced: @Sendable () -> Void
    /// Guarded by `condition`.
    private var synced: UInt64 = 0
    private var lastError: Int32?
    private var fsyncs = 0
    private var lastDuration = 0.0
    /// Each round's duration since the last `takeDurations()`, bounded.
    private var durations: [(time: Int, milliseconds: Int)] = []
    static let durationsKept = 64

    init(onSynced: @escaping @Sendable () -> Void) {
        self.onSynced = onSynced
    }

    /// The last log position known to be on disk.
    public var syncedLSN: UInt64 { condition.withLock { synced } }
    /// The errno of the last fsync that failed, until one succeeds.
    public var syncError: Int32? { condition.withLock { lastError } }
    /// Fsyncs done so far.
    public var count: Int { condition.withLock { fsyncs } }
    /// Seconds the last fsync took.
    public var lastSeconds: Double { condition.withLock { lastDuration } }

    /// How long each round of fsyncs of the log took since the last call:
    /// when it ended (Unix seconds) and its milliseconds, oldest first (at
    /// most the last 64). For the owner's latency monitor.
    public func takeDurations() -> [(time: Int, milliseconds: Int)] {
        condition.withLock {
            defer { durations.removeAll() }
            return durations
        }
    }

    /// Marks positions up to `lsn` as on disk without an fsync (at start-up:
    /// what was read back from the files).
    func assumeSynced(upTo lsn: UInt64) {
        condition.withLock { synced = max(synced, lsn) }
    }

    /// Asks for an fsync of `fd` (written up to `upTo`). With `thenClose`,
    /// the syncer takes `fd` over and closes it after; otherwise it works
    /// on a duplicate.
    func request(fd: Int32, upTo: UInt64, thenClose: Bool = false) {
        let owned = thenClose ? fd : dup(fd)
        guard owned >= 0 else { return }
        condition.withLock {
            requests.append(Request(fd: owned, upTo: upTo))
            startIfNeeded()
            condition.signal()
        }
    }

    /// Asks for an fsync of a directory (a segment was created in it).
    func syncDirectory(_ path: String) {
        condition.withLock {
            directories.append(path)
            startIfNeeded()
            condition.signal()
        }
    }

    /// Deletes a file (a retired segment) on the syncer's thread: a large
    /// one's `unlink` frees its blocks, and took the loop 10-20 ms.
    func unlinkLater(_ path: String) {
        condition.withLock {
            unlinks.append(path)
            startIfNeeded()
            condition.signal()
        }
    }

    private func startIfNeeded() {
        guard !running && !stopping else { return }
        running = true
        let thread = Thread { [self] in run() }
        thread.name = "kvcache-aof-fsync"
        self.thread = thread
        thread.start()
    }

    private func run() {
        while true {
            condition.lock()
            while requests.isEmpty && directories.isEmpty && unlinks.isEmpty && !stopping { condition.wait() }
            if requests.isEmpty && directories.isEmpty && unlinks.isEmpty && stopping {
                running = false
                thread = nil  // the thread's closure holds self: break the cycle, or both leak
                condition.broadcast()
                condition.unlock()
                return
            }
            let work = requests
            let dirs = Set(directories)
            let doomed = unlinks
            requests.removeAll()
            directories.removeAll()
            unlinks.removeAll()
            condition.unlock()

            let started = Date()
            var failure: Int32?
            var upTo: UInt64 = 0
            // One fdatasync per file: the requests of a round (one per loop
            // iteration that wrote while the last round ran) name the same
            // segment most of the time, and an fdatasync after the last of
            // them covers what every earlier one wrote. One each ran them
            // one after another, and the replies waited for them all.
            let files = Self.syncsNeeded(work)
            for file in files {
                if fdatasync(work[file.last].fd) != 0 { failure = errno } else { upTo = max(upTo, file.upTo) }
            }
            for request in work { Glibc.close(request.fd) }
            for path in dirs {
                let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if fd >= 0 {
                    _ = fsync(fd)
                    Glibc.close(fd)
                }
            }
            let seconds = Date().timeIntervalSince(started)
            condition.withLock {
                if failure == nil { synced = max(synced, upTo) }
                lastError = failure
                fsyncs += files.count
                lastDuration = seconds
                if !work.isEmpty {
                    if durations.count == Self.durationsKept { durations.removeFirst() }
                    durations.append((Int(Date().timeIntervalSince1970), Int(seconds * 1000)))
                }
            }
            if !work.isEmpty { onSynced() }
            // After the replies the fsync releases.
            for path in doomed { unlink(path) }
        }
    }

    /// The fdatasyncs a round of requests needs: one per file, on the last
    /// descriptor asked for it, covering the furthest position asked.
    static func syncsNeeded(_ work: [Request]) -> [(last: Int, upTo: UInt64)] {
        var files: [(file: FileID, last: Int, upTo: UInt64)] = []
        for (i, request) in work.enumerated() {
            let file = fileID(request.fd, orElse: i)
            if let at = files.firstIndex(where: { $0.file == file }) {
                files[at].last = i
                files[at].upTo = max(files[at].upTo, request.upTo)
            } else {
                files.append((file, i, request.upTo))
            }
        }
        return files.map { ($0.last, $0.upTo) }
    }

    /// A file's identity (its device and inode), whatever descriptor names it.
    private struct FileID: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    /// The identity of the file `fd` is open on; when `fstat` fails, one of
    /// its own (`unique`), so the request is synced on its own.
    private static func fileID(_ fd: Int32, orElse unique: Int) -> FileID {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return FileID(device: .max, inode: UInt64(unique)) }
        return FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Serves what was asked, then stops the thread.
    func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
            while running { condition.wait() }
        }
    }
}
