import Foundation
import KVCacheClient
#if canImport(Glibc)
import Glibc
#endif

/// The real `kvcache-server` binary on a free loopback port with a
/// temporary data directory (after Tests/KVCacheServerTests/ServerProcess.swift).
final class TestServer {
    static let root: URL = {
        // Clients/Tests/KVCacheClientTests/TestServer.swift → package root.
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }()
    static let binary = root.appendingPathComponent(".build/debug/kvcache-server").path

    let directory: String
    let arguments: [String]
    private(set) var port = 0
    private var process: Process?

    init(arguments: [String] = []) throws {
        directory = FileManager.default.temporaryDirectory.path + "/kvcache-client-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.arguments = arguments
        try start()
    }

    deinit {
        stop(signal: SIGKILL)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts (or restarts) the server on the same port and directory.
    func start() throws {
        if port == 0 { port = try freePort() }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = arguments + ["--port", "\(port)", "--bind", "127.0.0.1", "--dir", directory + "/data"]
        let logPath = directory + "/server.log"
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        p.standardOutput = log
        p.standardError = log
        try p.run()
        process = p
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if !p.isRunning { throw TestFailure("server exited at start") }
            if canConnect(port: port) { return }
            usleep(20_000)
        }
        throw TestFailure("server did not start listening on \(port)")
    }

    /// Sends `signal` and waits for the process to exit.
    func stop(signal: Int32 = SIGTERM) {
        guard let p = process else { return }
        if p.isRunning { kill(p.processIdentifier, signal) }
        p.waitUntilExit()
        process = nil
    }

    /// A client of this server; `cache` as in `KVCacheClient.Configuration`.
    func client(cache: String? = nil, timeout: Duration? = .seconds(10)) throws -> KVCacheClient {
        try KVCacheClient(port: port, cache: cache, timeout: timeout)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A loopback port nobody listens on (at the moment of asking).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = loopback(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard ok else { throw TestFailure("no free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    return address
}

func canConnect(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = loopback(port: port)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// A one-connection fake server: accepts a client, reads its first
/// request, answers `reply` (when given), then closes or holds the connection.
final class FakeServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let done = DispatchSemaphore(value: 0)

    init(reply: [UInt8]?, thenClose: Bool) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard ok else { close(listener); throw TestFailure("fake server cannot listen") }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let done = self.done
        Thread.detachNewThread {
            let fd = accept(listener, nil, nil)
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if let reply { _ = reply.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
            if !thenClose { done.wait() }
            close(fd)
        }
    }

    deinit {
        done.signal()
        close(listener)
    }
}
