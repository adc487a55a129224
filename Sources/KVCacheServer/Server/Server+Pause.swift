import RESP

/// CLIENT PAUSE and UNPAUSE (Redis's pauseClients): for a while, every
/// client's commands (ALL), or its writes only (WRITE: write commands,
/// an EXEC holding one, and commands that may replicate), wait in the
/// order they came (Redis's BLOCKED_POSTPONE); the clients are served
/// again once the pause ends or CLIENT UNPAUSE lifts it.
extension Server {
    enum PauseType: Int, Comparable {
        case off = 0, write = 1, all = 2
        static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }

    /// Pauses clients until `end` (milliseconds since 1970); a pause in
    /// force keeps the stricter type and the later end.
    func pauseClients(until end: Int64, type: PauseType) {
        if pauseType == .off {
            pauseType = type
            pauseEnd = end
        } else {
            pauseType = max(pauseType, type)
            pauseEnd = max(pauseEnd, end)
        }
        // As Redis: no key is expired (lazily or by the sweep) during a pause.
        holdExpiryIfNeeded()
        if pauseEnd <= Self.nowMilliseconds() { unpauseClients() }
    }

    /// Ends the pause; the postponed clients run their commands, in order.
    func unpauseClients() {
        pauseType = .off
        pauseEnd = 0
        holdExpiryIfNeeded()
        let waiting = postponedClients
        postponedClients = []
        for client in waiting where !client.closed {
            guard let args = client.postponed else { continue }
            client.postponed = nil
            Arguments.withCopy(of: args) { execute($0, for: client) }
            if client.postponed == nil && client.blocked == nil { executeBuffered(client) }
            queueReplies(client)
        }
    }

    /// Whether `command` must wait while clients are paused.
    func isPaused(_ command: Command, _ connection: Connection, _ args: Arguments) -> Bool {
        // The master's stream is never held; a shutdown waiting for replicas
        // holds writes apart from CLIENT PAUSE (Redis's PAUSE_DURING_SHUTDOWN).
        if connection.isMaster { return false }
        switch max(pauseType, shutdownDeadline != 0 ? .write : .off) {
        case .off: return false
        case .all: return true
        case .write:
            if command.isWrite || command.flags.contains("may_replicate") { return true }
            // EVAL, EVALSHA and FCALL may write unless their script says
            // no-writes (Redis's getCommandFlags: its command flags then).
            if ["eval", "evalsha", "fcall"].contains(command.name) { return scripting.mayWrite(command.name, args) }
            return command.isExec && queuedWrites(connection)
        }
    }

    /// The clients whose command waits for the pause to end: Redis counts
    /// them in INFO's blocked_clients (BLOCKED_POSTPONE is a block).
    var postponedCount: Int { postponedClients.count { !$0.closed && $0.postponed != nil } }

    /// Holds `connection`'s command until the pause ends.
    func postpone(_ connection: Connection, _ args: Arguments) {
        connection.postponed = args.copies
        postponedClients.append(connection)
    }

    /// Ends a pause whose time has come (called once per loop iteration).
    func checkPauseEnd(now: Int64) {
        if pauseType != .off && now >= pauseEnd { unpauseClients() }
    }
}
