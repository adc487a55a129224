import Foundation
import RESP

/// Where ACL meets the command path: the check before a command runs
/// (Redis's ACLCheckAllPerm in processCommand, again at EXEC and in
/// scripts), authentication, ACL LOG, users from the configuration and the
/// aclfile, and this server's cache rights.
extension Server {
    /// Where a refused command was: Redis's ACL LOG contexts.
    enum ACLContext: String {
        case toplevel, multi, lua
    }

    /// Why `user` may not run this command, as Redis finds it: the command
    /// itself if no selector allows it, else the last key or channel no
    /// selector allowed (ACLCheckAllUserCommandPerm).
    /// - Returns: nil when allowed; else the reason and the argument at fault.
    func aclDenial(_ user: ACLUser, _ entry: ACLCommandEntry, _ args: Arguments) -> (ACLSelector.Denial, Int)? {
        var relevant: (ACLSelector.Denial, Int) = (.command, 0)
        for selector in user.selectors {
            guard let denial = selector.check(entry, args) else { return nil }
            if denial.0 > relevant.0 || (denial.0 == relevant.0 && denial.1 > relevant.1) { relevant = denial }
        }
        return relevant
    }

    /// Redis's getAclErrorMessage (verbose for ACL DRYRUN).
    static func aclMessage(_ denial: ACLSelector.Denial, _ entry: ACLCommandEntry, _ object: String, verbose: Bool) -> String {
        switch denial {
        case .command, .auth: return "this user has no permissions to run the '\(entry.fullName)' command"
        case .key:
            return verbose ? "this user has no permissions to access the '\(object)' key"
                : "this user has no permissions to access one of the keys used as arguments"
        case .channel:
            return verbose ? "this user has no permissions to access the '\(object)' channel"
                : "this user has no permissions to access one of the channels used as arguments"
        }
    }

    /// The ACL check before a command runs, for a user with restrictions
    /// (the default user with every right never gets here). Logs a refusal
    /// to ACL LOG and returns the error to answer.
    func aclRefusal(_ user: ACLUser, _ command: Command, _ args: Arguments, _ connection: Connection,
                    context: ACLContext) -> ReplyError? {
        let entry = command.aclEntry.resolve(args)
        if let (denial, index) = aclDenial(user, entry, args) {
            let object = denial == .command ? entry.fullName : args[index].text
            logACLDenial(connection, user: user.name, reason: denial, context: context, object: object)
            switch context {
            case .toplevel: return ReplyError("NOPERM " + Self.aclMessage(denial, entry, object, verbose: false))
            case .multi where connection.runningExec:
                let reason = switch denial {
                case .command: "no permission to execute the command or subcommand"
                case .key: "no permission to touch the specified keys"
                case .channel: "no permission to access one of the channels used as arguments"
                case .auth: "no permission"
                }
                return ReplyError("NOPERM ACLs rules changed between the moment the transaction was accumulated and the "
                    + "EXEC call. This command is no longer allowed for the following reason: \(reason)")
            case .multi: return ReplyError("NOPERM " + Self.aclMessage(denial, entry, object, verbose: false))
            case .lua:
                let text = switch denial {
                case .command: "The user executing the script can't run this command or subcommand"
                case .key: "The user executing the script can't access at least one of the keys mentioned in the command arguments"
                case .channel: "The user executing the script can't publish to the channel mentioned in the command"
                case .auth: "The user executing the script is lacking the permissions for the command"
                }
                return ReplyError("ERR " + text)
            }
        }
        if user.cachePatterns != nil, let refusal = cacheRefusal(user, command, args, connection) { return refusal }
        return nil
    }

    /// Whether the client's user may read any key with this command (SORT's
    /// BY and GET read keys no argument names): Redis's
    /// ACLUserCheckCmdWithUnrestrictedKeyAccess.
    func hasFullReadAccess(_ connection: Connection, _ args: Arguments) -> Bool {
        guard let user = connection.user, !user.unrestricted, let command = commands.lookup(args[0]) else { return true }
        let entry = command.aclEntry.resolve(args)
        return user.selectors.contains { $0.hasFullReadAccess(entry, args) }
    }

    func logACLDenial(_ connection: Connection, user: String, reason: ACLSelector.Denial, context: ACLContext,
                      object: String) {
        let reasonName = switch reason {
        case .command: "command"
        case .key: "key"
        case .channel: "channel"
        case .auth: "auth"
        }
        acl.addLogEntry(reason: reasonName, context: context.rawValue, object: object, username: user,
                        clientInfo: connection.infoLine(now: Self.nowMilliseconds()), now: Self.nowMilliseconds(),
                        maxLength: config.aclLogMaxLen)
    }

    // MARK: Cache rights (this server's addition)

    /// Commands that reach another cache, and which arguments name it.
    private static let cacheArguments: [String: @Sendable (Arguments) -> [Int]] = [
        "select": { _ in [1] },
        "move": { _ in [2] },
        "swapdb": { _ in [1, 2] },
        "copy": { args in
            (3..<max(3, args.count - 1)).filter { args[$0].lowercasedText == "db" }.map { $0 + 1 }
        },
    ]
    /// Commands that see every cache or every client: refused to a user
    /// confined to some caches (README, "Security").
    private static let serverWide: Set<String> = [
        "flushall", "monitor", "slowlog", "debug", "shutdown", "client|list", "client|kill", "config|set",
        "config|rewrite", "acl|setuser", "acl|deluser", "acl|getuser", "acl|list", "acl|users", "acl|log", "acl|load",
        "acl|save", "acl|dryrun"]

    /// The refusal of a command by a user confined to some caches: a cache
    /// it names, or the connection's cache, is not one of the user's; or
    /// the command sees every cache or client.
    private func cacheRefusal(_ user: ACLUser, _ command: Command, _ args: Arguments, _ connection: Connection) -> ReplyError? {
        let entry = command.aclEntry.resolve(args)
        if Self.serverWide.contains(entry.fullName) || Self.serverWide.contains(command.aclEntry.fullName) {
            return ReplyError("NOPERM this user is confined to some caches and may not run the '\(entry.fullName)' command")
        }
        if let positions = Self.cacheArguments[command.name] {
            for i in positions(args) where i < args.count {
                guard let name = try? registry.cacheName(selecting: args[i]) else { continue }
                if !user.mayUse(cache: name) { return Self.cacheDenied(name) }
            }
            if command.name == "select" { return nil }
        }
        // Anything else runs in the connection's cache.
        if !user.mayUse(cache: connection.cache.name) && entry.categories & ACLCategory.mask(["connection"]) == 0 {
            return Self.cacheDenied(connection.cache.name)
        }
        return nil
    }

    static func cacheDenied(_ name: String) -> ReplyError {
        ReplyError("NOPERM this user has no permissions to access the '\(name)' cache")
    }

    // MARK: Authentication

    /// True when `connection` must authenticate before running most commands
    /// (Redis's authRequired: its starting user has a password or is off).
    func authRequired(_ connection: Connection) -> Bool {
        guard !connection.authenticated else { return false }
        let start = startingUser(forLocalPort: connection.localPort)
        return !start.nopass || !start.enabled
    }

    /// The user a new connection starts as: the listener's (`listener-user`) or `default`.
    func startingUser(forLocalPort port: Int) -> ACLUser {
        if let name = config.listenerUsers[port], let user = acl.user(name) { return user }
        return acl.defaultUser
    }

    /// Sets a new connection's user and whether it needs AUTH.
    func assignStartingUser(_ connection: Connection) {
        let user = startingUser(forLocalPort: connection.localPort)
        connection.user = user
        connection.authenticated = user.nopass && user.enabled
        connection.parser.limits.unauthenticated = !connection.authenticated
        if connection.authenticated, let name = user.defaultCache, let cache = try? registry.cache(named: name) {
            connection.cache = cache
        }
    }

    /// Checks credentials (Redis's ACLAuthenticateUser): the user exists,
    /// is on, and the password is one of its own (any with nopass). On a
    /// match the connection runs as that user, in its default cache if it
    /// has one; a mismatch is counted, logged to ACL LOG (reason `auth`),
    /// and counts against the client's address (`auth-max-failures`).
    /// - Throws: `ReplyError.wrongPass`, or the refusal of an address over its bound.
    func authenticate(_ connection: Connection, user name: [UInt8], password: [UInt8]) throws(ReplyError) {
        let now = Self.nowMilliseconds()
        let address = connection.peerHost
        let bounded = config.authMaxFailures > 0 && connection.fd >= 0
            && !(config.authFailureExemptLoopback && connection.peerIsLoopback)
        if bounded, let record = acl.failures[address] {
            let windowEnd = record.since + Int64(config.authFailureWindow) * 1000
            if now >= windowEnd {
                acl.failures[address] = nil
            } else if record.count >= config.authMaxFailures {
                stats.authFailures += 1
                throw ReplyError("ERR too many failed authentication attempts from this address; "
                    + "try again in \((windowEnd - now + 999) / 1000) seconds")
            }
        }
        let userName = String(decoding: name, as: UTF8.self)
        guard let user = acl.user(userName), user.enabled, user.accepts(password: password) else {
            stats.authFailures += 1
            logACLDenial(connection, user: userName, reason: .auth,
                         context: connection.transaction != nil ? .multi : .toplevel, object: "AUTH")
            if bounded {
                var record = acl.failures[address] ?? (now, 0)
                record.count += 1
                acl.failures[address] = record
            }
            logger.verbose("Failed AUTH from \(connection.peer)")
            throw .wrongPass
        }
        connection.authenticated = true
        connection.user = user
        connection.parser.limits.unauthenticated = false
        if let name = user.defaultCache {
            connection.cache = try registry.cache(named: name)
        }
    }

    // MARK: Users at start-up

    /// Loads the users of the configuration's `user` lines or of the
    /// aclfile, then `requirepass` (Redis's ACLLoadUsersAtStartup).
    /// - Throws: `ConfigError` for a bad rule, a bad file, or both sources at once.
    func loadUsersAtStartup() throws {
        if !config.requirePass.isEmpty { setDefaultPassword(config.requirePass) }
        if !config.aclUsers.isEmpty && !config.aclFile.isEmpty {
            throw ConfigError("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. "
                + "This setup is very likely to lead to configuration errors and security holes, please define either an "
                + "ACL file or declare users directly in your redis.conf, but not both.")
        }
        var seen = Set<String>()
        for line in config.aclUsers {
            let name = line[0]
            guard seen.insert(name).inserted else { throw ConfigError("Duplicate user '\(name)' found") }
            do {
                try ACLRegistry.checkName(name)
                // As Redis's ACLLoadConfiguredUsers: `default` is reset first, others start new.
                let base = ACLUser(name: name, allChannels: pubsubDefaultAll)
                if name == "default" { try base.apply("reset", allChannels: pubsubDefaultAll) }
                acl.store(try ACLRegistry.build(base, rules: Array(line.dropFirst()), allChannels: pubsubDefaultAll))
            } catch {
                throw ConfigError("Error in user declaration '\(name)': \(error.text)")
            }
        }
        if !config.aclFile.isEmpty {
            if FileManager.default.fileExists(atPath: config.aclFilePath) {
                if let problem = loadACLFile() { throw ConfigError("Aborting Redis startup because of ACL errors: \(problem)") }
            } else {
                logger.warning("The ACL file \(config.aclFilePath) does not exist yet: it will be written by ACL SAVE")
            }
        }
    }

    var pubsubDefaultAll: Bool { config.aclPubsubDefault == "allchannels" }

    /// `requirepass`: the default user's password (Redis's ACLUpdateDefaultUserPassword).
    func setDefaultPassword(_ password: String) {
        let user = acl.defaultUser
        try? user.apply("resetpass", allChannels: true)
        try? user.apply(password.isEmpty ? "nopass" : ">" + password, allChannels: true)
    }

    /// ACL LOAD: the aclfile replaces every user, all or nothing; clients
    /// of users that went away or changed are closed (the default user's stay).
    /// - Returns: nil on success, else Redis's error text.
    @discardableResult
    func loadACLFile(current: Connection? = nil) -> String? {
        let text: String
        do {
            text = try String(contentsOfFile: config.aclFilePath, encoding: .utf8)
        } catch {
            return "Error loading ACLs, opening file '\(config.aclFilePath)': \(error.localizedDescription)"
        }
        let users: [ACLUser]
        do {
            users = try acl.parseFile(text, file: config.aclFile, allChannels: pubsubDefaultAll)
        } catch {
            return error.text
        }
        let dropped = acl.replaceAll(with: users)
        closeClients(of: dropped, current: current)
        return nil
    }

    /// Closes every client authenticated as one of `users`; `current`
    /// (the client that asked) after its reply, as Redis's freeClientAsync.
    func closeClients(of users: [ACLUser], current: Connection? = nil) {
        guard !users.isEmpty else { return }
        for connection in allConnections where users.contains(where: { $0 === connection.user }) {
            drop(connection, current: current)
        }
    }

    private func drop(_ connection: Connection, current: Connection?) {
        if connection === current {
            connection.closeAfterReply = true
        } else {
            close(connection)
        }
    }

    /// Closes the Pub/Sub clients of `user` whose subscriptions its new
    /// channel rights no longer allow (Redis's ACLKillPubsubClientsIfNeeded).
    func closeSubscribersIfRevoked(_ user: ACLUser, current: Connection?) {
        for connection in allConnections where connection.user === user && connection.subscriptions.active {
            let s = connection.subscriptions
            func allowed(_ names: [[UInt8]], _ isPattern: Bool) -> Bool {
                names.allSatisfy { name in user.selectors.contains { $0.channelAllowed(name, isPattern: isPattern) } }
            }
            if !(allowed(s.channels.names, false) && allowed(s.shardChannels.names, false) && allowed(s.patterns.names, true)) {
                drop(connection, current: current)
            }
        }
    }
}
