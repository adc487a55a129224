#if canImport(Glibc)
import Glibc
#endif

extension Server {
    /// INFO's text for the named sections (none: the default set), in
    /// Redis's format: `# Section` headers and `field:value` lines, CRLF-separated.
    func infoText(sections requested: [String]) -> String {
        let defaults = ["server", "clients", "memory", "persistence", "stats", "keyspace"]
        var wanted: [String]
        if requested.isEmpty || requested.contains("default") || requested.contains("all") || requested.contains("everything") {
            wanted = defaults
            if requested.contains("all") || requested.contains("everything") { wanted.append("commandstats") }
        } else {
            wanted = requested
        }
        var out: [String] = []
        for section in defaults + ["commandstats"] where wanted.contains(section) {
            guard let lines = infoSection(section) else { continue }
            if !out.isEmpty { out.append("") }
            out.append("# " + section.prefix(1).uppercased() + section.dropFirst())
            out.append(contentsOf: lines)
        }
        return out.isEmpty ? "" : out.joined(separator: "\r\n") + "\r\n"
    }

    private func infoSection(_ name: String) -> [String]? {
        let now = Self.nowMilliseconds()
        switch name {
        case "server":
            var uts = utsname()
            uname(&uts)
            let os = withUnsafeBytes(of: &uts.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                + " " + withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                + " " + withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let uptime = (now - startedAt) / 1000
            return [
                "redis_version:\(Self.redisVersion)",
                "kvcache_version:\(Self.version)",
                "redis_mode:standalone",
                "os:\(os)",
                "arch_bits:64",
                "multiplexing_api:epoll",
                "process_id:\(getpid())",
                "tcp_port:\(config.port)",
                "server_time_usec:\(now * 1000)",
                "uptime_in_seconds:\(uptime)",
                "uptime_in_days:\(uptime / 86400)",
                "hz:10",
                "executable:\(CommandLine.arguments.first ?? "")",
                "config_file:\(config.configFile ?? "")",
            ]
        case "clients":
            return [
                "connected_clients:\(clientCount)",
                "maxclients:\(config.maxClients)",
                "blocked_clients:0",
            ]
        case "memory":
            let rss = residentSetBytes()
            return [
                "used_memory:\(rss)",
                "used_memory_human:\(humanBytes(rss))",
                "used_memory_rss:\(rss)",
                "used_memory_rss_human:\(humanBytes(rss))",
                "maxmemory:0",
                "maxmemory_policy:\(config.evictionPolicy.rawValue)",
            ]
        case "persistence":
            return [
                "loading:0",
                "rdb_changes_since_last_save:0",
                "rdb_bgsave_in_progress:0",
                "aof_enabled:0",
                "aof_rewrite_in_progress:0",
                "storage:sqlite",
                "durability:\(config.durability.rawValue)",
                "failed_commits:\(stats.failedCommits)",
                "open_caches:\(registry.open.count)",
                "known_caches:\(registry.known.count)",
                "max_caches:\(config.maxCaches)",
            ]
        case "stats":
            let all = registry.open.values.compactMap { $0.statistics() }
            return [
                "total_connections_received:\(stats.totalConnectionsReceived)",
                "total_commands_processed:\(stats.totalCommandsProcessed)",
                "rejected_connections:\(stats.rejectedConnections)",
                "expired_keys:\(all.reduce(0) { $0 + $1.expired })",
                "evicted_keys:\(all.reduce(0) { $0 + $1.evicted })",
                "keyspace_hits:\(stats.keyspaceHits)",
                "keyspace_misses:\(stats.keyspaceMisses)",
                "total_error_replies:\(stats.totalErrorReplies)",
                "acl_access_denied_auth:\(stats.authFailures)",
                "client_output_buffer_limit_disconnections:\(stats.outputLimitDisconnections)",
            ]
        case "keyspace":
            // As Redis, a line per cache holding keys: Redis's three fields
            // first, then this server's (content bytes, capacity, policy, counters).
            var lines: [String] = []
            for name in registry.open.keys.sorted() {
                guard let s = registry.open[name]?.statistics(), s.entries > 0 else { continue }
                let avgTTL = s.volatileEntries > 0 ? max(0, s.meanExpiresAt - now) : 0
                lines.append("\(name):keys=\(s.entries),expires=\(s.volatileEntries),avg_ttl=\(avgTTL),"
                    + "bytes=\(s.contentBytes),capacity=\(s.capacity),policy=\(s.policy.rawValue),"
                    + "evicted=\(s.evicted),expired=\(s.expired)")
            }
            return lines
        case "commandstats":
            return []
        default:
            return nil
        }
    }
}

/// The process's resident set size in bytes, from /proc/self/statm.
func residentSetBytes() -> Int {
    guard let file = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(file) }
    var size = 0, resident = 0
    guard withUnsafeMutablePointer(to: &size, { s in
        withUnsafeMutablePointer(to: &resident) { r in
            withVaList([s, r]) { vfscanf(file, "%ld %ld", $0) }
        }
    }) == 2 else { return 0 }
    return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Redis's human form of a byte count: `1.50M`.
func humanBytes(_ bytes: Int) -> String {
    let units = ["B", "K", "M", "G", "T"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    if unit == 0 { return "\(bytes)B" }
    let hundredths = Int((value * 100).rounded())
    return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)\(units[unit])"
}

extension Server {
    /// Counts a read for INFO's keyspace_hits / keyspace_misses.
    func countLookup(_ cache: OpenCache, hit: Bool) {
        if hit {
            stats.keyspaceHits += 1
            cache.hits += 1
        } else {
            stats.keyspaceMisses += 1
            cache.misses += 1
        }
    }
}
