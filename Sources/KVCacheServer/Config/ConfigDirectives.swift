import SQLiteKVCache

extension ServerConfig {
    /// Every directive, in the order CONFIG GET lists them and CONFIG
    /// REWRITE appends them. `live`: CONFIG SET may change it while the
    /// server runs; `words`: the value is a list of words.
    /// Redis's directives that change nothing here
    /// (RedisAcceptedDirectives.swift, generated from Redis's config.c)
    /// come first, so a directive of this server's by the same name wins.
    static let directives: [ConfigDirective] = redisAcceptedDirectives + [
        .integer("port", \.port, 0...65535, live: true),
        // Live: CONFIG SET bind listens again (an address that cannot be
        // had fails there, with Redis's text); none listens on nothing.
        ConfigDirective(name: "bind", live: true, words: true, apply: { config, args, _ in
            config.bind = args.map { $0.hasPrefix("-") ? String($0.dropFirst()) : $0 }
        }, render: { $0.bind.joined(separator: " ") }),
        .text("dir", \.dir),
        .integer("databases", \.databases, 1...Int(Int32.max)),
        .integer("max-caches", \.maxCaches, 1...100_000),
        .integer("maxclients", \.maxClients, 1...1_000_000, live: true),
        .integer("timeout", \.timeout, 0...Int(Int32.max), live: true),
        .choice("loglevel", \.logLevel, ["debug", "verbose", "notice", "warning", "nothing"], live: true),
        .text("logfile", \.logFile),
        .size("proto-max-bulk-len", \.protoMaxBulkLen, minimum: (1024 * 1024, "1mb"), live: true),
        .size("client-query-buffer-limit", \.clientQueryBufferLimit, minimum: (1024 * 1024, "1mb"), live: true),
        ConfigDirective(name: "client-output-buffer-limit", live: true, words: true, apply: { config, args, _ in
            // Redis's form: one or more "<class> <hard> <soft> <seconds>" groups; only "normal" applies here.
            guard !args.isEmpty, args.count % 4 == 0 else {
                throw ConfigError("usage: client-output-buffer-limit <class> <hard> <soft> <soft-seconds>")
            }
            for i in stride(from: 0, to: args.count, by: 4) {
                let kind = args[i].lowercased()
                guard ["normal", "replica", "slave", "pubsub"].contains(kind) else {
                    throw ConfigError("invalid client class '\(args[i])'")
                }
                guard let hard = parseMemorySize(args[i + 1]), let soft = parseMemorySize(args[i + 2]),
                      let seconds = Int(args[i + 3]), seconds >= 0 else {
                    throw ConfigError("client-output-buffer-limit needs sizes and a number of seconds")
                }
                if kind == "normal" { config.outputBufferLimit = OutputBufferLimit(hard: hard, soft: soft, softSeconds: seconds) }
                if kind == "pubsub" {
                    config.pubsubOutputBufferLimit = OutputBufferLimit(hard: hard, soft: soft, softSeconds: seconds)
                }
            }
        }, render: { config in
            let l = config.outputBufferLimit
            let p = config.pubsubOutputBufferLimit
            return "normal \(l.hard) \(l.soft) \(l.softSeconds) replica 268435456 67108864 60 "
                + "pubsub \(p.hard) \(p.soft) \(p.softSeconds)"
        }),
        .integer("tracking-table-max-keys", \.trackingTableMaxKeys, 0...Int(Int64.max), live: true),
        ConfigDirective(name: "notify-keyspace-events", live: true, apply: { config, args, _ in
            guard args.count <= 1 else { throw ConfigError("wrong number of arguments") }
            guard let flags = NotifyFlags(letters: args.first ?? "") else {
                throw ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
            }
            config.notifyKeyspaceEvents = flags.rawValue
        }, render: { NotifyFlags(rawValue: $0.notifyKeyspaceEvents).letters }),
        .size("default-capacity", \.defaultCapacity, live: true),
        // The default policy of a cache's capacity (this server's own; Redis's
        // maxmemory-policy is the server-wide limit's, below).
        .policy("eviction-policy", live: true),
        ConfigDirective(name: "cache", live: true, words: true, rewrite: .linePerEntry({ config in
            config.caches.keys.sorted().map { name in
                let settings = config.caches[name]!
                return "cache \(name) \(settings.capacity)" + (settings.policy.map { " \($0.rawValue)" } ?? "")
            }
        }), apply: { config, args, _ in
            guard args.count == 2 || args.count == 3 else {
                throw ConfigError("usage: cache <name> <size> [fifo|lru|volatile-ttl|noeviction]")
            }
            guard let name = try? SQLiteKVCache.canonicalHandle(args[0]) else {
                throw ConfigError("invalid cache name '\(args[0])': use 1 to 64 of a-z 0-9 . _ -")
            }
            guard let capacity = parseMemorySize(args[1]) else {
                throw ConfigError("cache size must be a memory value (like 256mb): '\(args[1])'")
            }
            config.caches[name] = CacheSettings(capacity: capacity, policy: try args.count == 3 ? policyArgument(args[2]) : nil)
        }, render: { config in
            config.caches.keys.sorted().map { name in
                let settings = config.caches[name]!
                return "\(name) \(settings.capacity)" + (settings.policy.map { " \($0.rawValue)" } ?? "")
            }.joined(separator: " ")
        }),
        // Named caches by number, for nutcracker's `redis_db` and other
        // clients that speak only numbers (docs/cluster.md). Not live: a map
        // changing under connected clients would be more confusing than useful.
        ConfigDirective(name: "database-name", words: true, rewrite: .linePerEntry({ config in
            config.databaseNames.keys.sorted().map { "database-name \($0) \(config.databaseNames[$0]!)" }
        }), apply: { config, args, _ in
            guard args.count == 2 else { throw ConfigError("usage: database-name <index> <cache>") }
            guard let index = Int(args[0]), index >= 0, index <= Int(Int32.max), String(index) == args[0] else {
                throw ConfigError("database-name: the index must be an integer from 0 to 2147483647: '\(args[0])'")
            }
            guard let name = try? SQLiteKVCache.canonicalHandle(args[1]) else {
                throw ConfigError("database-name: invalid cache name '\(args[1])': use 1 to 64 of a-z 0-9 . _ -")
            }
            if let other = config.databaseNames[index], other != name {
                throw ConfigError("database-name: index \(index) is already the cache '\(other)'")
            }
            if let (other, _) = config.databaseNames.first(where: { $0.value == name && $0.key != index }) {
                throw ConfigError("database-name: '\(name)' is already database \(other)")
            }
            if let k = CacheRegistry.databaseIndex(ofName: name), k != index {
                throw ConfigError("database-name: '\(name)' is database \(k)'s own cache: it cannot stand for \(index)")
            }
            if name != "db\(index)" { config.databaseNames[index] = name }
        }, render: { config in
            config.databaseNames.keys.sorted().map { "\($0) \(config.databaseNames[$0]!)" }.joined(separator: " ")
        }),
        .choice("rejoin-policy", \.rejoinPolicy, ["keep", "flush", "expire"]),
        .integer("rejoin-window", \.rejoinWindow, 1...Int(Int32.max)),
        // RDB snapshots: accepted so redis.conf files and tools work; SQLite
        // is the store of record here, and SAVE/BGSAVE apply to it.
        // The value is kept as given (pairs of seconds and changes, or
        // empty), so CONFIG GET and REWRITE show what was set.
        // As in Redis 7.0: "3600 1 300 100 60 10000" unless set; while the
        // file and the command line are read, the first `save` replaces
        // that and later ones add to it (`save ""` empties it); CONFIG SET
        // replaces it.
        ConfigDirective(name: "save", live: true, words: true, apply: { config, args, _ in
            let words = args.flatMap { $0.split(separator: " ").map(String.init) }
            guard words.count % 2 == 0, words.allSatisfy({ Int($0).map { $0 >= 0 } ?? false }) else {
                throw ConfigError("Invalid save parameters")
            }
            let given = config.loadingSavePoints && !words.isEmpty ? config.acceptedSettings["save"] : nil
            config.acceptedSettings["save"] = ((given.map { [$0] } ?? []) + words).filter { !$0.isEmpty }.joined(separator: " ")
        }, render: { $0.acceptedSettings["save"] ?? "3600 1 300 100 60 10000" }),
        .yesNo("appendonly", \.appendOnly, live: true),
        .choice("appendfsync", \.appendFsync, ["always", "everysec", "no"], live: true),
        ConfigDirective(name: "appenddirname", apply: { config, args, name in
            let value = try oneArgument(args, name)
            guard !value.isEmpty, !value.contains("/"), value != ".", value != ".." else {
                throw ConfigError("appenddirname can't be a path, just a dirname")
            }
            config.appendDirName = value
        }, render: { $0.appendDirName }),
        ConfigDirective(name: "appendfilename", apply: { config, args, name in
            let value = try oneArgument(args, name)
            guard !value.isEmpty, !value.contains("/") else {
                throw ConfigError("appendfilename can't be a path, just a filename")
            }
            config.appendFileName = value
        }, render: { $0.appendFileName }),
        .yesNo("aof-load-truncated", \.aofLoadTruncated, live: true),
        .size("memtable-max-size", \.memtableMaxBytes, live: true),
        .integer("memtable-full-timeout", \.memtableFullTimeout, 0...3_600_000, live: true),
        .integer("writer-nice", \.writerNice, 0...19),
        .integer("shutdown-timeout", \.shutdownTimeout, 0...Int(Int32.max), live: true),
        // The directive before appendonly/appendfsync: `commit` meant what
        // `appendonly yes` promises (a crash of the process loses nothing
        // acknowledged), `everysec` what `appendonly no` does (SQLite gets
        // the writes within about a second). Read, mapped, warned about,
        // and rewritten as appendonly.
        ConfigDirective(name: "durability", live: true, rewrite: .replacedBy("appendonly"), apply: { config, args, name in
            let text = try oneArgument(args, name).lowercased()
            switch text {
            case "commit": config.appendOnly = true
            case "everysec": config.appendOnly = false
            default: throw ConfigError("argument(s) must be one of the following: commit, everysec")
            }
            config.deprecatedDurability = text
        }, render: { $0.appendOnly ? "commit" : "everysec" }),
        .integer("tls-port", \.tlsPort, 0...65535),
        .text("tls-cert-file", \.tlsCertFile),
        .text("tls-key-file", \.tlsKeyFile),
        .text("tls-ca-cert-file", \.tlsCACertFile),
        .choice("tls-auth-clients", \.tlsAuthClients, ["yes", "no", "optional"]),
        .integer("slowlog-log-slower-than", \.slowlogSlowerThan, -1...Int(Int64.max), live: true),
        .integer("slowlog-max-len", \.slowlogMaxLength, 0...Int(Int32.max), live: true),
        .integer("latency-monitor-threshold", \.latencyMonitorThreshold, 0...Int(Int64.max), live: true),
        .yesNo("latency-tracking", \.latencyTracking, live: true),
        // Redis's form: percentiles separated by blanks, "" for none.
        ConfigDirective(name: "latency-tracking-info-percentiles", live: true, words: true, rewrite: .linePerEntry({ config in
            let value = percentileList(config.latencyTrackingPercentiles)
            return ["latency-tracking-info-percentiles " + (value.isEmpty ? "\"\"" : value)]
        }), apply: { config, args, _ in
            var percentiles: [Double] = []
            for word in args where !(args.count == 1 && word.isEmpty) {
                guard let value = Double(word), value.isFinite else {
                    throw ConfigError("Invalid latency-tracking-info-percentiles parameters")
                }
                guard value >= 0 && value <= 100 else {
                    throw ConfigError("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
                }
                percentiles.append(value)
            }
            config.latencyTrackingPercentiles = percentiles
        }, render: { percentileList($0.latencyTrackingPercentiles) }),
        .text("requirepass", \.requirePass, live: true),
        .yesNo("protected-mode", \.protectedMode, live: true),
        // Redis's `user` lines: one ACL user each (ACL/ACLRegistry.swift).
        ConfigDirective(name: "user", words: true, rewrite: .linePerEntry({ config in
            config.aclUsers.map { (["user"] + $0.map(quoteConfigWord)).joined(separator: " ") }
        }), apply: { config, args, _ in
            guard let name = args.first, !name.isEmpty else { throw ConfigError("user: a name is needed") }
            config.aclUsers.append(args)
        }, render: { config in config.aclUsers.map { $0.joined(separator: " ") }.joined(separator: " ") }),
        .text("aclfile", \.aclFile),
        .choice("acl-pubsub-default", \.aclPubsubDefault, ["allchannels", "resetchannels"], live: true),
        .integer("acllog-max-len", \.aclLogMaxLen, 0...Int(Int64.max), live: true),
        .integer("auth-max-failures", \.authMaxFailures, 0...Int(Int32.max), live: true),
        .integer("auth-failure-window", \.authFailureWindow, 1...86400, live: true),
        .yesNo("auth-failure-exempt-loopback", \.authFailureExemptLoopback, live: true),
        ConfigDirective(name: "listener-user", rewrite: .linePerEntry({ config in
            config.listenerUsers.keys.sorted().map { "listener-user \($0) \(quoteConfigWord(config.listenerUsers[$0]!))" }
        }), apply: { config, args, _ in
            guard args.count == 2, let port = Int(args[0]), (0...65535).contains(port) else {
                throw ConfigError("usage: listener-user <port> <user>")
            }
            config.listenerUsers[port] = args[1]
        }, render: { config in
            config.listenerUsers.keys.sorted().map { "\($0) \(config.listenerUsers[$0]!)" }.joined(separator: " ")
        }),
        ConfigDirective(name: "rename-command", rewrite: .linePerEntry({ config in
            config.renamedCommands.keys.sorted().map { "rename-command \($0) \(quoteConfigWord(config.renamedCommands[$0]!))" }
        }), apply: { config, args, _ in
            guard args.count == 2 else { throw ConfigError("usage: rename-command <command> <new-name>, \"\" to disable") }
            config.renamedCommands[args[0].lowercased()] = args[1].lowercased()
        }, render: { config in
            config.renamedCommands.keys.sorted().map { "\($0) \(config.renamedCommands[$0]!.isEmpty ? "\"\"" : config.renamedCommands[$0]!)" }
                .joined(separator: " ")
        }),
        .choice("enable-debug-command", \.enableDebugCommand, ["no", "yes", "local"]),
        .choice("enable-module-command", \.enableModuleCommand, ["no", "yes", "local"]),
        .size("memory-tier-size", \.memoryTierBytes, live: true),
        .integer("sqlite-max-page-count", \.sqliteMaxPageCount, 0...Int(Int32.max)),
        .size("sqlite-cache-size", \.pageCacheBytes),
        // Redis 7.0's thresholds between small and large collection
        // encodings, with the older `ziplist` names as aliases.
        .encodingLimit("hash-max-listpack-entries", aliases: ["hash-max-ziplist-entries"], \.hashMaxListpackEntries),
        .encodingLimit("hash-max-listpack-value", aliases: ["hash-max-ziplist-value"], \.hashMaxListpackValue, isSize: true),
        .encodingLimit("set-max-intset-entries", \.setMaxIntsetEntries),
        .encodingLimit("zset-max-listpack-entries", aliases: ["zset-max-ziplist-entries"], \.zsetMaxListpackEntries),
        .encodingLimit("zset-max-listpack-value", aliases: ["zset-max-ziplist-value"], \.zsetMaxListpackValue, isSize: true),
        // A stream's nodes (listpacks): the most bytes and entries one holds.
        .encodingLimit("stream-node-max-bytes", \.streamNodeMaxBytes, isSize: true),
        .encodingLimit("stream-node-max-entries", \.streamNodeMaxEntries),
        // Redis's maxmemory: a server-wide limit on data, enforced on writes.
        .size("maxmemory", \.maxMemory, live: true),
        .choice("maxmemory-policy", \.maxMemoryPolicy, MaxMemoryPolicy.allCases.map(\.rawValue), live: true),
        .integer("maxmemory-samples", \.maxMemorySamples, 1...Int(Int32.max), live: true),
        .integer("maxmemory-eviction-tenacity", \.maxMemoryEvictionTenacity, 0...100, live: true),
        .integer("lfu-log-factor", \.lfuLogFactor, 0...Int(Int32.max), live: true),
        .integer("lfu-decay-time", \.lfuDecayTime, 0...Int(Int32.max), live: true),
        // Redis settings its clients and tests set, accepted with no effect
        // a client could see here (see ServerConfig).
        .integer("list-max-listpack-size", aliases: ["list-max-ziplist-size"], \.listMaxListpackSize,
                 Int(Int32.min)...Int(Int32.max), live: true),
        .integer("list-compress-depth", \.listCompressDepth, 0...Int(Int32.max), live: true),
        .integer("active-expire-effort", \.activeExpireEffort, 1...10, live: true),
        .choice("sanitize-dump-payload", \.sanitizeDumpPayload, ["no", "yes", "clients"], live: true),
        // Replication and RDB settings (no replicas or RDB files here):
        // accepted so that Redis's tests and clients that set them run on.
        // How often the replication stream (SYNC feeds) gets a PING.
        .integer("repl-ping-replica-period", aliases: ["repl-ping-slave-period"], \.replPingReplicaPeriod, 1...Int(Int32.max),
                 live: true),
        .acceptedInteger("repl-timeout", default: 60, 1...Int(Int32.max)),
        .acceptedSize("repl-backlog-size", default: 1_048_576),
        .acceptedYesNo("replica-serve-stale-data", aliases: ["slave-serve-stale-data"], default: true),
        .acceptedYesNo("replica-read-only", aliases: ["slave-read-only"], default: true),
        .acceptedInteger("rdb-key-save-delay", default: 0, Int(Int32.min)...Int(Int32.max)).hiddenFromPatterns,
        .acceptedInteger("key-load-delay", default: 0, Int(Int32.min)...Int(Int32.max)).hiddenFromPatterns,
        .acceptedInteger("loading-process-events-interval-bytes", default: 2 * 1024 * 1024,
                         1024...Int(Int32.max)).hiddenFromPatterns,
        // Redis's limit on all clients' buffers together: a size, or a
        // percentage of maxmemory; past it, the client holding the most is
        // closed (Server.evictClientsIfNeeded).
        .accepted("maxmemory-clients", default: "0") { args, given in
            let text = try oneArgument(args, given)
            if text.hasSuffix("%") {
                guard let percent = Int(text.dropLast()), percent >= 0 else {
                    throw ConfigError("argument must be a memory or percent value")
                }
                guard percent <= 100 else { throw ConfigError("percentage argument must be less or equal to 100") }
                return "\(percent)%"
            }
            guard let bytes = parseMemorySize(text), bytes >= 0 else {
                throw ConfigError("argument must be a memory or percent value")
            }
            return String(bytes)
        },
        // `replicaof host port`: the server starts as that master's replica
        // (Server/ReplicaLink.swift); REPLICAOF changes it while it runs.
        ConfigDirective(name: "replicaof", aliases: ["slaveof"], words: true, apply: { config, args, given in
            guard args.allSatisfy(\.isEmpty) else {
                // Redis's checks: two arguments, a port.
                guard args.count == 2 else { throw ConfigError("wrong number of arguments") }
                guard let port = Int(args[1]), (0...65535).contains(port) else { throw ConfigError("Invalid master port") }
                config.replicaOf = ReplicaOf(host: args[0], port: port)
                return
            }
            config.replicaOf = nil
        }, render: { config in config.replicaOf.map { "\($0.host) \($0.port)" } ?? "" }),
        .acceptedYesNo("aof-use-rdb-preamble", default: true),
        // The server runs in the foreground (under systemd, a container or
        // a shell): `daemonize no` is accepted, `yes` is an error, and
        // CONFIG SET refuses it as Redis does (immutable).
        .accepted("daemonize", default: "no") { args, given in
            switch try oneArgument(args, given).lowercased() {
            case "no": return "no"
            case "yes": throw ConfigError("daemonize yes is not supported: run the server in the foreground "
                + "(systemd, a container, or a shell's &)")
            default: throw ConfigError("argument must be 'yes' or 'no'")
            }
        },
    ] + ["lazyfree-lazy-eviction", "lazyfree-lazy-expire", "lazyfree-lazy-server-del", "lazyfree-lazy-user-del",
         "lazyfree-lazy-user-flush"].map { name in
        ConfigDirective(name: name, live: true, apply: { config, args, name in
            switch try oneArgument(args, name).lowercased() {
            case "yes": config.lazyFree[name] = true
            case "no": config.lazyFree[name] = false
            default: throw ConfigError("argument must be 'yes' or 'no'")
            }
        }, render: { ($0.lazyFree[name] ?? false) ? "yes" : "no" })
    } + scriptingDirectives

    /// Every name a directive answers to (aliases right after their
    /// directive), in the table's order: what CONFIG GET matches.
    /// A directive whose name a later one takes again is dropped: the
    /// later one gives the setting its meaning (scripting's
    /// `min-replicas-to-write` over a setting merely accepted).
    static let directiveNames: [(name: String, directive: ConfigDirective)] = {
        var taken = Set<String>()
        var kept: [ConfigDirective] = []
        for directive in directives.reversed() where !directive.names.contains(where: taken.contains) {
            taken.formUnion(directive.names)
            kept.append(directive)
        }
        return kept.reversed().flatMap { directive in directive.names.map { ($0, directive) } }
    }()

    /// The directives by each of their names.
    static let directivesByName: [String: ConfigDirective] = Dictionary(uniqueKeysWithValues: directiveNames.map { ($0.name, $0.directive) })
}

extension ConfigDirective {
    /// An encoding threshold: a count, or (`isSize`) a length in bytes that
    /// takes Redis's units; never negative. Settable at run time.
    static func encodingLimit(_ name: String, aliases: [String] = [],
                              _ field: any WritableKeyPath<EncodingLimits, Int> & Sendable,
                              isSize: Bool = false) -> ConfigDirective {
        ConfigDirective(name: name, aliases: aliases, live: true, apply: { config, args, name in
            let text = try oneArgument(args, name)
            guard let value = isSize ? parseMemorySize(text) : Int(text), value >= 0 else {
                throw ConfigError("argument couldn't be parsed into an integer")
            }
            config.encodingLimits[keyPath: field] = value
        }, render: { "\($0.encodingLimits[keyPath: field])" })
    }
}
