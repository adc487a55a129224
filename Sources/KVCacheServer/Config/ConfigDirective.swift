import SQLiteKVCache

/// One configuration directive, as a row of data (Redis's `standardConfig`
/// table): its name and older names, whether CONFIG SET may change it while
/// the server runs, how its value is parsed and rendered, and how CONFIG
/// REWRITE writes it. The directives themselves are the table in
/// ConfigDirectives.swift; the file parser, CONFIG GET/SET and CONFIG
/// REWRITE read only these fields, never a directive's name.
struct ConfigDirective: Sendable {
    typealias Apply = @Sendable (_ config: inout ServerConfig, _ args: [String], _ name: String) throws -> Void
    typealias Render = @Sendable (ServerConfig) -> String

    /// How CONFIG REWRITE writes a directive.
    enum Rewrite: Sendable {
        /// One line, `name value` (or `name word word…` for a `words` value).
        case line
        /// One line per entry, for a directive that repeats (`cache`,
        /// `rename-command`); none when there is no entry.
        case linePerEntry(@Sendable (ServerConfig) -> [String])
        /// A deprecated directive: a line of it is rewritten as the named
        /// directive's, and it is never appended.
        case replacedBy(String)
    }

    let name: String
    /// Other names it answers to (Redis's older names): CONFIG GET lists
    /// each, CONFIG REWRITE writes the directive under `name`.
    var aliases: [String] = []
    /// Whether CONFIG SET may change it while the server runs.
    var live = false
    /// Whether the value is a list of words (`bind 127.0.0.1 ::1`): CONFIG
    /// SET splits its value at spaces, CONFIG REWRITE writes each word.
    var words = false
    var rewrite = Rewrite.line
    /// Redis's HIDDEN_CONFIG (a debugging knob): CONFIG GET answers it when
    /// asked by its exact name, never for a pattern.
    var hidden = false
    /// Parses the arguments of a config-file line, a command-line option or
    /// CONFIG SET into `config`.
    /// - Throws: `ConfigError`; `name` is the name the directive was given by.
    let apply: Apply
    /// The running value, as CONFIG GET answers it.
    let render: Render

    /// Every name it answers to, its own first.
    var names: [String] { [name] + aliases }

    /// The directive as config-file lines, arguments quoted where needed.
    func lines(_ config: ServerConfig) -> [String] {
        switch rewrite {
        case .linePerEntry(let entries):
            return entries(config)
        case .replacedBy(let other):
            return ServerConfig.directivesByName[other]?.lines(config) ?? []
        case .line:
            let value = render(config)
            let words = words ? value.split(separator: " ").map(String.init) : [value]
            return [([name] + words.map(quoteConfigWord)).joined(separator: " ")]
        }
    }
}

// MARK: Directives by the type of their value (Redis's createIntConfig and friends)

extension ConfigDirective {
    /// An integer within `range`.
    static func integer(_ name: String, aliases: [String] = [], _ field: any WritableKeyPath<ServerConfig, Int> & Sendable,
                        _ range: ClosedRange<Int>, live: Bool = false) -> ConfigDirective {
        ConfigDirective(name: name, aliases: aliases, live: live, apply: { config, args, name in
            config[keyPath: field] = try integerArgument(args, name, range: range)
        }, render: { "\($0[keyPath: field])" })
    }

    /// A size in Redis's units (`100mb`), at least `minimum` bytes.
    static func size(_ name: String, _ field: any WritableKeyPath<ServerConfig, Int> & Sendable,
                     minimum: (bytes: Int, text: String)? = nil, live: Bool = false) -> ConfigDirective {
        ConfigDirective(name: name, live: live, apply: { config, args, name in
            let value = try sizeArgument(args, name)
            if let minimum, value < minimum.bytes { throw ConfigError("\(name) must be at least \(minimum.text)") }
            config[keyPath: field] = value
        }, render: { "\($0[keyPath: field])" })
    }

    /// `yes` or `no`.
    static func yesNo(_ name: String, _ field: any WritableKeyPath<ServerConfig, Bool> & Sendable,
                      live: Bool = false) -> ConfigDirective {
        ConfigDirective(name: name, live: live, apply: { config, args, name in
            switch try oneArgument(args, name).lowercased() {
            case "yes": config[keyPath: field] = true
            case "no": config[keyPath: field] = false
            default: throw ConfigError("argument must be 'yes' or 'no'")
            }
        }, render: { $0[keyPath: field] ? "yes" : "no" })
    }

    /// One of `options` (any case), stored as given by its raw value.
    static func choice<Value: RawRepresentable & Sendable>(
        _ name: String, _ field: any WritableKeyPath<ServerConfig, Value> & Sendable, _ options: [String],
        live: Bool = false
    ) -> ConfigDirective where Value.RawValue == String {
        ConfigDirective(name: name, live: live, apply: { config, args, name in
            let text = try oneArgument(args, name).lowercased()
            guard options.contains(text), let value = Value(rawValue: text) else {
                throw ConfigError("argument(s) must be one of the following: \(options.joined(separator: ", "))")
            }
            config[keyPath: field] = value
        }, render: { $0[keyPath: field].rawValue })
    }

    /// One of `options` (any case), stored lowercased as text.
    static func choice(_ name: String, _ field: any WritableKeyPath<ServerConfig, String> & Sendable,
                       _ options: [String], live: Bool = false) -> ConfigDirective {
        ConfigDirective(name: name, live: live, apply: { config, args, name in
            let text = try oneArgument(args, name).lowercased()
            guard options.contains(text) else {
                throw ConfigError("argument(s) must be one of the following: \(options.joined(separator: ", "))")
            }
            config[keyPath: field] = text
        }, render: { $0[keyPath: field] })
    }

    /// Free text (a path, a password).
    static func text(_ name: String, _ field: any WritableKeyPath<ServerConfig, String> & Sendable,
                     live: Bool = false) -> ConfigDirective {
        ConfigDirective(name: name, live: live, apply: { config, args, name in
            config[keyPath: field] = try oneArgument(args, name)
        }, render: { $0[keyPath: field] })
    }

    /// An eviction policy by this server's or Redis's name.
    static func policy(_ name: String, aliases: [String] = [], live: Bool = false) -> ConfigDirective {
        ConfigDirective(name: name, aliases: aliases, live: live, apply: { config, args, name in
            config.evictionPolicy = try policyArgument(oneArgument(args, name))
        }, render: { $0.evictionPolicy.rawValue })
    }
}

extension ConfigDirective {
    /// A Redis setting accepted with no effect here (`acceptedSettings`):
    /// `check` parses the one argument as Redis would and gives its
    /// rendering.
    static func accepted(_ name: String, aliases: [String] = [], default value: String, live: Bool = true, words: Bool = false,
                         _ check: @escaping @Sendable (_ args: [String], _ name: String) throws -> String) -> ConfigDirective {
        ConfigDirective(name: name, aliases: aliases, live: live, words: words, apply: { config, args, given in
            config.acceptedSettings[name] = try check(args, given)
        }, render: { $0.acceptedSettings[name] ?? value })
    }

    /// The directive, hidden from CONFIG GET's patterns (Redis's HIDDEN_CONFIG).
    var hiddenFromPatterns: ConfigDirective {
        var directive = self
        directive.hidden = true
        return directive
    }

    static func acceptedInteger(_ name: String, aliases: [String] = [], default value: Int,
                                _ range: ClosedRange<Int>, live: Bool = true) -> ConfigDirective {
        accepted(name, aliases: aliases, default: String(value), live: live) { args, given in
            String(try integerArgument(args, given, range: range))
        }
    }

    static func acceptedYesNo(_ name: String, aliases: [String] = [], default value: Bool, live: Bool = true) -> ConfigDirective {
        accepted(name, aliases: aliases, default: value ? "yes" : "no", live: live) { args, given in
            switch try oneArgument(args, given).lowercased() {
            case "yes": return "yes"
            case "no": return "no"
            default: throw ConfigError("argument must be 'yes' or 'no'")
            }
        }
    }

    static func acceptedSize(_ name: String, default value: Int, live: Bool = true) -> ConfigDirective {
        accepted(name, default: String(value), live: live) { args, given in String(try sizeArgument(args, given)) }
    }

    /// Free text (a path, a host, a password).
    static func acceptedText(_ name: String, aliases: [String] = [], default value: String, live: Bool = true) -> ConfigDirective {
        accepted(name, aliases: aliases, default: value, live: live) { args, given in try oneArgument(args, given) }
    }

    /// One of `options` (any case), or with `flags` one or more of them
    /// (Redis's MULTI_ARG enum: `shutdown-on-sigterm nosave now`).
    static func acceptedChoice(_ name: String, aliases: [String] = [], default value: String, _ options: [String],
                               flags: Bool, live: Bool = true) -> ConfigDirective {
        accepted(name, aliases: aliases, default: value, live: live, words: flags) { args, given in
            // One argument of several words is split, as Redis's MULTI_ARG configs ("now force").
            let words = flags ? (args.count == 1 ? args[0].split(separator: " ").map(String.init) : args)
                              : [try oneArgument(args, given)]
            guard !words.isEmpty, words.allSatisfy({ options.contains($0.lowercased()) }) else {
                throw ConfigError("argument(s) must be one of the following: \(options.joined(separator: ", "))")
            }
            return words.map { $0.lowercased() }.joined(separator: " ")
        }
    }

    /// A file mode in octal (`unixsocketperm 700`), rendered as given.
    static func acceptedOctal(_ name: String, default value: Int, live: Bool = true) -> ConfigDirective {
        accepted(name, default: String(value, radix: 8), live: live) { args, given in
            let text = try oneArgument(args, given)
            guard let mode = Int(text, radix: 8), (0...0o777).contains(mode) else {
                throw ConfigError("argument must be between 0 and 777 (octal) inclusive")
            }
            return String(mode, radix: 8)
        }
    }
}

// MARK: Argument parsing shared by the directives

/// The one argument of a directive.
/// - Throws: Redis's `wrong number of arguments`.
func oneArgument(_ args: [String], _ name: String) throws -> String {
    guard args.count == 1 else { throw ConfigError("wrong number of arguments") }
    return args[0]
}

/// The one argument as an integer within `range`.
func integerArgument(_ args: [String], _ name: String, range: ClosedRange<Int>) throws -> Int {
    let text = try oneArgument(args, name)
    guard let value = Int(text) else { throw ConfigError("argument couldn't be parsed into an integer") }
    guard range.contains(value) else {
        throw ConfigError("argument must be between \(range.lowerBound) and \(range.upperBound) inclusive")
    }
    return value
}

/// The one argument as a size in Redis's units.
func sizeArgument(_ args: [String], _ name: String) throws -> Int {
    let text = try oneArgument(args, name)
    guard let value = parseMemorySize(text) else {
        throw ConfigError("argument must be a memory value")
    }
    return value
}

/// An eviction policy by this server's or Redis's name.
func policyArgument(_ text: String) throws -> EvictionPolicy {
    guard let policy = EvictionPolicy(name: text) else {
        throw ConfigError("unknown eviction policy '\(text)' (use fifo, lru, volatile-ttl or noeviction)")
    }
    return policy
}
