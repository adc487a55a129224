#if canImport(Glibc)
import Glibc
#endif
import RESP

/// One TCP connection to the server: a non-blocking socket waited on with
/// `poll`, so a large pipeline writes and reads at once and never deadlocks
/// on full socket buffers. Not thread-safe: `KVCacheClient` serializes use.
final class Connection {
    private let fd: Int32
    /// Received bytes; those before `start` are parsed.
    private var input: [UInt8] = []
    private var start = 0
    private var scratch = [UInt8](repeating: 0, count: 256 * 1024)

    /// Resolves `host` and connects to the first address that answers.
    init(host: String, port: Int, timeout: Duration?) throws(KVCacheClientError) {
        fd = try Connection.open(host: host, port: port, timeout: timeout)
    }

    deinit {
        close(fd)
    }

    private static func open(host: String, port: Int, timeout: Duration?) throws(KVCacheClientError) -> Int32 {
        guard (1...65535).contains(port) else { throw .connectionFailed("port \(port) is out of range") }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let list else {
            throw .connectionFailed("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        var reason = "no address"
        var next: UnsafeMutablePointer<addrinfo>? = list
        while let address = next {
            next = address.pointee.ai_next
            let fd = socket(address.pointee.ai_family,
                            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            if fd < 0 { reason = errnoText(); continue }
            if connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0 {
                guard errno == EINPROGRESS else { reason = errnoText(); close(fd); continue }
                do throws(KVCacheClientError) {
                    _ = try wait(fd, events: POLLOUT, deadline: deadline)
                } catch {
                    close(fd)
                    throw .connectionFailed("cannot connect to \(host):\(port): \(error == .timedOut ? "timed out" : "\(error)")")
                }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                if error != 0 { reason = String(cString: strerror(error)); close(fd); continue }
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return fd
        }
        throw .connectionFailed("cannot connect to \(host):\(port): \(reason)")
    }

    /// True when the server has closed the connection (its `timeout`, a
    /// restart, `QUIT`) or sent bytes nobody asked for; such a connection
    /// must not carry another command.
    var isStale: Bool {
        guard start == input.count else { return true }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return false }
        return true  // readable between requests: EOF, an error, or stray bytes
    }

    /// Sends `request` (encoded commands) and reads `count` replies, writing
    /// and reading together. `timeout` bounds each wait for progress.
    func exchange(_ request: [UInt8], replies count: Int, timeout: Duration?) throws(KVCacheClientError) -> [RESPValue] {
        var replies: [RESPValue] = []
        replies.reserveCapacity(count)
        var sent = 0
        while true {
            while sent < request.count {
                let n = request.withUnsafeBytes { raw in
                    send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                }
                if n > 0 { sent += n; continue }
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                throw Connection.failure(errno)
            }
            try parse(into: &replies, count: count)
            if replies.count == count { return replies }
            let deadline = timeout.map { ContinuousClock.now + $0 }
            _ = try Connection.wait(fd, events: sent < request.count ? POLLIN | POLLOUT : POLLIN, deadline: deadline)
            try receive()
        }
    }

    /// Appends what the socket holds to `input`.
    private func receive() throws(KVCacheClientError) {
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                input.append(contentsOf: scratch[..<n])
                return
            }
            if n == 0 { throw .connectionClosed }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return }
            throw Connection.failure(errno)
        }
    }

    /// Moves complete replies from `input` to `replies`, up to `count`.
    private func parse(into replies: inout [RESPValue], count: Int) throws(KVCacheClientError) {
        while replies.count < count {
            var index = start
            let value: RESPValue?
            do throws(ReplyParser.Malformed) {
                value = try ReplyParser.parse(input, index: &index)
            } catch {
                throw .protocolViolation(error.description)
            }
            guard let value else { break }
            replies.append(value)
            start = index
        }
        if start == input.count {
            input.removeAll(keepingCapacity: input.count <= 1 << 20)
            start = 0
        } else if start >= 1 << 16 && start * 2 >= input.count {
            input.removeFirst(start)
            start = 0
        }
    }

    /// Waits until `fd` is ready for one of `events`.
    private static func wait(_ fd: Int32, events: Int32, deadline: ContinuousClock.Instant?) throws(KVCacheClientError) -> Int16 {
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                let (seconds, attoseconds) = left.components
                let total = max(0, seconds) * 1000 + max(0, attoseconds) / 1_000_000_000_000_000
                milliseconds = Int32(clamping: left <= .zero ? 0 : max(1, total))
            }
            var poller = pollfd(fd: fd, events: Int16(events), revents: 0)
            let n = poll(&poller, 1, milliseconds)
            if n > 0 { return poller.revents }
            if n == 0 { throw .timedOut }
            if errno != EINTR { throw failure(errno) }
        }
    }

    private static func failure(_ code: Int32) -> KVCacheClientError {
        switch code {
        case EPIPE, ECONNRESET, ENOTCONN, ECONNABORTED: return .connectionClosed
        default: return .connectionFailed(String(cString: strerror(code)))
        }
    }
}

private func errnoText() -> String { String(cString: strerror(errno)) }
