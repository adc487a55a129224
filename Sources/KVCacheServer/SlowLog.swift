/// Commands that took at least `threshold` microseconds, newest first, as
/// Redis's SLOWLOG keeps them: at most 32 arguments and 128 bytes each.
struct SlowLog {
    struct Entry {
        let id: Int
        let time: Int64
        let microseconds: Int
        let args: [[UInt8]]
        let client: String
        let name: [UInt8]
    }

    /// `slowlog-log-slower-than` (µs); negative disables the log, 0 logs everything.
    var threshold = 10_000
    /// `slowlog-max-len`.
    var maxLength = 128 {
        didSet { trim() }
    }
    private(set) var entries: [Entry] = []
    private var nextID = 0

    static let maxArguments = 32
    static let maxArgumentBytes = 128

    /// `record` when the command took at least `threshold` (and the log is on).
    mutating func recordIfSlow(_ args: Arguments, microseconds: Int, client: Connection) {
        if threshold >= 0 && microseconds >= threshold { record(args, microseconds: microseconds, client: client) }
    }

    /// Keeps a copy of `args` (shortened as Redis does) as the newest entry.
    private mutating func record(_ args: Arguments, microseconds: Int, client: Connection) {
        var kept: [[UInt8]] = []
        let redacted = ["auth", "hello", "migrate"].contains(args[0].lowercasedText)
        for (i, arg) in args.enumerated() {
            if args.count > Self.maxArguments && i == Self.maxArguments - 1 {
                kept.append(Array("... (\(args.count - Self.maxArguments + 1) more arguments)".utf8))
                break
            }
            if redacted && i > 0 {
                kept.append(Array("(redacted)".utf8))
            } else if arg.count > Self.maxArgumentBytes {
                kept.append(Array(arg.prefix(Self.maxArgumentBytes)) + Array("... (\(arg.count - Self.maxArgumentBytes) more bytes)".utf8))
            } else {
                kept.append(arg.bytes)
            }
        }
        entries.insert(Entry(id: nextID, time: Server.nowMilliseconds() / 1000, microseconds: microseconds, args: kept,
                             client: client.peer, name: client.name), at: 0)
        nextID += 1
        trim()
    }

    mutating func reset() { entries.removeAll() }

    private mutating func trim() {
        if entries.count > maxLength { entries.removeLast(entries.count - max(0, maxLength)) }
    }
}
