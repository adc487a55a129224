import Foundation

/// One ACL LOG entry (Redis 7.0's ACLLogEntry).
struct ACLLogEntry {
    var count: Int
    /// `command`, `key`, `channel` or `auth`.
    let reason: String
    /// `toplevel`, `multi` or `lua`.
    let context: String
    let object: String
    let username: String
    var createdAt: Int64
    var clientInfo: String
}

/// The server's users (Redis's `Users` rax and `DefaultUser`), ACL LOG, and
/// the bound on failed AUTHs per client address.
final class ACLRegistry {
    /// Every user by name; `default` is always there.
    private(set) var users: [String: ACLUser]
    let defaultUser: ACLUser
    /// Newest first.
    var log: [ACLLogEntry] = []
    /// Failed AUTHs by client address: when the window began, and how many.
    var failures: [String: (since: Int64, count: Int)] = [:]

    init() {
        defaultUser = Self.makeDefault()
        users = ["default": defaultUser]
    }

    /// Redis's default user: on, nopass, every key, channel and command.
    private static func makeDefault() -> ACLUser {
        let user = ACLUser(name: "default", allChannels: true)
        for rule in ["+@all", "~*", "&*", "on", "nopass"] { try? user.apply(rule, allChannels: true) }
        return user
    }

    func user(_ name: String) -> ACLUser? { users[name] }

    /// Adds or replaces a user (the default user keeps its identity: its rules are copied in).
    func store(_ user: ACLUser) {
        if user.name == "default" {
            defaultUser.assign(from: user)
        } else {
            users[user.name] = user
        }
    }

    /// Removes a user; the default user cannot be removed.
    @discardableResult
    func remove(_ name: String) -> ACLUser? {
        guard name != "default" else { return nil }
        return users.removeValue(forKey: name)
    }

    /// Replaces every user but keeps the default user's identity (ACL LOAD).
    /// - Returns: the users dropped or replaced (their clients are closed).
    func replaceAll(with newUsers: [ACLUser]) -> [ACLUser] {
        let old = users.values.filter { $0 !== defaultUser }
        users = ["default": defaultUser]
        let newDefault = newUsers.first { $0.name == "default" } ?? Self.makeDefault()
        defaultUser.assign(from: newDefault)
        for user in newUsers where user.name != "default" { users[user.name] = user }
        return old
    }

    // MARK: Parsing users

    /// Validates a user name as Redis does.
    static func checkName(_ name: String) throws(ACLRuleError) {
        guard !name.utf8.contains(where: { $0 == 32 || $0 == 0 }) else {
            throw .message("Usernames can't contain spaces or null characters")
        }
    }

    /// Joins the words of a selector written across several arguments
    /// (`(~key1`, `+get)`) into one, as Redis's ACLMergeSelectorArguments.
    /// - Throws: `ACLRuleError.message` for an unmatched parenthesis.
    static func mergeSelectors(_ ops: [String]) throws(ACLRuleError) -> [String] {
        var out: [String] = []
        var open: String?
        for op in ops {
            if var selector = open {
                selector += " " + op
                if op.hasSuffix(")") {
                    out.append(selector)
                    open = nil
                } else {
                    open = selector
                }
            } else if op.hasPrefix("(") && !op.hasSuffix(")") {
                open = op
            } else {
                out.append(op)
            }
        }
        if let open { throw .message("Unmatched parenthesis in acl selector starting at '\(open)'.") }
        return out
    }

    /// A user made from its rules (a config `user` line, an aclfile line,
    /// or ACL SETUSER on a copy), all or nothing.
    /// - Throws: `ACLRuleError.message` with Redis's text for the first bad rule.
    static func build(_ base: ACLUser, rules: [String], allChannels: Bool) throws(ACLRuleError) -> ACLUser {
        let user = base.copy()
        for op in try mergeSelectors(rules) {
            do {
                try user.apply(op, allChannels: allChannels)
            } catch {
                throw .message("Error in ACL SETUSER modifier '\(op)': \(error.text)")
            }
        }
        return user
    }

    /// Parses an aclfile's text: `user <name> <rules>` lines, `#` comments
    /// and blank lines ignored. All or nothing.
    /// - Throws: `ACLRuleError.message` naming the line, as Redis's ACLLoadFromFile.
    func parseFile(_ text: String, file: String, allChannels: Bool) throws(ACLRuleError) -> [ACLUser] {
        var parsed: [ACLUser] = []
        var seen = Set<String>()
        var errors: [String] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard words[0] == "user", words.count >= 2 else {
                errors.append("\(file):\(number + 1): should start with user keyword. ")
                continue
            }
            let name = words[1]
            do {
                try Self.checkName(name)
            } catch {
                errors.append("\(file):\(number + 1): \(error.text). ")
                continue
            }
            guard seen.insert(name).inserted else {
                errors.append("WARNING: Duplicate user '\(name)' found on line \(number + 1). ")
                continue
            }
            do {
                parsed.append(try Self.build(ACLUser(name: name, allChannels: allChannels), rules: Array(words.dropFirst(2)),
                                             allChannels: allChannels))
            } catch {
                errors.append("\(file):\(number + 1): \(error.text). ")
            }
        }
        if !errors.isEmpty { throw .message(errors.joined()) }
        return parsed
    }

    /// Every user as aclfile lines, sorted by name (ACL SAVE, ACL LIST).
    var lines: [String] {
        users.keys.sorted().map { users[$0]!.description }
    }

    /// Writes the users to `path` atomically: a temporary file beside it, fsynced, then renamed.
    func save(to path: String) throws {
        let text = lines.map { $0 + "\n" }.joined()
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw ACLRuleError.message("cannot write \(temporary)")
        }
        let fd = open(temporary, O_RDONLY)
        if fd >= 0 { fsync(fd); close(fd) }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw ACLRuleError.message("cannot rename \(temporary) to \(path): \(String(cString: strerror(errno)))")
        }
    }

    // MARK: ACL LOG

    /// Adds an entry, or counts a repeat of a recent one (Redis merges an
    /// entry like one less than 60 seconds old).
    func addLogEntry(reason: String, context: String, object: String, username: String, clientInfo: String,
                     now: Int64, maxLength: Int) {
        if let i = log.firstIndex(where: { $0.reason == reason && $0.context == context && $0.object == object
                && $0.username == username && now - $0.createdAt < 60_000 }) {
            var entry = log.remove(at: i)
            entry.count += 1
            entry.createdAt = now
            entry.clientInfo = clientInfo
            log.insert(entry, at: 0)
        } else {
            log.insert(ACLLogEntry(count: 1, reason: reason, context: context, object: object, username: username,
                                   createdAt: now, clientInfo: clientInfo), at: 0)
        }
        if log.count > maxLength { log.removeLast(log.count - maxLength) }
    }
}
