import RESP
import SQLiteKVCache

/// HyperLogLog commands, as Redis 7.0's hyperloglog.c. An HLL is a string
/// (TYPE string) in Redis's exact bytes (`HyperLogLog`). A command that
/// changes one is logged as itself (it is deterministic: a replay on the
/// same state makes the same bytes), not as the up to 12 KB value.
let hyperLogLogCommands: [Command] = [
    Command(name: "pfadd", arity: -2, flags: ["write", "denyoom", "fast"], firstKey: 1, lastKey: 1, step: 1,
            group: "hyperloglog", summary: "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.",
            handler: pfadd),
    Command(name: "pfcount", arity: -2, flags: ["readonly", "may_replicate"], firstKey: 1, lastKey: -1, step: 1,
            group: "hyperloglog", summary: "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).",
            handler: pfcount),
    Command(name: "pfmerge", arity: -2, flags: ["write", "denyoom"], firstKey: 1, lastKey: -1, step: 1,
            group: "hyperloglog", summary: "Merges one or more HyperLogLog values into a single key.", handler: pfmerge),
    Command(name: "pfdebug", arity: 3, flags: ["write", "denyoom", "admin"], firstKey: 2, lastKey: 2, step: 1,
            group: "hyperloglog", summary: "Internal commands for debugging HyperLogLog values.", handler: pfdebug),
    Command(name: "pfselftest", arity: 1, flags: ["admin"], firstKey: 0, lastKey: 0, step: 0,
            group: "hyperloglog", summary: "An internal command for testing HyperLogLog values.", handler: pfselftest),
]

extension ReplyError {
    static let notHLL = ReplyError("WRONGTYPE Key is not a valid HyperLogLog string value.")
    static let corruptHLL = ReplyError("INVALIDOBJ Corrupted HLL object detected")

    init(_ failure: HyperLogLog.Failure) {
        self = failure == .notHLL ? .notHLL : .corruptHLL
    }
}

extension CommandContext {
    /// The HLL at `key` and its entry: a counted read when `read`.
    /// - Throws: WRONGTYPE for a key of another type or a string that is
    ///   not an HLL.
    func loadHLL(_ key: [UInt8], read: Bool) throws -> (hll: HyperLogLog, entry: SQLiteKVCache.Entry)? {
        let entry = read ? try keyspace.lookupRead(key, as: .string) : try keyspace.lookupWrite(key, as: .string)
        guard let entry else { return nil }
        do {
            return (try HyperLogLog(validating: entry.value), entry)
        } catch {
            throw ReplyError(error)
        }
    }

    /// Stores `hll` at `key` (keeping `old`'s expiry and metadata); the
    /// command is logged as itself.
    func storeHLL(_ hll: HyperLogLog, at key: [UInt8], replacing old: SQLiteKVCache.Entry?) throws {
        try update(old, key: key, value: hll.bytes)
        server.persistence.noteLiveChange()
    }

    var hllSparseMaxBytes: Int { server.config.scripting.hllSparseMaxBytes }
}

/// Runs `body`, turning an HLL failure into its reply.
private func hllOperation<R>(_ body: () throws(HyperLogLog.Failure) -> R) throws(ReplyError) -> R {
    do {
        return try body()
    } catch {
        throw ReplyError(error)
    }
}

/// PFADD key [element ...]: 1 when a register changed (or the key was created).
private func pfadd(_ ctx: CommandContext) throws {
    let key = ctx.args.bytes(1)
    let loaded = try ctx.loadHLL(key, read: false)
    var hll = loaded?.hll ?? HyperLogLog()
    var updated = loaded == nil
    let maxBytes = ctx.hllSparseMaxBytes
    for i in 2..<ctx.args.count {
        let element = ctx.args[i]
        if try hllOperation({ () throws(HyperLogLog.Failure) in try hll.add(element, sparseMaxBytes: maxBytes) }) {
            updated = true
        }
    }
    if updated {
        hll.invalidateCache()
        try ctx.storeHLL(hll, at: key, replacing: loaded?.entry)
    }
    ctx.connection.replyInteger(updated ? 1 : 0)
}

/// PFCOUNT key [key ...]: one key's estimate (cached in its header), or
/// the estimate of the union of several.
private func pfcount(_ ctx: CommandContext) throws {
    if ctx.args.count > 2 {
        var max = [UInt8](repeating: 0, count: HyperLogLog.registerCount)
        for i in 1..<ctx.args.count {
            guard let (hll, _) = try ctx.loadHLL(ctx.args.bytes(i), read: true) else { continue }
            try hllOperation { () throws(HyperLogLog.Failure) in try hll.merge(into: &max) }
        }
        ctx.connection.replyInteger(Int64(bitPattern: HyperLogLog.count(registers: max)))
        return
    }
    let key = ctx.args.bytes(1)
    guard var (hll, entry) = try ctx.loadHLL(key, read: true) else {
        ctx.connection.replyInteger(0)
        return
    }
    if let cached = hll.cachedCardinality {
        ctx.connection.replyInteger(Int64(bitPattern: cached))
        return
    }
    let card = try hllOperation { () throws(HyperLogLog.Failure) in try hll.count() }
    hll.setCachedCardinality(card)
    // The cache is part of the value (as in Redis, PFCOUNT writes it back);
    // a refused write only loses the cache.
    try? ctx.storeHLL(hll, at: key, replacing: entry)
    ctx.connection.replyInteger(Int64(bitPattern: card))
}

/// PFMERGE destkey [sourcekey ...]: the destination (itself a source)
/// gets the register-wise maximum; dense when any source is.
private func pfmerge(_ ctx: CommandContext) throws {
    var max = [UInt8](repeating: 0, count: HyperLogLog.registerCount)
    var useDense = false
    for i in 1..<ctx.args.count {
        guard let (hll, _) = try ctx.loadHLL(ctx.args.bytes(i), read: true) else { continue }
        if !hll.isSparse { useDense = true }
        try hllOperation { () throws(HyperLogLog.Failure) in try hll.merge(into: &max) }
    }
    let key = ctx.args.bytes(1)
    let old = try ctx.loadHLL(key, read: false)
    var hll = old?.hll ?? HyperLogLog()
    let maxBytes = ctx.hllSparseMaxBytes
    try hllOperation { () throws(HyperLogLog.Failure) in
        if useDense { try hll.convertToDense() }
        for (index, value) in max.enumerated() where value != 0 {
            _ = try hll.set(index, Int(value), sparseMaxBytes: maxBytes)
        }
    }
    hll.invalidateCache()
    try ctx.storeHLL(hll, at: key, replacing: old?.entry)
    ctx.connection.replyOK()
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key.
private func pfdebug(_ ctx: CommandContext) throws {
    let sub = ctx.option(1)
    let key = ctx.args.bytes(2)
    guard var (hll, entry) = try ctx.loadHLL(key, read: false) else {
        throw ReplyError("ERR The specified key does not exist")
    }
    switch sub {
    case "getreg":
        if hll.isSparse {
            try hllOperation { () throws(HyperLogLog.Failure) in try hll.convertToDense() }
            try ctx.storeHLL(hll, at: key, replacing: entry)
        }
        let registers = hll.registers()
        ctx.connection.replyArrayHeader(registers.count)
        for value in registers { ctx.connection.replyInteger(value) }
    case "decode":
        guard hll.isSparse else { throw ReplyError("ERR HLL encoding is not sparse") }
        ctx.connection.replyBulk(hll.decodedOpcodes())
    case "encoding":
        ctx.connection.replySimple(hll.isSparse ? "sparse" : "dense")
    case "todense":
        var converted = false
        if hll.isSparse {
            try hllOperation { () throws(HyperLogLog.Failure) in try hll.convertToDense() }
            try ctx.storeHLL(hll, at: key, replacing: entry)
            converted = true
        }
        ctx.connection.replyInteger(converted ? 1 : 0)
    default:
        throw ReplyError("ERR Unknown PFDEBUG subcommand '\(ctx.quoted(1))'")
    }
}

/// PFSELFTEST: Redis's self test of the register access and of the
/// estimate's error, dense and sparse side by side (10 million elements).
private func pfselftest(_ ctx: CommandContext) throws {
    // Test 1: registers keep their values and never touch their neighbours.
    var dense = HyperLogLog()
    try hllOperation { () throws(HyperLogLog.Failure) in try dense.convertToDense() }
    var expected = [Int](repeating: 0, count: HyperLogLog.registerCount)
    for _ in 0..<1000 {
        for i in 0..<HyperLogLog.registerCount {
            let r = Int.random(in: 0...HyperLogLog.registerMax)
            expected[i] = r
            HyperLogLog.setDenseRegister(&dense.bytes, base: HyperLogLog.headerSize, i, r)
        }
        for i in 0..<HyperLogLog.registerCount {
            let value = HyperLogLog.denseRegister(dense.bytes, base: HyperLogLog.headerSize, i)
            if value != expected[i] {
                throw ReplyError("TESTFAILED Register \(i) should be \(expected[i]) but is \(value)")
            }
        }
    }
    // Test 2: the estimate's error, dense and sparse agreeing.
    for i in HyperLogLog.headerSize..<dense.bytes.count { dense.bytes[i] = 0 }
    var sparse = HyperLogLog()
    let maxBytes = ctx.hllSparseMaxBytes
    let relativeError = 1.04 / Double(HyperLogLog.registerCount).squareRoot()
    var checkpoint: UInt64 = 1
    let seed = UInt64.random(in: 0...UInt64.max)
    let failure: String? = try hllOperation { () throws(HyperLogLog.Failure) -> String? in
        for j: UInt64 in 1...10_000_000 {
            let element = withUnsafeBytes(of: (j ^ seed).littleEndian) { Array($0) }
            _ = try dense.add(element, sparseMaxBytes: maxBytes)
            _ = try sparse.add(element, sparseMaxBytes: maxBytes)
            guard j == checkpoint else { continue }
            if j < UInt64(maxBytes / 2) && !sparse.isSparse { return "TESTFAILED sparse encoding not used" }
            let denseCount = try dense.count()
            if denseCount != (try sparse.count()) { return "TESTFAILED dense/sparse disagree" }
            let absoluteError = abs(Int64(checkpoint) - Int64(denseCount))
            var maxError = UInt64((relativeError * 6 * Double(checkpoint)).rounded(.up))
            if j == 10 { maxError = 1 }
            if absoluteError > Int64(maxError) {
                return "TESTFAILED Too big error. card:\(checkpoint) abserr:\(absoluteError)"
            }
            checkpoint *= 10
        }
        return nil
    }
    if let failure { throw ReplyError(failure) }
    ctx.connection.replyOK()
}
