import RESP

/// The key arguments of one command, as Redis 7.0's
/// getKeysFromCommandWithSpecs finds them for ACL checks: its COMMAND INFO
/// key specs, compiled once (no dictionary lookups per call); Redis's
/// key-finding procedure where the specs cannot say (SORT's STORE, SET's
/// GET, BITFIELD's writes); first/last/step for a command Redis lacks.
struct ACLKeyFinder: Sendable {
    /// What a key argument needs: read (Redis's CMD_KEY_ACCESS), write
    /// (INSERT, DELETE or UPDATE), or neither (an existence test: any pattern).
    struct Need: OptionSet, Sendable {
        let rawValue: UInt8
        static let read = Need(rawValue: 1)
        static let write = Need(rawValue: 2)
    }

    struct Spec: Sendable {
        enum Begin: Sendable {
            case index(Int)
            case keyword([UInt8], startFrom: Int)
        }
        enum Find: Sendable {
            case range(lastKey: Int, step: Int, limit: Int)
            case keynum(index: Int, firstKey: Int, step: Int)
        }
        let begin: Begin
        let find: Find
        let need: Need
    }

    private var specs: [Spec] = []
    /// Redis's getkeys procedure is used instead of the specs.
    private var procedure: String?
    /// The command has no key arguments at all.
    private(set) var hasKeys = false
    /// The common case (GET, SET, HGET, MGET…): one spec, keys from a fixed
    /// index to a fixed offset, read without walking the specs.
    private var simple: (first: Int, lastKey: Int, step: Int, need: Need)?

    /// From a COMMAND INFO entry's fields.
    init(name: String, info fields: [RESPValue]) {
        let parsed = (CommandKeys.list(fields[8]) ?? []).compactMap(CommandKeys.dictionary)
        for spec in parsed {
            let flags = CommandKeys.flagNames(spec)
            if flags.contains("not_key") { continue }
            hasKeys = true
            if flags.contains("variable_flags") || flags.contains("incomplete") { procedure = name }
            var need: Need = []
            if flags.contains("access") { need.insert(.read) }
            if flags.contains("insert") || flags.contains("delete") || flags.contains("update") { need.insert(.write) }
            guard let begin = spec["begin_search"].flatMap(CommandKeys.dictionary),
                  let beginSpec = begin["spec"].flatMap(CommandKeys.dictionary),
                  let find = spec["find_keys"].flatMap(CommandKeys.dictionary),
                  let findSpec = find["spec"].flatMap(CommandKeys.dictionary) else { continue }
            let b: Spec.Begin
            switch CommandKeys.text(begin["type"]) {
            case "index": b = .index(CommandKeys.int(beginSpec["index"]) ?? 0)
            case "keyword":
                b = .keyword(Array((CommandKeys.text(beginSpec["keyword"]) ?? "").lowercased().utf8),
                             startFrom: CommandKeys.int(beginSpec["startfrom"]) ?? 1)
            default: procedure = name; continue  // "unknown": Redis's procedure finds them
            }
            let f: Spec.Find
            switch CommandKeys.text(find["type"]) {
            case "range":
                f = .range(lastKey: CommandKeys.int(findSpec["lastkey"]) ?? 0, step: CommandKeys.int(findSpec["keystep"]) ?? 1,
                           limit: CommandKeys.int(findSpec["limit"]) ?? 0)
            case "keynum":
                f = .keynum(index: CommandKeys.int(findSpec["keynumidx"]) ?? 0,
                            firstKey: CommandKeys.int(findSpec["firstkey"]) ?? 0, step: CommandKeys.int(findSpec["keystep"]) ?? 1)
            default: procedure = name; continue
            }
            specs.append(Spec(begin: b, find: f, need: need))
        }
        if specs.count == 1, case .index(let first) = specs[0].begin, case .range(let lastKey, let step, 0) = specs[0].find,
           lastKey >= 0, step > 0 {
            simple = (first, lastKey, step, specs[0].need)
        }
        if procedure != nil && CommandKeys.procedure(name, argv: [Array(name.utf8), [], [], []]) == nil && name != "sort" {
            procedure = nil  // no procedure of ours: the specs as they are
        }
    }

    /// For a command Redis lacks: its first key, last key and step (read and write).
    init(firstKey: Int, lastKey: Int, step: Int) {
        guard firstKey > 0, step > 0 else { return }
        hasKeys = true
        specs = [Spec(begin: .index(firstKey), find: .range(lastKey: lastKey < 0 ? lastKey : lastKey - firstKey, step: step,
                                                           limit: 0), need: [.read, .write])]
    }

    /// Calls `body` with each key argument's index and need, in Redis's
    /// order, until it returns false. Arguments the specs cannot place
    /// (a bad numkeys) are no keys, as in Redis.
    /// - Returns: false when `body` stopped the walk.
    @discardableResult
    func forEachKey(_ args: Arguments, _ body: (Int, Need) -> Bool) -> Bool {
        if let procedure {
            let argv = args.copies
            for found in CommandKeys.procedure(procedure, argv: argv) ?? [] {
                let names = found.flags.compactMap { value -> String? in
                    if case .simpleString(let s) = value { return s.lowercased() }
                    return nil
                }
                var need: Need = []
                if names.contains("access") { need.insert(.read) }
                if names.contains("insert") || names.contains("delete") || names.contains("update") { need.insert(.write) }
                if !body(found.index, need) { return false }
            }
            return true
        }
        let argc = args.count
        // The common case (GET, SET, HGET…): one spec at a fixed index.
        if let (first, lastKey, step, need) = simple {
            let last = first + lastKey
            guard last < argc else { return true }
            var i = first
            while i <= last {
                if !body(i, need) { return false }
                i += step
            }
            return true
        }
        // As getKeysUsingKeySpecs: a spec that does not fit the arguments
        // makes the whole search invalid (no keys).
        var found: [(Int, Need)] = []
        found.reserveCapacity(4)
        for spec in specs {
            var first: Int
            switch spec.begin {
            case .index(let i):
                first = i
            case .keyword(let keyword, let startFrom):
                let start = startFrom > 0 ? startFrom : argc + startFrom
                let end = startFrom > 0 ? argc - 1 : 0
                first = 0
                var i = start
                while i != end {
                    if i >= argc || i < 1 { break }
                    let arg = args[i]
                    if arg.count == keyword.count && zip(arg, keyword).allSatisfy({ asciiLower($0) == $1 }) {
                        first = i + 1
                        break
                    }
                    i += start <= end ? 1 : -1
                }
                if first == 0 { continue }
            }
            var last: Int
            var step: Int
            switch spec.find {
            case .range(let lastKey, let s, let limit):
                step = s
                last = CommandKeys.rangeEnd(first: first, argc: argc, lastKey: lastKey, limit: limit)
            case .keynum(let index, let firstKey, let s):
                step = s
                guard first + index < argc, let n = parseStrictInt64(args[first + index].bytes), n >= 0 else {
                    return true
                }
                first += firstKey
                last = first + Int(n) - 1
            }
            guard step > 0, last < argc, last >= first, first < argc else { return true }
            var i = first
            while i <= last {
                found.append((i, spec.need))
                i += step
            }
        }
        for (index, need) in found where !body(index, need) { return false }
        return true
    }
}
