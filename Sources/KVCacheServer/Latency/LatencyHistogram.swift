/// A command's latencies, kept as Redis 7.0 keeps them (`hdr_histogram`
/// with `LATENCY_HISTOGRAM_MIN_VALUE` 1 ns, `MAX_VALUE` 1 s and 2
/// significant digits): values in nanoseconds, counted in buckets whose
/// width doubles from one power of two to the next, 128 sub-buckets each.
/// The same layout gives the same answers: INFO latencystats'
/// `p99=1.003` for a command of 1 µs, LATENCY HISTOGRAM's buckets.
///
/// The counts are allocated at the first value (24 KiB); an empty
/// histogram costs nothing, as Redis allocates one per command on use.
struct LatencyHistogram {
    // HdrHistogram's configuration for lowest 1, highest 10^9, 2 digits:
    // sub_bucket_count 256, unit_magnitude 0, bucket_count 23.
    static let lowest: Int64 = 1
    static let highest: Int64 = 1_000_000_000
    static let subBucketHalfCountMagnitude: Int64 = 7
    static let subBucketHalfCount: Int64 = 128
    static let subBucketCount: Int64 = 256
    static let subBucketMask: Int64 = 255
    static let bucketCount = 23
    static let countsLength = (bucketCount + 1) * 128

    private(set) var counts: [Int64] = []
    private(set) var totalCount: Int64 = 0

    var isEmpty: Bool { totalCount == 0 }

    /// Counts one value in nanoseconds, clamped to 1 ns ... 1 s as Redis does.
    mutating func record(nanoseconds: Int64) {
        let value = min(max(nanoseconds, Self.lowest), Self.highest)
        if counts.isEmpty { counts = [Int64](repeating: 0, count: Self.countsLength) }
        counts[Self.index(of: value)] += 1
        totalCount += 1
    }

    /// Counts one command's run, timed in microseconds (Redis records `duration * 1000`).
    mutating func record(microseconds: Int) {
        record(nanoseconds: Int64(microseconds) * 1000)
    }

    mutating func reset() {
        counts = []
        totalCount = 0
    }

    // MARK: HdrHistogram's arithmetic

    static func bucketIndex(_ value: Int64) -> Int64 {
        // The smallest power of two holding the value, less the bits a sub-bucket resolves.
        Int64(64 - (value | subBucketMask).leadingZeroBitCount) - (subBucketHalfCountMagnitude + 1)
    }

    static func index(of value: Int64) -> Int {
        let bucket = bucketIndex(value)
        let subBucket = value >> bucket
        return Int(((bucket + 1) << subBucketHalfCountMagnitude) + (subBucket - subBucketHalfCount))
    }

    /// The lowest value counted at `index`.
    static func value(at index: Int) -> Int64 {
        var bucket = (Int64(index) >> subBucketHalfCountMagnitude) - 1
        var subBucket = (Int64(index) & (subBucketHalfCount - 1)) + subBucketHalfCount
        if bucket < 0 {
            subBucket -= subBucketHalfCount
            bucket = 0
        }
        return subBucket << bucket
    }

    static func lowestEquivalent(_ value: Int64) -> Int64 {
        let bucket = bucketIndex(value)
        return (value >> bucket) << bucket
    }

    /// How many values share `value`'s count.
    static func rangeSize(_ value: Int64) -> Int64 {
        let bucket = bucketIndex(value)
        let subBucket = value >> bucket
        return 1 << (subBucket >= subBucketCount ? bucket + 1 : bucket)
    }

    static func highestEquivalent(_ value: Int64) -> Int64 {
        lowestEquivalent(value) + rangeSize(value) - 1
    }

    // MARK: Reading it

    /// `hdr_value_at_percentile`: the highest value equivalent to the one
    /// at `percentile` (0 ... 100) of the counts; 0 when empty.
    func value(atPercentile percentile: Double) -> Int64 {
        guard totalCount > 0 else { return 0 }
        let requested = min(percentile, 100)
        let wanted = max(1, Int64((requested / 100) * Double(totalCount) + 0.5))
        var running: Int64 = 0
        var found: Int64 = 0
        for (index, count) in counts.enumerated() where count > 0 {
            running += count
            if running >= wanted {
                found = Self.value(at: index)
                break
            }
        }
        return percentile == 0 ? Self.lowestEquivalent(found) : Self.highestEquivalent(found)
    }

    /// LATENCY HISTOGRAM's `histogram_usec`: HdrHistogram's logarithmic
    /// iteration from 1024 ns doubling (`hdr_iter_log_init(h, 1024, 2)`),
    /// each step as (its highest equivalent value in µs, the count of
    /// values up to it), only the steps where the count grew.
    func cumulativeMicroseconds() -> [(microseconds: Int64, count: Int64)] {
        guard totalCount > 0 else { return [] }
        var out: [(Int64, Int64)] = []
        var level: Int64 = 1024
        var index = 0
        var running: Int64 = 0
        var previous: Int64 = 0
        while running < totalCount {
            // Walk the counts up to and including the index of the step's value.
            let stop = Self.index(of: Self.lowestEquivalent(level))
            while index <= stop && index < counts.count {
                running += counts[index]
                index += 1
            }
            if running > previous {
                // Past the last count (a step beyond 1 s) the iteration stops on the last one.
                let value = stop < counts.count ? level : Self.value(at: counts.count - 1)
                out.append((Self.highestEquivalent(value) / 1000, running))
                previous = running
            }
            level *= 2
        }
        return out
    }
}
