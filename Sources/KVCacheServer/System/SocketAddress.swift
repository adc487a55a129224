#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// An IPv4 or IPv6 address and port, for listening and for display.
struct SocketAddress: CustomStringConvertible, Sendable {
    enum Family: Sendable { case v4(sockaddr_in), v6(sockaddr_in6) }
    let family: Family

    /// Parses a numeric address ("127.0.0.1", "::1", "0.0.0.0", "*").
    init?(host: String, port: Int) {
        let host = host == "*" ? "0.0.0.0" : host
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            family = .v4(v4)
            return
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            family = .v6(v6)
            return
        }
        return nil
    }

    init?(storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            family = .v4(withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) })
        case AF_INET6:
            family = .v6(withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) })
        default:
            return nil
        }
    }

    var domain: Int32 {
        switch family { case .v4: return AF_INET; case .v6: return AF_INET6 }
    }

    var port: Int {
        switch family {
        case .v4(let a): return Int(UInt16(bigEndian: a.sin_port))
        case .v6(let a): return Int(UInt16(bigEndian: a.sin6_port))
        }
    }

    var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch family {
        case .v4(var a): inet_ntop(AF_INET, &a.sin_addr, &buffer, socklen_t(buffer.count))
        case .v6(var a): inet_ntop(AF_INET6, &a.sin6_addr, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True for 127.0.0.0/8, ::1 and ::ffff:127.x.
    var isLoopback: Bool {
        switch family {
        case .v4(let a): return (UInt32(bigEndian: a.sin_addr.s_addr) >> 24) == 127
        case .v6: return host == "::1" || host.hasPrefix("::ffff:127.")
        }
    }

    var description: String {
        switch family { case .v4: return "\(host):\(port)"; case .v6: return "[\(host)]:\(port)" }
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        switch family {
        case .v4(var a):
            return try withUnsafePointer(to: &a) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .v6(var a):
            return try withUnsafePointer(to: &a) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }
}

extension Posix {
    /// Opens a non-blocking listening TCP socket on `address`.
    static func listen(on address: SocketAddress, backlog: Int32 = 511) throws(SystemError) -> Int32 {
        let fd = try must("socket") { socket(address.domain, Int32(SOCK_STREAM.rawValue) | kv_SOCK_CLOEXEC, 0) }
        do {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            if address.domain == AF_INET6 { try setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
            _ = try must("bind") { address.withSockAddr { Glibc.bind(fd, $0, $1) } }
            _ = try must("listen") { Glibc.listen(fd, backlog) }
            try setNonBlocking(fd)
        } catch let error as SystemError {
            close(fd)
            throw error
        } catch {
            close(fd)
            throw SystemError(function: "listen", errno: EINVAL)
        }
        return fd
    }

    /// The local address a socket is bound to.
    static func localAddress(_ fd: Int32) -> SocketAddress? { address(fd, getsockname) }

    /// The address of a connected socket's peer.
    static func peerAddress(_ fd: Int32) -> SocketAddress? { address(fd, getpeername) }

    private static func address(_ fd: Int32, _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32)
        -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) }
        }
        return rc == 0 ? SocketAddress(storage: storage) : nil
    }
}
