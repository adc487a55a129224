import RESP

/// Redis's script flags (`SCRIPT_FLAG_*`): from a `#!lua flags=…` shebang
/// or `redis.register_function{flags=…}`.
struct ScriptFlags: OptionSet, Sendable {
    let rawValue: UInt64
    static let noWrites = ScriptFlags(rawValue: 1 << 0)
    static let allowOOM = ScriptFlags(rawValue: 1 << 1)
    static let allowStale = ScriptFlags(rawValue: 1 << 2)
    static let noCluster = ScriptFlags(rawValue: 1 << 3)
    /// An EVAL script without a shebang: Redis 6's rules.
    static let evalCompat = ScriptFlags(rawValue: 1 << 4)
    static let allowCrossSlot = ScriptFlags(rawValue: 1 << 5)

    /// The flags by their names, in Redis's order (FUNCTION LIST shows them so).
    static let names: [(String, ScriptFlags)] = [
        ("no-writes", .noWrites), ("allow-oom", .allowOOM), ("allow-stale", .allowStale),
        ("no-cluster", .noCluster), ("allow-cross-slot-keys", .allowCrossSlot),
    ]
}

/// One running script or function (Redis's `scriptRunCtx`): who called it,
/// the client its commands run on, what it may do, and what it did.
final class ScriptRun {
    let caller: Connection
    /// The client the script's commands run on (not connected).
    let client: Connection
    /// The script's sha, or the function's name.
    let name: String
    /// EVAL (SCRIPT KILL stops it) rather than FCALL (FUNCTION KILL).
    let isEval: Bool
    /// The caller's request, as FUNCTION STATS shows it.
    let request: [[UInt8]]
    /// Write commands are refused (EVAL_RO, FCALL_RO, a no-writes script).
    let readOnly: Bool
    let allowOOM: Bool
    /// The script ran a write command: SCRIPT KILL can no longer stop it.
    var wroteData = false
    /// SCRIPT KILL or FUNCTION KILL asked it to stop.
    var killed = false
    /// It passed busy-reply-threshold: other clients get -BUSY meanwhile.
    var timedOut = false
    /// When it started (monotonic microseconds).
    let started: Int

    init(caller: Connection, client: Connection, name: String, isEval: Bool, request: [[UInt8]], readOnly: Bool,
         allowOOM: Bool) {
        self.caller = caller
        self.client = client
        self.name = name
        self.isEval = isEval
        self.request = request
        self.readOnly = readOnly
        self.allowOOM = allowOOM
        self.started = Server.monotonicMicroseconds()
    }

    /// Milliseconds since it started.
    var elapsedMilliseconds: Int { (Server.monotonicMicroseconds() - started) / 1000 }
}

extension ReplyError {
    static let noScript = ReplyError("NOSCRIPT No matching script. Please use EVAL.")
    static let busyEval = ReplyError("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
    static let busyFunction = ReplyError("BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
    static let notBusy = ReplyError("NOTBUSY No scripts in execution right now.")
    static let unkillable = ReplyError("UNKILLABLE Sorry the script already executed write commands against the dataset. "
        + "You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
}

/// Redis 7.0.15's flags of each command and subcommand (`config|set`), from
/// its COMMAND INFO (RedisCommandSpecs): what scripts may call, what a busy
/// script lets through.
enum RedisCommandFlags {
    static let byName: [String: Set<String>] = {
        var result: [String: Set<String>] = [:]
        func add(_ entry: RESPValue) {
            guard case .array(let items?) = entry, items.count >= 10, let name = items[0].string else { return }
            if case .set(let flags) = items[2] { result[name] = Set(flags.compactMap(\.string)) }
            if case .array(let subcommands?) = items[9] { subcommands.forEach(add) }
        }
        RedisCommandSpecs.parsedInfo.values.forEach(add)
        return result
    }()

    /// The flags of a request: its subcommand's when Redis has one, else the
    /// command's; this server's own flags for a command Redis lacks.
    static func flags(of command: Command?, name: some Collection<UInt8>, subcommand: (some Collection<UInt8>)?) -> Set<String> {
        let lower = String(decoding: name.map(asciiLower), as: UTF8.self)
        if let subcommand {
            let full = lower + "|" + String(decoding: subcommand.map(asciiLower), as: UTF8.self)
            if let flags = byName[full] { return flags }
        }
        if let flags = byName[lower] { return mayReplicate.contains(lower) ? flags.union(["may_replicate"]) : flags }
        return Set(command?.flags ?? [])
    }

    /// Redis's command table sets may_replicate on these (commands.c), which
    /// its COMMAND INFO leaves out: read-only scripts may not call them.
    static let mayReplicate: Set<String> = ["pfcount", "publish", "spublish", "eval", "evalsha", "fcall"]
}

