#if canImport(Glibc)
import Glibc
#endif

/// Redis's latency monitor (`latency.c`): for each event that took at
/// least `latency-monitor-threshold` milliseconds, the worst latency of
/// each second, in a ring of the last 160 such seconds, and the worst of
/// all time. LATENCY LATEST, HISTORY, GRAPH, DOCTOR and RESET read it.
///
/// Events of this server (docs/monitoring.md tells what each means):
/// Redis's `command`, `fast-command`, `expire-cycle`, `eviction-cycle`,
/// `aof-write` and `aof-fsync-always`, and its own `aof-fsync-background`,
/// `sqlite-commit`, `sqlite-checkpoint`, `memtable-wait`, `memtable-seal`,
/// `memtable-take-back`, `cache-open` and `heap-trim`.
///
/// Loop thread only: the threads that time work of their own (the log's
/// fsync, the writer) hand their durations to the loop, which adds them.
final class LatencyMonitor {
    /// One second's worst latency: the time (Unix seconds) and milliseconds.
    struct Sample: Equatable {
        var time: Int
        var latency: Int
    }

    /// One event's samples (Redis's `latencyTimeSeries`): a ring, `index`
    /// the next slot to write; an unused slot has time 0.
    final class Series {
        var samples = [Sample](repeating: Sample(time: 0, latency: 0), count: LatencyMonitor.seriesLength)
        var index = 0
        var max = 0

        /// The samples oldest first.
        var ordered: [Sample] {
            (0..<LatencyMonitor.seriesLength).map { samples[(index + $0) % LatencyMonitor.seriesLength] }
                .filter { $0.time != 0 }
        }

        /// The newest sample.
        var last: Sample { samples[(index + LatencyMonitor.seriesLength - 1) % LatencyMonitor.seriesLength] }
    }

    /// Redis's `LATENCY_TS_LEN`.
    static let seriesLength = 160

    /// `latency-monitor-threshold` in milliseconds; 0 turns the monitor off.
    var threshold = 0
    /// The events seen, in the order they were first seen.
    private(set) var events: [(name: String, series: Series)] = []
    private var byName: [String: Series] = [:]

    /// Whether events are being recorded (a threshold is set): callers
    /// skip timing work when not.
    var enabled: Bool { threshold > 0 }

    /// Adds a sample when the monitor is on and `milliseconds` reaches the
    /// threshold (Redis's `latencyAddSampleIfNeeded`).
    @inline(__always)
    func addIfNeeded(_ event: String, milliseconds: Int, at time: Int? = nil) {
        guard threshold > 0 && milliseconds >= threshold else { return }
        add(event, milliseconds: milliseconds, at: time ?? Self.now())
    }

    /// Adds a sample (Redis's `latencyAddSample`): a second keeps its worst.
    func add(_ event: String, milliseconds: Int, at time: Int) {
        let series: Series
        if let known = byName[event] {
            series = known
        } else {
            series = Series()
            byName[event] = series
            events.append((event, series))
        }
        series.max = max(series.max, milliseconds)
        let previous = series.last
        if previous.time == time {
            if milliseconds > previous.latency {
                series.samples[(series.index + Self.seriesLength - 1) % Self.seriesLength].latency = milliseconds
            }
            return
        }
        series.samples[series.index] = Sample(time: time, latency: milliseconds)
        series.index = (series.index + 1) % Self.seriesLength
    }

    /// The samples of an event (its name as recorded, case included), if any.
    func series(_ event: String) -> Series? { byName[event] }

    /// Forgets one event (any case) or, with nil, every event.
    /// - Returns: how many events were forgotten.
    func reset(_ event: String? = nil) -> Int {
        let lowered = event?.lowercased()
        let gone = events.filter { lowered == nil || $0.name.lowercased() == lowered }
        for (name, _) in gone { byName[name] = nil }
        events.removeAll { lowered == nil || $0.name.lowercased() == lowered }
        return gone.count
    }

    /// Unix time in seconds, as Redis's `time(NULL)`.
    static func now() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int(now.tv_sec)
    }
}
