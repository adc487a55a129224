import RESP

/// `COMMAND GETKEYS` and `COMMAND GETKEYSANDFLAGS`, as Redis 7.0's
/// getKeysFromCommandWithSpecs: the key specs of Redis's COMMAND INFO entry
/// (RedisCommandSpecs) are walked as Redis walks them; a command whose spec
/// cannot say (SORT's STORE) has Redis's own key-finding procedure; a
/// command Redis lacks uses its first/last/step.
enum CommandKeys {
    /// One key found: its argument index and the flags of the spec that found it.
    struct Found {
        var index: Int
        var flags: [RESPValue]
    }

    static func reply(_ ctx: CommandContext, withFlags: Bool) throws {
        let name = withFlags ? "command|getkeysandflags" : "command|getkeys"
        guard ctx.args.count >= 4 else { throw ReplyError.wrongArity(name) }
        let argv = (2..<ctx.args.count).map { ctx.args.bytes($0) }
        // A Redis command this server does not run (RESTORE-ASKING) still has
        // Redis's key specs: GETKEYS answers from them, as a
        // table lookup, like Redis (a client computing a key's slot asks).
        let known = ctx.server.commands.lookup(argv[0])
        let redisName = String(decoding: argv[0].map(asciiLower), as: UTF8.self)
        let notHere = known == nil && CommandTable.standard.lookup(argv[0]) == nil  // not renamed away
        guard known != nil || (notHere && RedisCommandSpecs.parsedInfo[redisName] != nil) else {
            throw ReplyError("ERR Invalid command specified")
        }
        let commandName = known?.name ?? redisName
        var entry = RedisCommandSpecs.parsedInfo[commandName]
        // A container (MEMORY USAGE): its subcommand's own entry.
        if let parent = entry, case .array(let fields?) = parent, fields.count > 9,
           let subs = list(fields[9]), !subs.isEmpty {
            guard argv.count >= 2 else { throw ReplyError("ERR Invalid command specified") }
            let wanted = commandName + "|" + String(decoding: argv[1].map(asciiLower), as: UTF8.self)
            entry = subs.first { sub in
                if case .array(let f?) = sub, case .bulk(let n?) = f.first { return String(decoding: n, as: UTF8.self) == wanted }
                return false
            }
            guard entry != nil else { throw ReplyError("ERR Invalid command specified") }
        }
        let arity: Int
        var specs: [[String: RESPValue]] = []
        var procedureOnly = false
        if let entry, case .array(let fields?) = entry, fields.count > 8 {
            if case .integer(let a) = fields[1] { arity = Int(a) } else { arity = known?.arity ?? -1 }
            specs = (list(fields[8]) ?? []).compactMap(dictionary)
            procedureOnly = commandName == "sort" || commandName == "sort_ro"
        } else {
            arity = known?.arity ?? -1
        }
        let hasKeys = procedureOnly || (entry == nil ? (known?.firstKey ?? 0) > 0 : specs.contains { !flagNames($0).contains("not_key") })
        guard hasKeys else { throw ReplyError("ERR The command has no key arguments") }
        guard arity > 0 ? arity == argv.count : argv.count >= -arity else {
            throw ReplyError("ERR Invalid number of arguments specified for command")
        }
        // As Redis: the specs when their flags are reliable (no spec has
        // variable_flags) and they can say; else the command's procedure.
        let found: [Found]?
        if entry == nil, let known {
            found = legacyKeys(known, argv: argv)
        } else if specs.contains(where: { flagNames($0).contains("variable_flags") }) {
            found = procedure(commandName, argv: argv)
        } else {
            found = keys(specs, argv: argv, arity: arity) ?? procedure(commandName, argv: argv)
        }
        guard let found, !found.isEmpty else {
            // EVAL with 0 keys: a command flagged no_mandatory_keys has none.
            if let entry, case .array(let fields?) = entry, fields.count > 2,
               let flags = list(fields[2]), flags.contains(where: { flag in
                   if case .simpleString(let name) = flag { return name.lowercased() == "no_mandatory_keys" }
                   if case .bulk(let name?) = flag { return String(decoding: name, as: UTF8.self) == "no_mandatory_keys" }
                   return false
               }) {
                ctx.connection.replyArrayHeader(0)
                return
            }
            throw ReplyError("ERR Invalid arguments specified for command")
        }
        let c = ctx.connection
        c.replyArrayHeader(found.count)
        for key in found {
            if withFlags {
                c.replyArrayHeader(2)
                c.replyBulk(argv[key.index])
                c.reply(.set(key.flags))
            } else {
                c.replyBulk(argv[key.index])
            }
        }
    }

    /// An array or a set's elements (COMMAND INFO answers sets in RESP3).
    static func list(_ value: RESPValue) -> [RESPValue]? {
        switch value {
        case .array(let items?): return items
        case .set(let items): return items
        default: return nil
        }
    }

    static func dictionary(_ value: RESPValue) -> [String: RESPValue]? {
        guard case .map(let pairs) = value else { return nil }
        var out: [String: RESPValue] = [:]
        for (k, v) in pairs {
            switch k {
            case .bulk(let b?): out[String(decoding: b, as: UTF8.self)] = v
            case .simpleString(let s): out[s] = v
            default: break
            }
        }
        return out
    }

    static func flagNames(_ spec: [String: RESPValue]) -> [String] {
        guard case .set(let flags)? = spec["flags"] else { return [] }
        return flags.compactMap {
            switch $0 {
            case .simpleString(let s): return s.lowercased()
            case .bulk(let b?): return String(decoding: b, as: UTF8.self).lowercased()
            default: return nil
            }
        }
    }

    static func int(_ value: RESPValue?) -> Int? {
        if case .integer(let n)? = value { return Int(n) }
        return nil
    }

    static func text(_ value: RESPValue?) -> String? {
        switch value {
        case .some(.bulk(let b?)): return String(decoding: b, as: UTF8.self)
        case .simpleString(let s)?: return s
        default: return nil
        }
    }

    /// Redis's getKeysUsingKeySpecs; nil where a spec is invalid for these
    /// arguments (Redis then answers that the arguments are invalid).
    static func keys(_ specs: [[String: RESPValue]], argv: [[UInt8]], arity: Int) -> [Found]? {
        let argc = argv.count
        var out: [Found] = []
        for spec in specs {
            let flagList = flagNames(spec)
            if flagList.contains("not_key") { continue }
            let flags: [RESPValue] = {
                guard case .set(let f)? = spec["flags"] else { return [] }
                return f
            }()
            guard let begin = spec["begin_search"].flatMap(dictionary),
                  let beginSpec = begin["spec"].flatMap(dictionary) else { return nil }
            var first = 0
            switch text(begin["type"]) {
            case "index":
                first = int(beginSpec["index"]) ?? 0
            case "keyword":
                guard let keyword = text(beginSpec["keyword"])?.lowercased(),
                      let startFrom = int(beginSpec["startfrom"]) else { return nil }
                let start = startFrom > 0 ? startFrom : argc + startFrom
                let end = startFrom > 0 ? argc - 1 : 1
                var i = start
                while i != end {
                    if i >= argc || i < 1 { break }
                    if String(decoding: argv[i].map(asciiLower), as: UTF8.self) == keyword { first = i + 1; break }
                    i += start <= end ? 1 : -1
                }
                if first == 0 { continue }
            default:
                return nil
            }
            guard let find = spec["find_keys"].flatMap(dictionary),
                  let findSpec = find["spec"].flatMap(dictionary) else { return nil }
            var last: Int
            var step: Int
            switch text(find["type"]) {
            case "range":
                let lastKey = int(findSpec["lastkey"]) ?? 0
                let limit = int(findSpec["limit"]) ?? 0
                step = int(findSpec["keystep"]) ?? 1
                last = rangeEnd(first: first, argc: argc, lastKey: lastKey, limit: limit)
            case "keynum":
                let numIndex = int(findSpec["keynumidx"]) ?? 0
                step = int(findSpec["keystep"]) ?? 1
                guard first + numIndex < argc,
                      let n = parseStrictInt64(argv[first + numIndex]), n >= 0 else { return nil }
                first += int(findSpec["firstkey"]) ?? 0
                last = first + Int(n) - 1
            default:
                return nil
            }
            // Out of bounds: the arguments are wrong (Redis 7.0's check).
            guard step > 0, last < argc, last >= first, first < argc else { return nil }
            var i = first
            while i <= last {
                if i >= argc || i < first {
                    // A variable-arity command given too few arguments: no
                    // key here; the command itself reports the error.
                    if arity < 0 { i += step; continue }
                    return nil
                }
                out.append(Found(index: i, flags: flags))
                i += step
            }
            // An incomplete spec (MIGRATE's KEYS) cannot say: the procedure does.
            if flagList.contains("incomplete") { return nil }
        }
        return out
    }

    /// The last key index of a `range` key spec (Redis's getKeysUsingKeySpecs).
    static func rangeEnd(first: Int, argc: Int, lastKey: Int, limit: Int) -> Int {
        if lastKey >= 0 { return first + lastKey }
        if limit == 0 { return argc + lastKey }
        return first + ((argc - first) / limit + lastKey)
    }

    /// Redis's key-finding procedures for the commands whose specs cannot
    /// say (SORT's STORE, SORT_RO, MIGRATE's KEYS) or whose flags vary (SET,
    /// BITFIELD).
    static func procedure(_ name: String, argv: [[UInt8]]) -> [Found]? {
        func lower(_ i: Int) -> String { String(decoding: argv[i].map(asciiLower), as: UTF8.self) }
        let ro: [RESPValue] = [.simpleString("RO"), .simpleString("access")]
        let rw: [RESPValue] = [.simpleString("RW"), .simpleString("access"), .simpleString("update")]
        switch name {
        case "sort":
            return sortKeys(argv)
        case "sort_ro":
            return [Found(index: 1, flags: ro)]
        case "migrate":
            // migrateGetKeys: the key at 3, or every argument after KEYS
            // (none when the key is not ""), skipping AUTH's and AUTH2's.
            let delete: [RESPValue] = [.simpleString("RW"), .simpleString("access"), .simpleString("delete")]
            var first = 3, count = 1
            var i = 6
            while i < argv.count {
                switch lower(i) {
                case "keys":
                    guard argv[3].isEmpty else { return [] }
                    first = i + 1
                    count = argv.count - first
                    i = argv.count
                case "auth": i += 1
                case "auth2": i += 2
                default: break
                }
                i += 1
            }
            return (first..<(first + count)).map { Found(index: $0, flags: delete) }
        case "set":
            // setGetKeys: GET makes it read the old value.
            let get = argv.indices.dropFirst(3).contains { lower($0) == "get" }
            return [Found(index: 1, flags: get ? rw : [.simpleString("OW"), .simpleString("update")])]
        case "bitfield":
            // bitfieldGetKeys: read-only unless a SET or INCRBY is there.
            var readOnly = true
            var i = 2
            while i < argv.count {
                let remaining = argv.count - i - 1
                switch lower(i) {
                case "get" where remaining >= 2: i += 2
                case "set" where remaining >= 3, "incrby" where remaining >= 3: readOnly = false; i = argv.count
                case "overflow" where remaining >= 1: i += 1
                default: break
                }
                i += 1
            }
            return [Found(index: 1, flags: readOnly ? ro : rw)]
        default:
            return nil
        }
    }

    /// Redis's sortGetKeys: the key, and the last STORE's argument
    /// (LIMIT takes two arguments, GET and BY one).
    static func sortKeys(_ argv: [[UInt8]]) -> [Found] {
        var out = [Found(index: 1, flags: [.simpleString("RO"), .simpleString("access")])]
        var store: Int?
        var j = 2
        while j < argv.count {
            let option = String(decoding: argv[j].map(asciiLower), as: UTF8.self)
            let skip: Int
            switch option {
            case "limit": skip = 2
            case "get", "by": skip = 1
            case "store": skip = 1; if j + 1 < argv.count { store = j + 1 }
            default: skip = 0
            }
            j += skip + 1
        }
        if let store { out.append(Found(index: store, flags: [.simpleString("OW"), .simpleString("update")])) }
        return out
    }

    /// A command Redis lacks (KVCACHE.*): its first key, last key and step.
    static func legacyKeys(_ command: Command, argv: [[UInt8]]) -> [Found]? {
        guard command.firstKey > 0 else { return nil }
        let last = command.lastKey < 0 ? argv.count + command.lastKey : command.lastKey
        guard command.step > 0 else { return nil }
        return stride(from: command.firstKey, through: min(last, argv.count - 1), by: command.step).map {
            Found(index: $0, flags: [])
        }
    }
}
