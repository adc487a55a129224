#if canImport(Glibc)
import Glibc
#endif

/// Redis's log levels, from most to least verbose.
public enum LogLevel: String, Sendable, Comparable {
    case debug, verbose, notice, warning, nothing

    var rank: Int {
        switch self { case .debug: 0; case .verbose: 1; case .notice: 2; case .warning: 3; case .nothing: 4 }
    }

    /// The mark Redis prints for the level.
    var mark: String {
        switch self { case .debug: "."; case .verbose: "-"; case .notice: "*"; case .warning, .nothing: "#" }
    }

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
}

/// Writes log lines in Redis's format, `pid:M 30 Nov 2026 09:20:07.123 * text`,
/// to standard output or a file (opened for appending).
public final class Logger: @unchecked Sendable {
    public var level: LogLevel
    private let fd: Int32
    private let pid = getpid()

    /// - Throws: `ConfigError` when the log file cannot be opened.
    public init(level: LogLevel, path: String) throws {
        self.level = level
        if path.isEmpty {
            fd = STDOUT_FILENO
        } else {
            let opened = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            guard opened >= 0 else {
                throw ConfigError("can't open the log file \(path): \(String(cString: strerror(errno)))")
            }
            fd = opened
        }
    }

    deinit { if fd != STDOUT_FILENO { close(fd) } }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard level >= self.level, self.level != .nothing else { return }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        localtime_r(&seconds, &parts)
        var stamp = [CChar](repeating: 0, count: 64)
        strftime(&stamp, stamp.count, "%d %b %Y %H:%M:%S", &parts)
        let millis = Int(now.tv_nsec / 1_000_000)
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        let stampText = String(decoding: stamp.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let line = "\(pid):M \(stampText).\(ms) \(level.mark) \(message())\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                offset += n
            }
        }
    }

    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }
    public func verbose(_ m: @autoclosure () -> String) { log(.verbose, m()) }
    public func notice(_ m: @autoclosure () -> String) { log(.notice, m()) }
    public func warning(_ m: @autoclosure () -> String) { log(.warning, m()) }
}
