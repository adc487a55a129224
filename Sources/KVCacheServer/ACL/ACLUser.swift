/// One ACL user (Redis 7.0's `user`): on or off, passwords kept as hex
/// SHA-256, a root selector and more selectors, and this server's cache
/// rights (`cache:<pattern>`, `defaultcache:<name>`). A class: connections
/// hold their user, and a change is seen by every one of them at once.
final class ACLUser {
    let name: String
    var enabled = false
    var nopass = false
    /// `sanitize-payload` (true), `skip-sanitize-payload` (false), or neither.
    var sanitizePayload: Bool?
    /// Hex SHA-256 digests, in the order they were added.
    private(set) var passwords: [String] = []
    /// The root selector first, then the others in the order added.
    private(set) var selectors: [ACLSelector]
    /// This server's addition: which caches the user may reach (glob
    /// patterns over cache names, `db3` for `SELECT 3`); nil for all.
    private(set) var cachePatterns: [[UInt8]]?
    /// The cache a connection lands in when it authenticates as this user.
    private(set) var defaultCache: String?
    /// A single flag for the common case: one selector allowing every
    /// command, key and channel, and every cache. Checks then cost nothing.
    private(set) var unrestricted = false

    init(name: String, allChannels: Bool) {
        self.name = name
        self.selectors = [ACLSelector(allChannels: allChannels)]
        refresh()
    }

    /// A copy to change: ACL SETUSER applies its rules to one, and keeps it only if all apply.
    func copy(named: String? = nil) -> ACLUser {
        let other = ACLUser(name: named ?? name, allChannels: false)
        other.enabled = enabled
        other.nopass = nopass
        other.sanitizePayload = sanitizePayload
        other.passwords = passwords
        other.selectors = selectors.map { $0.copy() }
        other.cachePatterns = cachePatterns
        other.defaultCache = defaultCache
        other.refresh()
        return other
    }

    /// Takes every rule and right of `other` (same name).
    func assign(from other: ACLUser) {
        enabled = other.enabled
        nopass = other.nopass
        sanitizePayload = other.sanitizePayload
        passwords = other.passwords
        selectors = other.selectors
        cachePatterns = other.cachePatterns
        defaultCache = other.defaultCache
        refresh()
    }

    private func refresh() {
        let root = selectors[0]
        unrestricted = selectors.count == 1 && root.allCommands && root.allKeys && root.allChannels && cachePatterns == nil
    }

    var root: ACLSelector { selectors[0] }

    // MARK: Rules

    /// Applies one ACL SETUSER rule (Redis's ACLSetUser).
    /// - Parameter allChannels: `acl-pubsub-default` is `allchannels`.
    /// - Throws: `ACLRuleError` with Redis's reason.
    func apply(_ op: String, allChannels: Bool) throws(ACLRuleError) {
        defer { refresh() }
        let lower = op.lowercased()
        switch lower {
        case "on": enabled = true
        case "off": enabled = false
        case "skip-sanitize-payload": sanitizePayload = false
        case "sanitize-payload": sanitizePayload = true
        case "nopass":
            nopass = true
            passwords = []
        case "resetpass":
            nopass = false
            passwords = []
        case "clearselectors":
            selectors.removeSubrange(1...)
        case "reset":
            try apply("resetpass", allChannels: allChannels)
            try selectors[0].apply("resetkeys")
            try selectors[0].apply("resetchannels")
            if allChannels { try selectors[0].apply("allchannels") }
            enabled = false
            sanitizePayload = true
            selectors.removeSubrange(1...)
            try selectors[0].apply("-@all")
            cachePatterns = nil
            defaultCache = nil
        case "allcaches":
            cachePatterns = nil
        case "resetcaches":
            cachePatterns = []
        default:
            if op.hasPrefix(">") {
                nopass = false
                let digest = Self.sha256Hex(Array(op.utf8.dropFirst()))
                if !passwords.contains(digest) { passwords.append(digest) }
            } else if op.hasPrefix("#") {
                let digest = String(op.dropFirst())
                guard Self.isValidHash(digest) else { throw .invalidHash }
                nopass = false
                if !passwords.contains(digest) { passwords.append(digest) }
            } else if op.hasPrefix("<") || op.hasPrefix("!") {
                let digest = op.hasPrefix("<") ? Self.sha256Hex(Array(op.utf8.dropFirst())) : String(op.dropFirst())
                if op.hasPrefix("!") && !Self.isValidHash(digest) { throw .invalidHash }
                guard let i = passwords.firstIndex(of: digest) else { throw .noSuchPassword }
                passwords.remove(at: i)
            } else if op.hasPrefix("(") && op.hasSuffix(")") && op.count >= 2 {
                let selector = ACLSelector(allChannels: allChannels)
                let inner = op.dropFirst().dropLast()
                for word in inner.split(separator: " ", omittingEmptySubsequences: true) {
                    try selector.apply(String(word))
                }
                selectors.append(selector)
            } else if lower.hasPrefix("cache:") {
                let pattern = Array(lower.utf8.dropFirst(6))
                guard !pattern.isEmpty else { throw .syntax }
                var list = cachePatterns ?? []
                if !list.contains(pattern) { list.append(pattern) }
                cachePatterns = list
            } else if lower.hasPrefix("defaultcache:") {
                let cache = String(lower.dropFirst(13))
                guard !cache.isEmpty else { throw .syntax }
                defaultCache = cache
            } else {
                try selectors[0].apply(op)
            }
        }
    }

    // MARK: Passwords

    /// Whether `password` is one of the user's (any password with `nopass`),
    /// compared digest to digest with CRYPTO_memcmp.
    func accepts(password: [UInt8]) -> Bool {
        if nopass { return true }
        let digest = Self.sha256Hex(password)
        var match = false
        for stored in passwords where Digest.constantTimeEqual(Array(stored.utf8), Array(digest.utf8)) {
            match = true
        }
        return match
    }

    static func sha256Hex(_ bytes: [UInt8]) -> String { Digest.hex(Digest.sha256(bytes)) }

    static func isValidHash(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    // MARK: Caches

    /// Whether the user may use the cache named `name` (`db3` for `SELECT 3`).
    func mayUse(cache name: String) -> Bool {
        guard let cachePatterns else { return true }
        let bytes = Array(name.utf8)
        return cachePatterns.contains { globMatch($0, bytes) }
    }

    // MARK: Description

    /// The user's flags as ACL GETUSER lists them.
    var flagNames: [String] {
        var flags = [enabled ? "on" : "off"]
        if nopass { flags.append("nopass") }
        if sanitizePayload == false { flags.append("skip-sanitize-payload") }
        if sanitizePayload == true { flags.append("sanitize-payload") }
        return flags
    }

    /// This server's cache rules, as ACL LIST and ACL SAVE write them (empty for all caches).
    var cacheRules: [String] {
        var rules: [String] = []
        if let cachePatterns {
            rules.append("resetcaches")
            rules += cachePatterns.map { "cache:" + String(decoding: $0, as: UTF8.self) }
        }
        if let defaultCache { rules.append("defaultcache:" + defaultCache) }
        return rules
    }

    /// The ACL LIST line (Redis's ACLDescribeUser), and ACL SAVE's.
    var description: String {
        var parts = ["user", name] + flagNames
        parts += passwords.map { "#" + $0 }
        parts.append(selectors[0].description)
        parts += selectors.dropFirst().map { "(\($0.description))" }
        parts += cacheRules
        return parts.joined(separator: " ")
    }
}
