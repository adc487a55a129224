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
    public var defaultCapacity = 0
    public var evictionPolicy = EvictionPolicy.fifo
    public var caches: [String: CacheSettings] = [:]
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
    public var writerNice = 19
    /// Seconds a shutdown spends applying changes to SQLite before leaving
    /// the rest to the log (Redis's `shutdown-timeout`).
    public var shutdownTimeout = 10
    /// The old `durability` directive, if a configuration still used it.
    public var deprecatedDurability: String?
    /// The default user's password; empty for none (Redis's `requirepass`).
    public var requirePass = ""
    /// Refuse non-loopback clients while no password is set.
    public var protectedMode = true
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
    /// Who may run DEBUG: `no`, `yes`, or `local` (loopback clients).
    public var enableDebugCommand = "no"
    /// The file the configuration was read from, if any.
    public var configFile: String?
    /// Redis's thresholds between small and large collection encodings (OBJECT ENCODING).
    var encodingLimits = EncodingLimits()

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
    /// A directive: how to apply its arguments and how to render its value.
    struct Directive: Sendable {
        let name: String
        let apply: @Sendable (inout ServerConfig, [String]) throws -> Void
        let render: @Sendable (ServerConfig) -> String
        /// Another name for a directive listed before it (Redis's old names):
        /// CONFIG REWRITE writes only the directive's own name.
        var aliasOf: String? = nil
        /// Config-file lines for directives that repeat (`cache`, `rename-command`).
        var fileLines: (@Sendable (ServerConfig) -> [String])? = nil

        /// The directive as config-file lines, arguments quoted where needed.
        func lines(_ config: ServerConfig) -> [String] {
            if let fileLines { return fileLines(config) }
            let value = render(config)
            let words = name == "bind" || name == "client-output-buffer-limit"
                ? value.split(separator: " ").map(String.init) : [value]
            return [([name] + words.map(quoteConfigWord)).joined(separator: " ")]
        }
    }

    static func one(_ args: [String], _ name: String) throws -> String {
        guard args.count == 1 else { throw ConfigError("'\(name)' takes exactly one argument") }
        return args[0]
    }

    static func integer(_ args: [String], _ name: String, range: ClosedRange<Int>) throws -> Int {
        let text = try one(args, name)
        guard let value = Int(text) else { throw ConfigError("argument couldn't be parsed into an integer: '\(text)'") }
        guard range.contains(value) else {
            throw ConfigError("argument must be between \(range.lowerBound) and \(range.upperBound) inclusive")
        }
        return value
    }

    static func yesNo(_ args: [String], _ name: String) throws -> Bool {
        switch try one(args, name).lowercased() {
        case "yes": return true
        case "no": return false
        default: throw ConfigError("argument must be 'yes' or 'no'")
        }
    }

    static func size(_ args: [String], _ name: String) throws -> Int {
        let text = try one(args, name)
        guard let value = parseMemorySize(text) else {
            throw ConfigError("argument must be a memory value (like 100mb or 1gb): '\(text)'")
        }
        return value
    }

    static func policy(_ text: String) throws -> EvictionPolicy {
        guard let policy = EvictionPolicy(name: text) else {
            throw ConfigError("unknown eviction policy '\(text)' (use fifo, lru, volatile-ttl or noeviction)")
        }
        return policy
    }

    static let directives: [Directive] = [
        Directive(name: "port", apply: { $0.port = try integer($1, "port", range: 0...65535) }, render: { "\($0.port)" }),
        Directive(name: "bind", apply: { config, args in
            guard !args.isEmpty else { throw ConfigError("'bind' needs at least one address") }
            for address in args where SocketAddress(host: address.hasPrefix("-") ? String(address.dropFirst()) : address, port: 0) == nil {
                throw ConfigError("invalid bind address '\(address)'")
            }
            config.bind = args.map { $0.hasPrefix("-") ? String($0.dropFirst()) : $0 }
        }, render: { $0.bind.joined(separator: " ") }),
        Directive(name: "dir", apply: { $0.dir = try one($1, "dir") }, render: { $0.dir }),
        Directive(name: "databases", apply: { $0.databases = try integer($1, "databases", range: 1...Int(Int32.max)) },
                  render: { "\($0.databases)" }),
        Directive(name: "max-caches", apply: { $0.maxCaches = try integer($1, "max-caches", range: 1...100_000) },
                  render: { "\($0.maxCaches)" }),
        Directive(name: "maxclients", apply: { $0.maxClients = try integer($1, "maxclients", range: 1...1_000_000) },
                  render: { "\($0.maxClients)" }),
        Directive(name: "timeout", apply: { $0.timeout = try integer($1, "timeout", range: 0...Int(Int32.max)) },
                  render: { "\($0.timeout)" }),
        Directive(name: "loglevel", apply: { config, args in
            let text = try one(args, "loglevel")
            guard let level = LogLevel(rawValue: text.lowercased()) else {
                throw ConfigError("argument(s) must be one of the following: debug, verbose, notice, warning, nothing")
            }
            config.logLevel = level
        }, render: { $0.logLevel.rawValue }),
        Directive(name: "logfile", apply: { $0.logFile = try one($1, "logfile") }, render: { $0.logFile }),
        Directive(name: "proto-max-bulk-len", apply: { config, args in
            let value = try size(args, "proto-max-bulk-len")
            guard value >= 1024 * 1024 else { throw ConfigError("proto-max-bulk-len must be at least 1mb") }
            config.protoMaxBulkLen = value
        }, render: { "\($0.protoMaxBulkLen)" }),
        Directive(name: "client-query-buffer-limit", apply: { config, args in
            let value = try size(args, "client-query-buffer-limit")
            guard value >= 1024 * 1024 else { throw ConfigError("client-query-buffer-limit must be at least 1mb") }
            config.clientQueryBufferLimit = value
        }, render: { "\($0.clientQueryBufferLimit)" }),
        Directive(name: "client-output-buffer-limit", apply: { config, args in
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
            }
        }, render: { config in
            let l = config.outputBufferLimit
            return "normal \(l.hard) \(l.soft) \(l.softSeconds) replica 268435456 67108864 60 pubsub 33554432 8388608 60"
        }),
        Directive(name: "default-capacity", apply: { $0.defaultCapacity = try size($1, "default-capacity") },
                  render: { "\($0.defaultCapacity)" }),
        Directive(name: "eviction-policy", apply: { $0.evictionPolicy = try policy(one($1, "eviction-policy")) },
                  render: { $0.evictionPolicy.rawValue }),
        Directive(name: "maxmemory-policy", apply: { $0.evictionPolicy = try policy(one($1, "maxmemory-policy")) },
                  render: { $0.evictionPolicy.rawValue }),
        Directive(name: "cache", apply: { config, args in
            guard args.count == 2 || args.count == 3 else {
                throw ConfigError("usage: cache <name> <size> [fifo|lru|volatile-ttl|noeviction]")
            }
            guard let name = try? SQLiteKVCache.canonicalHandle(args[0]) else {
                throw ConfigError("invalid cache name '\(args[0])': use 1 to 64 of a-z 0-9 . _ -")
            }
            guard let capacity = parseMemorySize(args[1]) else {
                throw ConfigError("cache size must be a memory value (like 256mb): '\(args[1])'")
            }
            config.caches[name] = CacheSettings(capacity: capacity, policy: try args.count == 3 ? policy(args[2]) : nil)
        }, render: { config in
            config.caches.keys.sorted().map { name in
                let settings = config.caches[name]!
                return "\(name) \(settings.capacity)" + (settings.policy.map { " \($0.rawValue)" } ?? "")
            }.joined(separator: " ")
        }, fileLines: { config in
            config.caches.keys.sorted().map { name in
                let settings = config.caches[name]!
                return "cache \(name) \(settings.capacity)" + (settings.policy.map { " \($0.rawValue)" } ?? "")
            }
        }),
        // RDB snapshots: accepted so redis.conf files and tools work; SQLite
        // is the store of record here, and SAVE/BGSAVE apply to it.
        Directive(name: "save", apply: { _, _ in }, render: { _ in "" }),
        Directive(name: "appendonly", apply: { $0.appendOnly = try yesNo($1, "appendonly") },
                  render: { $0.appendOnly ? "yes" : "no" }),
        Directive(name: "appendfsync", apply: { config, args in
            guard let value = AppendFsync(rawValue: try one(args, "appendfsync").lowercased()) else {
                throw ConfigError("argument(s) must be one of the following: always, everysec, no")
            }
            config.appendFsync = value
        }, render: { $0.appendFsync.rawValue }),
        Directive(name: "appenddirname", apply: { config, args in
            let name = try one(args, "appenddirname")
            guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                throw ConfigError("appenddirname can't be a path, just a dirname")
            }
            config.appendDirName = name
        }, render: { $0.appendDirName }),
        Directive(name: "appendfilename", apply: { config, args in
            let name = try one(args, "appendfilename")
            guard !name.isEmpty, !name.contains("/") else {
                throw ConfigError("appendfilename can't be a path, just a filename")
            }
            config.appendFileName = name
        }, render: { $0.appendFileName }),
        Directive(name: "aof-load-truncated", apply: { $0.aofLoadTruncated = try yesNo($1, "aof-load-truncated") },
                  render: { $0.aofLoadTruncated ? "yes" : "no" }),
        Directive(name: "memtable-max-size", apply: { $0.memtableMaxBytes = try size($1, "memtable-max-size") },
                  render: { "\($0.memtableMaxBytes)" }),
        Directive(name: "memtable-full-timeout", apply: {
            $0.memtableFullTimeout = try integer($1, "memtable-full-timeout", range: 0...3_600_000)
        }, render: { "\($0.memtableFullTimeout)" }),
        Directive(name: "writer-nice", apply: { $0.writerNice = try integer($1, "writer-nice", range: 0...19) },
                  render: { "\($0.writerNice)" }),
        Directive(name: "shutdown-timeout", apply: {
            $0.shutdownTimeout = try integer($1, "shutdown-timeout", range: 0...Int(Int32.max))
        }, render: { "\($0.shutdownTimeout)" }),
        // The directive before appendonly/appendfsync: `commit` meant what
        // `appendonly yes` promises (a crash of the process loses nothing
        // acknowledged), `everysec` what `appendonly no` does (SQLite gets
        // the writes within about a second). Read, mapped, warned about.
        Directive(name: "durability", apply: { config, args in
            let text = try one(args, "durability").lowercased()
            switch text {
            case "commit": config.appendOnly = true
            case "everysec": config.appendOnly = false
            default: throw ConfigError("argument(s) must be one of the following: commit, everysec")
            }
            config.deprecatedDurability = text
        }, render: { $0.appendOnly ? "commit" : "everysec" }, aliasOf: "appendonly"),
        Directive(name: "tls-port", apply: { $0.tlsPort = try integer($1, "tls-port", range: 0...65535) },
                  render: { "\($0.tlsPort)" }),
        Directive(name: "tls-cert-file", apply: { $0.tlsCertFile = try one($1, "tls-cert-file") }, render: { $0.tlsCertFile }),
        Directive(name: "tls-key-file", apply: { $0.tlsKeyFile = try one($1, "tls-key-file") }, render: { $0.tlsKeyFile }),
        Directive(name: "tls-ca-cert-file", apply: { $0.tlsCACertFile = try one($1, "tls-ca-cert-file") },
                  render: { $0.tlsCACertFile }),
        Directive(name: "tls-auth-clients", apply: { config, args in
            let value = try one(args, "tls-auth-clients").lowercased()
            guard ["yes", "no", "optional"].contains(value) else {
                throw ConfigError("argument(s) must be one of the following: yes, no, optional")
            }
            config.tlsAuthClients = value
        }, render: { $0.tlsAuthClients }),
        Directive(name: "slowlog-log-slower-than", apply: {
            $0.slowlogSlowerThan = try integer($1, "slowlog-log-slower-than", range: -1...Int(Int64.max))
        }, render: { "\($0.slowlogSlowerThan)" }),
        Directive(name: "slowlog-max-len", apply: {
            $0.slowlogMaxLength = try integer($1, "slowlog-max-len", range: 0...Int(Int32.max))
        }, render: { "\($0.slowlogMaxLength)" }),
        Directive(name: "requirepass", apply: { $0.requirePass = try one($1, "requirepass") },
                  render: { $0.requirePass }),
        Directive(name: "protected-mode", apply: { $0.protectedMode = try yesNo($1, "protected-mode") },
                  render: { $0.protectedMode ? "yes" : "no" }),
        Directive(name: "rename-command", apply: { config, args in
            guard args.count == 2 else { throw ConfigError("usage: rename-command <command> <new-name>, \"\" to disable") }
            config.renamedCommands[args[0].lowercased()] = args[1].lowercased()
        }, render: { config in
            config.renamedCommands.keys.sorted().map { "\($0) \(config.renamedCommands[$0]!.isEmpty ? "\"\"" : config.renamedCommands[$0]!)" }
                .joined(separator: " ")
        }, fileLines: { config in
            config.renamedCommands.keys.sorted().map { "rename-command \($0) \(quoteConfigWord(config.renamedCommands[$0]!))" }
        }),
        Directive(name: "enable-debug-command", apply: { config, args in
            let value = try one(args, "enable-debug-command").lowercased()
            guard ["yes", "no", "local"].contains(value) else {
                throw ConfigError("argument(s) must be one of the following: no, yes, local")
            }
            config.enableDebugCommand = value
        }, render: { $0.enableDebugCommand }),
        Directive(name: "memory-tier-size", apply: { $0.memoryTierBytes = try size($1, "memory-tier-size") },
                  render: { "\($0.memoryTierBytes)" }),
        Directive(name: "sqlite-max-page-count", apply: {
            $0.sqliteMaxPageCount = try integer($1, "sqlite-max-page-count", range: 0...Int(Int32.max))
        }, render: { "\($0.sqliteMaxPageCount)" }),
        Directive(name: "sqlite-cache-size", apply: { $0.pageCacheBytes = try size($1, "sqlite-cache-size") },
                  render: { "\($0.pageCacheBytes)" }),
    ] + encodingDirectives

    /// The thresholds between Redis's small and large collection encodings,
    /// under their Redis 7.0 names and the older `ziplist` ones.
    static let encodingDirectives: [Directive] = {
        let settings: [(String, String?, any WritableKeyPath<EncodingLimits, Int> & Sendable, Bool)] = [
            ("hash-max-listpack-entries", "hash-max-ziplist-entries", \.hashMaxListpackEntries, false),
            ("hash-max-listpack-value", "hash-max-ziplist-value", \.hashMaxListpackValue, true),
            ("set-max-intset-entries", nil, \.setMaxIntsetEntries, false),
            ("zset-max-listpack-entries", "zset-max-ziplist-entries", \.zsetMaxListpackEntries, false),
            ("zset-max-listpack-value", "zset-max-ziplist-value", \.zsetMaxListpackValue, true),
        ]
        var result: [Directive] = []
        for (name, alias, path, isMemory) in settings {
            for (directiveName, aliasOf) in [(name, nil as String?)] + (alias.map { [($0, name)] } ?? []) {
                result.append(Directive(name: directiveName, apply: { config, args in
                    let text = try one(args, directiveName)
                    guard let value = isMemory ? parseMemorySize(text) : Int(text), value >= 0 else {
                        throw ConfigError("argument couldn't be parsed into an integer: '\(text)'")
                    }
                    config.encodingLimits[keyPath: path] = value
                }, render: { "\($0.encodingLimits[keyPath: path])" }, aliasOf: aliasOf))
            }
        }
        return result
    }()

    static let directivesByName: [String: Directive] = Dictionary(uniqueKeysWithValues: directives.map { ($0.name, $0) })

    /// Applies one directive.
    /// - Throws: `ConfigError` for an unknown name or bad arguments.
    mutating func apply(_ name: String, _ args: [String]) throws {
        guard let directive = Self.directivesByName[name.lowercased()] else {
            throw ConfigError("Bad directive or wrong number of arguments: '\(name)'")
        }
        try directive.apply(&self, args)
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

extension ServerConfig {
    /// The text CONFIG REWRITE writes: `original` with each directive's first
    /// line replaced by its current value (its other lines dropped),
    /// comments and blank lines kept, and directives changed from their
    /// defaults but absent from the file appended.
    func rewritten(original: String) -> String {
        let defaults = ServerConfig()
        var out: [String] = []
        var written = Set<String>()
        for rawLine in original.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine)
            let trimmed = line.trimmingCharacters(in: " \t\r")
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#"),
                  let name = trimmed.split(separator: " ").first.map({ $0.lowercased() }),
                  let directive = Self.directivesByName[name] else {
                out.append(line)
                continue
            }
            if written.insert(directive.aliasOf ?? directive.name).inserted {
                let own = directive.aliasOf.flatMap { Self.directivesByName[$0] } ?? directive
                out.append(contentsOf: own.lines(self))
            }
        }
        while out.last == "" { out.removeLast() }
        var added: [String] = []
        for directive in Self.directives where !written.contains(directive.name) {
            // maxmemory-policy is eviction-policy under Redis's name: written once.
            if directive.name == "maxmemory-policy" || directive.aliasOf != nil { continue }
            if directive.render(self) != directive.render(defaults) { added.append(contentsOf: directive.lines(self)) }
        }
        if !added.isEmpty {
            out.append("")
            out.append("# Generated by CONFIG REWRITE")
            out.append(contentsOf: added)
        }
        return out.joined(separator: "\n") + "\n"
    }
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
