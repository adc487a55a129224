#if canImport(Glibc)
import Glibc
#endif

/// One set of permissions (Redis 7.0's `aclSelector`): commands as a
/// bitmap over the catalog's ids, with first-argument exceptions; key
/// patterns with read/write rights; channel patterns. A user has a root
/// selector and may have more, in parentheses; a command runs when any
/// selector allows all of it.
final class ACLSelector {
    struct KeyPattern: Sendable, Equatable {
        var pattern: [UInt8]
        var rights: ACLKeyFinder.Need
        /// A pattern that is a literal prefix then one `*` (`tenant:*`, the
        /// usual kind) is matched by comparing the prefix: no glob engine.
        let literalPrefix: Int?

        init(pattern: [UInt8], rights: ACLKeyFinder.Need) {
            self.pattern = pattern
            self.rights = rights
            let specials: Set<UInt8> = [UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "\\")]
            if let last = pattern.last, last == UInt8(ascii: "*"), !pattern.dropLast().contains(where: specials.contains) {
                literalPrefix = pattern.count - 1
            } else {
                literalPrefix = nil
            }
        }

        /// Whether the key matches, read in place.
        @inline(__always)
        func matches(_ key: UnsafeRawBufferPointer) -> Bool {
            pattern.withUnsafeBufferPointer { p in
                if let n = literalPrefix {
                    return key.count >= n && (n == 0 || memcmp(p.baseAddress!, key.baseAddress!, n) == 0)
                }
                return globMatch(p, key.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    /// The reason a selector refuses a command, in Redis's order of
    /// relevance (ACL_DENIED_CMD < KEY < AUTH < CHANNEL).
    enum Denial: Int, Comparable, Sendable {
        case command = 1, key = 2, auth = 3, channel = 4
        static func < (a: Denial, b: Denial) -> Bool { a.rawValue < b.rawValue }
    }

    /// Every command allowed (a one-flag fast path); cleared when any is removed.
    private(set) var allCommands = false
    /// Set only by `+@all`/`allcommands` (Redis's reserved command bit):
    /// commands added later are allowed too, and the rules start `+@all`.
    private(set) var futureCommands = false
    var allKeys = false
    var allChannels = false
    private(set) var allowed: [UInt64] = []
    /// First arguments allowed for a command otherwise refused (`+select|0`), by command id.
    private(set) var firstArgs: [Int: [String]] = [:]
    private(set) var patterns: [KeyPattern] = []
    private(set) var channels: [[UInt8]] = []

    init(allChannels: Bool) {
        self.allChannels = allChannels
    }

    /// A selector of its own with the same rules (ACL SETUSER works on copies).
    func copy() -> ACLSelector {
        let other = ACLSelector(allChannels: allChannels)
        other.allCommands = allCommands
        other.futureCommands = futureCommands
        other.allKeys = allKeys
        other.allowed = allowed
        other.firstArgs = firstArgs
        other.patterns = patterns
        other.channels = channels
        return other
    }

    // MARK: Rules

    /// Applies one rule of a selector (Redis's ACLSetSelector).
    /// - Throws: `ACLRuleError` with Redis's reason.
    func apply(_ op: String) throws(ACLRuleError) {
        let lower = op.lowercased()
        let bytes = Array(op.utf8)
        switch lower {
        case "allkeys", "~*":
            allKeys = true
            patterns = []
        case "resetkeys":
            allKeys = false
            patterns = []
        case "allchannels", "&*":
            allChannels = true
            channels = []
        case "resetchannels":
            allChannels = false
            channels = []
        case "allcommands", "+@all":
            allCommands = true
            futureCommands = true
            allowed = [UInt64](repeating: ~0, count: Self.words)
            firstArgs = [:]
        case "nocommands", "-@all":
            allCommands = false
            futureCommands = false
            allowed = []
            firstArgs = [:]
        default:
            guard let first = bytes.first else { throw .syntax }
            switch first {
            case UInt8(ascii: "~"), UInt8(ascii: "%"):
                try addKeyPattern(bytes)
            case UInt8(ascii: "&"):
                guard !allChannels else { throw .channelAfterAll }
                let channel = Array(bytes.dropFirst())
                if !channels.contains(channel) { channels.append(channel) }
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                try applyCommandRule(String(lower.dropFirst()), allow: first == UInt8(ascii: "+"))
            default:
                throw .syntax
            }
        }
    }

    private func addKeyPattern(_ op: [UInt8]) throws(ACLRuleError) {
        guard !allKeys else { throw .keyAfterAll }
        var rights: ACLKeyFinder.Need = []
        var offset = 1
        if op[0] == UInt8(ascii: "%") {
            while offset < op.count {
                let c = op[offset]
                if (c | 0x20) == UInt8(ascii: "r") && !rights.contains(.read) {
                    rights.insert(.read)
                } else if (c | 0x20) == UInt8(ascii: "w") && !rights.contains(.write) {
                    rights.insert(.write)
                } else if c == UInt8(ascii: "~") {
                    offset += 1
                    break
                } else {
                    throw .syntax
                }
                offset += 1
            }
            guard !rights.isEmpty else { throw .syntax }
        } else {
            rights = [.read, .write]
        }
        let pattern = Array(op[min(offset, op.count)...])
        if pattern == [UInt8(ascii: "*")] && rights == [.read, .write] {
            allKeys = true
            patterns = []
            return
        }
        if let i = patterns.firstIndex(where: { $0.pattern == pattern }) {
            patterns[i].rights.formUnion(rights)
        } else {
            patterns.append(KeyPattern(pattern: pattern, rights: rights))
        }
    }

    private func applyCommandRule(_ name: String, allow: Bool) throws(ACLRuleError) {
        if name.hasPrefix("@") {
            guard let bit = ACLCategory.bits[String(name.dropFirst())] else { throw .unknownCommand }
            for entry in ACLCommandCatalog.all where entry.categories & bit != 0 {
                setBit(entry.id, allow)
                firstArgs[entry.id] = nil
            }
            return
        }
        guard let bar = name.lastIndex(of: "|") else {
            guard let entry = ACLCommandCatalog.lookup(name) else { throw .unknownCommand }
            change(entry, allow)
            return
        }
        if !allow {
            guard let entry = ACLCommandCatalog.lookup(name) else { throw .unknownCommand }
            change(entry, false)
            return
        }
        let commandName = String(name[..<bar]), sub = String(name[name.index(after: bar)...])
        guard let command = ACLCommandCatalog.lookup(commandName) else { throw .unknownCommand }
        guard !command.isSubcommand else { throw .firstArgOfSubcommand }
        guard !sub.isEmpty else { throw .syntax }
        if !command.subcommands.isEmpty {
            guard let entry = command.subcommands[sub] else { throw .unknownCommand }
            change(entry, true)
        } else if !bit(command.id) {
            firstArgs[command.id, default: []].append(sub)
        }
    }

    /// Redis's ACLChangeSelectorPerm: the command and all its subcommands.
    private func change(_ entry: ACLCommandEntry, _ allow: Bool) {
        setBit(entry.id, allow)
        firstArgs[entry.id] = nil
        for sub in entry.subcommands.values {
            setBit(sub.id, allow)
            firstArgs[sub.id] = nil
        }
    }

    // MARK: Bits

    private static var words: Int { (ACLCommandCatalog.count + 63) / 64 + 1 }

    @inline(__always)
    func bit(_ id: Int) -> Bool {
        let word = id >> 6
        guard word < allowed.count else { return futureCommands }
        return allowed[word] & (1 << UInt64(id & 63)) != 0
    }

    private func setBit(_ id: Int, _ on: Bool) {
        let word = id >> 6
        if word >= allowed.count {
            guard on else { return }
            allowed += [UInt64](repeating: futureCommands ? ~0 : 0, count: word - allowed.count + 1)
        }
        if on {
            allowed[word] |= 1 << UInt64(id & 63)
        } else {
            allowed[word] &= ~(1 << UInt64(id & 63))
            allCommands = false
        }
    }

    // MARK: Checks

    /// Whether this selector lets the command run with these arguments
    /// (Redis's ACLSelectorCheckCmd).
    /// - Returns: nil when it does, else the reason and the argument at fault.
    func check(_ entry: ACLCommandEntry, _ args: Arguments) -> (Denial, Int)? {
        if !allCommands && !entry.noAuth && !bit(entry.id) {
            let index = entry.isSubcommand ? 2 : 1
            guard args.count > index, let allowedArgs = firstArgs[entry.id],
                  allowedArgs.contains(args[index].lowercasedText) else { return (.command, 0) }
        }
        if !allKeys && entry.keys.hasKeys {
            var denied: Int?
            entry.keys.forEachKey(args) { index, need in
                if keyAllowed(args[index], need) { return true }
                denied = index
                return false
            }
            if let denied { return (.key, denied) }
        }
        if !allChannels, let channelArgs = entry.channels {
            let last = channelArgs.onlyOne ? min(channelArgs.first, args.count - 1) : args.count - 1
            if channelArgs.first <= last {
                for i in channelArgs.first...last where !channelAllowed(args[i].bytes, isPattern: channelArgs.patterns) {
                    return (.channel, i)
                }
            }
        }
        return nil
    }

    /// Whether some pattern with the rights `need` matches the key.
    func keyAllowed(_ key: Argument, _ need: ACLKeyFinder.Need) -> Bool {
        if allKeys { return true }
        guard !patterns.isEmpty else { return false }
        return key.withUnsafeBytes { bytes in
            patterns.withUnsafeBufferPointer { list in
                for i in 0..<list.count where list[i].rights.isSuperset(of: need) && list[i].matches(bytes) { return true }
                return false
            }
        }
    }

    /// Channels match the patterns; a PSUBSCRIBE pattern must equal one literally.
    func channelAllowed(_ channel: [UInt8], isPattern: Bool) -> Bool {
        if allChannels { return true }
        return channels.contains { isPattern ? $0 == channel : globMatch($0, channel) }
    }

    /// Whether the selector reads every key unrestricted (SORT's BY and GET need it).
    func hasFullReadAccess(_ entry: ACLCommandEntry, _ args: Arguments) -> Bool {
        guard check(entry, args) == nil else { return false }
        return allKeys || patterns.contains { $0.pattern == [UInt8(ascii: "*")] && $0.rights.contains(.read) }
    }

    // MARK: Description

    /// The key patterns as ACL GETUSER's `keys` shows them.
    var keysDescription: String {
        if allKeys { return "~*" }
        return patterns.map { p -> String in
            let prefix = p.rights == [.read, .write] ? "~" : p.rights == .read ? "%R~" : "%W~"
            return prefix + String(decoding: p.pattern, as: UTF8.self)
        }.joined(separator: " ")
    }

    /// The channels as ACL GETUSER's `channels` shows them.
    var channelsDescription: String {
        allChannels ? "&*" : channels.map { "&" + String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
    }

    /// The whole selector as ACL LIST shows it (Redis's ACLDescribeSelector).
    var description: String {
        var parts: [String] = []
        let keys = keysDescription
        if !keys.isEmpty { parts.append(keys) }
        parts.append(allChannels ? "&*" : (["resetchannels"] + channels.map { "&" + String(decoding: $0, as: UTF8.self) })
            .joined(separator: " "))
        parts.append(commandsDescription)
        return parts.joined(separator: " ")
    }

    /// The command rules, rebuilt from the bitmap as Redis 7.0 does
    /// (ACLDescribeSelectorCommandRules): `+@all` or `-@all`, then the
    /// categories that fit best, then single commands and first arguments.
    var commandsDescription: String {
        var rules: [String] = []
        let additive = !futureCommands
        let fake = ACLSelector(allChannels: false)
        try? fake.apply(additive ? "-@all" : "+@all")
        rules.append(additive ? "-@all" : "+@all")
        let temp = copy()
        temp.firstArgs = [:]
        let entries = ACLCommandCatalog.all
        var applied = Set<Int>()
        while true {
            var best = -1
            var minDiff = Int.max, maxSame = 0
            for (j, name) in ACLCategory.names.enumerated() where !applied.contains(j) {
                let flag = UInt32(1) << UInt32(j)
                var on = 0, off = 0
                for entry in entries where entry.categories & flag != 0 {
                    if temp.bit(entry.id) { on += 1 } else { off += 1 }
                }
                _ = name
                let (diff, same) = additive ? (off, on) : (on, off)
                if same > diff && (diff < minDiff || (diff == minDiff && same > maxSame)) {
                    best = j
                    minDiff = diff
                    maxSame = same
                }
            }
            if best < 0 { break }
            let name = ACLCategory.names[best]
            try? fake.apply((additive ? "+@" : "-@") + name)
            try? temp.apply((additive ? "-@" : "+@") + name)
            rules.append((additive ? "+@" : "-@") + name)
            applied.insert(best)
        }
        for entry in entries where !entry.isSubcommand {
            describeSingle(entry, fake, &rules)
            for sub in entry.subcommands.values.sorted(by: { $0.id < $1.id }) { describeSingle(sub, fake, &rules) }
        }
        return rules.joined(separator: " ")
    }

    private func describeSingle(_ entry: ACLCommandEntry, _ fake: ACLSelector, _ rules: inout [String]) {
        let userBit = bit(entry.id)
        if userBit != fake.bit(entry.id) {
            rules.append((userBit ? "+" : "-") + entry.fullName)
            fake.change(entry, userBit)
        }
        if !userBit, let args = firstArgs[entry.id] {
            rules += args.map { "+\(entry.fullName)|\($0)" }
        }
    }
}

/// Why a rule of ACL SETUSER was refused, with Redis's text.
enum ACLRuleError: Error {
    case syntax, unknownCommand, firstArgOfSubcommand, keyAfterAll, channelAfterAll
    case invalidHash, noSuchPassword
    case message(String)

    var text: String {
        switch self {
        case .syntax: return "Syntax error"
        case .unknownCommand: return "Unknown command or category name in ACL"
        case .firstArgOfSubcommand: return "Allowing first-arg of a subcommand is not supported"
        case .keyAfterAll:
            return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any "
                + "effect. Try 'resetkeys' to start with an empty list of patterns"
        case .channelAfterAll:
            return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any "
                + "effect. Try 'resetchannels' to start with an empty list of channels"
        case .invalidHash: return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
        case .noSuchPassword: return "The password you are trying to remove from the user does not exist"
        case .message(let text): return text
        }
    }
}
