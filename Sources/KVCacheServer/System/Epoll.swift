#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The poller: the only file that touches `epoll_event`. A registration is
/// identified by a 64-bit token (descriptor in the low half, a generation in
/// the high half), so an event for a descriptor since closed and reused is
/// recognised as stale by its owner.
final class Epoll {
    struct Interest: OptionSet {
        let rawValue: UInt32
        static let readable = Interest(rawValue: kv_EPOLLIN)
        static let writable = Interest(rawValue: kv_EPOLLOUT)
    }

    /// One readiness report. Errors and hang-ups read as both readable and
    /// writable, so the handler meets the error where it reads or writes.
    struct Event {
        let token: UInt64
        let readable: Bool
        let writable: Bool
    }

    private let fd: Int32
    private var events: [epoll_event]

    init(maxEvents: Int = 1024) throws(SystemError) {
        fd = try Posix.must("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        events = [epoll_event](repeating: epoll_event(), count: maxEvents)
    }

    deinit { Posix.close(fd) }

    func add(_ descriptor: Int32, token: UInt64, interest: Interest) throws(SystemError) {
        try control(EPOLL_CTL_ADD, descriptor, token, interest)
    }

    func modify(_ descriptor: Int32, token: UInt64, interest: Interest) throws(SystemError) {
        try control(EPOLL_CTL_MOD, descriptor, token, interest)
    }

    func remove(_ descriptor: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(fd, EPOLL_CTL_DEL, descriptor, &event)
    }

    private func control(_ op: Int32, _ descriptor: Int32, _ token: UInt64, _ interest: Interest) throws(SystemError) {
        var event = epoll_event()
        event.events = interest.rawValue
        event.data.u64 = token
        _ = try Posix.must("epoll_ctl") { epoll_ctl(fd, op, descriptor, &event) }
    }

    /// Waits up to `timeoutMilliseconds` (-1: forever) and calls `body` for each event.
    func wait(timeoutMilliseconds: Int32, _ body: (Event) -> Void) throws(SystemError) {
        let capacity = Int32(events.count)
        let ready = try events.withUnsafeMutableBufferPointer { buffer throws(SystemError) in
            try Posix.must("epoll_wait") { epoll_wait(fd, buffer.baseAddress, capacity, timeoutMilliseconds) }
        }
        for i in 0..<Int(ready) {
            let raw = events[i]
            let flags = raw.events
            let failed = flags & (kv_EPOLLERR | kv_EPOLLHUP) != 0
            body(Event(token: raw.data.u64,
                       readable: failed || flags & (kv_EPOLLIN | kv_EPOLLRDHUP) != 0,
                       writable: failed || flags & kv_EPOLLOUT != 0))
        }
    }
}
