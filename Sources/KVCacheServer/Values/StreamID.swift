import RESP

/// A stream entry's ID, as Redis's `streamID`: milliseconds and a sequence
/// number, ordered as one 128-bit number (ms first). Written `<ms>-<seq>`.
struct StreamID: Comparable, Hashable, Sendable {
    var ms: UInt64
    var seq: UInt64

    static let zero = StreamID(ms: 0, seq: 0)
    static let max = StreamID(ms: .max, seq: .max)

    init(ms: UInt64, seq: UInt64) {
        self.ms = ms
        self.seq = seq
    }

    static func < (a: StreamID, b: StreamID) -> Bool {
        a.ms != b.ms ? a.ms < b.ms : a.seq < b.seq
    }

    var isZero: Bool { ms == 0 && seq == 0 }

    /// The next ID (Redis's streamIncrID); nil past the last possible one.
    var successor: StreamID? {
        if seq == .max {
            return ms == .max ? nil : StreamID(ms: ms + 1, seq: 0)
        }
        return StreamID(ms: ms, seq: seq + 1)
    }

    /// The previous ID (Redis's streamDecrID); nil before 0-0.
    var predecessor: StreamID? {
        if seq == 0 {
            return ms == 0 ? nil : StreamID(ms: ms - 1, seq: .max)
        }
        return StreamID(ms: ms, seq: seq - 1)
    }

    /// `<ms>-<seq>`, as Redis replies with an ID.
    var text: String { "\(ms)-\(seq)" }
    var bytes: [UInt8] { Array(text.utf8) }

    /// The 16 bytes Redis keys its radix trees with (big endian ms, then seq).
    var bigEndianBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        appendBigEndian(to: &out)
        return out
    }

    func appendBigEndian(to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ms >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: seq >> UInt64(shift))) }
    }

    init?(bigEndian bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var ms: UInt64 = 0, seq: UInt64 = 0
        for (i, b) in bytes.enumerated() {
            if i < 8 { ms = ms << 8 | UInt64(b) } else { seq = seq << 8 | UInt64(b) }
        }
        self.init(ms: ms, seq: seq)
    }

    /// The next ID XADD `*` generates after `last` at `now` (Redis's
    /// streamNextID): `now-0` when the clock is past the last ID, else the
    /// last ID's successor (nil when there is none).
    static func next(after last: StreamID, now: UInt64) -> StreamID? {
        now > last.ms ? StreamID(ms: now, seq: 0) : last.successor
    }
}

extension ReplyError {
    static let invalidStreamID = ReplyError("ERR Invalid stream ID specified as stream command argument")
}

/// How an ID argument is read (Redis's streamGenericParseIDOrReply).
enum StreamIDParse {
    /// An ID as given: `-` and `+` (unless `strict`), `<ms>` (the sequence
    /// then `missingSeq`) or `<ms>-<seq>`. With `allowAutoSeq`, `<ms>-*`
    /// answers a nil sequence (XADD's form).
    /// - Returns: the ID and whether its sequence was given.
    static func parse(_ arg: some Collection<UInt8>, missingSeq: UInt64 = 0, strict: Bool,
                      allowAutoSeq: Bool = false) throws(ReplyError) -> (id: StreamID, seqGiven: Bool) {
        let bytes = Array(arg)
        guard bytes.count <= 127 else { throw .invalidStreamID }
        if bytes == [UInt8(ascii: "-")] || bytes == [UInt8(ascii: "+")] {
            if strict { throw .invalidStreamID }
            return (bytes[0] == UInt8(ascii: "-") ? .zero : .max, true)
        }
        let dash = bytes.firstIndex(of: UInt8(ascii: "-"))
        let msPart = dash.map { bytes[..<$0] } ?? bytes[...]
        guard let ms = parseUInt64(msPart) else { throw .invalidStreamID }
        guard let dash else { return (StreamID(ms: ms, seq: missingSeq), true) }
        let seqPart = bytes[(dash + 1)...]
        if allowAutoSeq && seqPart.elementsEqual([UInt8(ascii: "*")]) {
            return (StreamID(ms: ms, seq: 0), false)
        }
        guard let seq = parseUInt64(seqPart) else { throw .invalidStreamID }
        return (StreamID(ms: ms, seq: seq), true)
    }

    /// A strict ID (no `-` or `+`), the sequence defaulting to 0.
    static func strict(_ arg: some Collection<UInt8>) throws(ReplyError) -> StreamID {
        try parse(arg, strict: true).id
    }

    /// A range bound: `(` before an ID excludes it (and the ID is strict).
    /// - Returns: the inclusive bound, nil when an exclusive bound has no
    ///   neighbour (the caller's error).
    static func rangeBound(_ arg: some Collection<UInt8>, missingSeq: UInt64, start: Bool) throws(ReplyError) -> StreamID? {
        let bytes = Array(arg)
        if bytes.count > 1 && bytes[0] == UInt8(ascii: "(") {
            let id = try parse(bytes.dropFirst(), missingSeq: missingSeq, strict: true).id
            return start ? id.successor : id.predecessor
        }
        return try parse(bytes, missingSeq: missingSeq, strict: false).id
    }

    /// Redis's string2ull: a strict 64-bit integer that is not negative,
    /// or else what strtoull takes whole (leading spaces, a sign, leading
    /// zeros; a minus sign wraps around, as C's does), without overflow.
    static func parseUInt64(_ text: some Collection<UInt8>) -> UInt64? {
        let bytes = Array(text)
        if let strict = parseStrictInt64(bytes) { return strict < 0 ? nil : UInt64(strict) }
        var i = 0
        while i < bytes.count, [0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d].contains(bytes[i]) { i += 1 }
        var negative = false
        if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
            negative = bytes[i] == UInt8(ascii: "-")
            i += 1
        }
        guard i < bytes.count else { return nil }
        var value: UInt64 = 0
        while i < bytes.count {
            let d = bytes[i]
            guard d >= UInt8(ascii: "0") && d <= UInt8(ascii: "9") else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(UInt64(d - UInt8(ascii: "0")))
            guard !o1 && !o2 else { return nil }
            value = sum
            i += 1
        }
        return negative ? 0 &- value : value
    }
}
