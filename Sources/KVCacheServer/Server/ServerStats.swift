/// Counters INFO reports.
struct ServerStats {
    var totalCommandsProcessed = 0
    var totalConnectionsReceived = 0
    var rejectedConnections = 0
    /// Batches the writer could not apply to SQLite (their changes stay in
    /// memory and are tried again).
    var failedCommits = 0
    var outputLimitDisconnections = 0
    /// Clients closed by maxmemory-clients: INFO's evicted_clients.
    var evictedClients = 0
    /// Failed AUTH (and HELLO AUTH) attempts: INFO's acl_access_denied_auth.
    var authFailures = 0
    var tlsHandshakeFailures = 0
    var errorsByPrefix: [String: Int] = [:]
    var netInputBytes = 0
    var netOutputBytes = 0
    var totalErrorReplies = 0
    /// Errors a replica answered its master's stream with (INFO's
    /// unexpected_error_replies: their replies are dropped).
    var unexpectedErrorReplies = 0
    var keyspaceHits = 0
    var keyspaceMisses = 0
}
