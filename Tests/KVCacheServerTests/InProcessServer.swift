import Foundation
import RESP
@testable import KVCacheServer
#if canImport(Glibc)
import Glibc
#endif

/// A server in the test process, over a temporary data directory: the
/// real command layer, read path and write batch, checked in milliseconds.
///
/// `client()` gives a `DirectClient`: a connection whose socket is one end
/// of a socketpair, read by the server's own `readAndExecute` each time the
/// test writes, so a frame fed one byte at a time reaches the parser one
/// byte at a time. `LoopbackServer` runs the whole loop on a thread instead.
final class InProcessServer {
    let server: Server
    let directory: String

    init(configure: (inout ServerConfig) -> Void = { _ in }) throws {
        directory = FileManager.default.temporaryDirectory.path + "/kvcache-inproc-" + UUID().uuidString
        var config = ServerConfig()
        config.port = 0
        config.dir = directory
        config.maxCaches = 16
        config.logLevel = .nothing
        configure(&config)
        server = try Server(config: config, logger: Logger(level: .nothing, path: ""))
    }

    /// Set when the loop ran and shut the server down itself.
    var stoppedByLoop = false

    deinit {
        if !stoppedByLoop {
            // As the loop's shutdown: the log written, the changes applied, the writer stopped.
            server.persistence.beforeReplies()
            server.persistence.shutdown(seconds: 5)
            server.registry.closeAll()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    func client() throws -> DirectClient { try DirectClient(owner: self) }

    /// Ends a loop iteration: sweep, eviction, commit.
    func endIteration() { server.endIterationForTesting() }
}

/// One client of an `InProcessServer`, driven by the test: bytes written to
/// its socket are read and run by the server at once; its replies collect
/// in the connection's output, never sent.
final class DirectClient {
    /// Kept alive as long as its client: its deinit closes the caches.
    let owner: InProcessServer
    var server: Server { owner.server }
    let connection: Connection
    /// The test's end of the socketpair.
    private let peer: Int32
    private var replyBuffer: [UInt8] = []

    init(owner: InProcessServer) throws {
        self.owner = owner
        let server = owner.server
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw TestFailure("socketpair failed")
        }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        peer = fds[1]
        connection = Connection(id: 1, fd: fds[0], token: 0, peer: nil, local: "test",
                                cache: try server.registry.cache(named: "db0"),
                                limits: server.requestLimits, now: Server.nowMilliseconds())
    }

    deinit {
        if !connection.closed { Glibc.close(connection.fd) }
        Glibc.close(peer)
    }

    /// Writes `bytes` to the server in pieces of `chunk` bytes, letting it
    /// read and run what it has after each piece, then ends the iteration.
    func feed(_ bytes: [UInt8], chunk: Int = .max) throws {
        var offset = 0
        while offset < bytes.count && !connection.closed {
            let end = offset + min(chunk, bytes.count - offset)
            let n = bytes[offset..<end].withUnsafeBytes { Glibc.write(peer, $0.baseAddress, $0.count) }
            guard n > 0 else { throw TestFailure("write to the server's socket failed") }
            offset += n
            drain()
        }
        server.endIterationForTesting()
    }

    func feed(_ text: String, chunk: Int = .max) throws { try feed(Array(text.utf8), chunk: chunk) }

    /// Lets the server read everything waiting on its socket.
    private func drain() {
        var waiting: Int32 = 0
        repeat {
            server.readAndExecute(connection)
            if connection.closed || ioctl(connection.fd, UInt(FIONREAD), &waiting) != 0 { return }
        } while waiting > 0
    }

    /// The replies produced since the last call, parsed.
    func replies() throws -> [RESPValue] {
        replyBuffer += connection.output[connection.outputSent...]
        connection.output.removeAll(keepingCapacity: true)
        connection.outputSent = 0
        var values: [RESPValue] = []
        var index = 0
        while let value = try ReplyParser.parse(replyBuffer, index: &index) { values.append(value) }
        replyBuffer.removeFirst(index)
        return values
    }

    /// Sends one command as a multibulk request and returns its one reply.
    @discardableResult
    func call(_ args: String...) throws -> RESPValue {
        try call(bytes: args.map { Array($0.utf8) })
    }

    func call(bytes args: [[UInt8]], chunk: Int = .max) throws -> RESPValue {
        var request: [UInt8] = []
        RESPEncoder.bulkArray(args, into: &request)
        try feed(request, chunk: chunk)
        let values = try replies()
        guard values.count == 1 else { throw TestFailure("\(values.count) replies to one request: \(values)") }
        return values[0]
    }

    /// Whether the server means to close the connection after its replies.
    var closing: Bool { connection.closeAfterReply || connection.closed }
}

/// The whole server, loop included, on a thread of the test process,
/// listening on a free loopback port; stopped with SHUTDOWN.
final class LoopbackServer: @unchecked Sendable {
    let inProcess: InProcessServer
    let port: Int
    private let stopped = DispatchSemaphore(value: 0)

    init() throws {
        let port = try freePort()
        self.port = port
        inProcess = try InProcessServer { config in
            config.port = port
            config.bind = ["127.0.0.1"]
        }
        let thread = Thread { [self] in
            try? inProcess.server.run()
            stopped.signal()
        }
        thread.start()
    }

    func client() throws -> TestClient {
        let deadline = Date().addingTimeInterval(10)
        while true {
            if let client = try? TestClient(port: port) { return client }
            guard Date() < deadline else { throw TestFailure("the in-process server is not listening on \(port)") }
            usleep(5_000)
        }
    }

    /// Stops the loop with SHUTDOWN and waits for it to finish.
    func stop() throws {
        let client = try client()
        try client.send(command: [Array("SHUTDOWN".utf8)])
        guard stopped.wait(timeout: .now() + 10) == .success else { throw TestFailure("the server did not stop") }
        inProcess.stoppedByLoop = true
    }
}
