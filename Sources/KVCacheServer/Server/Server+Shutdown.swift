#if canImport(Glibc)
import Glibc
#endif
import CLinux
import RESP
import SQLiteKVCache

/// A clean stop (SIGTERM, SIGINT, SHUTDOWN): stop accepting, write and
/// fsync the log, give clients a bounded moment to take their replies,
/// apply what memory holds to SQLite, close every cache.
extension Server {
    /// Stops the loop after the current iteration; `run()` then shuts down cleanly.
    func requestShutdown() {
        running = false
    }

    func shutdown() {
        for listener in listeners {
            epoll.remove(listener.fd)
            Posix.close(listener.fd)
        }
        listeners.removeAll()
        // Every acknowledged record on disk, then the replies that waited for it.
        persistence.beforeReplies()
        persistence.syncLogNow()
        heldForSync.removeAll()
        // Give clients a bounded moment to take their pending replies.
        let deadline = Self.nowMilliseconds() + 2000
        var waiting = connections.compactMap { $0 }.filter { $0.pendingOutput > 0 }
        while !waiting.isEmpty && Self.nowMilliseconds() < deadline {
            for connection in waiting {
                connection.waitingToWrite = false
                sendReplies(connection)
            }
            waiting = waiting.filter { !$0.closed && $0.pendingOutput > 0 }
            if !waiting.isEmpty { usleep(10_000) }
        }
        for connection in connections.compactMap({ $0 }) { close(connection) }
        persistence.shutdown(seconds: Double(config.shutdownTimeout))
        registry.closeAll()
        logger.notice("kvcache-server is now ready to exit, bye bye...")
    }
}
