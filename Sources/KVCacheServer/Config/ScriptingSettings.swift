/// The settings of scripting, HyperLogLog and geo (issue 15's data-model
/// commands), kept together so the directive table grows by one line.
struct ScriptingSettings: Sendable {
    /// Largest sparse HyperLogLog, in bytes, before it turns dense (Redis's
    /// `hll-sparse-max-bytes`).
    var hllSparseMaxBytes = HyperLogLog.defaultSparseMaxBytes
    /// Milliseconds a script may run before other clients get -BUSY and
    /// SCRIPT KILL / FUNCTION KILL may stop it (Redis's
    /// `busy-reply-threshold`, formerly `lua-time-limit`); 0: never.
    var busyReplyThreshold = 5000
    /// Redis's `min-replicas-to-write`: a master with fewer good replicas
    /// (see `min-replicas-max-lag`) refuses writes (and writing scripts)
    /// with -NOREPLICAS.
    var minReplicasToWrite = 0
    /// Redis's `min-replicas-max-lag`: a replica is good when its last ACK
    /// is at most this many seconds old (0: every write goes on).
    var minReplicasMaxLag = 10
}

extension ServerConfig {
    /// The directives of `ScriptingSettings`, appended to the table.
    static let scriptingDirectives: [ConfigDirective] = [
        .integer("hll-sparse-max-bytes", \.scripting.hllSparseMaxBytes, 0...Int(Int64.max), live: true),
        ConfigDirective(name: "busy-reply-threshold", aliases: ["lua-time-limit"], live: true, apply: { config, args, name in
            config.scripting.busyReplyThreshold = try integerArgument(args, name, range: 0...Int(Int64.max))
        }, render: { "\($0.scripting.busyReplyThreshold)" }),
        ConfigDirective(name: "min-replicas-to-write", aliases: ["min-slaves-to-write"], live: true, apply: { config, args, name in
            config.scripting.minReplicasToWrite = try integerArgument(args, name, range: 0...Int(Int32.max))
        }, render: { "\($0.scripting.minReplicasToWrite)" }),
        ConfigDirective(name: "min-replicas-max-lag", aliases: ["min-slaves-max-lag"], live: true, apply: { config, args, name in
            config.scripting.minReplicasMaxLag = try integerArgument(args, name, range: 0...Int(Int32.max))
        }, render: { "\($0.scripting.minReplicasMaxLag)" }),
    ]
}

extension ReplyError {
    /// Redis's shared.noreplicaserr.
    static let noReplicas = ReplyError("NOREPLICAS Not enough good replicas to write.")
}
