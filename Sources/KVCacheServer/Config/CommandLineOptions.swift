import Foundation

/// What the command line asks for.
public enum LaunchRequest {
    case serve(ServerConfig)
    case help
    case version
    /// Check (and with `fix`, cut at the first bad record) an append-only
    /// log: a directory of segments, or one segment file.
    case checkLog(path: String, fix: Bool)
}

/// Parses `kvcache-server [config-file] [--name value ...]` as redis-server
/// does: the file first (if any), then options that override it. Each
/// `--name` takes the words up to the next `--name`.
/// - Throws: `ConfigError` with a message fit for the user.
public func parseCommandLine(_ arguments: [String]) throws -> LaunchRequest {
    var args = arguments[...]
    if args.first == "--help" || args.first == "-h" { return .help }
    if args.first == "--version" || args.first == "-v" { return .version }
    if args.first == "--check-aof" {
        let rest = Array(args.dropFirst())
        let fix = rest.first == "--fix"
        let paths = fix ? Array(rest.dropFirst()) : rest
        guard paths.count == 1 else { throw ConfigError("usage: kvcache-server --check-aof [--fix] <log directory or segment>") }
        return .checkLog(path: paths[0], fix: fix)
    }
    var config = ServerConfig()
    config.loadingSavePoints = true
    if let first = args.first, !first.hasPrefix("--") {
        let contents: String
        do {
            contents = try String(contentsOfFile: first, encoding: .utf8)
        } catch {
            throw ConfigError("can't read the config file \(first): \(error.localizedDescription)")
        }
        try config.apply(fileContents: contents, path: first)
        config.configFile = URL(fileURLWithPath: first).standardizedFileURL.path
        args = args.dropFirst()
    }
    while let option = args.first {
        guard option.hasPrefix("--"), option.count > 2 else {
            throw ConfigError("expected an option like --port, got '\(option)'")
        }
        args = args.dropFirst()
        var values: [String] = []
        while let value = args.first, !value.hasPrefix("--") {
            values.append(value)
            args = args.dropFirst()
        }
        if option == "--help" { return .help }
        if option == "--version" { return .version }
        do {
            try config.apply(String(option.dropFirst(2)), values)
        } catch let error as ConfigError {
            throw ConfigError("option \(option) \(values.joined(separator: " ")): \(error.description)")
        }
    }
    config.loadingSavePoints = false
    return .serve(config)
}

public let usageText = """
    Usage: kvcache-server [/path/to/kvcache.conf] [--name value ...]
           kvcache-server --version
           kvcache-server --help
           kvcache-server --check-aof [--fix] <dir/appendonlydir | segment>

    A persistent cache server speaking the Redis protocol: each named cache
    is a SQLite file in the data directory.

    Examples:
           kvcache-server                        (port 6379, data in ./data)
           kvcache-server --port 7777 --dir /var/lib/kvcache
           kvcache-server /etc/kvcache.conf --loglevel verbose
           kvcache-server --default-capacity 1gb --cache sessions 256mb lru

    Options (also config file directives, one per line as `name value`):
           port, bind, dir, databases, max-caches, maxclients, timeout,
           loglevel, logfile, proto-max-bulk-len, client-query-buffer-limit,
           default-capacity, eviction-policy, cache <name> <size> [<policy>],
           sqlite-cache-size; every directive of kvcache.conf (listed in
           docs/configuration.md) is taken the same way, e.g.
           --appendfsync always, --enable-debug-command yes
    """
