/// Why a call to the server failed.
///
/// Only `.server` leaves the connection usable. After any other error the
/// client drops its connection; the next call opens a new one (and selects
/// the cache selected before), but no command is ever sent twice.
public enum KVCacheClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server answered with an error; the text is its reply without the
    /// leading `-`: `ERR value is not an integer or out of range`,
    /// `OOM command not allowed when used memory > 'maxmemory'.`
    case server(String)
    /// The host could not be resolved or connected to; the text says why.
    case connectionFailed(String)
    /// The server closed the connection, or the client was closed.
    case connectionClosed
    /// The server did not answer (or take our bytes) within the timeout.
    case timedOut
    /// The server's bytes are not RESP, or not the reply the command has.
    case protocolViolation(String)

    /// The error code of a server error: the first word, `ERR`, `WRONGTYPE`, `OOM`…
    public var serverErrorCode: Substring? {
        guard case .server(let text) = self else { return nil }
        return text.prefix { $0 != " " }
    }

    public var description: String {
        switch self {
        case .server(let text): return text
        case .connectionFailed(let reason): return "connection failed: \(reason)"
        case .connectionClosed: return "connection closed"
        case .timedOut: return "timed out waiting for the server"
        case .protocolViolation(let reason): return "protocol violation: \(reason)"
        }
    }
}
