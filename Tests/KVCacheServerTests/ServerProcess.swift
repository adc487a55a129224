import Foundation
import RESP
#if canImport(Glibc)
import Glibc
#endif

/// The real `kvcache-server` binary, started on a free loopback port with a
/// temporary data directory.
final class ServerProcess {
    static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["KVCACHE_BIN"], !path.isEmpty { return path }
        // Tests/KVCacheServerTests/ServerProcess.swift → package root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/kvcache-server").path
    }()

    let directory: String
    var dataDirectory: String { directory + "/data" }
    private(set) var port: Int = 0
    private var process: Process?
    let extraArguments: [String]
    let logPath: String

    init(arguments: [String] = [], configText: String? = nil) throws {
        directory = FileManager.default.temporaryDirectory.path + "/kvcache-it-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        logPath = directory + "/server.log"
        var args = arguments
        if let configText {
            let path = directory + "/kvcache.conf"
            try configText.write(toFile: path, atomically: true, encoding: .utf8)
            args = [path] + args
        }
        extraArguments = args
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
        p.arguments = extraArguments + ["--port", "\(port)", "--bind", "127.0.0.1", "--dir", dataDirectory]
        if !FileManager.default.fileExists(atPath: logPath) {
            FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        p.standardOutput = log
        p.standardError = log
        try p.run()
        process = p
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if !p.isRunning { throw TestFailure("server exited at start: \(self.log)") }
            // Listening, and done replaying its append-only log (-LOADING until then).
            if let client = try? TestClient(port: port) {
                guard case .error(let text)? = try? client.call("PING"), text.hasPrefix("LOADING") else { return }
            }
            usleep(20_000)
        }
        throw TestFailure("server did not start listening on \(port)")
    }

    /// Sends `signal` and waits for the process to exit.
    /// - Returns: the exit status (or the signal number for a signal death).
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        guard let p = process else { return 0 }
        if p.isRunning { kill(p.processIdentifier, signal) }
        p.waitUntilExit()
        process = nil
        return p.terminationStatus
    }

    func restart() throws {
        stop()
        try start()
    }

    var isRunning: Bool { process?.isRunning ?? false }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func client() throws -> TestClient { try TestClient(port: port) }

    /// Runs redis-cli against this server and returns its standard output.
    func redisCLI(_ args: [String], input: String? = nil) throws -> String {
        try run("/usr/bin/redis-cli", ["-p", "\(port)"] + args, input: input)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs a program to completion and returns its standard output and error.
/// Spawned with every signal unblocked: the test runner's threads block
/// some (SIGALRM among them, which `nc -q` relies on), and a child would
/// inherit that mask.
func run(_ path: String, _ args: [String], input: String? = nil) throws -> String {
    var outPipe: [Int32] = [0, 0], inPipe: [Int32] = [0, 0]
    guard pipe(&outPipe) == 0, pipe(&inPipe) == 0 else { throw TestFailure("pipe failed") }
    for fd in outPipe + inPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
    posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
    posix_spawn_file_actions_adddup2(&actions, outPipe[1], 2)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
    close(inPipe[0])
    close(outPipe[1])
    guard rc == 0 else {
        close(inPipe[1]); close(outPipe[0])
        throw TestFailure("cannot run \(path): \(String(cString: strerror(rc)))")
    }
    if let input {
        let bytes = Array(input.utf8)
        _ = bytes.withUnsafeBytes { write(inPipe[1], $0.baseAddress, $0.count) }
    }
    close(inPipe[1])
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(outPipe[0], $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        output.append(contentsOf: chunk[..<n])
    }
    close(outPipe[0])
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return String(decoding: output, as: UTF8.self)
}

func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard ok else { throw TestFailure("no free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A minimal blocking RESP client for the tests.
final class TestClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // No close(fd) here: every stored property is set, so a throw runs
        // deinit, which closes it. Closing here too closed whatever took the
        // number in between on another test's thread (the retries while a
        // server starts): a cache's SQLite file ("disk I/O error") or a new
        // eventfd (epoll_ctl: EPERM).
        guard rc == 0 else { throw TestFailure("connect to \(port) failed") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(raw bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send failed") }
            offset += n
        }
    }

    func send(_ text: String) throws { try send(raw: Array(text.utf8)) }

    /// Sends a command as a multibulk request.
    func send(command args: [[UInt8]]) throws {
        var out: [UInt8] = []
        RESPEncoder.bulkArray(args, into: &out)
        try send(raw: out)
    }

    /// Reads one reply.
    func read() throws -> RESPValue {
        while true {
            var index = 0
            if let value = try ReplyParser.parse(buffer, index: &index) {
                buffer.removeFirst(index)
                return value
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw TestFailure("connection closed or timed out while reading a reply") }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// Sends a command and reads its reply.
    @discardableResult
    func call(_ args: String...) throws -> RESPValue {
        try send(command: args.map { Array($0.utf8) })
        return try read()
    }

    func call(bytes args: [[UInt8]]) throws -> RESPValue {
        try send(command: args)
        return try read()
    }

    /// True when the server closes the connection (EOF) before `seconds` pass.
    func isClosedByServer(within seconds: Int = 5) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }
}

extension RESPValue {
    static func bulk(_ text: String) -> RESPValue { .bulk(Array(text.utf8)) }
    static let ok = RESPValue.simpleString("OK")
    static let nilBulk = RESPValue.bulk(nil)
}
