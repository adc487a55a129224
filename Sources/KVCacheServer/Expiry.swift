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
    func absoluteExpiry(_ argument: [UInt8], _ form: ExpiryForm, now: Int64) throws(ReplyError) -> Int64 {
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

    /// The command's name as Redis prints it in errors.
    var commandName: String { String(decoding: args[0].map(asciiLower), as: UTF8.self) }
}

extension ReplyError {
    static func invalidExpireTime(_ command: String) -> ReplyError {
        ReplyError("ERR invalid expire time in '\(command)' command")
    }
}

/// What SET and GETEX options ask for.
struct StringSetOptions {
    var nx = false, xx = false, get = false, keepTTL = false, persist = false
    var expiry: (form: ExpiryForm, argument: [UInt8])?

    enum Command { case set, getex }

    /// Parses options from `args[start...]` exactly as Redis 7's
    /// `parseExtendedStringArgumentsOrReply`: a repeated option is allowed,
    /// conflicting ones are a syntax error.
    init(_ args: [[UInt8]], from start: Int, for command: Command) throws(ReplyError) {
        var j = start
        while j < args.count {
            let option = String(decoding: args[j].map(asciiLower), as: UTF8.self)
            let hasNext = j + 1 < args.count
            let expiryForm = expiry?.form
            func expiryAllowed(_ form: ExpiryForm) -> Bool {
                !keepTTL && !persist && (expiryForm == nil || expiryForm == form) && hasNext
            }
            switch option {
            case "nx" where !xx && command == .set: nx = true
            case "xx" where !nx && command == .set: xx = true
            case "get" where command == .set: get = true
            case "keepttl" where !persist && expiryForm == nil && command == .set: keepTTL = true
            case "persist" where command == .getex && expiryForm == nil && !keepTTL: persist = true
            case "ex" where expiryAllowed(.seconds): expiry = (.seconds, args[j + 1]); j += 1
            case "px" where expiryAllowed(.milliseconds): expiry = (.milliseconds, args[j + 1]); j += 1
            case "exat" where expiryAllowed(.unixSeconds): expiry = (.unixSeconds, args[j + 1]); j += 1
            case "pxat" where expiryAllowed(.unixMilliseconds): expiry = (.unixMilliseconds, args[j + 1]); j += 1
            default: throw .syntax
            }
            j += 1
        }
    }
}
