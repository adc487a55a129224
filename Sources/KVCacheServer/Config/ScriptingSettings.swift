/// The settings of scripting, HyperLogLog and geo (issue 15's data-model
/// commands), kept together so the directive table grows by one line.
struct ScriptingSettings: Sendable {
    /// Largest sparse HyperLogLog, in bytes, before it turns dense (Redis's
    /// `hll-sparse-max-bytes`).
    var hllSparseMaxBytes = HyperLogLog.defaultSparseMaxBytes
}

extension ServerConfig {
    /// The directives of `ScriptingSettings`, appended to the table.
    static let scriptingDirectives: [ConfigDirective] = [
        .integer("hll-sparse-max-bytes", \.scripting.hllSparseMaxBytes, 0...Int(Int64.max), live: true),
    ]
}
