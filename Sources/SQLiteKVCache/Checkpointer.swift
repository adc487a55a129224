import CSQLite
import Dispatch
import Foundation

/// Copies a cache's WAL back into its file on a background thread, so the
/// bulk of a checkpoint (copying pages, fsync) never holds up the thread
/// that owns the cache. The owner's connection never checkpoints by itself
/// (wal_autocheckpoint=0); a WAL hook on it calls `walGrew` after each
/// commit, and past `threshold` pages a PASSIVE checkpoint runs on a
/// second connection: it copies what no reader needs and never blocks the
/// writer.
///
/// A background pass can never finish the job, though: the owner keeps
/// appending while it runs, and SQLite rewinds the WAL only when a writer
/// starts after a checkpoint that caught up completely. So once a pass
/// leaves a short tail (at most `ownerTailFrames` frames appended while it
/// ran), the owner runs a PASSIVE checkpoint of its own between
/// transactions (`finishIfDue`): it copies only that tail, and the next
/// write transaction starts the WAL over. Without it the WAL grows without
/// bound under steady writes; a longer tail waits for another pass.
final class Checkpointer: @unchecked Sendable {
    /// One thread for every cache of the process: checkpoints are rare and
    /// I/O-bound, and a queue keeps them from running two at once.
    private static let queue = DispatchQueue(label: "kvcache.checkpoint", qos: .utility)

    let path: String
    let threshold: Int32
    /// The most frames the owner copies itself to finish a checkpoint.
    static let ownerTailFrames: Int32 = 256
    /// Touched on the queue only.
    private var connection: SQLiteConnection?
    /// Set on the owner's thread when a checkpoint is asked for, cleared on the queue when done.
    private let inFlight = Locked(false)
    /// Checkpoints run so far (for tests and INFO).
    let completed = Locked(0)
    /// Set when a background pass ends: the owner should finish the checkpoint.
    private let passEnded = Locked(false)

    init(path: String, threshold: Int32) {
        self.path = path
        self.threshold = threshold
    }

    /// Called after each commit with the WAL's size in pages. A pass starts
    /// at `threshold` pages, and again after each pass while the WAL stays
    /// over it (its frames are counted until the WAL starts over).
    func walGrew(to pages: Int32) {
        guard pages >= threshold else { return }
        // A pass already left the owner a short tail: another would find
        // nothing to copy, and its fsyncs would queue ahead of the owner's.
        guard !passEnded.withLock({ $0 }) else { return }
        let start = inFlight.withLock { busy -> Bool in
            if busy { return false }
            busy = true
            return true
        }
        guard start else { return }
        Self.queue.async { [self] in
            defer { inFlight.withLock { $0 = false } }
            // A connection per checkpoint: they are rare, and an idle one
            // would hold three descriptors per cache.
            defer {
                connection?.close()
                connection = nil
            }
            do {
                connection = try SQLiteConnection(path: path)
                connection?.setBusyTimeout(milliseconds: 1000)
                guard let handle = connection?.handle else { return }
                var logFrames: Int32 = 0, copiedFrames: Int32 = 0
                let rc = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copiedFrames)
                guard rc == SQLITE_OK || rc == SQLITE_BUSY else { return }
                completed.withLock { $0 += 1 }
                // Only a short tail is left to the owner: copying the frames
                // appended during a long pass (a mass expiry writes ~100 MB/s
                // of frames) stalled the loop for tens of ms. A long tail
                // waits for the next pass, which the next commit starts.
                if logFrames - copiedFrames <= Self.ownerTailFrames {
                    // The owner's checkpoint starts with an fsync of the WAL:
                    // flush the tail's frames here, so that one finds little to write.
                    let wal = open(path + "-wal", O_RDONLY | O_CLOEXEC)
                    if wal >= 0 {
                        _ = fdatasync(wal)
                        Glibc.close(wal)
                    }
                    passEnded.withLock { $0 = true }
                }
            } catch {
                // The owner checkpoints at close; a failed background pass only delays it.
            }
        }
    }

    /// On the owner's thread, between transactions: after a background pass,
    /// checkpoints the few frames appended since, so the WAL can start over.
    func finishIfDue(on owner: SQLiteConnection) {
        guard passEnded.withLock({ ended in defer { ended = false }; return ended }) else { return }
        try? owner.execute("PRAGMA wal_checkpoint(PASSIVE)")
    }

    /// Waits for a running checkpoint and closes the second connection.
    func stop() {
        Self.queue.sync {
            connection?.close()
            connection = nil
        }
    }
}

extension SQLiteConnection {
    /// Calls `body` with the WAL's page count after each commit.
    private final class WALHookBox {
        let body: (Int32) -> Void
        init(_ body: @escaping (Int32) -> Void) { self.body = body }
    }

    func setWALHook(_ body: @escaping (Int32) -> Void) {
        let box = WALHookBox(body)
        retainedHooks.append(box)
        sqlite3_wal_hook(handle, { context, _, _, pages in
            Unmanaged<WALHookBox>.fromOpaque(context!).takeUnretainedValue().body(pages)
            return SQLITE_OK
        }, Unmanaged.passUnretained(box).toOpaque())
    }
}
