import Foundation
import Testing
@testable import KVCacheServer

/// The latency module without a server: the histogram against values
/// Redis 7.0.15 prints for the same durations, the monitor's time series,
/// DOCTOR's and GRAPH's texts, and the directives.
@Suite("Latency")
struct LatencyTests {
    // MARK: The histogram (HdrHistogram at Redis's settings)

    @Test(arguments: [(1, 1.003), (17, 17.023), (47, 47.103), (270_532, 270_532.607), (1_000_000, 1_002_438.655)])
    func onePercentileIsTheBucketsHighestValue(microseconds: Int, expected: Double) {
        var h = LatencyHistogram()
        h.record(microseconds: microseconds)
        // INFO latencystats prints value / 1000 with three decimals.
        #expect(String(format: "%.3f", Double(h.value(atPercentile: 50)) / 1000) == String(format: "%.3f", expected))
    }

    @Test func percentileZeroIsTheLowestValueOfItsBucket() {
        var h = LatencyHistogram()
        h.record(microseconds: 47)
        #expect(h.value(atPercentile: 0) == 46_848)
        #expect(h.value(atPercentile: 100) == 47_103)
    }

    @Test func percentilesWalkTheCounts() {
        var h = LatencyHistogram()
        for _ in 0..<99 { h.record(microseconds: 1) }
        h.record(microseconds: 1000)
        #expect(h.value(atPercentile: 50) == 1003)
        #expect(h.value(atPercentile: 99) == 1003)
        #expect(h.value(atPercentile: 99.9) == 1_003_519)
        #expect(h.totalCount == 100)
    }

    @Test func valuesAreClampedToOneNanosecondAndOneSecond() {
        var h = LatencyHistogram()
        h.record(nanoseconds: 0)
        h.record(nanoseconds: 5_000_000_000)
        #expect(h.value(atPercentile: 0) == 1)
        #expect(h.value(atPercentile: 100) == LatencyHistogram.highestEquivalent(1_000_000_000))
    }

    @Test func cumulativeBucketsAsLatencyHistogramPrintsThem() {
        var h = LatencyHistogram()
        for us in [1, 3, 3, 100] { h.record(microseconds: us) }
        #expect(h.cumulativeMicroseconds().map { [$0.microseconds, $0.count] } == [[1, 1], [4, 3], [132, 4]])
        var sleeps = LatencyHistogram()
        sleeps.record(microseconds: 300_112)
        sleeps.record(microseconds: 400_245)
        // What Redis 7.0.15 answers after DEBUG SLEEP 0.3 and 0.4.
        #expect(sleeps.cumulativeMicroseconds().map { [$0.microseconds, $0.count] } == [[541_065, 2]])
        var beyond = LatencyHistogram()
        beyond.record(microseconds: 600_000)
        #expect(beyond.cumulativeMicroseconds().map { [$0.microseconds, $0.count] } == [[1_073_741, 1]])
        #expect(LatencyHistogram().cumulativeMicroseconds().isEmpty)
    }

    @Test func indexAndValueAgree() {
        for value: Int64 in [1, 2, 255, 256, 257, 1000, 1024, 17_000, 1 << 20, 999_999_999] {
            let index = LatencyHistogram.index(of: value)
            #expect(LatencyHistogram.value(at: index) == LatencyHistogram.lowestEquivalent(value))
            #expect(index < LatencyHistogram.countsLength)
        }
    }

    // MARK: The monitor

    @Test func nothingIsKeptWhileTheThresholdIsZero() {
        let m = LatencyMonitor()
        m.addIfNeeded("command", milliseconds: 5000)
        #expect(m.events.isEmpty)
        m.threshold = 100
        m.addIfNeeded("command", milliseconds: 99)
        #expect(m.events.isEmpty)
        m.addIfNeeded("command", milliseconds: 100)
        #expect(m.events.map(\.name) == ["command"])
    }

    @Test func aSecondKeepsItsWorstSample() {
        let m = LatencyMonitor()
        m.add("command", milliseconds: 120, at: 1000)
        m.add("command", milliseconds: 300, at: 1000)
        m.add("command", milliseconds: 200, at: 1000)
        m.add("command", milliseconds: 150, at: 1001)
        let series = m.series("command")!
        #expect(series.ordered == [.init(time: 1000, latency: 300), .init(time: 1001, latency: 150)])
        #expect(series.last == .init(time: 1001, latency: 150))
        #expect(series.max == 300)
    }

    @Test func theSeriesKeepsTheLast160Seconds() {
        let m = LatencyMonitor()
        for second in 1...200 { m.add("expire-cycle", milliseconds: second, at: second) }
        let samples = m.series("expire-cycle")!.ordered
        #expect(samples.count == 160)
        #expect(samples.first?.time == 41 && samples.last?.time == 200)
        #expect(m.series("expire-cycle")!.max == 200)
    }

    @Test func resetForgetsEventsByNameInAnyCase() {
        let m = LatencyMonitor()
        m.add("command", milliseconds: 1, at: 1)
        m.add("aof-write", milliseconds: 1, at: 1)
        m.add("cache-open", milliseconds: 1, at: 1)
        #expect(m.reset("COMMAND") == 1)
        #expect(m.reset("nope") == 0)
        #expect(m.events.map(\.name) == ["aof-write", "cache-open"])
        #expect(m.series("command") == nil)
        #expect(m.reset() == 2)
        #expect(m.events.isEmpty)
    }

    // MARK: DOCTOR and GRAPH

    @Test func doctorSaysWhenTheMonitorIsOff() {
        let m = LatencyMonitor()
        #expect(m.report(config: ServerConfig(), anonHugePages: 0).hasPrefix("I'm sorry, Dave, I can't do that."))
        m.threshold = 10
        #expect(m.report(config: ServerConfig(), anonHugePages: 0).hasPrefix(
            "Dave, no latency spike was observed during the lifetime of this Redis instance"))
    }

    @Test func doctorDescribesEachEventAndAdvises() {
        let m = LatencyMonitor()
        m.threshold = 100
        let now = LatencyMonitor.now()
        m.add("command", milliseconds: 200, at: now - 2)
        m.add("command", milliseconds: 300, at: now)
        m.add("memtable-wait", milliseconds: 1500, at: now)
        var config = ServerConfig()
        config.slowlogSlowerThan = -1
        let report = m.report(config: config, anonHugePages: 0)
        var expected: String = "Dave, I have observed latency spikes in this Redis instance. "
        expected += "You don't mind talking about it, do you Dave?\n\n"
        expected += "1. command: 2 latency spikes (average 250ms, mean deviation 50ms, period 1.00 sec). "
        expected += "Worst all time event 300ms.\n"
        expected += "2. memtable-wait: 1 latency spikes (average 1500ms, mean deviation 0ms, period 1.00 sec). "
        expected += "Worst all time event 1500ms.\n\nI have a few advices for you:\n\n"
        expected += "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log "
        expected += "Redis feature using the command 'CONFIG SET slowlog-log-slower-than 100000'."
        #expect(report.hasPrefix(expected))
        #expect(report.contains("- Writes waited for room (memtable-max-size was reached)"))
        #expect(!report.contains("I detected a non zero amount of anonymous huge pages"))
        #expect(m.report(config: config, anonHugePages: 2 << 20).contains("anonymous huge pages"))
    }

    @Test func graphDrawsRedisSparkline() {
        let m = LatencyMonitor()
        m.add("command", milliseconds: 200, at: 100)
        m.add("command", milliseconds: 300, at: 102)
        // What Redis 7.0.15 draws for the same two samples, 2 s and 0 s ago.
        #expect(m.graph("command", m.series("command")!, now: 102) == """
            command - high 300 ms, low 200 ms (all time high 300 ms)
            \(String(repeating: "-", count: 80))
             #
             |
             |
            _|
              
            20
            ss

            """)
    }

    @Test func graphLabelsSayHowLongAgo() {
        let m = LatencyMonitor()
        for (i, ago) in [200_000, 7200, 90].enumerated() { m.add("e", milliseconds: i + 1, at: 300_000 - ago) }
        let lines = m.graph("e", m.series("e")!, now: 300_000).split(separator: "\n", omittingEmptySubsequences: false)
        // Labels go down one character a row: 2d, 2h, 1m read in columns.
        #expect(lines.suffix(3) == ["221", "dhm", ""])
    }

    // MARK: The directives

    @Test func percentilesPrintAsRedisPrintsThem() {
        #expect([50, 99, 99.9, 0, 100, 12.5].map(percentileText) == ["50", "99", "99.9", "0", "100", "12.5"])
        #expect(percentileList([0, 50, 100]) == "0 50 100")
    }

    @Test func percentileDirectiveReadsWordsAndEmptiness() throws {
        var config = ServerConfig()
        try config.apply(fileContents: "latency-tracking-info-percentiles 0.0 50.0 100.0\nlatency-monitor-threshold 20\n",
                         path: "t.conf")
        #expect(config.latencyTrackingPercentiles == [0, 50, 100])
        #expect(config.latencyMonitorThreshold == 20)
        try config.apply(fileContents: "latency-tracking-info-percentiles \"\"\nlatency-tracking no\n", path: "t.conf")
        #expect(config.latencyTrackingPercentiles.isEmpty)
        #expect(!config.latencyTracking)
        #expect(ServerConfig.directivesByName["latency-tracking-info-percentiles"]!.lines(config)
            == ["latency-tracking-info-percentiles \"\""])
        #expect(throws: ConfigError.self) { try config.apply("latency-tracking-info-percentiles", ["50", "x"]) }
        #expect(throws: ConfigError.self) { try config.apply("latency-tracking-info-percentiles", ["101"]) }
        #expect(throws: ConfigError.self) { try config.apply("latency-monitor-threshold", ["-1"]) }
    }
}
