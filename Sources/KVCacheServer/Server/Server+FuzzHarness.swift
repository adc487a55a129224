import RESP

extension Server {
    /// Runs commands through the real command layer without sockets, for the
    /// fuzz target (Fuzz/Sources/FuzzCommands) and tests: a server with no
    /// listener over `directory`, and one client that never reads.
    final class FuzzHarness {
        let server: Server
        let connection: Connection

        init(directory: String) throws {
            var config = ServerConfig()
            config.port = 0
            config.dir = directory
            config.maxCaches = 8
            config.logLevel = .nothing
            // MIGRATE would connect to whatever host and port the input
            // names (a name lookup, a live port on the machine) and wait up
            // to its timeout: the fuzzer runs without it.
            config.renamedCommands["migrate"] = ""
            server = try Server(config: config, logger: Logger(level: .nothing, path: ""))
            connection = Connection(id: 1, fd: -1, token: 0, peer: nil, local: "fuzz", cache: try server.registry.firstCache(),
                                    limits: server.requestLimits, now: Server.nowMilliseconds())
        }

        /// Runs one request.
        /// - Returns: how many replies it produced (always 1 for a correct server).
        func run(_ request: [[UInt8]]) -> Int {
            connection.output.removeAll(keepingCapacity: true)
            connection.closeAfterReply = false
            Arguments.withCopy(of: request) { server.execute($0, for: connection) }
            var count = 0
            var index = 0
            while let _ = try? ReplyParser.parse(connection.output, index: &index) { count += 1 }
            precondition(index == connection.output.count, "a reply that does not parse: \(connection.output.prefix(200))")
            return count
        }

        /// Ends a loop iteration: sweep, eviction, the log write.
        func endIteration() {
            server.endIterationForTesting()
        }
    }

    func endIterationForTesting() {
        sweepExpired()
        continueEviction()
        persistence.beforeReplies()
        registry.heldReads.releaseAll()
    }
}
