#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// Makes every thread allocate from glibc's main arena (`M_ARENA_MAX` 1);
/// call it before any thread starts (a thread takes its arena at its
/// first allocation; the limit stops new arenas, it does not merge old
/// ones). glibc gives the writer thread an arena of its own, and
/// `malloc_trim` never trims the free top of an arena other than the main
/// one (a thread arena's top shrinks on a free only past the trim
/// threshold, which rises to twice the largest mapped block freed, up to
/// 64 MiB): after a 1M-key fill the writer's arena kept 20-25 MiB
/// resident, nearly all of it free (`malloc_info`). Sharing the arena's
/// lock cost nothing measurable (docs/decisions.md, "One malloc arena").
public func useOneMallocArena() {
    _ = mallopt(M_ARENA_MAX, 1)
}

/// A failed system call: the function's name and errno.
public struct SystemError: Error, CustomStringConvertible, Equatable {
    public let function: String
    public let errno: Int32

    public var description: String { "\(function): \(String(cString: strerror(errno)))" }
}

/// The result of a non-blocking call.
enum IOResult<T> {
    case done(T)
    case wouldBlock
}

/// Every system call goes through here: retry on EINTR, report EAGAIN as
/// `.wouldBlock`, stop on EBADF/EFAULT (our bugs), throw anything else.
enum Posix {
    @inline(never)
    static func call(_ function: String, _ body: () -> Int) throws(SystemError) -> IOResult<Int> {
        while true {
            let result = body()
            if result >= 0 { return .done(result) }
            let err = errno
            switch err {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            case EBADF, EFAULT: preconditionFailure("\(function) failed with \(String(cString: strerror(err))): a descriptor bug")
            default: throw SystemError(function: function, errno: err)
            }
        }
    }

    /// Like `call`, for calls that never return EAGAIN.
    @inline(never)
    static func must(_ function: String, _ body: () -> Int32) throws(SystemError) -> Int32 {
        while true {
            let result = body()
            if result >= 0 { return result }
            let err = errno
            if err == EINTR { continue }
            if err == EBADF || err == EFAULT {
                preconditionFailure("\(function) failed with \(String(cString: strerror(err))): a descriptor bug")
            }
            throw SystemError(function: function, errno: err)
        }
    }

    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try call("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try call("write") { Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
    }

    static func close(_ fd: Int32) {
        // Linux releases the descriptor even when close reports EINTR: never retry.
        _ = Glibc.close(fd)
    }

    /// Replaces the file at `path` with `bytes` so that a crash leaves the
    /// old file or the new one: written whole to `temporary` (mode 0600),
    /// fsynced, renamed over `path`, then `directory` fsynced when given.
    /// - Returns: 0, or the errno of the step that failed (the temporary
    ///   file is then removed and `path` left as it was).
    static func replaceFile(_ path: String, with bytes: [UInt8], temporary: String, syncing directory: String?) -> Int32 {
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return errno }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let failure = n < 0 ? errno : EIO
                close(fd)
                unlink(temporary)
                return failure
            }
            written += n
        }
        let synced = fsync(fd) == 0
        let failure = errno
        close(fd)
        guard synced, rename(temporary, path) == 0 else {
            let reason = synced ? errno : failure
            unlink(temporary)
            return reason
        }
        if let directory { syncDirectory(directory) }
        return 0
    }

    /// fsyncs a directory (a file was created, renamed or removed in it).
    static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
    }

    /// Accepts one connection, non-blocking and close-on-exec.
    /// - Returns: the descriptor and the peer's address, or `.wouldBlock`.
    static func accept(_ fd: Int32) throws(SystemError) -> IOResult<(Int32, sockaddr_storage)> {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try withUnsafeMutablePointer(to: &address) { pointer throws(SystemError) in
            try call("accept4") {
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Int(accept4(fd, $0, &length, kv_SOCK_NONBLOCK | kv_SOCK_CLOEXEC))
                }
            }
        }
        switch result {
        case .wouldBlock: return .wouldBlock
        case .done(let client): return .done((Int32(client), address))
        }
    }

    static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = try must("fcntl") { fcntl(fd, F_GETFL) }
        _ = try must("fcntl") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(SystemError) {
        var value = value
        _ = try must("setsockopt") {
            setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }
}
