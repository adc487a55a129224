import RESP

/// The time units and bases of Redis's expiry arguments.
enum ExpiryForm {
    case seconds, milliseconds, unixSeconds, unixMilliseconds

    var isRelative: Bool { self == .seconds || self == .milliseconds }
    var inSeconds: Bool { self == .seconds || self == .unixSeconds }
}

extension CommandContext {
    /// Converts an expiry argument to an absolute time in milliseconds, as
    /// Redis's `getExpireMillisecondsOrReply` does for SET and GETEX.
    /// - Throws: not-an-integer, or `invalid expire time in '<name>' command`
    ///   for values ≤ 0 or that overflow.
    func absoluteExpiry(_ argument: some Collection<UInt8>, _ form: ExpiryForm, now: Int64) throws(ReplyError) -> Int64 {
        guard let value = parseStrictInt64(argument) else { throw .notInteger }
        let invalid = ReplyError.invalidExpireTime(commandName)
        if value <= 0 || (form.inSeconds && value > Int64.max / 1000) { throw invalid }
        var ms = form.inSeconds ? value * 1000 : value
        if form.isRelative {
            let (sum, overflow) = ms.addingReportingOverflow(now)
            if overflow { throw invalid }
            ms = sum
        }
        if ms <= 0 { throw invalid }
        return ms
    }
}

extension ReplyError {
    static func invalidExpireTime(_ command: String) -> ReplyError {
        ReplyError("ERR invalid expire time in '\(command)' command")
    }
}
