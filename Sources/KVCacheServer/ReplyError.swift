import SQLiteKVCache
import RESP

/// An error reply: the whole text after `-`, prefix included
/// (`ERR syntax error`, `WRONGTYPE ...`, `NOPROTO ...`).
struct ReplyError: Error, Equatable {
    let text: String

    init(_ text: String) { self.text = text }

    static let syntax = ReplyError("ERR syntax error")
    static let notInteger = ReplyError("ERR value is not an integer or out of range")
    static let notFloat = ReplyError("ERR value is not a valid float")
    static let intOutOfRange = ReplyError("ERR value is out of range, value must between -2147483648 and 2147483647")
    static let dbIndexOutOfRange = ReplyError("ERR DB index is out of range")
    static let noSuchKey = ReplyError("ERR no such key")
    static let overflow = ReplyError("ERR increment or decrement would overflow")
    static let oom = ReplyError("OOM command not allowed when used memory > 'maxmemory'.")
    static let wrongType = ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value")
    static let loading = ReplyError("LOADING Redis is loading the dataset in memory")

    /// A write that waited for room in the memtables longer than memtable-full-timeout.
    static func memtableFull(_ bytes: Int) -> ReplyError {
        ReplyError("ERR write refused: changes not yet in SQLite fill memtable-max-size (\(bytes) bytes) "
            + "and the writer did not free room in time; try again")
    }

    static func wrongArity(_ name: String) -> ReplyError {
        ReplyError("ERR wrong number of arguments for '\(name)' command")
    }

    static func unknownSubcommand(_ sub: some Collection<UInt8>, of command: String) -> ReplyError {
        ReplyError("ERR unknown subcommand '\(String(keepingBytes: sub.prefix(128)))'. Try \(command.uppercased()) HELP.")
    }

    /// The reply for an engine error: SQLite failures keep SQLite's text;
    /// a `noeviction` cache at capacity answers as Redis does at maxmemory.
    static func engine(_ error: SQLiteKVCache.Error) -> ReplyError {
        switch error {
        case .capacityExceeded: return .oom
        default: return ReplyError("ERR \(error.description)")
        }
    }
}
