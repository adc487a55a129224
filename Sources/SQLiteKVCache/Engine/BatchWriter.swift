import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A unit of work for the writer: the batches sealed together at one log
/// position (one per cache that changed), applied in order, then the WALs
/// of some files emptied (before their files are exchanged or closed).
public final class WriterJob: @unchecked Sendable {
    /// The log position every batch of the job completes.
    public let lsn: UInt64
    public let batches: [CacheBatch]
    let truncating: [CacheFile]
    /// When the job was submitted and when the writer finished it.
    public let submitted: Date
    public internal(set) var finished: Date?
    /// Seconds the writer took to apply each batch (its transaction, the
    /// commit's fsync and any checkpoint due after it), in batch order.
    public internal(set) var applySeconds: [Double] = []
    /// Seconds spent emptying WALs (`wal_checkpoint(TRUNCATE)`) after the
    /// batches; 0 when none was.
    public internal(set) var checkpointSeconds = 0.0

    /// - Parameter truncatingWALOf: engines whose WAL is checkpointed into
    ///   the file and emptied after the batches (their files are about to
    ///   be exchanged or closed by the owner).
    public init(lsn: UInt64, batches: [CacheBatch], truncatingWALOf engines: [CacheEngine] = []) {
        self.lsn = lsn
        self.batches = batches
        self.truncating = engines.map(\.file)
        self.submitted = Date()
    }

    /// Whether every batch was applied.
    public var succeeded: Bool { batches.allSatisfy { $0.error == nil } }
}

/// The writer thread: applies jobs to the cache files in submission order,
/// so the owner's thread (the server's loop) never runs a SQLite write, a
/// commit, a checkpoint or an fsync of a cache file. Finished jobs wait in
/// `takeFinished()`; `onFinished` is told (the server wakes its loop).
///
/// The thread runs at a lower priority (nice `niceness`, 10 by default): on a machine
/// whose cores are all busy serving clients, it takes what is left, and the
/// owner's backpressure (a bound on unapplied bytes) paces the writes.
public final class BatchWriter: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [WriterJob] = []
    private var finished: [WriterJob] = []
    private var working = false
    private var paused = false
    private var stopping = false
    private var thread: Thread?
    private let onFinished: @Sendable () -> Void
    private let niceness: Int32
    private var applied = 0
    private var busySeconds = 0.0

    public init(niceness: Int32 = 10, onFinished: @escaping @Sendable () -> Void) {
        self.niceness = niceness
        self.onFinished = onFinished
        let thread = Thread { [self] in run() }
        thread.name = "kvcache-writer"
        self.thread = thread
        thread.start()
    }

    /// Queues a job.
    public func submit(_ job: WriterJob) {
        condition.withLock {
            precondition(!stopping, "submit() after stop()")
            queue.append(job)
            condition.broadcast()
        }
    }

    /// Jobs finished since the last call, in submission order.
    public func takeFinished() -> [WriterJob] {
        condition.withLock {
            defer { finished.removeAll() }
            return finished
        }
    }

    /// Jobs submitted and not yet taken back with `takeFinished`.
    public var outstanding: Int { condition.withLock { queue.count + (working ? 1 : 0) + finished.count } }

    /// Holds the writer (a debug knob: the log then keeps every write).
    public func setPaused(_ paused: Bool) {
        condition.withLock {
            self.paused = paused
            condition.broadcast()
        }
    }

    public var isPaused: Bool { condition.withLock { paused } }

    /// Batches applied and seconds spent applying them.
    public var progress: (batches: Int, seconds: Double) { condition.withLock { (applied, busySeconds) } }

    /// Waits until every submitted job is finished (SAVE, shutdown).
    public func waitUntilIdle() {
        condition.withLock {
            while !queue.isEmpty || working { condition.wait() }
        }
    }

    /// Finishes the queue and stops the thread.
    public func stop() {
        condition.withLock {
            stopping = true
            paused = false
            condition.broadcast()
            while thread != nil { condition.wait() }
        }
    }

    private func run() {
        // Lower this thread's priority only: on Linux the nice value is per thread, and 0 is the caller.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
        while true {
            condition.lock()
            while (queue.isEmpty || paused) && !stopping { condition.wait() }
            if queue.isEmpty {
                thread = nil
                condition.broadcast()
                condition.unlock()
                return
            }
            let job = queue.removeFirst()
            working = true
            condition.unlock()

            let started = Date()
            for batch in job.batches {
                let began = Date()
                batch.apply()
                job.applySeconds.append(Date().timeIntervalSince(began))
            }
            let checkpointsBegan = Date()
            var checkpointed = !job.truncating.isEmpty
            for file in job.truncating { file.truncateWAL() }
            if condition.withLock({ queue.isEmpty }) {
                // Idle: empty the WALs a large batch left (a restart then
                // reads no WAL, and the disk gets the room back).
                for batch in job.batches
                where batch.file.walFramesSinceTruncate.load() >= CacheFile.checkpointThresholdPages {
                    batch.file.truncateWAL()
                    checkpointed = true
                }
                // And give back the page cache its transactions filled (up
                // to half of sqlite-cache-size a file): the next batch, 1
                // to 5 s away, finds most of its pages in the kernel's
                // cache, and a drained memtable leaves no SQLite cache
                // behind in RssAnon (the loop's reader keeps its own).
                for batch in job.batches { sqlite3_db_release_memory(batch.file.writer.handle) }
            }
            let now = Date()
            if checkpointed { job.checkpointSeconds = now.timeIntervalSince(checkpointsBegan) }
            job.finished = now

            condition.withLock {
                working = false
                applied += job.batches.count
                busySeconds += now.timeIntervalSince(started)
                finished.append(job)
                condition.broadcast()
            }
            onFinished()
        }
    }
}

extension CacheFile {
    /// Copies the whole WAL into the file and empties it (on the writer connection).
    func truncateWAL() {
        // The PRAGMA answers a row even when a reader kept the checkpoint
        // from finishing; the call's code tells.
        var logFrames: Int32 = 0, copied: Int32 = 0
        if sqlite3_wal_checkpoint_v2(writer.handle, nil, SQLITE_CHECKPOINT_TRUNCATE, &logFrames, &copied) == SQLITE_OK {
            walPages.store(0)
            walFramesSinceTruncate.store(0)
            checkpoints.add(1)
        }
    }
}
