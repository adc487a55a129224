import Foundation
import SQLiteKVCache
import RESP

/// A bad configuration line or argument, said plainly.
public struct ConfigError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One cache's own capacity and policy (a `cache <name> <size> [<policy>]` line).
public struct CacheSettings: Sendable, Equatable {
    public var capacity: Int
    public var policy: EvictionPolicy?
}

/// `client-output-buffer-limit normal <hard> <soft> <soft-seconds>`; 0 disables a bound.
public struct OutputBufferLimit: Sendable, Equatable {
    public var hard: Int
    public var soft: Int
    public var softSeconds: Int
}

/// The server's settings: Redis's names where Redis has the setting.
public struct ServerConfig: Sendable {
    public var port = 6379
    /// The master this server replicates (`replicaof`), if any.
    public var replicaOf: ReplicaOf?
    public var bind = ["127.0.0.1"]
    public var dir = "./data"
    public var databases = 16
    public var maxCaches = 64
    public var maxClients = 10000
    /// Seconds a client may stay idle before it is closed; 0 for never.
    public var timeout = 0
    public var logLevel = LogLevel.notice
    /// Where logs go; empty for standard output.
    public var logFile = ""
    public var protoMaxBulkLen = 512 * 1024 * 1024
    public var clientQueryBufferLimit = 1024 * 1024 * 1024
    /// Replies a client may leave unread: past `hard` it is closed at once,
    /// past `soft` for `softSeconds` too. (Redis's default for normal
    /// clients is no limit; one here bounds what a client that never reads costs.)
    public var outputBufferLimit = OutputBufferLimit(hard: 256 * 1024 * 1024, soft: 64 * 1024 * 1024, softSeconds: 60)
    /// `client-output-buffer-limit pubsub …`, for subscribed clients: Redis's default.
    public var pubsubOutputBufferLimit = OutputBufferLimit(hard: 32 * 1024 * 1024, soft: 8 * 1024 * 1024, softSeconds: 60)
    /// `notify-keyspace-events`: Redis's NOTIFY_* bits (see NotifyFlags); 0 sends none.
    public var notifyKeyspaceEvents = 0
    /// `tracking-table-max-keys`: keys the tracking table remembers before
    /// it drops some, invalidating them (Redis's default; 0: no limit).
    public var trackingTableMaxKeys = 1_000_000
    public var defaultCapacity = 0
    public var evictionPolicy = EvictionPolicy.fifo
    public var caches: [String: CacheSettings] = [:]
    /// `database-name <index> <cache>`: database indexes that stand for a
    /// named cache (SELECT, MOVE, COPY … DB, SWAPDB, a connection's start),
    /// so a client or proxy that speaks only numbers reaches it.
    public var databaseNames: [Int: String] = [:]
    /// What a restarted node does with what it held (docs/cluster.md):
    /// `keep` serves it (a single server's promise), `flush` starts empty,
    /// `expire` caps the life of everything held at `rejoinWindow` seconds.
    public enum RejoinPolicy: String, Sendable { case keep, flush, expire }
    public var rejoinPolicy = RejoinPolicy.keep
    public var rejoinWindow = 300

    /// The cache a database index stands for: its `database-name`, else `db<index>`.
    public func cacheName(forIndex index: Int) -> String { databaseNames[index] ?? "db\(index)" }
    /// SQLite's page cache per open cache file.
    public var pageCacheBytes = 16 * 1024 * 1024
    /// SQLite's max_page_count per cache file (0: unlimited): a write past it
    /// fails as on a full disk. For tests and hard file-size ceilings.
    public var sqliteMaxPageCount = 0
    /// Memory for entries kept in memory, shared by every open cache: hot
    /// entries read from SQLite and the writes not yet applied to it.
    /// Default: a quarter of the machine's memory, or of the cgroup's limit.
    public var memoryTierBytes = defaultMemoryTierBytes()
    /// Redis's `appendonly`: every change is appended to the log before its
    /// reply, so a crash of the process loses nothing acknowledged.
    public var appendOnly = true
    /// Redis's `appendfsync`: when the log is fsynced.
    public var appendFsync = AppendFsync.everysec
    /// Where the log lives, under `dir` (Redis 7's `appenddirname`), and
    /// its segments' base name (`appendfilename`).
    public var appendDirName = "appendonlydir"
    public var appendFileName = "appendonly.aof"
    /// Start with a log whose last record is torn (dropping it), as Redis's `aof-load-truncated`.
    public var aofLoadTruncated = true
    /// Bytes of changes not yet in SQLite, over all caches, past which
    /// writes wait for the writer thread.
    public var memtableMaxBytes = 512 * 1024 * 1024
    /// Milliseconds a write may wait for room before it is refused.
    public var memtableFullTimeout = 5000
    /// The writer thread's nice value (0 to 19): a lower priority than the
    /// loop's, so on a busy machine it takes what clients leave.
    public var writerNice = 10
    /// Seconds a shutdown spends applying changes to SQLite before leaving
    /// the rest to the log (Redis's `shutdown-timeout`).
    public var shutdownTimeout = 10
    /// The old `durability` directive, if a configuration still used it.
    public var deprecatedDurability: String?
    /// The default user's password; empty for none (Redis's `requirepass`).
    public var requirePass = ""
    /// Refuse non-loopback clients while no password is set.
    public var protectedMode = true
    /// `user <name> <rule>…` lines: ACL users from the configuration (Redis's).
    public var aclUsers: [[String]] = []
    /// `aclfile`: users are kept in this file (ACL SAVE, ACL LOAD) instead.
    public var aclFile = ""
    /// The ACL file's path: a relative `aclfile` is under `dir`, as in
    /// Redis (which changes into `dir` at start-up).
    var aclFilePath: String {
        aclFile.isEmpty || aclFile.hasPrefix("/") ? aclFile : (dir as NSString).appendingPathComponent(aclFile)
    }
    /// `acl-pubsub-default`: the channel rights a new user starts with.
    public var aclPubsubDefault = "resetchannels"
    /// `acllog-max-len`: ACL LOG's length.
    public var aclLogMaxLen = 128
    /// This server's bound on guessing: `auth-max-failures` failed AUTHs from
    /// one client address within `auth-failure-window` seconds, and that
    /// address's AUTHs are refused until the window ends (0: no bound).
    public var authMaxFailures = 10
    public var authFailureWindow = 60
    /// Loopback clients (the server's own machine, a local proxy) are not bounded.
    public var authFailureExemptLoopback = true
    /// `listener-user <port> <user>`: connections to that port start as that user.
    public var listenerUsers: [Int: String] = [:]
    /// `rename-command` lines: old name → new name ("" disables the command).
    public var renamedCommands: [String: String] = [:]
    /// TLS: a port of its own (0: none), the server's certificate and key,
    /// the CAs for client certificates, and whether clients must show one.
    public var tlsPort = 0
    public var tlsCertFile = ""
    public var tlsKeyFile = ""
    public var tlsCACertFile = ""
    public var tlsAuthClients = "yes"
    /// SLOWLOG: commands slower than this many microseconds are logged
    /// (negative: none), and the log keeps this many.
    public var slowlogSlowerThan = 10_000
    public var slowlogMaxLength = 128
    /// LATENCY: events that took at least this many milliseconds are kept
    /// (Redis's `latency-monitor-threshold`; 0: the monitor is off).
    public var latencyMonitorThreshold = 0
    /// Per-command latency histograms, for INFO latencystats and LATENCY
    /// HISTOGRAM (Redis's `latency-tracking`).
    public var latencyTracking = true
    /// The percentiles INFO latencystats reports (Redis's `latency-tracking-info-percentiles`).
    public var latencyTrackingPercentiles: [Double] = [50, 99, 99.9]
    /// Who may run DEBUG: `no`, `yes`, or `local` (loopback clients).
    public var enableDebugCommand = "no"
    /// MODULE LOAD/LOADEX/UNLOAD's gate, as Redis's (no module ever loads here).
    public var enableModuleCommand = "no"
    /// The file the configuration was read from, if any.
    public var configFile: String?
    /// Redis's thresholds between small and large collection encodings (OBJECT ENCODING).
    var encodingLimits = EncodingLimits()
    /// Redis's `maxmemory`: the most data (content bytes over every cache,
    /// plus what clients' buffers hold) before writes evict by
    /// `maxMemoryPolicy` or are refused with -OOM; 0 for no limit.
    public var maxMemory = 0
    public var maxMemoryPolicy = MaxMemoryPolicy.noeviction
    public var maxMemorySamples = 5
    public var maxMemoryEvictionTenacity = 10
    /// LFU's counter: how slowly it grows (`lfu-log-factor`) and how many
    /// minutes of idleness take one off it (`lfu-decay-time`).
    public var lfuLogFactor = 10
    public var lfuDecayTime = 1
    /// Seconds between the PINGs of the replication stream (SYNC feeds).
    public var replPingReplicaPeriod = 10
    /// Redis settings accepted (and reported by CONFIG GET) that change
    /// nothing a client can see here: lists are ring buffers (list-*),
    /// frees are immediate (lazyfree-*: they only choose UNLINK over DEL
    /// on the replication stream), RESTORE always checks a payload
    /// whole (sanitize-dump-payload).
    var listMaxListpackSize = -2
    var listCompressDepth = 0
    var activeExpireEffort = 1
    var sanitizeDumpPayload = "no"
    var lazyFree: [String: Bool] = [:]
    /// Replication and RDB settings Redis's tests set: checked as Redis
    /// checks them, answered by CONFIG GET, and otherwise unused (no
    /// replica mode and no RDB files here; SYNC feeds are only fed writes).
    var acceptedSettings: [String: String] = [:]
    /// `save` lines add to each other while the config file and the
    /// command line are read (`parseCommandLine`), after the first one
    /// (the first finds no `acceptedSettings["save"]`).
    var loadingSavePoints = false
    /// Scripting, HyperLogLog and geo settings (ScriptingSettings.swift).
    var scripting = ScriptingSettings()

    public init() {}

    /// The capacity and policy a cache gets when it opens.
    func settings(forCache name: String) -> (capacity: Int, policy: EvictionPolicy) {
        let own = caches[name]
        return (own?.capacity ?? defaultCapacity, own?.policy ?? evictionPolicy)
    }
}

/// A quarter of the memory this process may use: the machine's, or the
/// cgroup's limit when one is set (a container).
func defaultMemoryTierBytes() -> Int {
    let physical = Int(sysconf(Int32(_SC_PHYS_PAGES))) * Int(sysconf(Int32(_SC_PAGESIZE)))
    var limit = physical
    for path in ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), value > 0 else { continue }
        limit = min(limit, value)
    }
    return max(16 << 20, limit / 4)
}

extension ServerConfig {
    /// Applies one directive.
    /// - Throws: `ConfigError` for an unknown name or bad arguments.
    mutating func apply(_ name: String, _ args: [String]) throws {
        let lowercased = name.lowercased()
        guard let directive = Self.directivesByName[lowercased] else {
            throw ConfigError("Bad directive or wrong number of arguments: '\(name)'")
        }
        try directive.apply(&self, args, lowercased)
    }

    /// Applies the lines of a config file: `name value...`, `#` comments,
    /// Redis's quoting.
    mutating func apply(fileContents: String, path: String) throws {
        for (number, rawLine) in fileContents.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: " \t\r")
            if line.isEmpty || line.hasPrefix("#") { continue }
            let words = Array(line.utf8).withUnsafeBytes { splitArguments($0) }
            guard let words, let first = words.first else {
                throw ConfigError("\(path), line \(number + 1): unbalanced quotes in '\(line)'")
            }
            do {
                try apply(String(decoding: first, as: UTF8.self), words.dropFirst().map { String(decoding: $0, as: UTF8.self) })
            } catch let error as ConfigError {
                throw ConfigError("\(path), line \(number + 1) ('\(line)'): \(error.description)")
            }
        }
    }
}

/// Quotes a config-file word when it is empty or holds blanks, quotes or backslashes.
func quoteConfigWord(_ word: String) -> String {
    let needsQuotes = word.isEmpty || word.contains { " \t\"'\\".contains($0) || $0.asciiValue.map { $0 < 32 } ?? false }
    guard needsQuotes else { return word }
    var out = "\""
    for scalar in word.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        let chars = Set(set)
        var s = Substring(self)
        while let f = s.first, chars.contains(f) { s = s.dropFirst() }
        while let l = s.last, chars.contains(l) { s = s.dropLast() }
        return String(s)
    }
}

/// Parses a size the way Redis's `memtoll` does: a whole number with an
/// optional unit, `k`/`m`/`g` (powers of 1000) or `kb`/`mb`/`gb` (powers of 1024).
/// - Returns: nil for anything else or a negative size.
public func parseMemorySize(_ text: String) -> Int? {
    let lower = text.lowercased()
    let units: [(String, Int)] = [("kb", 1024), ("mb", 1024 * 1024), ("gb", 1024 * 1024 * 1024),
                                  ("k", 1000), ("m", 1_000_000), ("g", 1_000_000_000), ("b", 1)]
    var digits = Substring(lower)
    var multiplier = 1
    for (suffix, factor) in units where lower.hasSuffix(suffix) {
        digits = lower.dropLast(suffix.count)
        multiplier = factor
        break
    }
    guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let value = Int(digits), value >= 0 else { return nil }
    let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
    return overflow ? nil : product
}

/// A master's address (`replicaof host port`).
public struct ReplicaOf: Sendable, Equatable {
    public var host: String
    public var port: Int
}
