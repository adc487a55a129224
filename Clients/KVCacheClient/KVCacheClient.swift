import RESP
import Synchronization

/// A client for kvcache-server (or any server speaking RESP): one TCP
/// connection, blocking calls, typed replies.
///
/// ```swift
/// let client = try KVCacheClient(port: 6379, cache: "sessions")
/// try client.set("user:1", "alice", expiry: .seconds(60))
/// let name = try client.getString("user:1")          // "alice"
/// let replies = try client.pipeline { p in
///     p.incr("hits")
///     p.get("user:1")
/// }
/// ```
///
/// Safe to share between threads; calls are serialized on the connection.
/// After a connection error the next call reconnects and selects again the
/// cache that was selected; no command is sent twice.
public final class KVCacheClient: Sendable {
    /// Where and how to connect.
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// The cache to `SELECT` on connecting: a name (`"sessions"`) or a
        /// DB index (`"3"`); nil stays in `db0`.
        public var cache: String?
        /// The longest wait for the TCP connection; nil waits as long as the system does.
        public var connectTimeout: Duration?
        /// The longest wait for the server to take or answer a command; nil waits forever.
        public var timeout: Duration?
        /// A name for `CLIENT SETNAME`, shown by `CLIENT LIST`.
        public var clientName: String?

        public init(host: String = "127.0.0.1", port: Int = 6379, cache: String? = nil,
                    connectTimeout: Duration? = .seconds(5), timeout: Duration? = .seconds(30),
                    clientName: String? = nil) {
            self.host = host
            self.port = port
            self.cache = cache
            self.connectTimeout = connectTimeout
            self.timeout = timeout
            self.clientName = clientName
        }
    }

    public let configuration: Configuration

    private struct State {
        var connection: Connection?
        /// The argument of the last successful SELECT, selected again on reconnecting.
        var selected: [UInt8]?
        var closed = false
    }

    private let state: Mutex<State>

    /// Connects now, selecting `configuration.cache`.
    /// - Throws: `.connectionFailed`, `.timedOut`, or `.server` when the
    ///   cache cannot be selected (`ERR invalid cache name …`).
    public init(configuration: Configuration) throws(KVCacheClientError) {
        self.configuration = configuration
        state = Mutex(State(selected: configuration.cache.map { Array($0.utf8) }))
        try state.withLock { (state: inout State) throws(KVCacheClientError) in
            _ = try connection(&state)
        }
    }

    /// Connects now to `host:port`, selecting `cache` (a name or a DB index) if given.
    public convenience init(host: String = "127.0.0.1", port: Int = 6379, cache: String? = nil,
                            timeout: Duration? = .seconds(30)) throws(KVCacheClientError) {
        try self.init(configuration: Configuration(host: host, port: port, cache: cache, timeout: timeout))
    }

    /// Closes the connection; later calls throw `.connectionClosed`.
    public func close() {
        state.withLock { state in
            state.connection = nil
            state.closed = true
        }
    }

    /// The open connection, or a new one set up as the old one was.
    private func connection(_ state: inout State) throws(KVCacheClientError) -> Connection {
        if state.closed { throw .connectionClosed }
        if let connection = state.connection, !connection.isStale { return connection }
        state.connection = nil
        let connection = try Connection(host: configuration.host, port: configuration.port,
                                        timeout: configuration.connectTimeout)
        var setup: [[[UInt8]]] = []
        if let name = configuration.clientName {
            setup.append([Array("CLIENT".utf8), Array("SETNAME".utf8), Array(name.utf8)])
        }
        if let selected = state.selected { setup.append([Array("SELECT".utf8), selected]) }
        if !setup.isEmpty {
            for reply in try connection.exchange(Self.encode(setup), replies: setup.count, timeout: configuration.timeout) {
                if case .error(let text) = reply { throw .server(text) }
            }
        }
        state.connection = connection
        return connection
    }

    private static func encode(_ commands: [[[UInt8]]]) -> [UInt8] {
        var out: [UInt8] = []
        for command in commands { RESPEncoder.bulkArray(command, into: &out) }
        return out
    }

    /// Sends `commands` in one write and reads their replies, in order.
    /// Error replies come back as `.error` values; a broken connection throws.
    func send(_ commands: [[[UInt8]]]) throws(KVCacheClientError) -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        return try state.withLock { (state: inout State) throws(KVCacheClientError) -> [RESPValue] in
            let connection = try connection(&state)
            let replies: [RESPValue]
            do throws(KVCacheClientError) {
                replies = try connection.exchange(Self.encode(commands), replies: commands.count,
                                                  timeout: configuration.timeout)
            } catch {
                state.connection = nil  // its state is unknown: replies may still be on the way
                throw error
            }
            // Follow what changes the connection: the cache to select again
            // on reconnecting, and QUIT, after which the server closes it.
            for (command, reply) in zip(commands, replies) where reply == .simpleString("OK") {
                guard let name = command.first, name.count == 6 || name.count == 4 else { continue }
                switch String(decoding: name, as: UTF8.self).lowercased() {
                case "select" where command.count == 2: state.selected = command[1]
                case "quit": state.connection = nil
                default: break
                }
            }
            return replies
        }
    }

    /// Runs one typed call.
    func run<T>(_ call: Call<T>) throws(KVCacheClientError) -> T {
        try call.decode(try send([call.arguments])[0])
    }

    /// Walks the keys of the selected cache with `SCAN`, a page at a time,
    /// calling `body` for each. A key present for the whole walk is seen
    /// exactly once; keys written meanwhile may or may not be.
    public func forEachKey(match: String? = nil, count: Int? = nil, type: String? = nil,
                           _ body: ([UInt8]) throws -> Void) throws {
        var cursor: UInt64 = 0
        repeat {
            let page = try scan(cursor: cursor, match: match, count: count, type: type)
            for key in page.keys { try body(key) }
            cursor = page.cursor
        } while cursor != 0
    }

    /// Every key of the selected cache matching `match`, gathered with `SCAN`.
    public func scanKeys(match: String? = nil, count: Int? = nil, type: String? = nil) throws(KVCacheClientError) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        var cursor: UInt64 = 0
        repeat {
            let page = try scan(cursor: cursor, match: match, count: count, type: type)
            keys += page.keys
            cursor = page.cursor
        } while cursor != 0
        return keys
    }

    // MARK: Raw commands and pipelines

    /// Sends any command and returns its reply.
    /// - Throws: `.server` when the reply is an error.
    @discardableResult
    public func command(_ arguments: [[UInt8]]) throws(KVCacheClientError) -> RESPValue {
        try run(Commands.raw(arguments))
    }

    /// Sends any command given as strings: `command("CONFIG", "GET", "port")`.
    @discardableResult
    public func command(_ arguments: String...) throws(KVCacheClientError) -> RESPValue {
        try command(arguments.map { Array($0.utf8) })
    }

    /// Sends every command `body` queues in one write, then reads every
    /// reply: one round trip for the lot.
    ///
    /// ```swift
    /// let replies = try client.pipeline { p in
    ///     p.set("a", "1")
    ///     p.get("a")
    /// }   // [+OK, "1"]
    /// ```
    /// - Returns: the replies in order; an error reply is an `.error` value
    ///   there (and throws from its `Pending`), the other replies stand.
    @discardableResult
    public func pipeline(_ body: (Pipeline) -> Void) throws(KVCacheClientError) -> [RESPValue] {
        let pipeline = Pipeline()
        body(pipeline)
        return try execute(pipeline)
    }

    /// Runs the commands queued in `pipeline`, as `pipeline(_:)` does;
    /// for a pipeline built step by step.
    @discardableResult
    public func execute(_ pipeline: Pipeline) throws(KVCacheClientError) -> [RESPValue] {
        let replies = try send(pipeline.commands)
        pipeline.replies = replies
        return replies
    }
}
