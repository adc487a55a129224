import Foundation

/// A percentile as Redis prints it (`%f` with its trailing zeros cut):
/// 50 → "50", 99.9 → "99.9".
func percentileText(_ value: Double) -> String {
    var text = String(format: "%f", value)
    if text.contains(".") {
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
    }
    return text
}

/// `latency-tracking-info-percentiles` as CONFIG GET answers it: "50 99 99.9".
func percentileList(_ values: [Double]) -> String {
    values.map(percentileText).joined(separator: " ")
}

extension Server {
    /// INFO latencystats, as Redis 7.0 prints it: for each command (and
    /// subcommand) run since the last CONFIG RESETSTAT,
    /// `latency_percentiles_usec_<name>:p50=…,p99=…,p99.9=…` (the
    /// configured percentiles, in µs with three decimals); nothing while
    /// `latency-tracking` is off.
    func latencyStatsLines() -> [String] {
        guard config.latencyTracking else { return [] }
        let percentiles = config.latencyTrackingPercentiles
        var lines: [String] = []
        for command in commands.all {
            for (name, stats) in command.allStats where !stats.histogram.isEmpty {
                let values = percentiles.map { p in
                    "p\(percentileText(p))=" + String(format: "%.3f", Double(stats.histogram.value(atPercentile: p)) / 1000)
                }
                lines.append("latency_percentiles_usec_\(name):" + values.joined(separator: ","))
            }
        }
        return lines
    }

    /// CONFIG RESETSTAT: the counters INFO reports start again from zero,
    /// as Redis's (the server's, every command's and subcommand's, with
    /// their latency histograms, and each cache's hits, misses, expired and
    /// evicted keys). The latency monitor's events stay (LATENCY RESET
    /// clears them).
    func resetStatistics() {
        stats = ServerStats()
        replication.fullSyncs = 0
        replication.partialSyncs = 0
        replication.refusedPartialSyncs = 0
        for command in commands.all {
            for (_, counters) in command.allStats { counters.reset() }
        }
        for cache in registry.open.values {
            cache.hits = 0
            cache.misses = 0
            // The engine's own counters run on; the cache's offsets cancel them.
            cache.earlierEvicted = -(cache.engine?.evictedCount ?? 0)
            cache.earlierExpired = -(cache.engine?.expiredCount ?? 0)
        }
    }
}
