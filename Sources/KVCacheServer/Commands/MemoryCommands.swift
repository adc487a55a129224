import Foundation
import CLinux
import RESP

/// MEMORY USAGE STATS DOCTOR MALLOC-STATS PURGE HELP, as Redis 7.0 answers
/// them (object.c `memoryCommand`), with this server's figures where they
/// mean the same: `MemoryFigures` says which is which.
let memoryCommands: [Command] = [
    Command(name: "memory", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "A container for memory diagnostics commands.", handler: memory,
            subcommands: ["doctor", "help", "malloc-stats", "purge", "stats", "usage"]),
]

private func memory(_ ctx: CommandContext) throws {
    let c = ctx.connection
    let sub = ctx.option(1)
    // Each subcommand's arity, as Redis's subcommand table checks it.
    let arity = ["usage": -3, "stats": 2, "doctor": 2, "malloc-stats": 2, "purge": 2, "help": 2][sub]
    if let arity, arity > 0 ? ctx.args.count != arity : ctx.args.count < -arity {
        throw ReplyError.wrongArity("memory|\(sub)")
    }
    switch sub {
    case "help" where ctx.args.count == 2:
        c.replyHelp([
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR", "    Return memory problems reports.",
            "MALLOC-STATS", "    Return internal statistics report from the memory allocator.",
            "PURGE", "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS", "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
            "HELP", "    Prints this help.",
        ])
    case "usage" where ctx.args.count >= 3:
        var samples = 5
        var i = 3
        while i < ctx.args.count {
            guard ctx.option(i) == "samples", i + 1 < ctx.args.count else { throw ReplyError.syntax }
            let n = try ctx.integer(i + 1)
            guard n >= 0 else { throw ReplyError.syntax }
            samples = n == 0 ? 0 : Int(clamping: n)
            i += 2
        }
        guard let usage = try ctx.keyspace.redisMemoryUsage(ctx.args.bytes(2), samples: samples) else {
            return c.replyNull()
        }
        c.replyInteger(usage)
    case "stats" where ctx.args.count == 2:
        let figures = MemoryFigures(ctx.server)
        let fields = figures.stats()
        c.replyMapHeader(fields.count)
        for (name, value) in fields {
            c.replyBulk(name)
            switch value {
            case .integer(let n): c.replyInteger(n)
            case .double(let d): RESPEncoder.double(d, into: &c.output, version: c.protocolVersion)
            case .map(let inner):
                c.replyMapHeader(inner.count)
                for (innerName, n) in inner {
                    c.replyBulk(innerName)
                    c.replyInteger(n)
                }
            }
        }
    case "malloc-stats" where ctx.args.count == 2:
        // What Redis answers when it is not built with jemalloc.
        c.replyBulk("Stats not supported for the current allocator")
    case "doctor" where ctx.args.count == 2:
        c.replyVerbatim(MemoryFigures(ctx.server).doctorReport())
    case "purge" where ctx.args.count == 2:
        // glibc's counterpart of jemalloc's purge: give free heap pages back.
        malloc_trim(0)
        c.replyOK()
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "memory")
    }
}

extension Keyspace {
    /// What `key` and its value would take in Redis's memory (nil when the
    /// key is absent), whether its value is in the memory tier or only on
    /// disk: see `RedisFootprint`. Neither a hit nor an access.
    func redisMemoryUsage(_ key: [UInt8], samples: Int) throws -> Int? {
        guard let entry = try peek(key) else { return nil }
        let value: Int
        switch entry.kind {
        case .string:
            value = RedisFootprint.string(entry.value)
        case .list:
            guard let list = try loadList(key)?.value else { return nil }
            value = RedisFootprint.list(list.items, count: list.count, samples: samples)
        case .set:
            guard let set = try loadSet(key)?.value else { return nil }
            if set.large {
                value = RedisFootprint.hashtableSet(set.hashtableMembers, count: set.count, samples: samples)
            } else {
                value = RedisFootprint.intset(set.allMembers.compactMap(parseStrictInt64))
            }
        case .hash:
            guard let hash = try loadHash(key)?.value else { return nil }
            if hash.large {
                value = RedisFootprint.hashtableHash(hash.lazyPairs.lazy.map { ($0.field, $0.value) }, count: hash.count, samples: samples)
            } else {
                value = RedisFootprint.object + RedisFootprint.listpack(hash.allPairs.flatMap { [$0.field, $0.value] })
            }
        case .zset:
            guard let zset = try loadZSet(key)?.value else { return nil }
            if zset.large {
                value = RedisFootprint.skiplist(zset.lazyUnorderedMembers, count: zset.count, samples: samples)
            } else {
                value = RedisFootprint.object + RedisFootprint.listpack(
                    zset.allElements.flatMap { [$0.member, RedisFootprint.scoreEntry($0.score)] })
            }
        case .stream:
            guard let stream = try loadStream(key, read: false)?.value else { return nil }
            value = RedisFootprint.stream(stream, samples: samples)
        }
        return value + RedisFootprint.key(key.count)
    }
}

/// The server's memory as `MEMORY STATS` and `MEMORY DOCTOR` read it.
/// Redis's figures come from its allocator; here `total.allocated` is what
/// glibc's malloc has handed out (`mallinfo2`: the memory tier, the
/// memtable, SQLite's page caches, client buffers), `allocator.resident` is
/// the process's own resident memory (`RssAnon`, /proc/self/status) and the
/// RSS is `VmRSS`, which also counts mapped file pages.
struct MemoryFigures {
    enum Value {
        case integer(Int)
        case double(Double)
        case map([(String, Int)])
    }

    let allocated: Int, active: Int, residentAnon: Int, rss: Int
    let peak: Int, startup: Int, clientBuffers: Int, clients: Int, logBuffer: Int
    /// Per numbered cache with keys: its index, keys and keys with a TTL.
    let caches: [(index: Int, keys: Int, volatile: Int)]

    init(_ server: Server) {
        let info = mallinfo2()
        residentAnon = processStatusBytes("RssAnon") ?? residentSetBytes()
        // A sanitizer's runtime replaces malloc and leaves glibc's figures
        // at zero: the process's own memory stands in for them then.
        let heap = Int(info.uordblks + info.hblkhd)
        allocated = heap > 0 ? heap : residentAnon
        active = heap > 0 ? Int(info.arena + info.hblkhd) : residentAnon
        rss = residentSetBytes()
        server.peakAllocated = max(server.peakAllocated, allocated)
        peak = server.peakAllocated
        startup = min(server.startupMemory, allocated)
        var buffers = 0, count = 0
        for case let connection? in server.connections {
            buffers += connection.memoryUsage
            count += 1
        }
        clientBuffers = buffers
        clients = count
        logBuffer = server.persistence.log?.pendingBytes ?? 0
        caches = server.registry.open.values.compactMap { cache -> (Int, Int, Int)? in
            guard let index = cache.databaseIndex, let stats = cache.statistics(), stats.entries > 0 else { return nil }
            return (index, stats.entries, stats.volatileEntries)
        }.sorted { $0.0 < $1.0 }
    }

    /// The main table's overhead per key in Redis (a dictEntry and a slot)
    /// and the expires table's, as `MEMORY STATS` counts them.
    static func tableOverhead(_ count: Int) -> Int {
        guard count > 0 else { return 0 }
        return count * RedisFootprint.dictEntry + RedisFootprint.slots(count: count) * 8
    }

    func stats() -> [(String, Value)] {
        let cacheOverheads = caches.map { cache in
            ("db.\(cache.index)", Value.map([
                ("overhead.hashtable.main", Self.tableOverhead(cache.keys)),
                ("overhead.hashtable.expires", Self.tableOverhead(cache.volatile)),
                ("overhead.hashtable.slot-to-keys", 0),
            ]))
        }
        let tableBytes = caches.reduce(0) { $0 + Self.tableOverhead($1.keys) + Self.tableOverhead($1.volatile) }
        let overhead = startup + clientBuffers + logBuffer + tableBytes
        let keys = caches.reduce(0) { $0 + $1.keys }
        let dataset = max(0, allocated - overhead)
        let net = max(0, allocated - startup)
        return [
            ("peak.allocated", .integer(peak)),
            ("total.allocated", .integer(allocated)),
            ("startup.allocated", .integer(startup)),
            ("replication.backlog", .integer(0)),
            ("clients.slaves", .integer(0)),
            ("clients.normal", .integer(clientBuffers)),
            ("cluster.links", .integer(0)),
            ("aof.buffer", .integer(logBuffer)),
            ("lua.caches", .integer(0)),
            ("functions.caches", .integer(0)),
        ] + cacheOverheads + [
            ("overhead.total", .integer(overhead)),
            ("keys.count", .integer(keys)),
            ("keys.bytes-per-key", .integer(keys > 0 ? net / keys : 0)),
            ("dataset.bytes", .integer(dataset)),
            ("dataset.percentage", .double(net > 0 ? Double(dataset) * 100 / Double(net) : 0)),
            ("peak.percentage", .double(peak > 0 ? Double(allocated) * 100 / Double(peak) : 0)),
            ("allocator.allocated", .integer(allocated)),
            ("allocator.active", .integer(active)),
            ("allocator.resident", .integer(residentAnon)),
            ("allocator-fragmentation.ratio", .double(ratio(active, allocated))),
            ("allocator-fragmentation.bytes", .integer(active - allocated)),
            ("allocator-rss.ratio", .double(ratio(residentAnon, active))),
            ("allocator-rss.bytes", .integer(residentAnon - active)),
            ("rss-overhead.ratio", .double(ratio(rss, residentAnon))),
            ("rss-overhead.bytes", .integer(rss - residentAnon)),
            ("fragmentation", .double(ratio(rss, allocated))),
            ("fragmentation.bytes", .integer(rss - allocated)),
        ]
    }

    private func ratio(_ a: Int, _ b: Int) -> Double { b > 0 ? Double(a) / Double(b) : 0 }

    /// Redis's `getMemoryDoctorReport`, on these figures, word for word.
    func doctorReport() -> String {
        if allocated < 5 << 20 {
            return "Hi Sam, this instance is empty or is using very little memory, "
                + "my issues detector can't be used in these conditions. "
                + "Please, leave for your mission on Earth and fill it with some data. "
                + "The new Sam and I will be back to our programming as soon as I "
                + "finished rebooting.\n"
        }
        var issues: [String] = []
        if Double(peak) / Double(allocated) > 1.5 {
            issues.append(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n")
        }
        if ratio(rss, allocated) > 1.4, rss - allocated > 10 << 20 {
            issues.append(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"libc\".\n\n")
        }
        if ratio(active, allocated) > 1.1, active - allocated > 10 << 20 {
            issues.append(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n")
        }
        if ratio(residentAnon, active) > 1.1, residentAnon - active > 10 << 20 {
            issues.append(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n")
        }
        if ratio(rss, residentAnon) > 1.1, rss - residentAnon > 10 << 20 {
            issues.append(" * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n")
        }
        if clients > 0, clientBuffers / clients > 200 * 1024 {
            issues.append(" * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n")
        }
        if issues.isEmpty {
            return "Hi Sam, I can't find any memory issue in your instance. "
                + "I can only account for what occurs on this base.\n"
        }
        return "Sam, I detected a few issues in this Redis instance memory implants:\n\n" + issues.joined()
            + "I'm here to keep you safe, Sam. I want to help you.\n"
    }
}

/// A `kB` figure of /proc/self/status (`RssAnon`, `VmRSS`) in bytes.
func processStatusBytes(_ field: String) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        let digits = line.dropFirst(field.count + 1).filter(\.isNumber)
        return Int(digits).map { $0 * 1024 }
    }
    return nil
}
