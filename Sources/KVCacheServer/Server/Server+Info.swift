import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension Server {
    /// INFO's sections in Redis 7.0's order, then this server's `caches`.
    static let infoSections = ["server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
                               "commandstats", "errorstats", "latencystats", "cluster", "keyspace", "caches"]
    /// What `INFO` and `INFO default` show: Redis's default sections, and `caches`.
    static let defaultInfoSections: Set<String> = ["server", "clients", "memory", "persistence", "stats", "replication",
                                                   "cpu", "modules", "errorstats", "cluster", "keyspace", "caches"]

    /// INFO's text for the named sections (none: the default set), in
    /// Redis's format: `# Section` headers and `field:value` lines,
    /// CRLF-separated, sections in Redis's order whatever the order asked.
    /// A user confined to some caches (`cache:` rules) sees only those in
    /// `keyspace` and `caches`.
    func infoText(sections requested: [String], for user: ACLUser? = nil) -> String {
        var wanted = Set(requested)
        if requested.isEmpty || wanted.contains("default") { wanted.formUnion(Self.defaultInfoSections) }
        if wanted.contains("all") || wanted.contains("everything") { wanted.formUnion(Self.infoSections) }
        var out: [String] = []
        for section in Self.infoSections where wanted.contains(section) {
            guard let lines = infoSection(section, for: user) else { continue }
            if !out.isEmpty { out.append("") }
            out.append("# " + (section == "cpu" ? "CPU" : section.prefix(1).uppercased() + section.dropFirst()))
            out.append(contentsOf: lines)
        }
        return out.isEmpty ? "" : out.joined(separator: "\r\n") + "\r\n"
    }

    func infoSection(_ name: String, for user: ACLUser? = nil) -> [String]? {
        let now = Self.nowMilliseconds()
        let visible: (OpenCache) -> Bool = { cache in user?.mayUse(cache: cache.name) ?? true }
        switch name {
        case "server":
            var uts = utsname()
            uname(&uts)
            let os = withUnsafeBytes(of: &uts.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                + " " + withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                + " " + withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let uptime = (now - startedAt) / 1000
            // Redis's fields in Redis's order (Redis's test suite prints
            // redis_git_sha1; tools read run_id), with this server's version beside.
            let hz = config.acceptedSettings["hz"] ?? "10"
            return [
                "redis_version:\(Self.redisVersion)",
                "redis_git_sha1:00000000",
                "redis_git_dirty:0",
                "redis_build_id:0",
                "kvcache_version:\(Self.version)",
                "redis_mode:standalone",
                "os:\(os)",
                "arch_bits:64",
                "monotonic_clock:POSIX clock_gettime",
                "multiplexing_api:epoll",
                "atomicvar_api:c11-builtin",
                "gcc_version:0.0.0",
                "process_id:\(getpid())",
                "process_supervised:no",
                "run_id:\(runID)",
                "tcp_port:\(config.port)",
                "server_time_usec:\(now * 1000)",
                "uptime_in_seconds:\(uptime)",
                "uptime_in_days:\(uptime / 86400)",
                "hz:\(hz)",
                "configured_hz:\(hz)",
                "lru_clock:\((now / 1000) & ((1 << 24) - 1))",
                "executable:\(CommandLine.arguments.first ?? "")",
                "config_file:\(config.configFile ?? "")",
                "io_threads_active:0",
            ] + (shutdownDeadline != 0 ? ["shutdown_in_milliseconds:\(shutdownInMilliseconds)"] : [])
        case "clients":
            return [
                "connected_clients:\(clientCount - openReplicas.count)",  // feeds apart, as Redis
                "cluster_connections:0",
                "maxclients:\(config.maxClients)",
                "client_recent_max_input_buffer:0",
                "client_recent_max_output_buffer:0",
                "blocked_clients:\(blockedCount + postponedCount)",
                "tracking_clients:\(tracking.clients.count)",
                "clients_in_timeout_table:\(connections.reduce(0) { $0 + ($1?.blocked?.deadline != nil ? 1 : 0) })",
            ]
        case "replication":
            return (replicaLink.map(replicaRoleInfoLines) ?? ["role:master"]) + replicaInfoLines + [
                "master_failover_state:no-failover",
                "master_replid:\(replicationID)",
                "master_replid2:\(previousReplicationID)",
                "master_repl_offset:\(replicaLink?.offset ?? replication.offset)",
                "second_repl_offset:\(secondReplicationOffset)",
                "repl_backlog_active:\(replication.backlog == nil ? 0 : 1)",
                "repl_backlog_size:\(replication.backlog?.capacity ?? backlogSize)",
                "repl_backlog_first_byte_offset:\(replication.backlog?.firstOffset ?? 0)",
                "repl_backlog_histlen:\(replication.backlog?.bytes.count ?? 0)",
            ]
        case "cpu":
            var own = rusage(), children = rusage()
            getrusage(RUSAGE_SELF.rawValue, &own)
            getrusage(RUSAGE_CHILDREN.rawValue, &children)
            func seconds(_ t: timeval) -> String {
                let micros = Int(t.tv_usec)
                return "\(t.tv_sec).\(String(repeating: "0", count: 6 - String(micros).count))\(micros)"
            }
            return [
                "used_cpu_sys:\(seconds(own.ru_stime))",
                "used_cpu_user:\(seconds(own.ru_utime))",
                "used_cpu_sys_children:\(seconds(children.ru_stime))",
                "used_cpu_user_children:\(seconds(children.ru_utime))",
                "used_cpu_sys_main_thread:\(seconds(own.ru_stime))",
                "used_cpu_user_main_thread:\(seconds(own.ru_utime))",
            ]
        case "modules":
            return []
        case "cluster":
            return ["cluster_enabled:0"]
        case "errorstats":
            return stats.errorsByPrefix.keys.sorted().map { "errorstat_\($0):count=\(stats.errorsByPrefix[$0]!)" }
        case "memory":
            refreshClientBufferBytes()
            let rss = residentSetBytes()
            // used_memory is what maxmemory limits, as in Redis: here the data
            // (content bytes over every cache) and the clients' buffers. The
            // process's own memory is used_memory_rss (VmRSS, with mapped
            // file pages) and used_memory_rss_anon (RssAnon).
            let backlogBytes = replication.backlog?.bytes.count ?? 0
            let used = dataBytes + clientBufferBytes + replicaBufferBytes + backlogBytes
            peakMemory = max(peakMemory, used)
            let open = registry.open.values.compactMap { $0.statistics() }
            let tierBytes = open.reduce(0) { $0 + $1.tierBytes }
            let contentBytes = open.reduce(0) { $0 + $1.contentBytes }
            return [
                "used_memory:\(used)",
                "used_memory_human:\(humanBytes(used))",
                "used_memory_rss:\(rss)",
                "used_memory_rss_human:\(humanBytes(rss))",
                "used_memory_rss_anon:\(processStatusBytes("RssAnon") ?? rss)",
                "used_memory_peak:\(peakMemory)",
                "used_memory_peak_human:\(humanBytes(peakMemory))",
                "used_memory_dataset:\(dataBytes)",
                "mem_clients_slaves:\(replicaBufferBytes)",
                // The backlog and the feeds' unsent streams (Redis shares
                // one buffer between them; here each holds its own).
                "mem_total_replication_buffers:\(replicaBufferBytes + backlogBytes)",
                "mem_replication_backlog:\(backlogBytes)",
                "mem_clients_normal:\(clientBufferBytes)",
                "mem_not_counted_for_evict:\(replicaBufferBytes + backlogBytes)",
                "total_system_memory:\(Int(sysconf(Int32(_SC_PHYS_PAGES))) * Int(sysconf(Int32(_SC_PAGESIZE))))",
                "maxmemory:\(config.maxMemory)",
                "maxmemory_human:\(humanBytes(config.maxMemory))",
                "maxmemory_policy:\(config.maxMemoryPolicy.rawValue)",
                "maxmemory_used:\(dataBytes + clientBufferBytes)",
                "mem_fragmentation_ratio:1.00",
                "mem_allocator:libc",
                "memory_tier_bytes:\(tierBytes)",
                "memory_tier_budget:\(config.memoryTierBytes)",
                "memory_tier_used:\(registry.memoryBudget.used)",
                "memtable_bytes:\(registry.memoryBudget.unappliedBytes)",
                "stored_content_bytes:\(contentBytes)",
                "number_of_cached_scripts:\(scripting.scripts.count)",
                "number_of_functions:\(scripting.libraries.functionCount)",
                "number_of_libraries:\(scripting.libraries.all.count)",
                // Frees are never deferred here (lazyfree-* are accepted and
                // ignored): nothing waits, nothing was freed in the background.
                "lazyfree_pending_objects:0",
                "lazyfreed_objects:0",
            ]
        case "persistence":
            return persistence.infoLines() + [
                "failed_commits:\(stats.failedCommits)",
                "open_caches:\(registry.open.count)",
                "known_caches:\(registry.known.count)",
                "max_caches:\(config.maxCaches)",
                "rejoin_policy:\(config.rejoinPolicy.rawValue)",
                "rejoin_window:\(config.rejoinWindow)",
                "rejoin_in_progress:\(rejoin != nil ? 1 : 0)",
                "rejoin_capped_keys:\(rejoin?.capped ?? rejoinFinished?.capped ?? 0)",
            ]
        case "stats":
            let all = registry.open.values.compactMap { $0.statistics() }
            return [
                "total_connections_received:\(stats.totalConnectionsReceived)",
                "total_commands_processed:\(stats.totalCommandsProcessed)",
                "instantaneous_ops_per_sec:\(instantaneousOpsPerSecond)",
                "total_net_input_bytes:\(stats.netInputBytes)",
                "total_net_output_bytes:\(stats.netOutputBytes)",
                "rejected_connections:\(stats.rejectedConnections)",
                "sync_full:\(replication.fullSyncs)",
                "sync_partial_ok:\(replication.partialSyncs)",
                "sync_partial_err:\(replication.refusedPartialSyncs)",
                "expired_keys:\(all.reduce(0) { $0 + $1.expired })",
                "evicted_keys:\(all.reduce(0) { $0 + $1.evicted })",
                "evicted_clients:\(stats.evictedClients)",
                "keyspace_hits:\(stats.keyspaceHits)",
                "keyspace_misses:\(stats.keyspaceMisses)",
                "memory_tier_hits:\(all.reduce(0) { $0 + $1.tierHits })",
                "memory_tier_misses:\(all.reduce(0) { $0 + $1.tierMisses })",
                "pubsub_channels:\(pubsub.channels.count)",
                "pubsub_patterns:\(pubsub.patterns.count)",
                "pubsubshard_channels:\(pubsub.shardChannels.count)",
                // Never a fork (no RDB child), never a MIGRATE socket (no MIGRATE).
                "latest_fork_usec:0",
                "total_forks:0",
                "migrate_cached_sockets:0",
                "tracking_total_keys:\(tracking.table.count)",
                "tracking_total_items:\(tracking.totalItems)",
                "tracking_total_prefixes:\(tracking.prefixes.count)",
                "unexpected_error_replies:\(stats.unexpectedErrorReplies)",
                "total_error_replies:\(stats.totalErrorReplies)",
                "acl_access_denied_auth:\(stats.authFailures)",
                "client_output_buffer_limit_disconnections:\(stats.outputLimitDisconnections)",
            ]
        case "keyspace":
            return keyspaceLines(now: now, visible: visible)
        case "caches":
            return cacheLines(now: now, visible: visible)
        case "commandstats":
            return commands.all.flatMap(\.allStats).filter { !$0.stats.isEmpty }.map { name, s in
                let perCall = s.calls > 0 ? Double(s.microseconds) / Double(s.calls) : 0
                return "cmdstat_\(name):calls=\(s.calls),usec=\(s.microseconds),"
                    + "usec_per_call=\(String(format: "%.2f", perCall)),rejected_calls=\(s.rejected),failed_calls=\(s.failed)"
            }
        case "latencystats":
            return latencyStatsLines()
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
    /// Commands per second over the last second or so of cron samples.
    var instantaneousOpsPerSecond: Int {
        guard let first = opsSamples.first, let last = opsSamples.last, last.time > first.time else { return 0 }
        return (last.commands - first.commands) * 1000 / Int(last.time - first.time)
    }
}
