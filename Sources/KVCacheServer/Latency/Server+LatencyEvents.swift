import Foundation
import SQLiteKVCache

/// The latency events timed off the loop thread, added when the loop
/// hears of them (the loop's own are added where they happen: `command`
/// and `fast-command` in `execute`, `expire-cycle` and `eviction-cycle` in
/// the periodic work, `aof-write` before replies, `memtable-wait` when a
/// parked write resumes, `cache-open` in the registry).
extension Server {
    /// The log's fsyncs, as the fsync thread timed them: under
    /// `appendfsync always` the replies to writes wait for them (Redis's
    /// `aof-fsync-always`); otherwise nobody waits, and a slow one
    /// (`aof-fsync-background`) tells of a slow disk.
    func recordLogSyncLatency(_ durations: [(time: Int, milliseconds: Int)]) {
        guard latency.enabled else { return }
        let event = config.appendFsync == .always ? "aof-fsync-always" : "aof-fsync-background"
        for sample in durations { latency.addIfNeeded(event, milliseconds: sample.milliseconds, at: sample.time) }
    }

    /// A writer job the loop took back: each batch's SQLite transaction
    /// and commit (`sqlite-commit`) and the WAL checkpoints after them
    /// (`sqlite-checkpoint`), timed by the writer thread.
    func recordWriterLatency(_ job: WriterJob) {
        guard latency.enabled else { return }
        let time = Int((job.finished ?? Date()).timeIntervalSince1970)
        if let slowest = job.applySeconds.max() {
            latency.addIfNeeded("sqlite-commit", milliseconds: Int(slowest * 1000), at: time)
        }
        if job.checkpointSeconds > 0 {
            latency.addIfNeeded("sqlite-checkpoint", milliseconds: Int(job.checkpointSeconds * 1000), at: time)
        }
    }
}
