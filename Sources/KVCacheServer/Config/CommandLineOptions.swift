import Foundation
import RESP

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
    // Redis's rules (its main()): `--name` starts an option, unless the
    // option before it has no value yet, which then takes it (`--port
    // --bla` gives port the value "--bla"); other words are values of the
    // option before; `--name value` in one argument is both; a bare
    // `--save` is `save ""`.
    var options: [(name: String, values: [String])] = []
    var lastHasValue = true
    let rest = Array(args)
    for (i, arg) in rest.enumerated() {
        if lastHasValue && arg.hasPrefix("--") {
            let body = String(arg.dropFirst(2))
            let words = Array(body.utf8).withUnsafeBytes { splitArguments($0) }?.map { String(decoding: $0, as: UTF8.self) } ?? [body]
            if words.count > 1 {
                options.append((words[0], Array(words.dropFirst())))
            } else {
                options.append((words.first ?? body, []))
                lastHasValue = false
                let nextIsOption = i + 1 < rest.count && rest[i + 1].hasPrefix("--")
                if body.lowercased() == "save" && (nextIsOption || i + 1 == rest.count) {
                    options[options.count - 1].values = [""]
                    lastHasValue = true
                }
            }
        } else {
            guard !options.isEmpty else { throw ConfigError("expected an option like --port, got '\(arg)'") }
            options[options.count - 1].values.append(arg)
            lastHasValue = true
        }
    }
    for (name, values) in options {
        if name == "help" && values.isEmpty { return .help }
        if name == "version" && values.isEmpty { return .version }
        do {
            try config.apply(name, values)
        } catch let error as ConfigError {
            // As Redis shows the line it made of the option: 'port "6379" "6380"'.
            let line = ([name] + values.map { "\"\($0)\"" }).joined(separator: " ")
            throw ConfigError("option '\(line)': \(error.description)")
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
