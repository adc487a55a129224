import RESP

/// CLUSTER, READONLY, READWRITE and ASKING as Redis answers them with
/// `cluster-enabled no`: this server is never a Redis Cluster node (several
/// nodes run behind a proxy, docs/cluster.md), and a client probing for
/// cluster mode gets Redis's own answer.
let clusterCommands: [Command] = [
    Command(name: "cluster", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0,
            group: "cluster", summary: "A container for Redis Cluster commands.", handler: cluster,
            subcommands: clusterSubcommands),
    Command(name: "readonly", arity: 1, flags: ["fast", "loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "cluster", summary: "Enables read queries for a connection to a Redis Cluster replica node.",
            handler: clusterDisabled),
    Command(name: "readwrite", arity: 1, flags: ["fast", "loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "cluster", summary: "Enables read-write queries for a connection to a Redis Cluster replica node.",
            handler: clusterDisabled),
    Command(name: "asking", arity: 1, flags: ["fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "cluster", summary: "Signals that a cluster client is following an -ASK redirect.",
            handler: clusterDisabled),
]

/// Redis 7.0's CLUSTER subcommands.
private let clusterSubcommands = [
    "addslots", "addslotsrange", "bumpepoch", "count-failure-reports", "countkeysinslot", "delslots", "delslotsrange",
    "failover", "flushslots", "forget", "getkeysinslot", "help", "info", "keyslot", "links", "meet", "myid", "nodes",
    "replicas", "replicate", "reset", "saveconfig", "set-config-epoch", "setslot", "shards", "slaves", "slots",
]

private func cluster(_ ctx: CommandContext) throws {
    guard clusterSubcommands.contains(ctx.option(1)) else {
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "cluster")
    }
    try clusterDisabled(ctx)
}

private func clusterDisabled(_ ctx: CommandContext) throws {
    throw ReplyError("ERR This instance has cluster support disabled")
}
