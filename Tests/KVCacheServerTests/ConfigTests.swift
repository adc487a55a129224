import Foundation
import SQLiteKVCache
import Testing
@testable import KVCacheServer

/// The configuration file, command-line options, the directive table and
/// CONFIG REWRITE, without a server.
@Suite("Configuration")
struct ConfigTests {
    @Test(arguments: [("0", 0), ("100", 100), ("1k", 1000), ("1kb", 1024), ("2mb", 2 << 20), ("1G", 1_000_000_000),
                      ("1gb", 1 << 30), ("5b", 5)])
    func sizesTakeRedisUnits(text: String, bytes: Int) {
        #expect(parseMemorySize(text) == bytes)
    }

    @Test(arguments: ["", "mb", "-1", "1.5mb", "1tb", "１mb", "99999999999999999999gb"])
    func badSizesAreRefused(text: String) {
        #expect(parseMemorySize(text) == nil)
    }

    @Test func fileLinesApplyInOrderWithRedisQuoting() throws {
        var config = ServerConfig()
        try config.apply(fileContents: """
            # comment
            port 7000

            bind 127.0.0.1 -::1
            requirepass "pass word"
            maxmemory-policy allkeys-lru
            eviction-policy lru
            cache sessions 256mb lru
            cache Other 1kb
            hash-max-ziplist-entries 100
            rename-command FLUSHALL ""
            """, path: "k.conf")
        #expect(config.port == 7000)
        #expect(config.bind == ["127.0.0.1", "::1"])
        #expect(config.requirePass == "pass word")
        #expect(config.evictionPolicy == .lru)
        #expect(config.maxMemoryPolicy == .allkeysLRU)
        #expect(config.caches == ["sessions": CacheSettings(capacity: 256 << 20, policy: .lru),
                                  "other": CacheSettings(capacity: 1024, policy: nil)])
        #expect(config.encodingLimits.hashMaxListpackEntries == 100)
        #expect(config.renamedCommands == ["flushall": ""])
    }

    static let badLines: [(String, String)] = [
        ("port 1 2", "k.conf, line 1 ('port 1 2'): wrong number of arguments"),
        ("port x", "k.conf, line 1 ('port x'): argument couldn't be parsed into an integer"),
        ("port 70000", "k.conf, line 1 ('port 70000'): argument must be between 0 and 65535 inclusive"),
        ("bogus 1", "k.conf, line 1 ('bogus 1'): Bad directive or wrong number of arguments: 'bogus'"),
        ("loglevel loud", "k.conf, line 1 ('loglevel loud'): argument(s) must be one of the following: debug, verbose, notice, warning, nothing"),
        ("protected-mode maybe", "k.conf, line 1 ('protected-mode maybe'): argument must be 'yes' or 'no'"),
        ("proto-max-bulk-len 1kb", "k.conf, line 1 ('proto-max-bulk-len 1kb'): proto-max-bulk-len must be at least 1mb"),
        ("eviction-policy nope", "k.conf, line 1 ('eviction-policy nope'): unknown eviction policy 'nope' (use fifo, lru, volatile-ttl or noeviction)"),
        ("maxmemory-policy lru", "k.conf, line 1 ('maxmemory-policy lru'): argument(s) must be one of the following: noeviction, "
            + "allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random, volatile-ttl, fifo"),
        ("zset-max-ziplist-value x", "k.conf, line 1 ('zset-max-ziplist-value x'): argument couldn't be parsed into an integer"),
        ("requirepass \"open", "k.conf, line 1: unbalanced quotes in 'requirepass \"open'"),
    ]

    @Test(arguments: badLines.indices)
    func badLinesSayWhatAndWhere(index: Int) {
        let (line, message) = Self.badLines[index]
        var config = ServerConfig()
        #expect { try config.apply(fileContents: line, path: "k.conf") } throws: { error in
            (error as? ConfigError)?.description == message
        }
    }

    @Test func directiveTableNamesAreUniqueAndAliasesFollowTheirDirective() {
        let names = ServerConfig.directiveNames.map(\.name)
        #expect(Set(names).count == names.count)
        let list = names.firstIndex(of: "list-max-listpack-size")!
        #expect(names[list + 1] == "list-max-ziplist-size")
        #expect(ServerConfig.directivesByName["list-max-ziplist-size"]?.name == "list-max-listpack-size")
        // Redis's maxmemory-policy is the server-wide limit's, not a cache's capacity policy.
        #expect(ServerConfig.directivesByName["maxmemory-policy"]?.name == "maxmemory-policy")
        #expect(ServerConfig.directivesByName["port"]?.live == true)  // CONFIG SET port rebinds
        #expect(ServerConfig.directivesByName["bind"]?.live == true)  // CONFIG SET bind listens again
        #expect(ServerConfig.directivesByName["key-load-delay"]?.hidden == true)
        #expect(ServerConfig.directivesByName["slaveof"]?.name == "replicaof")
        #expect(ServerConfig.directivesByName["timeout"]?.live == true)
        #expect(ServerConfig.directivesByName["bind"]?.words == true)
    }

    @Test func everyDirectiveRendersWhatItParses() throws {
        // Applying each directive's rendered default leaves the defaults unchanged.
        let defaults = ServerConfig()
        for directive in ServerConfig.directives {
            guard case .line = directive.rewrite else { continue }
            var config = defaults
            let value = directive.render(defaults)
            try config.apply(directive.name, directive.words ? value.split(separator: " ").map(String.init) : [value])
            #expect(directive.render(config) == value, "\(directive.name)")
        }
    }

    @Test func rewriteKeepsCommentsReplacesLinesAndAppendsChanges() throws {
        let original = """
            # kvcache.conf
            port 7000

            # the policy, by Redis's name
            maxmemory-policy allkeys-lru
            cache old 1mb
            cache gone 2mb
            hash-max-ziplist-entries 100
            """
        var config = ServerConfig()
        try config.apply(fileContents: "port 7001\nmaxmemory-policy volatile-ttl\ncache new 3mb lru\ntimeout 30\nbind 127.0.0.1 ::1", path: "x")
        config.encodingLimits.hashMaxListpackEntries = 64
        #expect(config.rewritten(original: original) == """
            # kvcache.conf
            port 7001

            # the policy, by Redis's name
            maxmemory-policy volatile-ttl
            cache new 3145728 lru
            hash-max-listpack-entries 64

            # Generated by CONFIG REWRITE
            bind 127.0.0.1 ::1
            timeout 30

            """)
    }

    @Test func rewriteQuotesWordsThatNeedIt() {
        var config = ServerConfig()
        config.requirePass = "a b\"c"
        config.renamedCommands = ["config": ""]
        #expect(config.rewritten(original: "") == """

            # Generated by CONFIG REWRITE
            requirepass "a b\\"c"
            rename-command config ""

            """)
    }

    @Test func commandLineReadsTheFileThenOptions() throws {
        let path = FileManager.default.temporaryDirectory.path + "/kvcache-config-\(UUID().uuidString).conf"
        try "port 7000\ndatabases 4\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard case .serve(let config) = try parseCommandLine([path, "--port", "7001", "--bind", "::1", "127.0.0.1"]) else {
            Issue.record("expected a server to start")
            return
        }
        #expect(config.port == 7001 && config.databases == 4 && config.bind == ["::1", "127.0.0.1"])
        #expect(config.configFile == path)
        guard case .help = try parseCommandLine(["--help"]), case .version = try parseCommandLine(["-v"]) else {
            Issue.record("expected help and version")
            return
        }
        #expect { try parseCommandLine(["--port"]) } throws: { error in
            (error as? ConfigError)?.description == "option 'port': wrong number of arguments"
        }
        #expect { try parseCommandLine(["port", "1"]) } throws: { error in
            (error as? ConfigError)?.description.hasPrefix("can't read the config file port") == true
        }
    }
}
