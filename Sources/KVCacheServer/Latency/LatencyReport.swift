import Foundation

/// LATENCY DOCTOR's report and LATENCY GRAPH's sparkline, in Redis 7.0's
/// words and layout (`latency.c`, `sparkline.c`). Redis's advice is kept
/// where its event means the same here; this server's own events get
/// advice of their own, in the same voice.
extension LatencyMonitor {
    /// Figures of one event's samples (Redis's `analyzeLatencyForEvent`):
    /// averages and deviation in ms, `period` the seconds since the oldest.
    struct Analysis {
        var samples = 0
        var average = 0
        var meanDeviation = 0
        var period = 0
    }

    func analyze(_ series: Series, now: Int = LatencyMonitor.now()) -> Analysis {
        let samples = series.ordered
        guard !samples.isEmpty else { return Analysis() }
        var result = Analysis()
        result.samples = samples.count
        result.average = samples.reduce(0) { $0 + $1.latency } / samples.count
        result.period = max(1, now - samples.map(\.time).min()!)
        result.meanDeviation = samples.reduce(0) { $0 + abs(result.average - $1.latency) } / samples.count
        return result
    }

    /// The things DOCTOR may advise, in the order Redis prints them.
    enum Advice: CaseIterable {
        case slowlogEnabled, slowlogTuning, slowlogInspect, scheduler, localDisk, ssd, diskContention,
             relaxFsyncPolicy, largeObjects, massEviction, vacuum, memtable, disableTHP
    }

    /// LATENCY DOCTOR's text for `config` (the slow log's and fsync's settings shape the advice).
    func report(config: ServerConfig, anonHugePages: Int = anonymousHugePagesBytes()) -> String {
        if events.isEmpty && threshold == 0 {
            return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. "
                + "You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. "
                + "If we weren't in a deep space mission I'd suggest to take a look at "
                + "https://redis.io/topics/latency-monitor.\n"
        }
        var report = ""
        var advice = Set<Advice>()
        var adviceCount = 0
        func advise(_ items: Advice...) {
            advice.formUnion(items)
            adviceCount += items.count
        }
        for (number, (name, series)) in events.enumerated() {
            if number == 0 {
                report += "Dave, I have observed latency spikes in this Redis instance. "
                    + "You don't mind talking about it, do you Dave?\n\n"
            }
            let a = analyze(series)
            report += "\(number + 1). \(name): \(a.samples) latency spikes (average \(a.average)ms, "
                + "mean deviation \(a.meanDeviation)ms, period \(String(format: "%.2f", Double(a.period) / Double(max(1, a.samples)))) sec). "
                + "Worst all time event \(series.max)ms."
            switch name.lowercased() {
            case "command":
                if config.slowlogSlowerThan < 0 {
                    advise(.slowlogEnabled)
                } else if config.slowlogSlowerThan / 1000 > threshold {
                    advise(.slowlogTuning)
                }
                advise(.slowlogInspect, .largeObjects)
            case "fast-command":
                advise(.scheduler)
            case "aof-write", "aof-fsync-background", "sqlite-commit", "sqlite-checkpoint":
                advise(.localDisk, .ssd, .diskContention)
            case "aof-fsync-always":
                advise(.relaxFsyncPolicy)
            case "expire-cycle":
                advise(.largeObjects)
            case "eviction-cycle":
                advise(.massEviction)
            case "cache-open":
                advise(.vacuum)
            case "memtable-wait":
                advise(.memtable, .ssd)
            default:
                break
            }
            report += "\n"
        }
        if anonHugePages > 0 { advise(.disableTHP) }

        if events.isEmpty && adviceCount == 0 {
            report += "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the "
                + "slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"
            return report
        }
        if !events.isEmpty && adviceCount == 0 {
            report += "\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the "
                + "Redis community to get some help, providing this report in your help request.\n"
            return report
        }
        report += "\nI have a few advices for you:\n\n"
        let threshold = self.threshold
        for item in Advice.allCases where advice.contains(item) {
            switch item {
            case .slowlogEnabled:
                report += "- There are latency issues with potentially slow commands you are using. Try to enable the "
                    + "Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than \(threshold * 1000)'. "
                    + "If the Slow log is disabled Redis is not able to log slow commands execution for you.\n"
            case .slowlogTuning:
                report += "- Your current Slow Log configuration only logs events that are slower than your configured "
                    + "latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than \(threshold * 1000)'.\n"
            case .slowlogInspect:
                report += "- Check your Slow Log to understand what are the commands you are running which are too slow "
                    + "to execute. Please check https://redis.io/commands/slowlog for more information.\n"
            case .scheduler:
                report += "- The system is slow to execute Redis code paths not containing system calls. This usually "
                    + "means the system does not provide Redis CPU time to run for long periods. You should try to:\n"
                    + "  1) Lower the system load.\n"
                    + "  2) Use a computer / VM just for Redis if you are running other software in the same system.\n"
                    + "  3) Check if you have a \"noisy neighbour\" problem.\n"
                    + "  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n"
            case .localDisk:
                report += "- It is strongly advised to use local disks for persistence, especially if you are using "
                    + "AOF. Remote disks provided by platform-as-a-service providers are known to be slow.\n"
            case .ssd:
                report += "- SSD disks are able to reduce fsync latency, and total time needed for snapshotting and AOF "
                    + "log rewriting (resulting in smaller memory usage). With extremely high write load SSD disks can "
                    + "be a good option. However Redis should perform reasonably with high load using normal disks. "
                    + "Use this advice as a last resort.\n"
            case .diskContention:
                report += "- Try to lower the disk contention. This is often caused by other disk intensive processes "
                    + "running in the same computer (including other Redis instances).\n"
            case .relaxFsyncPolicy:
                if config.appendFsync == .always {
                    report += "- Your fsync policy is set to 'always'. It is very hard to get good performances with "
                        + "such a setup, if possible try to relax the fsync policy to 'onesec'.\n"
                }
            case .largeObjects:
                report += "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking "
                    + "operation. If you have very large objects that are often deleted, expired, or evicted, try to "
                    + "fragment those objects into multiple smaller objects.\n"
            case .massEviction:
                report += "- Sudden cuts of a cache's capacity via 'CONFIG SET' (cache, default-capacity) make the "
                    + "server evict many keys, in bounded steps; a slow step usually means large objects or a slow "
                    + "disk under the cache's file.\n"
            case .vacuum:
                report += "- Opening a cache file took long: a file whose free pages are over a quarter of it is "
                    + "vacuumed when it opens, and a large one takes time. Every cache with a file is opened at "
                    + "start-up; a cache created or reopened later (SELECT, DEBUG RELOAD) opens while clients wait.\n"
            case .memtable:
                report += "- Writes waited for room (memtable-max-size was reached): the writer thread applies changes "
                    + "to SQLite slower than they arrive. Lower the write load, give the disk under the cache files "
                    + "more throughput, or raise memtable-max-size to absorb longer bursts.\n"
            case .disableTHP:
                report += "- I detected a non zero amount of anonymous huge pages used by your process. This creates "
                    + "very serious latency events in different conditions, especially when Redis is persisting on "
                    + "disk. To disable THP support use the command 'echo never > "
                    + "/sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so "
                    + "that the command will be executed again after a reboot. Note that even if you have already "
                    + "disabled THP, you still need to restart the Redis process to get rid of the huge pages already "
                    + "created.\n"
            }
        }
        return report
    }

    /// LATENCY GRAPH's text: a title line, a rule, and the samples as a
    /// sparkline 4 rows high (80 columns a band), each labelled with how
    /// long ago it was (`12s`, `3m`, `2h`, `1d`), as Redis draws it.
    func graph(_ name: String, _ series: Series, now: Int = LatencyMonitor.now()) -> String {
        let samples = series.ordered
        let values = samples.map { Double($0.latency) }
        let labels = samples.map { sample -> String in
            let elapsed = now - sample.time
            if elapsed < 60 { return "\(elapsed)s" }
            if elapsed < 3600 { return "\(elapsed / 60)m" }
            if elapsed < 86400 { return "\(elapsed / 3600)h" }
            return "\(elapsed / 86400)d"
        }
        let high = samples.map(\.latency).max() ?? 0
        let low = samples.map(\.latency).min() ?? 0
        var out = "\(name) - high \(high) ms, low \(low) ms (all time high \(series.max) ms)\n"
        out += String(repeating: "-", count: 80) + "\n"
        out += Sparkline.render(values: values, labels: labels, columns: 80, rows: 4)
        return out
    }
}

/// Redis's ASCII sparkline (`sparkline.c`, filled: `_o#` and `|`).
enum Sparkline {
    static let charset: [Character] = ["_", "o", "#"]

    static func render(values: [Double], labels: [String], columns: Int, rows: Int) -> String {
        var out = ""
        var start = 0
        while start < values.count {
            let length = min(columns, values.count - start)
            if start != 0 { out += "\n" }
            out += renderRange(values: values, labels: labels, rows: rows, offset: start, length: length)
            start += columns
        }
        return out
    }

    /// One band of at most `columns` samples: the sparkline rows, then the
    /// labels written downwards one character a row, after a blank row.
    private static func renderRange(values: [Double], labels: [String], rows: Int, offset: Int, length: Int) -> String {
        let minimum = values.min() ?? 0
        var relativeMax = (values.max() ?? 0) - minimum
        if relativeMax == 0 { relativeMax = 1 }
        let steps = charset.count * rows
        let hasLabels = labels.contains { !$0.isEmpty }
        let labelMarginTop = 1
        var out = ""
        var row = 0
        while true {
            var line = [Character](repeating: " ", count: length)
            var more = false
            for j in 0..<length {
                let value = values[offset + j] - minimum
                var step = Int(value * Double(steps) / relativeMax)
                step = max(0, min(steps - 1, step))
                if row < rows {
                    let index = step - (rows - row - 1) * charset.count
                    more = true
                    if index >= 0 && index < charset.count {
                        line[j] = charset[index]
                    } else if index >= charset.count {
                        line[j] = "|"
                    }
                } else {
                    if hasLabels && row - rows < labelMarginTop {
                        more = true
                        break
                    }
                    let label = Array(labels[offset + j])
                    let at = row - rows - labelMarginTop
                    if label.count > at {
                        more = true
                        line[j] = label[at]
                    }
                }
            }
            guard more else { break }
            row += 1
            out += String(line) + "\n"
        }
        return out
    }
}

/// The process's anonymous huge pages in bytes (`AnonHugePages` of
/// /proc/self/smaps_rollup), as Redis checks before advising to turn THP off.
func anonymousHugePagesBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/smaps_rollup", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("AnonHugePages:") {
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return kilobytes * 1024
    }
    return 0
}
