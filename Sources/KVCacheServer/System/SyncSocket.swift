#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// A TCP connection used synchronously, each step bounded by a timeout
/// (Redis's connSyncWrite and connSyncReadLine, for MIGRATE): the caller
/// blocks, as Redis's MIGRATE blocks its event loop.
final class SyncSocket {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var detached = false

    private init(fd: Int32) { self.fd = fd }

    deinit { if !detached { close(fd) } }

    /// Gives up the socket (still non-blocking) and the bytes read past
    /// what was asked for: the caller owns the descriptor from now on.
    func detach() -> (fd: Int32, buffered: [UInt8]) {
        detached = true
        defer { buffer.removeAll() }
        return (fd, buffer)
    }

    /// Connects to `host` (a name or a numeric address) and `port`
    /// within `timeout` milliseconds; nil when the name does not resolve
    /// or the connection times out.
    /// - Parameter source: the local address to connect from (Redis's
    ///   bind-source-addr), for a destination of its family.
    static func connect(host: String, port: Int, timeout: Int, source: String? = nil) -> SyncSocket? {
        let from = source.flatMap { $0.isEmpty ? nil : SocketAddress(host: $0, port: 0) }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(found) }
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            next = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | kv_SOCK_NONBLOCK | kv_SOCK_CLOEXEC, 0)
            guard fd >= 0 else { continue }
            let socket = SyncSocket(fd: fd)
            if let from, from.domain == info.pointee.ai_family,
               from.withSockAddr({ Glibc.bind(fd, $0, $1) }) != 0 { continue }
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return socket }
            // As Redis's connBlockingConnect: done once the socket polls
            // ready; a refused connection shows at the first write.
            if errno == EINPROGRESS && socket.wait(POLLOUT, milliseconds: timeout) { return socket }
        }
        return nil
    }

    /// Waits until the socket is ready for `events` (or has an error the
    /// next call reports); false on a timeout.
    private func wait(_ events: Int32, milliseconds: Int) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(events), revents: 0)
        while true {
            let ready = poll(&entry, 1, Int32(clamping: milliseconds))
            if ready < 0 && errno == EINTR { continue }
            return ready > 0
        }
    }

    /// Sends all of `bytes`, each wait at most `timeout` milliseconds.
    func write(_ bytes: [UInt8], timeout: Int) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                sent += n
            } else if n < 0 && (errno == EAGAIN || errno == EINTR) {
                guard wait(POLLOUT, milliseconds: timeout) else { return false }
            } else {
                return false
            }
        }
        return true
    }

    /// The next line without its CRLF, each wait at most `timeout`
    /// milliseconds; nil on a timeout, an error or the peer's close.
    func readLine(timeout: Int) -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                var line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                if line.last == 0x0D { line.removeLast() }
                return line
            }
            guard receive(timeout: timeout) else { return nil }
        }
    }

    /// Exactly `count` bytes, each wait at most `timeout` milliseconds;
    /// nil on a timeout, an error or the peer's close.
    func read(count: Int, timeout: Int) -> [UInt8]? {
        while buffer.count < count {
            guard receive(timeout: timeout) else { return nil }
        }
        let bytes = Array(buffer[..<count])
        buffer.removeFirst(count)
        return bytes
    }

    /// The bytes up to `mark` (which is consumed and not returned), each
    /// wait at most `timeout` milliseconds (Redis's diskless transfer ends
    /// its payload with a 40-byte mark); nil on a timeout, an error or
    /// the peer's close. `progress` is told the bytes received so far.
    func read(until mark: [UInt8], timeout: Int, progress: (Int) -> Void = { _ in }) -> [UInt8]? {
        var searched = 0
        while true {
            if buffer.count >= mark.count {
                var at = max(0, searched - mark.count + 1)
                while at + mark.count <= buffer.count {
                    if buffer[at] == mark[0] && buffer[at..<at + mark.count].elementsEqual(mark) {
                        let bytes = Array(buffer[..<at])
                        buffer.removeFirst(at + mark.count)
                        return bytes
                    }
                    at += 1
                }
                searched = buffer.count
            }
            guard receive(timeout: timeout) else { return nil }
            progress(buffer.count)
        }
    }

    /// Receives what is there into the buffer, waiting for it at most
    /// `timeout` milliseconds; false on a timeout, an error or the close.
    private func receive(timeout: Int) -> Bool {
        while true {
            let n = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 65536) { chunk in
                let n = recv(fd, chunk.baseAddress, chunk.count, 0)
                if n > 0 { buffer.append(contentsOf: chunk[..<n]) }
                return n
            }
            if n > 0 { return true }
            if n < 0 && (errno == EAGAIN || errno == EINTR) {
                guard wait(POLLIN, milliseconds: timeout) else { return false }
            } else {
                return false
            }
        }
    }
}
