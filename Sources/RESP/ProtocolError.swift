/// A malformed request. The server replies `-ERR <message>` and then closes
/// the connection, as Redis does.
public enum ProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidMultibulkLength
    case invalidBulkLength
    case tooBigInlineRequest
    case tooBigMultibulkCountString
    case tooBigBulkCountString
    case expectedDollar(got: UInt8)
    case unbalancedQuotes
    case unauthenticatedMultibulkLength
    case unauthenticatedBulkLength

    /// Redis's text for the error, without the `ERR ` prefix.
    public var message: String {
        switch self {
        case .invalidMultibulkLength: return "Protocol error: invalid multibulk length"
        case .invalidBulkLength: return "Protocol error: invalid bulk length"
        case .tooBigInlineRequest: return "Protocol error: too big inline request"
        case .tooBigMultibulkCountString: return "Protocol error: too big mbulk count string"
        case .tooBigBulkCountString: return "Protocol error: too big bulk count string"
        case .expectedDollar(let got): return "Protocol error: expected '$', got '\(Character(Unicode.Scalar(got)))'"
        case .unbalancedQuotes: return "Protocol error: unbalanced quotes in request"
        case .unauthenticatedMultibulkLength: return "Protocol error: unauthenticated multibulk length"
        case .unauthenticatedBulkLength: return "Protocol error: unauthenticated bulk length"
        }
    }

    public var description: String { message }
}
