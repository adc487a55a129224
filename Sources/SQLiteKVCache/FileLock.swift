#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on a lock file beside a cache file, so that one
/// instance (in this process or another) owns a cache at a time. A separate
/// file, not the database itself: closing any descriptor of the database
/// would drop SQLite's own POSIX locks.
final class FileLock {
    private var fd: Int32

    /// Takes the lock, creating the file (mode 0600) if needed.
    /// - Returns: nil when another owner holds it.
    /// - Throws: the errno text when the file cannot be opened.
    init?(path: String) throws(SQLiteKVCache.Error) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .databaseUnavailable(reason: "cannot open lock file \(path): \(String(cString: strerror(errno)))")
        }
        var rc: Int32
        repeat { rc = flock(fd, LOCK_EX | LOCK_NB) } while rc != 0 && errno == EINTR
        guard rc == 0 else {
            let err = errno
            close(fd)
            if err == EWOULDBLOCK { return nil }
            throw .databaseUnavailable(reason: "cannot lock \(path): \(String(cString: strerror(err)))")
        }
        self.fd = fd
    }

    /// Releases the lock. Idempotent. Unlocked before it is closed: the
    /// lock belongs to the open file, which a child being spawned (another
    /// thread's `posix_spawn`, between its clone and its exec) shares for
    /// a moment, so closing alone left it held until the child's exec, and
    /// an open right after the close found it taken (a flaky test in CI).
    func release() {
        guard fd >= 0 else { return }
        flock(fd, LOCK_UN)
        close(fd)
        fd = -1
    }

    deinit { release() }
}
