#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation
import SQLiteKVCache

/// When the append-only log is fsynced (Redis's `appendfsync`).
public enum AppendFsync: String, Sendable, CaseIterable {
    /// Before the replies to the writes are sent (group commit: the fsync
    /// runs off the loop thread while other clients are served).
    case always
    /// Once a second, off the loop thread.
    case everysec
    /// When the kernel decides.
    case no
}

/// Redis's persistence as this server keeps it (Redis's `aof.c`, and the
/// part of `rdb.c` a user sees). With `appendonly yes`, every command that
/// changes a cache becomes one record of the append-only log, written
/// before its reply leaves (`beforeReplies`); with `appendfsync always`
/// the reply also waits for the fsync. The caches' changes stay in memory
/// (each engine's memtable) until a seal hands them, as one job for every
/// cache at one log position, to the writer thread, which applies them to
/// SQLite; then the log segments they cover are deleted. With
/// `appendonly no` there is no log, and changes reach SQLite within about
/// a second, and only a command that changes several caches at once
/// (MOVE, COPY … DB, SWAPDB, FLUSHALL, a MULTI over several caches) is
/// logged: written before the writer applies it, so a crash between the
/// commits of its caches' files is completed by a replay (cross-cache
/// commands are never half-applied, whatever the mode).
///
/// What a record holds (`LogOp`): the effect of the command on each cache
/// it touched (a whole entry stored, a delete, an expiry, a clear, a
/// swap), collected from the key-access layer as it happens; a MULTI/EXEC
/// is one record. Expiry and eviction are not logged: a replay at each
/// record's time expires the same keys, and a cache over capacity evicts
/// again.
///
/// Loop-thread only, except the two background threads it owns (the
/// writer and the log's fsync), which wake the loop through `wakeFD`.
final class Persistence {
    private unowned(unsafe) let server: Server  // the server owns this, and outlives it
    private(set) var log: AppendLog?
    let writer: BatchWriter
    /// An eventfd the background threads write to; the loop polls it.
    let wakeFD: Int32

    // The record being built: its ops, encoded, for the running command or
    // the whole MULTI/EXEC.
    private var recordOps: [UInt8] = []
    private var recordOpCount = 0
    /// The cache the record's ops change, and whether they change more than one.
    private var recordCache: String?
    private var recordSpansCaches = false

    /// `appendonly yes`: every change is logged; otherwise only the
    /// records that change several caches.
    private var everyChangeLogged: Bool { server.config.appendOnly }
    private(set) var transactionDepth = 0
    /// The running command changed a live value in place: it is logged as itself.
    private var commandLive = false
    /// What the running command is logged as instead of its arguments
    /// (SPOP as SREM; XREADGROUP as the XCLAIMs of what it delivered).
    private(set) var commandRewrite: [[[UInt8]]]?

    /// Where a command's ops start in the record being built (a command
    /// inside EXEC nests in the EXEC's).
    struct CommandMark {
        let opsStart: Int
        let opCountStart: Int
        let live: Bool
        let rewrite: [[[UInt8]]]?
        let unrecorded: Bool
    }
    /// Set while a command runs whose record would be dropped at its end
    /// (`appendonly no`, a command of one cache, outside a transaction):
    /// its changes are counted but not encoded.
    private var unrecorded = false
    /// Set while replaying the log: nothing is recorded.
    private(set) var replaying = false
    /// The stamp of the record being built, once `recordNow` fixed it.
    private var recordTime: Int64?

    // Seals and the writer.
    private struct InFlightJob {
        let job: WriterJob
        let parts: [(cache: OpenCache, engine: CacheEngine, batch: CacheBatch)]
        let exchanging: Bool
        let changesAtSeal: Int
        let bytes: Int
    }
    /// The jobs with the writer, oldest first.
    private var inFlightJobs: [InFlightJob] = []
    private var inFlight: InFlightJob? { inFlightJobs.first }
    private var lastSeal: Int64 = 0
    /// A seal was asked for (SAVE, BGSAVE, BGREWRITEAOF, a full memtable).
    private var sealRequested = false
    /// Engines to move to the files of the names they serve (after SWAPDB).
    private var exchangesPending = false
    /// A write to the log failed: writes are refused until one succeeds.
    private(set) var logWriteFailing = false

    // What INFO persistence reports.
    private(set) var changes = 0
    private var changesAtSeal = 0
    private(set) var changesSinceLastSave = 0
    private(set) var lastSaveTime: Int64
    private(set) var lastSaveOK = true
    private(set) var saves = 0
    private(set) var rewriteRequested = false
    private(set) var rewrites = 0
    private(set) var lastJobSeconds = 0.0
    private(set) var failedJobs = 0
    /// Engines whose last batch failed.
    private var failing: Set<ObjectIdentifier> = []

    // Loading.
    private var reader: AppendLog.Reader?
    private(set) var loadingStarted: Int64 = 0
    private(set) var loadedRecords = 0
    private(set) var recordsToLoad = 0
    /// The engines a replay made room in.
    private var reservedForReplay: Set<ObjectIdentifier> = []

    /// How often a seal happens when something changed (milliseconds).
    /// Under `appendonly no` the file is the only copy, so a write reaches
    /// it within about a second. With the log holding every change, a seal
    /// every five seconds: at a million keys a batch of a second's writes
    /// dirtied about one B-tree page per key, and five times the keys per
    /// batch share pages (the server's CPU per SET -P 1 at 1M keys, the
    /// writer's work included, fell from 36 to 31 µs, docs/decisions.md). `SAVE`, a full memtable and
    /// the byte bounds below still seal at once. While a cache's last batch
    /// failed (a full disk), every second: writes are refused until a batch
    /// succeeds, so room made on the disk is found within a second, not five.
    var sealInterval: Int64 { everyChangeLogged && failing.isEmpty ? 5000 : 1000 }
    /// A seal also happens once this many bytes of changes wait (a bound
    /// on how large one transaction of the writer gets).
    static let sealBytes = 64 << 20
    /// Jobs the writer may hold at once. While it is behind, a job is
    /// sealed every `sealInterval` (or `sealBytesWhileBehind`) beside those
    /// in flight, so room comes back a job at a time (one
    /// job sealed after a long one carried everything that waited, and
    /// writes waiting for room timed out behind it during a sustained ingest).
    static let maxJobsInFlight = 64
    /// While jobs are in flight, a job is also sealed as soon as this much
    /// has changed since the last seal, so a job is about a second of the
    /// writer's work (a job of a second of arrivals took the writer several
    /// at five million keys).
    static let sealBytesWhileBehind = 16 << 20
    /// Slots of applied batches taken back per iteration of the loop (about
    /// 1.5 ms of it; the rest stay in flight until later iterations).
    static let takeBackPerIteration = 2048
    /// Whether some engine has slots of an applied batch to take back.
    private var takingBack = false

    /// Takes back the next part of applied batches' slots.
    private func continueTakingBack() {
        guard takingBack else { return }
        let started = Server.monotonicMicroseconds()
        defer { server.latency.addIfNeeded("memtable-take-back", milliseconds: (Server.monotonicMicroseconds() - started) / 1000) }
        var pending = false
        for cache in server.registry.open.values {
            guard let engine = cache.engine, engine.takingBackPending else { continue }
            if !engine.continueTakingBack(limit: Self.takeBackPerIteration) { pending = true }
        }
        takingBack = pending
        if pending { server.backgroundWorkPending = true }
    }

    /// Bytes of the jobs in flight (the memtable's bytes when each was
    /// sealed, less those of the jobs before it): what the memtable holds
    /// beyond them is not sealed yet.
    private var sealedBytes: Int { inFlightJobs.reduce(0) { $0 + $1.bytes } }

    init(server: Server, config: ServerConfig) throws {
        self.server = server
        budget = server.registry.memoryBudget
        let fd = eventfd(0, kv_EFD_NONBLOCK | kv_EFD_CLOEXEC)
        guard fd >= 0 else { throw SystemError(function: "eventfd", errno: errno) }
        wakeFD = fd
        let wake: @Sendable () -> Void = {
            var one: UInt64 = 1
            _ = withUnsafeBytes(of: &one) { Glibc.write(fd, $0.baseAddress, 8) }
        }
        writer = BatchWriter(niceness: Int32(config.writerNice), onFinished: wake)
        lastSaveTime = Server.nowMilliseconds() / 1000
        log = try Self.openLog(config, wake: wake, logger: server.logger)
        if let recovery = log?.recovery, recovery.records > 0 {
            reader = log?.makeReader()
            recordsToLoad = recovery.records
            loadingStarted = Server.nowMilliseconds()
            // The scan of a file's keys would take the replay's time, and
            // a replay does not need the filter it builds.
            server.registry.holdsKeyScans = true
        }
    }

    deinit { Glibc.close(wakeFD) }

    private static func openLog(_ config: ServerConfig, wake: @escaping @Sendable () -> Void, logger: Logger) throws -> AppendLog {
        let directory = config.dir + "/" + config.appendDirName
        do {
            let log = try AppendLog(directory: directory, baseName: config.appendFileName,
                                    loadTruncated: config.aofLoadTruncated, onSynced: wake)
            for warning in log.recovery.warnings { logger.warning(warning) }
            return log
        } catch let failure as AppendLog.Failure {
            if case .corrupt(let path, let offset, _) = failure {
                throw ConfigError("\(failure). The log after that point cannot be replayed; to start anyway, "
                    + "keep a copy of \(path), then run `kvcache-server --check-aof --fix \(path)` to truncate it "
                    + "at offset \(offset) (losing the records after it)")
            }
            throw ConfigError("\(failure)")
        }
    }

    /// Whether the log is being replayed (commands get -LOADING).
    var loading: Bool { reader != nil }

    // MARK: Recording changes

    /// Records one change a command made (called by the key-access layer).
    func record(_ op: LogOp) {
        guard !replaying else { return }
        changes += 1
        guard log != nil, !unrecorded else { return }
        op.encode(into: &recordOps)
        recordOpCount += 1
        switch op {
        case .command(let cache, _), .put(let cache, _, _, _, _, _, _), .delete(let cache, _), .expire(let cache, _, _),
             .clear(let cache):
            noteCache(cache)
        case .swap:
            recordSpansCaches = true
        }
    }

    /// `record(.put(…))` without building the op: a SET's path.
    func recordPut(cache: String, key: [UInt8], kind: ValueKind, storageDate: Double, expiresAt: Int64?,
                   metadata: [UInt8], value: [UInt8]) {
        key.withUnsafeBytes { key in
            metadata.withUnsafeBytes { metadata in
                value.withUnsafeBytes { value in
                    recordPut(cache: cache, key: key, kind: kind, storageDate: storageDate, expiresAt: expiresAt,
                              metadata: metadata, value: value)
                }
            }
        }
    }

    /// `recordPut` of bytes viewed in place (a SET's key and value in its request).
    func recordPut(cache: String, key: UnsafeRawBufferPointer, kind: ValueKind, storageDate: Double, expiresAt: Int64?,
                   metadata: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard !replaying else { return }
        changes += 1
        guard log != nil, !unrecorded else { return }
        LogOp.encodePut(cache: cache, key: key, kind: kind, storageDate: storageDate, expiresAt: expiresAt,
                        metadata: metadata, value: value, into: &recordOps)
        recordOpCount += 1
        noteCache(cache)
    }

    private func noteCache(_ cache: String) {
        if let recordCache {
            if recordCache != cache { recordSpansCaches = true }
        } else {
            recordCache = cache
        }
    }

    /// A command starts: its ops are those recorded from now on.
    /// - Parameter unrecorded: the command changes one cache at most, and
    ///   runs at the top level: without `appendonly`, where only records
    ///   spanning caches are kept (so a crash never half-applies them), its
    ///   changes need not be encoded at all.
    func beginCommand(unrecorded: Bool = false) -> CommandMark {
        defer {
            commandLive = false
            commandRewrite = nil
            self.unrecorded = unrecorded && !everyChangeLogged && transactionDepth == 0 && recordOpCount == 0
        }
        return CommandMark(opsStart: recordOps.count, opCountStart: recordOpCount, live: commandLive, rewrite: commandRewrite,
                           unrecorded: self.unrecorded)
    }

    /// The running command changed a collection in place (or made a new
    /// live one): it is logged as itself, not as its effects.
    func noteLiveChange() {
        guard !replaying else { return }
        if !commandLive { changes += 1 }
        commandLive = true
    }

    /// The running command is logged as `args` instead of itself (a command
    /// whose result is random, such as SPOP, logged as the SREM it did).
    func logCommand(as args: [[UInt8]]) {
        guard !replaying else { return }
        commandRewrite = [args]
    }

    /// The running command is logged as the commands `commands`, in order
    /// (none: nothing), as Redis propagates XREADGROUP as XCLAIMs.
    func logCommands(as commands: [[[UInt8]]]) {
        guard !replaying else { return }
        commandRewrite = commands
    }

    /// Starts a MULTI/EXEC: the commands' changes become one record.
    func beginTransaction() { transactionDepth += 1 }

    /// Ends a MULTI/EXEC, appending its record.
    /// - Returns: the record's position, or nil when nothing changed.
    @discardableResult
    func endTransaction() -> UInt64? {
        transactionDepth -= 1
        return transactionDepth == 0 ? appendRecord() : nil
    }

    /// Ends a command begun at `mark` in `cache`: a command that changed a
    /// live value replaces its recorded effects with itself (`args`, or its
    /// rewrite). Appends the record (stamped now) unless inside a transaction.
    /// - Returns: the record's position, or nil when nothing was recorded.
    @discardableResult
    func commandFinished(_ mark: CommandMark, cache: String, args: Arguments) -> UInt64? {
        defer {
            commandLive = mark.live
            commandRewrite = mark.rewrite
            unrecorded = mark.unrecorded
        }
        if commandLive && log != nil && !replaying && !unrecorded {
            recordOps.removeSubrange(mark.opsStart...)
            recordOpCount = mark.opCountStart
            for command in commandRewrite ?? [args.copies] {
                LogOp.command(cache: cache, args: command).encode(into: &recordOps)
                recordOpCount += 1
                noteCache(cache)
            }
        }
        return transactionDepth > 0 ? nil : appendRecord()
    }

    /// Appends what was recorded outside any command (the evictions for
    /// maxmemory, before the command that needed room) as a record of its own.
    @discardableResult
    func appendPending() -> UInt64? {
        transactionDepth > 0 || replaying ? nil : appendRecord()
    }

    /// Appends what the server changed on its own, outside any client's
    /// command (the rejoin pass), as one record.
    @discardableResult
    func internalChangesFinished() -> UInt64? { transactionDepth > 0 ? nil : appendRecord() }

    /// Appends the ops recorded so far as one record.
    private func appendRecord() -> UInt64? {
        let fixed = recordTime
        recordTime = nil
        guard recordOpCount > 0, let log else { return nil }
        defer {
            recordOps.removeAll(keepingCapacity: recordOps.capacity <= 1 << 20)
            recordOpCount = 0
            recordCache = nil
            recordSpansCaches = false
        }
        guard everyChangeLogged || recordSpansCaches else { return nil }
        // Stamped with the command's time (the clock it judged its keys by).
        return log.append(time: fixed ?? Server.keyTime(), opCount: recordOpCount, encodedOps: recordOps)
    }

    /// Now, as the record being built will be stamped: the first call in a
    /// record fixes the time (and the record's stamp), so a replay, which
    /// runs at its record's time, reads the same clock. For the times a
    /// command keeps without logging them (a stream consumer's seen time).
    func recordNow() -> Int64 {
        if replaying { return Server.nowMilliseconds() }
        if let recordTime { return recordTime }
        let now = Server.keyTime()
        recordTime = now
        return now
    }

    /// Why writes are refused now, if they are: the log cannot be written.
    var writeRefusal: ReplyError? {
        guard logWriteFailing, everyChangeLogged, let log else { return nil }
        return ReplyError("MISCONF Errors writing to the AOF file: \(String(cString: strerror(log.writeError ?? EIO)))")
    }

    // MARK: Before replies

    /// Writes the iteration's records (one write(2)), and for `always` asks
    /// for their fsync. Called before replies are sent.
    /// - Returns: the last position written (replies to records past the
    ///   position the syncer reports must wait under `always`).
    func beforeReplies() {
        guard let log, log.pendingBytes > 0 else { return }
        let started = Server.monotonicMicroseconds()
        let written = log.flush()
        server.latency.addIfNeeded("aof-write", milliseconds: (Server.monotonicMicroseconds() - started) / 1000)
        if written {
            if logWriteFailing {
                server.logger.notice("AOF write error looks solved, Redis can write again.")
                logWriteFailing = false
            }
            if server.config.appendFsync == .always && everyChangeLogged { log.requestSync() }
        } else if !logWriteFailing {
            logWriteFailing = true
            server.logger.warning("Error writing to the AOF file: \(String(cString: strerror(log.writeError ?? EIO)))")
        }
    }

    /// The last position whose replies may be sent: under `appendfsync
    /// always`, the last one fsynced; otherwise every one (a record is
    /// acknowledged once appended, even while a failing write retries it,
    /// as Redis does under everysec).
    var syncedLSN: UInt64 {
        guard let log, server.config.appendFsync == .always, everyChangeLogged else { return .max }
        return log.syncer.syncedLSN
    }

    /// The last position appended.
    var lastLSN: UInt64 { log?.lastLSN ?? 0 }

    // MARK: Seals

    /// Bytes of changes not yet in SQLite, over every open cache.
    var unappliedBytes: Int { budget.unappliedBytes }
    /// The budget every cache's memtable counts against (the registry's).
    private let budget: MemoryBudget

    /// Whether writes must wait for the writer (the memtables are full).
    var memtableFull: Bool { unappliedBytes >= server.config.memtableMaxBytes }

    /// Once per loop iteration: asks for the fsync of `everysec`, and seals
    /// when `sealInterval` has passed, enough bytes wait, or a seal was asked for.
    func periodic(now: Int64) {
        continueTakingBack()
        if let log, server.config.appendFsync == .everysec, everyChangeLogged, log.writtenLSN > log.syncer.syncedLSN,
           now - lastSyncRequest >= 1000 {
            lastSyncRequest = now
            log.requestSync()
        }
        guard !loading else { return }
        if inFlightJobs.isEmpty {
            let waiting = unappliedBytes
            if exchangesPending {
                seal(now: now)
            } else if sealParts > 0 || sealRequested || waiting >= Self.sealBytes
                        || (now - lastSeal >= sealInterval && (waiting > 0 || pendingClearsOrChanges)) {
                sealInParts(now: now)
            }
        } else if mayPipeline
                    && (sealParts > 0 || ((now - lastSeal >= sealInterval || unappliedBytes - sealedBytes >= Self.sealBytesWhileBehind)
                        && server.registry.open.values.contains(where: { ($0.engine?.changedCount ?? 0) > 0 }))) {
            sealInParts(now: now)
        }
    }

    /// Changed keys beyond which a seal is done in parts.
    static let sealAtOnceKeys = 8192
    /// Keys a part hands to the next batch (the engines copy their bytes):
    /// about 2 ms of the loop at 0.4-0.6 µs a key.
    static let sealPartKeys = 4096
    /// Parts after which the seal is done whatever is left, so writes
    /// arriving faster than parts are taken cannot hold it off for ever.
    static let maxSealParts = 512
    /// Parts taken of the next job (0: none).
    private var sealParts = 0

    /// Whether a seal in parts has more changed keys left than the seal
    /// copies at once: background work that changes keys (the expiry
    /// sweep) waits, or it outpaces the parts and the seal at the parts'
    /// bound copies the whole backlog (80,000 keys, 27 ms, in a mass expiry).
    var sealBacklogged: Bool {
        sealParts > 0 && server.registry.open.values.reduce(0, { $0 + ($1.engine?.unsealedCount ?? 0) }) > Self.sealAtOnceKeys
    }

    /// Seals, a part per loop iteration while many keys changed: each
    /// part copies up to `sealPartKeys` changed keys' state into the next
    /// batch ahead of the seal, and the seal copies what is left, keys
    /// changed since included (sealing 280,000 keys at once stalled the
    /// loop for 100 ms, every client waiting).
    private func sealInParts(now: Int64) {
        let engines = server.registry.open.values.compactMap(\.engine)
        // Bounded as one seal is: by parts, and by the bytes they copied
        // (keys changed again after their part are copied again).
        if engines.reduce(0, { $0 + $1.unsealedCount }) > Self.sealAtOnceKeys && sealParts < Self.maxSealParts
            && engines.reduce(0, { $0 + $1.openBatchBytes }) < Self.sealBytes {
            let started = Server.monotonicMicroseconds()
            var left = Self.sealPartKeys
            for engine in engines where left > 0 && engine.unsealedCount > 0 {
                let took = engine.sealPart(limit: left)
                left -= took
            }
            let micros = Server.monotonicMicroseconds() - started
            server.latency.addIfNeeded("memtable-seal", milliseconds: micros / 1000)
            if micros >= 20_000 {
                server.logger.verbose("A part of a seal (\(Self.sealPartKeys - left) keys) took \(micros / 1000) ms")
            }
            if left < Self.sealPartKeys {
                sealParts += 1
                server.backgroundWorkPending = true  // the next part without waiting for a client
                return  // the rest in the next iterations
            }
        }
        seal(now: now)
    }

    /// Whether a job may be sealed while others are in flight: not past
    /// `maxJobsInFlight`, not around an exchange of files (SWAPDB: the
    /// files must be idle), and not while a replay's blind writes await
    /// their totals' correction (a batch's totals are those at its seal).
    private var mayPipeline: Bool {
        inFlightJobs.count < Self.maxJobsInFlight && !exchangesPending && !inFlightJobs.contains(where: \.exchanging)
            && !server.registry.open.values.contains(where: { $0.engine?.totalsPending ?? false })
    }
    private var lastSyncRequest: Int64 = 0

    /// Whether some engine has changes to seal (a clear, a policy change)
    /// even though no bytes wait.
    private var pendingClearsOrChanges: Bool {
        server.registry.open.values.contains { ($0.engine?.changedCount ?? 0) > 0 } || changes != changesAtSeal
    }

    /// Seals every open cache's changes into one job at the log's current
    /// position and hands it to the writer. One job at a time.
    /// - Returns: whether a job was submitted.
    @discardableResult
    func seal(now: Int64 = Server.nowMilliseconds()) -> Bool {
        guard inFlightJobs.isEmpty || mayPipeline else { return false }
        lastSeal = now
        sealParts = 0
        let asked = sealRequested
        sealRequested = false
        let lsn = log?.lastLSN ?? 0
        do {
            try log?.rotate()
        } catch {
            server.logger.warning("Can't start a new AOF segment: \(error)")
        }
        var parts: [(cache: OpenCache, engine: CacheEngine, batch: CacheBatch)] = []
        let started = Server.monotonicMicroseconds()
        for cache in server.registry.open.values {
            guard let engine = cache.engine, let batch = engine.seal(lsn: lsn) else { continue }
            parts.append((cache, engine, batch))
        }
        let micros = Server.monotonicMicroseconds() - started
        server.latency.addIfNeeded("memtable-seal", milliseconds: micros / 1000)
        if micros >= 20_000 {
            server.logger.verbose("Sealing \(parts.reduce(0) { $0 + $1.batch.count }) keys took \(micros / 1000) ms")
        }
        let exchanging = exchangesPending ? server.registry.misplacedEngines() : []
        exchangesPending = false
        changesAtSeal = changes
        guard !parts.isEmpty || !exchanging.isEmpty else {
            if inFlightJobs.isEmpty {
                // Nothing waits in memory: every record so far is in the files.
                log?.retire(upTo: lsn)
                changesSinceLastSave = 0
                if asked { recordSave(now: now) }
            } else if asked {
                sealRequested = true  // answered when the jobs in flight are done
            }
            return false
        }
        let job = WriterJob(lsn: lsn, batches: parts.map(\.batch), truncatingWALOf: exchanging)
        inFlightJobs.append(InFlightJob(job: job, parts: parts, exchanging: !exchanging.isEmpty, changesAtSeal: changes,
                                        bytes: max(0, unappliedBytes - sealedBytes)))
        writer.submit(job)
        return true
    }

    /// Asks for a seal at the next chance (BGSAVE, BGREWRITEAOF).
    func requestSeal(rewrite: Bool = false) {
        sealRequested = true
        if rewrite { rewriteRequested = true }
    }

    /// A SWAPDB left engines serving names whose files they do not own yet.
    func noteExchangePending() { exchangesPending = true }

    /// Whether a job is with the writer.
    var busy: Bool { inFlight != nil }

    // MARK: Wake-ups

    /// Drains the eventfd, takes the writer's finished jobs back and
    /// releases the replies the syncer has caught up with.
    func handleWake() {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { Glibc.read(wakeFD, $0.baseAddress, 8) }
        collectFinished()
        if let log { server.recordLogSyncLatency(log.syncer.takeDurations()) }
        server.releaseRepliesSynced(upTo: syncedLSN)
    }

    /// Completes the jobs the writer finished.
    func collectFinished() {
        for job in writer.takeFinished() {
            guard let current = inFlight, current.job === job else { continue }
            inFlightJobs.removeFirst()
            let started = Server.monotonicMicroseconds()
            defer {
                let micros = Server.monotonicMicroseconds() - started
                server.latency.addIfNeeded("memtable-take-back", milliseconds: micros / 1000)
                if micros >= 20_000 {
                    server.logger.verbose("Taking back a writer job of \(current.parts.reduce(0) { $0 + $1.batch.count }) keys "
                        + "took \(micros / 1000) ms")
                }
            }
            server.recordWriterLatency(job)
            lastJobSeconds = job.finished.map { $0.timeIntervalSince(job.submitted) } ?? 0
            var failed = false
            for part in current.parts {
                part.engine.complete(part.batch, onFailure: .retry, takeBackLimit: Self.takeBackPerIteration)
                if part.engine.takingBackPending { takingBack = true }
                guard let error = part.batch.error else { continue }
                failed = true
                server.stats.failedCommits += 1
                server.logger.warning("Writing cache '\(part.batch.handle)' to SQLite failed: \(error); "
                    + "its changes stay in memory and are tried again")
                if CacheEngine.isCorruption(error) { server.registry.recoverCorrupt(part.cache, reason: "\(error)") }
            }
            for part in current.parts where part.batch.error == nil && failing.remove(ObjectIdentifier(part.engine)) != nil {
                server.logger.notice("Writes to cache '\(part.batch.handle)' reach SQLite again")
            }
            for part in current.parts where part.batch.error != nil { failing.insert(ObjectIdentifier(part.engine)) }
            if current.exchanging { server.registry.exchangeMisplacedFiles() }
            if failed {
                failedJobs += 1
                lastSaveOK = false
                continue
            }
            recordSave(now: Server.nowMilliseconds())
            changesSinceLastSave = changes - current.changesAtSeal
            let everyCacheCaughtUp = !server.registry.open.values.contains { $0.engine?.lastFailure != nil }
            if everyCacheCaughtUp { log?.retire(upTo: job.lsn) }
        }
    }

    /// Counts a successful "save" (SQLite holds every change up to a seal),
    /// and the AOF rewrite it stands for when one was asked.
    private func recordSave(now: Int64) {
        lastSaveOK = true
        saves += 1
        lastSaveTime = now / 1000
        if rewriteRequested {
            rewriteRequested = false
            rewrites += 1
        }
    }

    /// Waits until the writer has finished every job, after ending the
    /// loop's read transactions (its checkpoints would wait on them).
    func waitForWriter() {
        server.registry.heldReads.releaseAll()
        writer.waitUntilIdle()
    }

    /// Applies everything in memory to SQLite now, waiting for the writer
    /// (SAVE, DEBUG RELOAD, shutdown). Bounded by `seconds`.
    /// - Returns: whether every change reached SQLite.
    @discardableResult
    func applyAll(within seconds: Double = .infinity) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        beforeReplies()
        // A SAVE leaves memory clean: every applied slot taken back.
        defer { for cache in server.registry.open.values { cache.engine?.finishTakingBack() } }
        while Date() < deadline {
            if inFlight == nil && !seal() {
                return !server.registry.open.values.contains { $0.engine?.lastFailure != nil }
            }
            waitForWriter()
            collectFinished()
            if let job = inFlight?.job, job.finished == nil { continue }
            if server.registry.open.values.contains(where: { $0.engine?.lastFailure != nil }) { return false }
        }
        return false
    }

    // MARK: INFO

    /// INFO's persistence section: Redis 7.0's fields, meaning the nearest
    /// true thing here (a "save" is a batch applied to SQLite; an AOF
    /// rewrite is applying everything and cutting the log), then this
    /// server's own.
    func infoLines() -> [String] {
        let now = Server.nowMilliseconds()
        let jobSeconds = inFlight.map { Int(Date().timeIntervalSince($0.job.submitted)) } ?? -1
        var lines = [
            "loading:\(loading ? 1 : 0)",
            "async_loading:0",
        ]
        if loading {
            let percent = recordsToLoad > 0 ? Double(loadedRecords) * 100 / Double(recordsToLoad) : 0
            let elapsed = Double(now - loadingStarted) / 1000
            let eta = loadedRecords > 0 ? Int(elapsed * Double(recordsToLoad - loadedRecords) / Double(loadedRecords)) : 1
            lines += [
                "loading_start_time:\(loadingStarted / 1000)",
                "loading_total_bytes:\(log?.recovery.bytes ?? 0)",
                "loading_rdb_used_mem:0",
                "loading_loaded_bytes:\(Int(Double(log?.recovery.bytes ?? 0) * percent / 100))",
                "loading_loaded_perc:\(String(format: "%.2f", percent))",
                "loading_eta_seconds:\(eta)",
            ]
        }
        lines += [
            "current_cow_peak:0",
            "current_cow_size:0",
            "current_cow_size_age:0",
            "current_fork_perc:0.00",
            "current_save_keys_processed:0",
            "current_save_keys_total:0",
            "rdb_changes_since_last_save:\(changes - changesAtSeal + (inFlight == nil ? 0 : changesSinceLastSave))",
            "rdb_bgsave_in_progress:\(inFlight == nil ? 0 : 1)",
            "rdb_last_save_time:\(lastSaveTime)",
            "rdb_last_bgsave_status:\(lastSaveOK ? "ok" : "err")",
            "rdb_last_bgsave_time_sec:\(saves > 0 ? Int(lastJobSeconds.rounded()) : -1)",
            "rdb_current_bgsave_time_sec:\(jobSeconds)",
            "rdb_saves:\(saves)",
            "rdb_last_cow_size:0",
            "rdb_last_load_keys_expired:0",
            "rdb_last_load_keys_loaded:\(loadedRecords)",
            "aof_enabled:\(everyChangeLogged ? 1 : 0)",
            "aof_rewrite_in_progress:\(rewriteRequested && inFlight != nil ? 1 : 0)",
            "aof_rewrite_scheduled:\(rewriteRequested && inFlight == nil ? 1 : 0)",
            "aof_last_rewrite_time_sec:\(rewrites > 0 ? Int(lastJobSeconds.rounded()) : -1)",
            "aof_current_rewrite_time_sec:\(rewriteRequested ? jobSeconds : -1)",
            "aof_last_bgrewrite_status:ok",
            "aof_rewrites:\(rewrites)",
            "aof_rewrites_consecutive_failures:0",
            "aof_last_write_status:\(logWriteFailing ? "err" : "ok")",
            "aof_last_cow_size:0",
            "module_fork_in_progress:0",
            "module_fork_last_cow_size:0",
        ]
        if let log, everyChangeLogged {
            lines += [
                "aof_current_size:\(log.size)",
                "aof_base_size:0",
                "aof_pending_rewrite:0",
                "aof_buffer_length:\(log.pendingBytes)",
                "aof_pending_bio_fsync:\(log.writtenLSN > log.syncer.syncedLSN ? 1 : 0)",
                "aof_delayed_fsync:0",
            ]
        }
        let unapplied = unappliedBytes
        lines += [
            "storage:sqlite",
            "appendfsync:\(server.config.appendFsync.rawValue)",
            "aof_segments:\(log?.segmentCount ?? 0)",
            "aof_last_lsn:\(log?.lastLSN ?? 0)",
            "aof_fsynced_lsn:\(log?.syncer.syncedLSN ?? 0)",
            "aof_fsyncs:\(log?.syncer.count ?? 0)",
            "memtable_bytes:\(unapplied)",
            "memtable_max_bytes:\(server.config.memtableMaxBytes)",
            "memtable_used_perc:\(String(format: "%.2f", Double(unapplied) * 100 / Double(max(1, server.config.memtableMaxBytes))))",
            "writer_jobs_in_flight:\(inFlightJobs.count)",
            "writer_batches_applied:\(writer.progress.batches)",
            "writer_busy_seconds:\(String(format: "%.3f", writer.progress.seconds))",
            "writer_failed_jobs:\(failedJobs)",
            "writer_paused:\(writer.isPaused ? 1 : 0)",
        ]
        return lines
    }

    // MARK: Shutdown and settings

    /// Fsyncs what the log holds, now, on this thread.
    func syncLogNow() {
        guard let log else { return }
        log.requestSync()
        while log.syncer.syncedLSN < log.writtenLSN && log.syncer.syncError == nil { usleep(1000) }
    }

    /// Turns logging every change on or off, as CONFIG SET appendonly does
    /// (the log itself stays: it keeps the cross-cache records either way).
    func setAppendOnly(_ on: Bool, config: ServerConfig) throws {
        // Turned on: what was not logged reaches SQLite first, so the log
        // (from here on every change) and the files hold everything.
        if on {
            beforeReplies()
            applyAll()
        }
    }

    /// Applies what memory holds (within `seconds` when the log keeps the
    /// rest), fsyncs and closes the log, stops the threads.
    func shutdown(seconds: Double) {
        reader = nil
        writer.setPaused(false)  // DEBUG WRITER PAUSE must not hold the shutdown
        let applied = applyAll(within: everyChangeLogged ? seconds : .infinity)
        if !applied {
            server.logger.warning("Not every change reached SQLite before shutdown: the append-only log keeps them "
                + "and the next start replays it")
        }
        log?.close(empty: applied && !server.registry.open.values.contains { $0.engine?.unappliedBytes ?? 0 > 0 })
        writer.stop()
    }

    // MARK: Replay

    /// Replays records for about `budget` milliseconds (called each loop
    /// iteration while loading, so clients meanwhile get -LOADING).
    func replayStep(budget: Int64) throws {
        guard var current = reader else { return }
        let deadline = Server.nowMilliseconds() + budget
        replaying = true
        defer { replaying = false }
        var done = false
        var lsn: UInt64 = 0, time: Int64 = 0
        while Server.nowMilliseconds() < deadline {
            let more = try current.next(start: { position, stamp, _ in (lsn, time) = (position, stamp) },
                                        op: { replay($0, lsn: lsn, time: time) })
            guard more else {
                done = true
                break
            }
            loadedRecords += 1
        }
        reader = done ? nil : current
        if done {
            reservedForReplay = []
            replayTarget = nil
            server.registry.startKeyScans()
            let now = Server.nowMilliseconds()
            let seconds = Double(now - loadingStarted) / 1000
            server.logger.notice("DB loaded from append only file: \(String(format: "%.3f", seconds)) seconds "
                + "(\(loadedRecords) records)")
            replaying = false  // the dump file's keys are logged as any write
            try server.loadDumpFileIfNew()
            server.logger.notice("Ready to accept connections")
            // The replayed writes go to the writer at the next regular seal,
            // `sealInterval` from now: sealing them in this loop iteration would
            // keep the clients waiting through LOADING waiting longer still.
            lastSeal = now
            // Capacity waited for the replay to end (and for the writer's corrections).
            for cache in server.registry.open.values where cache.engine?.overCapacity ?? false { cache.needsEviction = true }
        }
    }

    /// Applies one op of record `lsn` to its cache unless that holds it already.
    private func replay(_ view: LogOpView, lsn: UInt64, time: Int64) {
        do {
            switch view {
            case .put(let put):
                try replayPut(put, lsn: lsn)
            case .other(let op):
                try replay(op, lsn: lsn, time: time)
            }
        } catch {
            server.logger.warning("Replaying record \(lsn) of the append-only log: \(error)")
        }
    }

    /// The cache the last op replayed went to (nearly every op goes where
    /// the one before went: no lookup by name each).
    private var replayTarget: (name: String, cache: OpenCache)?

    /// The engine of cache `name` when its file does not hold record `lsn` yet.
    private func replayEngine(_ name: String, lsn: UInt64) throws -> CacheEngine? {
        let cache: OpenCache
        if let target = replayTarget, target.name == name {
            cache = target.cache
        } else {
            cache = try server.registry.cache(named: name)
            replayTarget = (name, cache)
        }
        guard let engine = cache.engine else { throw ReplyError.engine(cache.openError!) }
        guard engine.appliedLSN < lsn else { return nil }  // the file holds it already
        if reservedForReplay.insert(ObjectIdentifier(engine)).inserted {
            // At most one slot per record still to come; beyond a
            // million (a log over several caches) growth doubles as usual.
            engine.reserveForReplay(min(recordsToLoad - loadedRecords, 1 << 20))
        }
        return engine
    }

    private func replayPut(_ put: LogPutView, lsn: UInt64) throws {
        try replayEngine(put.cache, lsn: lsn)?.replayPut(key: put.key, kind: put.kind, storageDate: put.storageDate,
                                                          expiresAt: put.expiresAt, metadata: put.metadata, value: put.value)
    }

    private func replay(_ op: LogOp, lsn: UInt64, time: Int64) throws {
        let registry = server.registry
        func engine(_ name: String) throws -> CacheEngine? { try replayEngine(name, lsn: lsn) }
        switch op {
        case .put(let cache, let key, let kind, let storageDate, let expiresAt, let metadata, let value):
            // Puts come as views (`LogOpView.put`); this one is made whole.
            try key.withUnsafeBytes { key in
                try metadata.withUnsafeBytes { metadata in
                    try value.withUnsafeBytes { value in
                        try replayPut(LogPutView(cache: cache, key: key, kind: kind, storageDate: storageDate,
                                                 expiresAt: expiresAt, metadata: metadata, value: value), lsn: lsn)
                    }
                }
            }
        case .delete(let cache, let key):
            try engine(cache)?.replayDelete(key)
        case .expire(let cache, let key, let at):
            _ = try engine(cache)?.setExpiry(key, at)
        case .clear(let cache):
            try engine(cache)?.clear()
        case .swap(let a, let b, let fileA, let fileB):
            let first = try registry.cache(named: a), second = try registry.cache(named: b)
            guard let x = first.engine, let y = second.engine else { return }
            if x.fileID == fileA && y.fileID == fileB {
                registry.swapEngines(first, second)
                noteExchangePending()
            }
            // Otherwise the files were exchanged already.
        case .command(let cache, let args):
            guard try engine(cache) != nil else { return }
            server.replayCommand(args, in: try registry.cache(named: cache), time: time)
        }
    }

    /// A cache was opened: log positions from now on must be above what its file holds.
    func cacheOpened(_ engine: CacheEngine) {
        log?.ensureNextLSN(above: engine.appliedLSN)
    }
}
