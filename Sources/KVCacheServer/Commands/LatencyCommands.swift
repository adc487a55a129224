import RESP

/// LATENCY, as Redis 7.0 (`latency.c`): the latency monitor's events
/// (LATEST, HISTORY, GRAPH, DOCTOR, RESET) and the per-command histograms
/// (HISTOGRAM).
let latencyCommands: [Command] = [
    Command(name: "latency", arity: -2, flags: ["admin", "noscript", "loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "A container for latency diagnostics commands.", handler: latency,
            subcommands: ["doctor", "graph", "help", "histogram", "history", "latest", "reset"]),
]

/// Each subcommand's arity, as Redis's table has them.
private let arities: [String: Int] = ["doctor": 2, "graph": 3, "help": 2, "histogram": -2, "history": 3, "latest": 2,
                                      "reset": -2]

private func latency(_ ctx: CommandContext) throws {
    let sub = ctx.option(1)
    guard let arity = arities[sub] else { throw ReplyError.unknownSubcommand(ctx.args[1], of: ctx.text(0)) }
    guard arity >= 0 ? ctx.args.count == arity : ctx.args.count >= -arity else {
        throw ReplyError.wrongArity("latency|\(sub)")
    }
    let monitor = ctx.server.latency
    let c = ctx.connection
    switch sub {
    case "latest":
        c.replyArrayHeader(monitor.events.count)
        for (name, series) in monitor.events {
            c.replyArrayHeader(4)
            c.replyBulk(name)
            c.replyInteger(series.last.time)
            c.replyInteger(series.last.latency)
            c.replyInteger(series.max)
        }
    case "history":
        let samples = monitor.series(ctx.text(2))?.ordered ?? []
        c.replyArrayHeader(samples.count)
        for sample in samples {
            c.replyArrayHeader(2)
            c.replyInteger(sample.time)
            c.replyInteger(sample.latency)
        }
    case "graph":
        let name = ctx.text(2)
        guard let series = monitor.series(name) else {
            throw ReplyError("ERR No samples available for event '\(name)'")
        }
        c.replyVerbatim(monitor.graph(name, series))
    case "doctor":
        c.replyVerbatim(monitor.report(config: ctx.server.config))
    case "reset":
        if ctx.args.count == 2 {
            c.replyInteger(monitor.reset())
        } else {
            c.replyInteger((2..<ctx.args.count).reduce(0) { $0 + monitor.reset(ctx.text($1)) })
        }
    case "histogram":
        histogram(ctx)
    default:
        let lines = [
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ]
        c.replyHelp(ctx.text(0), lines)
    }
}

/// LATENCY HISTOGRAM [command ...]: for each command (or subcommand) with
/// calls since the last CONFIG RESETSTAT, a map of `calls` and
/// `histogram_usec` (bucket → calls up to it). A name may be a command
/// (with its subcommands) or `command|subcommand`; unknown names are skipped.
private func histogram(_ ctx: CommandContext) {
    let table = ctx.server.commands
    var chosen: [(name: String, stats: CommandStats)] = []
    if ctx.args.count == 2 {
        chosen = table.all.flatMap(\.allStats)
    } else {
        for i in 2..<ctx.args.count {
            let parts = ctx.args[i].lowercasedText.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
            guard let command = table.lookup(Array(parts[0].utf8)) else { continue }
            if parts.count == 2 {
                if let stats = command.subcommandStats[String(parts[1])] { chosen.append(("\(command.name)|\(parts[1])", stats)) }
            } else {
                chosen += command.allStats
            }
        }
    }
    chosen = chosen.filter { !$0.stats.histogram.isEmpty }
    let c = ctx.connection
    c.replyMapHeader(chosen.count)
    for (name, stats) in chosen {
        c.replyBulk(name)
        c.replyMapHeader(2)
        c.replyBulk("calls")
        c.replyInteger(Int(stats.histogram.totalCount))
        c.replyBulk("histogram_usec")
        let buckets = stats.histogram.cumulativeMicroseconds()
        c.replyMapHeader(buckets.count)
        for bucket in buckets {
            c.replyInteger(bucket.microseconds)
            c.replyInteger(bucket.count)
        }
    }
}
