import RESP
import SQLiteKVCache

/// Redis's keyspace-event classes (`notify-keyspace-events`, notify.c's
/// NOTIFY_* bits), parsed from and rendered to Redis's flag letters.
struct NotifyFlags: OptionSet, Sendable {
    let rawValue: Int
    static let keyspace = NotifyFlags(rawValue: 1 << 0)   // K
    static let keyevent = NotifyFlags(rawValue: 1 << 1)   // E
    static let generic = NotifyFlags(rawValue: 1 << 2)    // g
    static let string = NotifyFlags(rawValue: 1 << 3)     // $
    static let list = NotifyFlags(rawValue: 1 << 4)       // l
    static let set = NotifyFlags(rawValue: 1 << 5)        // s
    static let hash = NotifyFlags(rawValue: 1 << 6)       // h
    static let zset = NotifyFlags(rawValue: 1 << 7)       // z
    static let expired = NotifyFlags(rawValue: 1 << 8)    // x
    static let evicted = NotifyFlags(rawValue: 1 << 9)    // e
    static let stream = NotifyFlags(rawValue: 1 << 10)    // t
    static let keyMiss = NotifyFlags(rawValue: 1 << 11)   // m (not in A)
    static let module = NotifyFlags(rawValue: 1 << 13)    // d
    static let new = NotifyFlags(rawValue: 1 << 14)       // n (not in A)
    static let all: NotifyFlags = [.generic, .string, .list, .set, .hash, .zset, .expired, .evicted, .stream, .module]

    /// Redis's keyspaceEventsStringToFlags; nil for a letter it does not know.
    init?(letters: String) {
        var flags: NotifyFlags = []
        for c in letters {
            switch c {
            case "A": flags.formUnion(.all)
            case "g": flags.insert(.generic)
            case "$": flags.insert(.string)
            case "l": flags.insert(.list)
            case "s": flags.insert(.set)
            case "h": flags.insert(.hash)
            case "z": flags.insert(.zset)
            case "x": flags.insert(.expired)
            case "e": flags.insert(.evicted)
            case "K": flags.insert(.keyspace)
            case "E": flags.insert(.keyevent)
            case "t": flags.insert(.stream)
            case "m": flags.insert(.keyMiss)
            case "d": flags.insert(.module)
            case "n": flags.insert(.new)
            default: return nil
            }
        }
        self = flags
    }

    init(rawValue: Int) { self.rawValue = rawValue }

    /// Redis's keyspaceEventsFlagsToString (what CONFIG GET answers).
    var letters: String {
        var s = ""
        if isSuperset(of: .all) {
            s = "A"
        } else {
            let ordered: [(NotifyFlags, String)] = [(.generic, "g"), (.string, "$"), (.list, "l"), (.set, "s"),
                (.hash, "h"), (.zset, "z"), (.expired, "x"), (.evicted, "e"), (.stream, "t"), (.module, "d"), (.new, "n")]
            for (flag, letter) in ordered where contains(flag) { s += letter }
        }
        if contains(.keyspace) { s += "K" }
        if contains(.keyevent) { s += "E" }
        if contains(.keyMiss) { s += "m" }
        return s
    }
}

/// One keyspace event of the running command, published when it ends.
struct KeyspaceEvent {
    let type: NotifyFlags
    let name: String
    let key: [UInt8]
    let cache: OpenCache
}

/// What a change did to a key, as the keyspace layer sees it.
enum KeyChange {
    /// A value stored (`isNew`: the key had no live entry).
    case stored(isNew: Bool)
    case deleted
    case expirySet(Int64?)
    case expired
    case evicted
    case missed
}

/// The command that is running, for naming its events.
struct EventSource {
    let command: Command
    let args: Arguments
    let start: Int
}

extension Server {
    /// Whether any keyspace event is wanted (the hooks' fast path).
    var wantsKeyspaceEvents: Bool {
        config.notifyKeyspaceEvents != 0 && !(pubsub.channels.isEmpty && pubsub.patterns.isEmpty)
    }

    /// Starts collecting the events of `command`.
    /// - Returns: what `endKeyspaceEvents` restores.
    func beginKeyspaceEvents(_ command: Command, _ args: Arguments) -> EventSource? {
        let outer = eventSource
        eventSource = EventSource(command: command, args: args, start: pendingKeyspaceEvents.count)
        return outer
    }

    /// Publishes the events the command collected, in order, and restores the outer command.
    func endKeyspaceEvents(_ outer: EventSource?) {
        let start = eventSource?.start ?? 0
        eventSource = outer
        guard pendingKeyspaceEvents.count > start else { return }
        var events = Array(pendingKeyspaceEvents[start...])
        pendingKeyspaceEvents.removeSubrange(start...)
        // Redis names the source before the destination (rename_from, then rename_to).
        if events.contains(where: { $0.name.hasSuffix("_from") }) {
            events = events.filter { !$0.name.hasSuffix("_to") } + events.filter { $0.name.hasSuffix("_to") }
        }
        for event in events { publishKeyspaceEvent(event) }
    }

    /// Redis's notifyKeyspaceEvent: `__keyspace@<db>__:<key> <event>` and
    /// `__keyevent@<db>__:<event> <key>`, as the flags ask; `<db>` is the
    /// cache's number for `db<n>`, its name otherwise.
    func publishKeyspaceEvent(_ event: KeyspaceEvent) {
        let flags = NotifyFlags(rawValue: config.notifyKeyspaceEvents)
        guard !flags.intersection(event.type).isEmpty else { return }
        let db = event.cache.databaseIndex.map(String.init) ?? event.cache.name
        if flags.contains(.keyspace) {
            publish(Array("__keyspace@\(db)__:".utf8) + event.key, Array(event.name.utf8))
        }
        if flags.contains(.keyevent) {
            publish(Array("__keyevent@\(db)__:\(event.name)".utf8), event.key)
        }
    }

    /// Records what a change did to `key` in `cache`, under Redis's name for
    /// it in the running command (or now, for a change no command made:
    /// the expiry sweep, background eviction).
    func keyChanged(_ change: KeyChange, _ key: [UInt8], in cache: OpenCache) {
        if trackingActive {
            switch change {
            case .missed: break
            case .expired, .evicted: trackingKeyChanged(key, in: cache, byClient: false)
            default: trackingKeyChanged(key, in: cache, byClient: true)
            }
        }
        guard wantsKeyspaceEvents else { return }
        let events: [(NotifyFlags, String)]
        switch change {
        case .expired: events = [(.expired, "expired")]
        case .evicted: events = [(.evicted, "evicted")]
        case .missed: events = [(.keyMiss, "keymiss")]
        default:
            guard let source = eventSource else { return }
            events = Self.eventNames(change, key, source)
        }
        for (type, name) in events {
            let event = KeyspaceEvent(type: type, name: name, key: key, cache: cache)
            if eventSource == nil {
                publishKeyspaceEvent(event)
            } else if !pendingKeyspaceEvents[(eventSource?.start ?? 0)...].contains(where: {
                $0.name == name && $0.cache === cache && $0.key == key && name != "set"
            }) {
                pendingKeyspaceEvents.append(event)
            }
        }
    }

    /// An event the running command names itself (the stream commands'
    /// `xadd`, `xtrim`, `xgroup-create`, …), published when it ends, after
    /// the events of the changes before it.
    func notifyKeyspaceEvent(_ type: NotifyFlags, _ name: String, _ key: [UInt8], in cache: OpenCache) {
        guard wantsKeyspaceEvents else { return }
        let event = KeyspaceEvent(type: type, name: name, key: key, cache: cache)
        if eventSource == nil { publishKeyspaceEvent(event) } else { pendingKeyspaceEvents.append(event) }
    }

    /// A command's event for a stored value, by Redis's names (t_string.c,
    /// t_list.c, …), with its class.
    static func storeEvent(_ name: String, _ key: [UInt8], _ args: Arguments) -> (NotifyFlags, String)? {
        func argIs(_ i: Int, _ word: String) -> Bool { i < args.count && args.option(i) == word }
        func hasOption(_ word: String, from: Int = 1) -> Bool {
            (from..<args.count).contains { args[$0].count == word.utf8.count && args.option($0) == word }
        }
        func isFirstKey() -> Bool { args.count > 1 && args[1].elementsEqual(key) }
        switch name {
        case "set", "setnx", "setex", "psetex", "getset", "mset", "msetnx", "bitop": return (.string, "set")
        case "append": return (.string, "append")
        case "incr", "decr", "incrby", "decrby": return (.string, "incrby")
        case "incrbyfloat": return (.string, "incrbyfloat")
        case "setrange": return (.string, "setrange")
        case "setbit", "bitfield": return (.string, "setbit")
        case "lpush", "lpushx": return (.list, "lpush")
        case "rpush", "rpushx": return (.list, "rpush")
        case "linsert", "lset", "ltrim", "lrem", "lpop", "rpop": return (.list, name)
        case "blpop": return (.list, "lpop")
        case "brpop": return (.list, "rpop")
        case "rpoplpush", "brpoplpush": return (.list, isFirstKey() ? "rpop" : "lpush")
        case "lmove", "blmove":
            // LMOVE source destination LEFT|RIGHT LEFT|RIGHT (BLMOVE: and a timeout).
            return isFirstKey() ? (.list, argIs(3, "left") ? "lpop" : "rpop")
                : (.list, argIs(4, "left") ? "lpush" : "rpush")
        case "lmpop", "blmpop": return (.list, hasOption("left") ? "lpop" : "rpop")
        case "sadd", "srem", "spop", "sinterstore", "sunionstore", "sdiffstore": return (.set, name)
        case "smove": return (.set, isFirstKey() ? "srem" : "sadd")
        case "hset", "hmset", "hsetnx": return (.hash, "hset")
        case "hdel", "hincrby", "hincrbyfloat": return (.hash, name)
        case "zadd": return (.zset, hasOption("incr", from: 2) ? "zincr" : "zadd")
        case "zincrby": return (.zset, "zincr")
        case "zrem", "zremrangebyscore", "zremrangebyrank", "zremrangebylex", "zpopmin", "zpopmax",
             "zunionstore", "zinterstore", "zdiffstore", "zrangestore": return (.zset, name)
        case "bzpopmin": return (.zset, "zpopmin")
        case "bzpopmax": return (.zset, "zpopmax")
        case "zmpop", "bzmpop": return (.zset, hasOption("min") ? "zpopmin" : "zpopmax")
        case "rename", "renamenx": return (.generic, "rename_to")
        case "move": return (.generic, "move_to")
        case "copy": return (.generic, "copy_to")
        case "restore": return (.generic, "restore")
        case "sort": return (.generic, "sortstore")
        case "pfadd", "pfmerge": return (.string, "pfadd")
        default: return nil
        }
    }

    /// Redis's names for `change` to `key` under the running command.
    static func eventNames(_ change: KeyChange, _ key: [UInt8], _ source: EventSource) -> [(NotifyFlags, String)] {
        let name = source.command.name
        let args = source.args
        switch change {
        case .stored(let isNew):
            var events: [(NotifyFlags, String)] = []
            if isNew { events.append((.new, "new")) }
            guard let event = storeEvent(name, key, args) else { return events }
            events.append(event)
            // SET … EX/PX/EXAT/PXAT, SETEX, PSETEX: "set", then "expire".
            if name == "setex" || name == "psetex"
                || (name == "set" && (3..<args.count).contains { ["ex", "px", "exat", "pxat"].contains(args.option($0)) }) {
                events.append((.generic, "expire"))
            }
            return events
        case .deleted:
            switch name {
            case "rename", "renamenx": return [(.generic, "rename_from")]
            case "move": return [(.generic, "move_from")]
            case "sinterstore", "sunionstore", "sdiffstore", "zunionstore", "zinterstore", "zdiffstore", "zrangestore",
                 "sort", "bitop", "restore", "copy", "set", "getset", "getex":
                return [(.generic, "del")]
            default:
                // A collection emptied by its command: the command's event, then "del".
                if let event = storeEvent(name, key, args) { return [event, (.generic, "del")] }
                return [(.generic, "del")]
            }
        case .expirySet(let at):
            return [(.generic, at == nil ? "persist" : "expire")]
        default:
            return []
        }
    }
}

extension Keyspace {
    /// Reports a change to `key` for keyspace events (notify.c's caller).
    func changed(_ change: KeyChange, _ key: [UInt8]) {
        server.keyChanged(change, key, in: cache)
    }

    /// Whether `key` has no live entry, asked only when "new" events are wanted.
    func isNewKey(_ key: [UInt8]) -> Bool {
        guard server.wantsKeyspaceEvents,
              NotifyFlags(rawValue: server.config.notifyKeyspaceEvents).contains(.new) else { return false }
        return !((try? exists(key)) ?? true)
    }
}
