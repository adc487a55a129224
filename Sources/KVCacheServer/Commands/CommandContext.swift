/// What a command handler gets: the server, the client, and the request's
/// arguments, viewed in the client's read buffer (valid while the handler
/// runs: see `Arguments`).
struct CommandContext {
    unowned(unsafe) let server: Server  // the server outlives every request
    let connection: Connection
    let args: Arguments

    var cache: OpenCache { connection.cache }

    /// A uniform pick in `0..<bound` (bound > 0), from the server's xorshift.
    func randomIndex(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &server.random) }

    /// The selected cache's keys: the only way a handler reaches a key.
    var keyspace: Keyspace { Keyspace(server: server, cache: connection.cache) }

    /// Another cache's keys (MOVE, COPY … DB, SWAPDB).
    func keyspace(of cache: OpenCache) -> Keyspace { Keyspace(server: server, cache: cache) }

    /// The encoding limits in force.
    var limits: EncodingLimits { server.config.encodingLimits }

    /// The argument at `index` as text (lossy for invalid UTF-8).
    func text(_ index: Int) -> String { args.text(index) }

    /// The argument at `index` for an error text that quotes it (`Arguments.quoted`).
    func quoted(_ index: Int) -> String { args.quoted(index) }

    /// The argument at `index`, lowercased ASCII, as text: for option names.
    func option(_ index: Int) -> String { args.option(index) }

    /// The argument at `index` as a strict 64-bit integer.
    /// - Throws: `value is not an integer or out of range`.
    func integer(_ index: Int) throws(ReplyError) -> Int64 { try args.integer(index) }

    /// The command's name as Redis prints it in errors.
    var commandName: String { args[0].lowercasedText }
}
