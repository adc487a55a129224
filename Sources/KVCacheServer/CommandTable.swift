import RESP

@inline(__always)
func asciiLower(_ byte: UInt8) -> UInt8 {
    byte >= 65 && byte <= 90 ? byte + 32 : byte
}

/// What INFO commandstats and latencystats report for one command (or
/// one subcommand of a container command).
final class CommandStats: @unchecked Sendable {
    var calls = 0
    var microseconds = 0
    var rejected = 0
    var failed = 0
    /// Every call's duration, while `latency-tracking` is on.
    var histogram = LatencyHistogram()

    var isEmpty: Bool { calls == 0 && rejected == 0 && failed == 0 }

    func reset() {
        calls = 0
        microseconds = 0
        rejected = 0
        failed = 0
        histogram.reset()
    }
}

/// One command's description, as `COMMAND INFO` reports it, and its handler.
/// A class: every request looks one up, and a reference costs one retain
/// where a copy of the description cost one per field.
final class Command: Sendable {
    typealias Handler = @Sendable (CommandContext) throws -> Void

    let name: String
    /// Redis's arity: n means exactly n arguments (name included); -n at least n.
    let arity: Int
    let flags: [String]
    let firstKey: Int
    let lastKey: Int
    let step: Int
    let group: String
    let summary: String
    let handler: Handler
    let subcommands: [String]
    /// Counters, shared by every name the command answers to.
    let stats = CommandStats()
    /// Counters of each subcommand (and HELP) of one of Redis's container
    /// commands, by lowercase name: INFO shows `cmdstat_config|get`, as
    /// Redis 7 counts them. Empty for other commands.
    let subcommandStats: [String: CommandStats]
    /// Redis's `fast` flag: a slow run is LATENCY's `fast-command` event, not `command`.
    let isFast: Bool
    /// Redis's `write` flag.
    let isWrite: Bool
    /// The subcommands with Redis's `write` flag, by lowercase name
    /// (FUNCTION LOAD, XGROUP CREATE: the containers have none).
    let writeSubcommands: Set<String>
    /// Redis's `denyoom` flag: refused out of memory, waits while the memtables are full.
    let deniesOOM: Bool
    /// EXEC, which the request path asks about for every command (a flag
    /// instead of comparing names three times per request).
    let isExec: Bool
    /// Redis's `skip_slowlog` (EXEC: the commands it ran are logged instead).
    let skipsSlowlog: Bool
    /// MULTI, EXEC, DISCARD, WATCH, UNWATCH, QUIT and RESET run at once inside a transaction.
    let isTransactionControl: Bool
    /// DBSIZE and INFO: they count keys, so they wait while a replay's totals are inexact.
    let countsKeys: Bool
    /// Whether the command may change more than the selected cache (MOVE,
    /// COPY … DB, SWAPDB, FLUSHALL, EXEC and scripts, which may SELECT):
    /// under `appendonly no` only such a command is recorded, so a crash
    /// never half-applies it (see `Persistence.beginCommand`).
    let maySpanCaches: Bool
    static let spanningCommands: Set<String> = ["move", "copy", "swapdb", "flushall", "exec", "eval", "evalsha", "eval_ro",
                                                "evalsha_ro", "fcall", "fcall_ro", "restore", "migrate", "debug"]
    /// What ACL checks know of it: its id, categories, key positions, subcommands.
    let aclEntry: ACLCommandEntry
    /// GET and SET, whose keys a pipeline looks up ahead
    /// (`Server.prefetchKeys`): GET and a plain SET hand the engine their
    /// key where it arrived, so the digest computed ahead is the one used
    /// (a SET with NX, XX, GET or KEEPTTL, or any SET while a client
    /// watches, blocks, tracks or hears keyspace events, copies its key
    /// and digests it again: the look-ahead still fetched its slot).
    let prefetchesKey: Bool
    static let prefetchingCommands: Set<String> = ["get", "set"]

    /// Redis 7.0's container commands: their first argument names a
    /// subcommand with counters of its own. (This server's DEBUG lists
    /// subcommands for COMMAND INFO, but Redis counts DEBUG as one.)
    static let containers: Set<String> = ["acl", "client", "cluster", "command", "config", "function", "latency",
                                          "memory", "module", "object", "pubsub", "script", "slowlog", "xgroup", "xinfo"]

    /// Redis 7.0's subcommands with the `write` flag (its COMMAND INFO).
    static let redisWriteSubcommands: [String: Set<String>] = [
        "function": ["load", "delete", "flush", "restore"],
        "xgroup": ["create", "createconsumer", "delconsumer", "destroy", "setid"],
    ]

    init(name: String, arity: Int, flags: [String], firstKey: Int, lastKey: Int, step: Int, group: String,
         summary: String, handler: @escaping Handler, subcommands: [String] = []) {
        self.name = name
        self.arity = arity
        self.flags = flags
        self.firstKey = firstKey
        self.lastKey = lastKey
        self.step = step
        self.group = group
        self.summary = summary
        self.handler = handler
        self.subcommands = subcommands
        let counted = Self.containers.contains(name) ? Set(subcommands + ["help"]) : []
        self.subcommandStats = Dictionary(uniqueKeysWithValues: counted.map { ($0, CommandStats()) })
        // Flags every request asks about, looked up once (a search of the
        // flag strings per request was measurable under SET -P 16).
        self.isFast = flags.contains("fast")
        self.isWrite = flags.contains("write")
        self.prefetchesKey = Self.prefetchingCommands.contains(name)
        self.writeSubcommands = Self.redisWriteSubcommands[name] ?? []
        self.deniesOOM = flags.contains("denyoom")
        self.isExec = name == "exec"
        self.skipsSlowlog = flags.contains("skip_slowlog")
        self.isTransactionControl = ["multi", "exec", "discard", "watch", "unwatch", "quit", "reset"].contains(name)
        self.countsKeys = name == "dbsize" || name == "info"
        self.maySpanCaches = Self.spanningCommands.contains(name)
        self.aclEntry = ACLCommandCatalog.entry(for: name, flags: flags, fallbackCategories: Self.derivedCategories(flags: flags, group: group),
                                                firstKey: firstKey, lastKey: lastKey, step: step, subcommands: subcommands)
    }

    /// The same command with counters of its own: each server counts its
    /// own calls (the test suite runs several servers in one process).
    func withOwnCounters() -> Command {
        Command(name: name, arity: arity, flags: flags, firstKey: firstKey, lastKey: lastKey, step: step,
                group: group, summary: summary, handler: handler, subcommands: subcommands)
    }

    /// The counters a call with these arguments counts against: its
    /// subcommand's, or the command's own.
    func stats(for args: Arguments) -> CommandStats {
        guard !subcommandStats.isEmpty, args.count >= 2 else { return stats }
        return subcommandStats[args[1].lowercasedText] ?? stats
    }

    /// Every set of counters with the name INFO shows it by (`get`,
    /// `config|get`), the command's own first, subcommands by name.
    var allStats: [(name: String, stats: CommandStats)] {
        [(name, stats)] + subcommandStats.keys.sorted().map { ("\(name)|\($0)", subcommandStats[$0]!) }
    }

    func accepts(argumentCount: Int) -> Bool {
        arity >= 0 ? argumentCount == arity : argumentCount >= -arity
    }


    /// ACL categories derived from flags and group, as Redis lists them.
    var categories: [String] { Self.derivedCategories(flags: flags, group: group) }

    /// The categories of a command Redis lacks, from its flags and group.
    static func derivedCategories(flags: [String], group: String) -> [String] {
        var result: [String] = []
        if flags.contains("write") { result.append("@write") }
        if flags.contains("readonly") { result.append("@read") }
        let byGroup = ["string": "@string", "generic": "@keyspace", "list": "@list", "set": "@set", "hash": "@hash",
                       "sorted-set": "@sortedset"]
        if let category = byGroup[group] { result.append(category) }
        result.append(flags.contains("fast") ? "@fast" : "@slow")
        if flags.contains("admin") { result.append(contentsOf: ["@admin", "@dangerous"]) }
        if group == "connection" { result.append("@connection") }
        return result
    }

    /// The `COMMAND INFO` entry: name, arity, flags, first/last key, step,
    /// ACL categories, tips, key specs, subcommands.
    func info() -> RESPValue {
        // Redis's own entry (RedisCommandSpecs.swift, from redis-server 7.0.15) for its commands.
        if let redis = RedisCommandSpecs.parsedInfo[name] { return redis }
        return .array([
            .bulk(Array(name.utf8)),
            .integer(Int64(arity)),
            .set(flags.map { .simpleString($0) }),
            .integer(Int64(firstKey)), .integer(Int64(lastKey)), .integer(Int64(step)),
            .set(categories.map { .simpleString($0) }),
            .array([]), .array([]),
            .array(subcommands.map { .bulk(Array("\(name)|\($0)".utf8)) }),
        ])
    }

    /// The `COMMAND INFO` entry of subcommand `fullName` (`config|get`),
    /// taken from this command's own entry; nil when it has no such one.
    func subcommandInfo(_ fullName: String) -> RESPValue? {
        guard case .array(let fields?) = info(), fields.count >= 10, case .array(let subs?) = fields[9] else { return nil }
        let wanted = RESPValue.bulk(Array(fullName.utf8))
        for sub in subs {
            if case .array(let entry?) = sub, entry.first == wanted, entry.count > 1 { return sub }
        }
        // An entry of this server's own (no Redis spec) lists names only.
        guard subs.contains(wanted) else { return nil }
        return .array([wanted, .integer(-2), .set([]), .integer(0), .integer(0), .integer(0),
                       .set(categories.map { .simpleString($0) }), .array([]), .array([]), .array([])])
    }

    /// The `COMMAND DOCS` entry of subcommand `fullName`, from this command's.
    func subcommandDocs(_ fullName: String) -> RESPValue? {
        guard case .map(let fields) = docs() else { return nil }
        for (key, value) in fields where key == .bulk(Array("subcommands".utf8)) {
            guard case .map(let subs) = value else { return nil }
            return subs.first { $0.0 == .bulk(Array(fullName.utf8)) }?.1
        }
        return nil
    }

    /// The `COMMAND DOCS` entry (the value half of the name → docs pair).
    func docs() -> RESPValue {
        if let redis = RedisCommandSpecs.parsedDocs[name] { return redis }
        return .map([
            (.bulk(Array("summary".utf8)), .bulk(Array(summary.utf8))),
            (.bulk(Array("since".utf8)), .bulk(Array("1.0.0".utf8))),
            (.bulk(Array("group".utf8)), .bulk(Array(group.utf8))),
        ])
    }
}

/// A command name up to 32 bytes, folded to lowercase and packed into four
/// words: finding a command then hashes four words, not each byte of an
/// array, and needs no lowercase copy of what the client sent.
struct PackedCommandName: Hashable, Sendable {
    static let capacity = 32
    private let w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64
    private let length: Int

    /// The packed name of bytes viewed in place (a request's first
    /// argument): one pass over them, no generic iteration.
    init?(bytes name: UnsafeRawBufferPointer) {
        guard name.count <= Self.capacity else { return nil }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { raw in
            for i in 0..<name.count { raw[i] = asciiLower(name[i]) }
        }
        // The bytes in memory order: little-endian words.
        (w0, w1, w2, w3) = (UInt64(littleEndian: words.0), UInt64(littleEndian: words.1),
                            UInt64(littleEndian: words.2), UInt64(littleEndian: words.3))
        length = name.count
    }

    init?(_ name: some Collection<UInt8>) {
        guard name.count <= Self.capacity else { return nil }
        var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let packed = withUnsafeMutableBytes(of: &buffer) { raw in
            for (i, byte) in name.enumerated() { raw[i] = byte }
            return PackedCommandName(bytes: UnsafeRawBufferPointer(rebasing: raw[..<name.count]))
        }
        guard let packed else { return nil }
        self = packed
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(_rawHashValue(seed: 0))
    }

    /// A multiply-mix of the words instead of SipHash: the table's names are
    /// the server's own (a client only looks names up, never adds one), so
    /// there is no flooding to resist, and SipHash was 2% of a GET.
    func _rawHashValue(seed: Int) -> Int {
        func mix(_ h: UInt64, _ word: UInt64) -> UInt64 {
            let m = (h ^ word) &* 0x9E37_79B9_7F4A_7C15
            return m ^ (m >> 29)
        }
        var h = mix(UInt64(UInt(bitPattern: seed)) ^ UInt64(length), w0)
        if length > 8 { h = mix(mix(mix(h, w1), w2), w3) }
        return Int(Int64(bitPattern: h))
    }
}

/// Commands by lowercase name.
struct CommandTable: Sendable {
    private(set) var byName: [[UInt8]: Command] = [:] {
        didSet { reindex() }
    }
    /// The same commands by packed name (any case); names longer than a
    /// packed name holds (only a rename-command can make one) by lowercase bytes.
    private var byPackedName: [PackedCommandName: Command] = [:]
    private var byLongName: [[UInt8]: Command] = [:]

    init(_ commands: [Command]) {
        for command in commands { byName[Array(command.name.utf8)] = command }
        reindex()
    }

    private mutating func reindex() {
        byPackedName = [:]
        byLongName = [:]
        for (name, command) in byName {
            if let packed = PackedCommandName(name) {
                byPackedName[packed] = command
            } else {
                byLongName[name.map(asciiLower)] = command
            }
        }
    }

    /// The command named by `argument` in any case (a request's name, in
    /// place): `lookup(_:)` without the generic packing.
    func lookup(_ argument: Argument) -> Command? {
        guard let packed = argument.withUnsafeBytes({ PackedCommandName(bytes: $0) }) else {
            return byLongName[argument.map(asciiLower)]
        }
        return lookup(packed: packed)
    }

    /// The command of a name already packed.
    func lookup(packed: PackedCommandName) -> Command? { byPackedName[packed] }

    /// The command named by `name` in any case.
    func lookup(_ name: some Collection<UInt8>) -> Command? {
        if let packed = PackedCommandName(name) { return byPackedName[packed] }
        return byLongName[name.map(asciiLower)]
    }

    var all: [Command] { byName.values.sorted { $0.name < $1.name } }


    /// Redis's text for an unknown command: the name and up to 128 bytes of arguments, quoted.
    static func unknownCommandError(_ args: Arguments) -> ReplyError {
        var shown = "", shownBytes = 0
        for arg in args.dropFirst() {
            if shownBytes >= 128 { break }
            let part = arg.prefix(128 - shownBytes)
            shown += "'\(String(keepingBytes: part))' "
            shownBytes += part.count + 3
        }
        let name = String(keepingBytes: args[0].prefix(128))
        return ReplyError("ERR unknown command '\(name)', with args beginning with: \(shown)")
    }

    static let standard = CommandTable(stringCommands + expiryCommands + keyspaceCommands + entryCommands
        + connectionCommands + authCommands + serverCommands + debugCommands + transactionCommands
        + observabilityCommands + bitCommands + listCommands + blockingCommands + setCommands + setAlgebraCommands + hashCommands + sortedSetCommands
        + sortedSetAlgebraCommands + collectionScanCommands + sortCommands
        + dumpCommands + persistenceCommands + latencyCommands + memoryCommands + hyperLogLogCommands
        + scriptingCommands + geoCommands + pubsubCommands + aclCommands + replicationCommands + clusterCommands + lolwutCommands + migrateCommands
        + streamCommands + streamReadCommands + streamGroupCommands + streamInfoCommands)

    /// The same commands with counters of their own, for one server.
    func withOwnCounters() -> CommandTable {
        CommandTable(byName.values.map { $0.withOwnCounters() })
    }

    /// The table with `rename-command` applied: each command listed answers
    /// to its new name only, or to none when the new name is empty.
    /// - Throws: `ConfigError` for a command that does not exist.
    func renamed(_ renames: [String: String]) throws -> CommandTable {
        var table = self
        for (old, new) in renames {
            guard let command = table.byName.removeValue(forKey: Array(old.utf8)) else {
                throw ConfigError("rename-command: no such command '\(old)'")
            }
            if !new.isEmpty { table.byName[Array(new.utf8)] = command }
        }
        return table
    }
}
