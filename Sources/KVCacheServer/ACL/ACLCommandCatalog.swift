import RESP
import SQLiteKVCache

/// Redis 7.0's ACL categories, in the order `ACL CAT` lists them; a
/// command's categories are a bit set over this list.
enum ACLCategory {
    static let names = ["keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
                        "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
                        "connection", "transaction", "scripting"]
    static let bits: [String: UInt32] = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, 1 << UInt32($0)) })

    /// The bit set of names like `@read` (or `read`); unknown names are ignored.
    static func mask(_ names: [String]) -> UInt32 {
        names.reduce(0) { $0 | (bits[$1.hasPrefix("@") ? String($1.dropFirst()) : $1] ?? 0) }
    }
}

/// What ACL checks need to know of one command or subcommand: its id (a
/// bit in a selector's command bitmap), full name (`config|get`), categories,
/// and how to find its keys and channels. Built once per name.
final class ACLCommandEntry: @unchecked Sendable {
    let id: Int
    let fullName: String
    let categories: UInt32
    let keys: ACLKeyFinder
    /// The subcommands of a container command (CONFIG, CLIENT, …), by lowercase name.
    private(set) var subcommands: [String: ACLCommandEntry] = [:]
    private(set) weak var parent: ACLCommandEntry?
    /// Redis's NO_AUTH flag (AUTH, HELLO): every user may run it.
    let noAuth: Bool
    /// Which arguments are channels (PUBLISH, SUBSCRIBE, …); nil for none.
    let channels: ACLChannelArguments?

    init(id: Int, fullName: String, categories: UInt32, keys: ACLKeyFinder, noAuth: Bool) {
        self.id = id
        self.fullName = fullName
        self.categories = categories
        self.keys = keys
        self.noAuth = noAuth
        self.channels = ACLChannelArguments.of[fullName]
    }

    /// The entry a call runs under: its subcommand's for a container, else its own.
    @inline(__always)
    func resolve(_ args: Arguments) -> ACLCommandEntry {
        guard !subcommands.isEmpty, args.count >= 2 else { return self }
        return subcommands[args[1].lowercasedText] ?? self
    }

    fileprivate func add(_ sub: ACLCommandEntry) {
        subcommands[String(sub.fullName.split(separator: "|")[1])] = sub
        sub.parent = self
    }

    var isSubcommand: Bool { parent != nil }
}

/// Which arguments of a Pub/Sub command are channels, and whether they are
/// patterns (Redis's CMD_CHANNEL_* flags; UNSUBSCRIBE's are not checked).
struct ACLChannelArguments: Sendable {
    /// The first channel argument; `onlyOne` means just that one (PUBLISH).
    let first: Int
    let onlyOne: Bool
    let patterns: Bool

    static let of: [String: ACLChannelArguments] = [
        "publish": .init(first: 1, onlyOne: true, patterns: false),
        "spublish": .init(first: 1, onlyOne: true, patterns: false),
        "subscribe": .init(first: 1, onlyOne: false, patterns: false),
        "ssubscribe": .init(first: 1, onlyOne: false, patterns: false),
        "psubscribe": .init(first: 1, onlyOne: false, patterns: true),
    ]
}

/// Every command the ACL knows, by full name. An entry is made when a
/// `Command` is made (its init asks for one), from Redis 7.0.15's COMMAND
/// INFO where Redis has the command, else from the command's own flags.
enum ACLCommandCatalog {
    /// Behind `Locked` (a pthread mutex), not `Synchronization.Mutex`:
    /// ThreadSanitizer does not see the latter's futex-based locking, and
    /// reported the catalog's first fill from two test threads as a race
    /// (once in three CI runs; see docs/testing.md).
    private static let state = Locked<(next: Int, byName: [String: ACLCommandEntry])>((0, [:]))

    /// The entry of a top-level command, made on first use.
    static func entry(for name: String, flags: [String], fallbackCategories: [String],
                      firstKey: Int, lastKey: Int, step: Int, subcommands: [String]) -> ACLCommandEntry {
        state.withLock { state in
            if let known = state.byName[name] { return known }
            func make(_ fullName: String, info: RESPValue?, categories: [String], noAuth: Bool,
                      keys: ACLKeyFinder) -> ACLCommandEntry {
                let entry = ACLCommandEntry(id: state.next, fullName: fullName, categories: ACLCategory.mask(categories),
                                            keys: keys, noAuth: noAuth)
                state.next += 1
                state.byName[fullName] = entry
                return entry
            }
            let info = RedisCommandSpecs.parsedInfo[name]
            let parent: ACLCommandEntry
            if let info, let fields = CommandKeys.list(info), fields.count >= 10 {
                let flagList = strings(fields[2])
                parent = make(name, info: info, categories: strings(fields[6]), noAuth: flagList.contains("no_auth"),
                              keys: ACLKeyFinder(name: name, info: fields))
                for sub in CommandKeys.list(fields[9]) ?? [] {
                    guard let subFields = CommandKeys.list(sub), subFields.count >= 10,
                          let subName = CommandKeys.text(subFields[0]) else { continue }
                    parent.add(make(subName, info: sub, categories: strings(subFields[6]),
                                    noAuth: strings(subFields[2]).contains("no_auth"),
                                    keys: ACLKeyFinder(name: subName, info: subFields)))
                }
            } else {
                parent = make(name, info: nil, categories: fallbackCategories, noAuth: flags.contains("no_auth"),
                              keys: ACLKeyFinder(firstKey: firstKey, lastKey: lastKey, step: step))
            }
            // This server's subcommands that Redis lacks.
            for sub in subcommands where parent.subcommands[sub] == nil && !subcommands.isEmpty
                && Command.containers.contains(name) {
                parent.add(make("\(name)|\(sub)", info: nil, categories: fallbackCategories,
                                noAuth: false, keys: ACLKeyFinder(firstKey: 0, lastKey: 0, step: 0)))
            }
            return parent
        }
    }

    /// Every entry, top-level commands and subcommands, by id (creation order).
    static var all: [ACLCommandEntry] {
        populate()
        return state.withLock { Array($0.byName.values) }.sorted { $0.id < $1.id }
    }

    /// Redis's commands this server lacks (MIGRATE, cluster, replication)
    /// have entries too, so rules naming them (`+migrate`, `-@dangerous`) mean
    /// what they mean in Redis, and an aclfile written for Redis loads.
    private static let populated: Bool = {
        for name in RedisCommandSpecs.parsedInfo.keys.sorted() where state.withLock({ $0.byName[name] == nil }) {
            _ = entry(for: name, flags: [], fallbackCategories: [], firstKey: 0, lastKey: 0, step: 0, subcommands: [])
        }
        return true
    }()

    private static func populate() { _ = populated }

    /// The number of ids handed out (the size a command bitmap needs).
    static var count: Int {
        populate()
        return state.withLock { $0.next }
    }

    /// The entry by full name (`get`, `config|get`), in any case.
    static func lookup(_ fullName: String) -> ACLCommandEntry? {
        populate()
        return state.withLock { $0.byName[fullName.lowercased()] }
    }

    private static func strings(_ value: RESPValue) -> [String] {
        (CommandKeys.list(value) ?? []).compactMap(CommandKeys.text)
    }
}
