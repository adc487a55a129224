#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// SIGTERM and SIGINT delivered as readable bytes on a descriptor
/// (signalfd), so the event loop sees them as ordinary events.
final class SignalSource {
    let fd: Int32

    /// Blocks `signals` for the process's threads and opens a signalfd for them.
    init(signals: [Int32]) throws(SystemError) {
        var mask = sigset_t()
        sigemptyset(&mask)
        for signal in signals { sigaddset(&mask, signal) }
        _ = try Posix.must("pthread_sigmask") { pthread_sigmask(SIG_BLOCK, &mask, nil) }
        fd = try Posix.must("signalfd") { signalfd(-1, &mask, Int32(SFD_NONBLOCK | SFD_CLOEXEC)) }
    }

    deinit { Posix.close(fd) }

    /// Reads the pending signal numbers.
    func drain() -> [Int32] {
        var received: [Int32] = []
        var info = signalfd_siginfo()
        while true {
            let n = withUnsafeMutableBytes(of: &info) { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard n == MemoryLayout<signalfd_siginfo>.size else { break }
            received.append(Int32(info.ssi_signo))
        }
        return received
    }

    /// Ignores SIGPIPE, so a write to a closed peer returns EPIPE instead.
    static func ignoreBrokenPipe() {
        signal(SIGPIPE, SIG_IGN)
    }
}
