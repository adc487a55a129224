#if canImport(Glibc)
import Glibc
#endif
import RESP
import SQLiteKVCache

/// Redis's maxmemory (evict.c): a server-wide limit on the data held, the
/// content bytes of every cache plus what clients' buffers hold. Before a
/// command runs, while the server is over the limit, keys are evicted by
/// `maxmemory-policy`, over every cache: the random policies pick at
/// random, the others sample `maxmemory-samples` keys per cache into a pool
/// of the best candidates (the idlest for LRU, the least used for LFU, the
/// soonest to expire for volatile-ttl, the oldest write for fifo) and evict
/// the best, as Redis does. Evictions are logged as deletes. When nothing
/// more can go (noeviction, or no key with an expiry for volatile-*), a
/// command that may take room (Redis's denyoom), and anything but EXEC,
/// DISCARD, QUIT and RESET inside MULTI, gets -OOM. Each cache's capacity
/// is enforced apart, by the engine.
extension Server {
    /// A key the pool holds, ranked (higher goes first).
    struct EvictionCandidate {
        var cache: String
        var key: [UInt8]
        var rank: Double
    }

    static let evictionPoolSize = 16

    /// Content bytes over every open cache.
    var dataBytes: Int { registry.open.values.reduce(0) { $0 + ($1.engine?.contentBytes ?? 0) } }

    /// What maxmemory compares with: the data, and clients' buffers (as of the last cron).
    var maxMemoryUsed: Int { dataBytes + clientBufferBytes }

    /// Recounts what clients' buffers hold (query buffers and unsent
    /// replies), replica feeds apart.
    func refreshClientBufferBytes() {
        var clients = 0, replicas = 0
        for case let connection? in connections {
            if connection.isReplica { replicas += connection.memoryUsage } else { clients += connection.memoryUsage }
        }
        clientBufferBytes = clients
        replicaBufferBytes = replicas
    }

    /// Redis's `getClientEvictionLimit`: `maxmemory-clients` in bytes, or
    /// its percentage of `maxmemory` (none while maxmemory is 0), at least
    /// 128 KiB so that a client can still talk to the server; 0: off.
    static func clientEvictionLimit(_ config: ServerConfig) -> Int {
        let text = config.acceptedSettings["maxmemory-clients"] ?? "0"
        let limit: Int
        if text.hasSuffix("%") {
            guard config.maxMemory > 0, let percent = Int(text.dropLast()), percent > 0 else { return 0 }
            limit = Int(Double(config.maxMemory) * Double(percent) / 100)
        } else {
            guard let bytes = Int(text), bytes > 0 else { return 0 }
            limit = bytes
        }
        return max(limit, 128 * 1024)
    }

    /// Redis's `evictClients` (maxmemory-clients): while the clients'
    /// memory together (CLIENT LIST's tot-mem: buffers, MULTI state,
    /// watched keys, subscriptions; replica feeds apart) reaches the limit, the client holding
    /// the most is closed, logged as Redis logs it. A client with CLIENT
    /// NO-EVICT on counts but is never closed. Runs before each command and
    /// once a loop iteration (a query buffer grows between commands).
    func evictClientsIfNeeded() {
        let limit = clientEvictionLimit
        guard limit > 0 else { return }
        var total = 0
        var evictable: [(memory: Int, connection: Connection)] = []
        for case let connection? in connections where !connection.closed && !connection.isReplica && !connection.isMaster {
            let memory = connection.memoryUsage
            total += memory
            if !connection.noEvict { evictable.append((memory, connection)) }
        }
        guard total >= limit else { return }
        let now = Self.nowMilliseconds()
        for (memory, connection) in evictable.sorted(by: { $0.memory > $1.memory }) where total >= limit {
            logger.notice("Evicting client: \(connection.infoLine(now: now))")
            stats.evictedClients += 1
            close(connection)
            total -= memory
        }
    }

    /// Evicts by `maxmemory-policy` until the data fits `maxmemory`, for
    /// at most about `maxmemory-eviction-tenacity`'s time (then the loop
    /// goes on in the background, as Redis's eviction time proc).
    /// - Returns: false when over the limit with nothing left to evict.
    func performEvictions() -> Bool {
        let limit = config.maxMemory
        guard limit > 0 else { return true }
        if !openedAllForMaxMemory {
            openedAllForMaxMemory = true
            _ = registry.openAllKnown()
        }
        var used = maxMemoryUsed
        guard used > limit else { return true }
        // Over the limit by the last count: recount clients' buffers first
        // (they may have been sent or freed since), so a stale count never
        // evicts a key or refuses a write.
        refreshClientBufferBytes()
        used = maxMemoryUsed
        guard used > limit else { return true }
        let policy = config.maxMemoryPolicy
        if policy == .noeviction { return false }
        let tenacity = config.maxMemoryEvictionTenacity
        let budget = tenacity <= 10 ? 50 * tenacity : tenacity < 100 ? Int(500 * pow(1.15, Double(tenacity - 10))) : .max
        let started = Self.monotonicMicroseconds()
        var evicted = 0
        while used > limit {
            guard let (cache, key) = nextEvictionVictim(policy) else {
                persistence.appendPending()
                return false
            }
            do {
                let freed = try Keyspace(server: self, cache: cache).evictForMaxMemory(key)
                if freed > 0 {
                    used -= freed
                    evicted += 1
                }
            } catch {
                logger.warning("Evicting from cache '\(cache.name)' for maxmemory failed: \(error)")
                break
            }
            if evicted % 16 == 0 && Self.monotonicMicroseconds() - started > budget {
                // Enough for this command; the loop evicts the rest in the background.
                maxMemoryEvictionPending = true
                backgroundWorkPending = true
                break
            }
        }
        persistence.appendPending()
        return used <= limit || maxMemoryEvictionPending
    }

    /// The loop's background share of eviction, after a command stopped at its time budget.
    func continueMaxMemoryEviction() {
        guard maxMemoryEvictionPending else { return }
        maxMemoryEvictionPending = false
        _ = performEvictions()
    }

    /// The next key to evict under `policy` (its cache and key), or nil when none may go.
    private func nextEvictionVictim(_ policy: MaxMemoryPolicy) -> (OpenCache, [UInt8])? {
        let caches = registry.open.values.filter { ($0.engine?.count ?? 0) > 0 }.sorted { $0.name < $1.name }
        guard !caches.isEmpty else { return nil }
        let volatileOnly = policy.volatileOnly
        if policy == .allkeysRandom || policy == .volatileRandom {
            // A cache in proportion to its keys (with an expiry), then a key in it.
            for _ in 0..<caches.count * 2 {
                let weights = caches.map { volatileOnly ? ($0.engine?.statistics().volatileEntries ?? 0) : ($0.engine?.count ?? 0) }
                let total = weights.reduce(0, +)
                guard total > 0 else { return nil }
                var pick = Int.random(in: 0..<total, using: &random)
                var chosen = caches[0]
                for (cache, weight) in zip(caches, weights) {
                    if pick < weight {
                        chosen = cache
                        break
                    }
                    pick -= weight
                }
                if let sample = try? chosen.engine?.evictionSamples(count: 1, volatileOnly: volatileOnly).first {
                    return (chosen, sample.key)
                }
            }
            return nil
        }
        for cache in caches {
            guard let samples = try? cache.engine?.evictionSamples(count: config.maxMemorySamples, volatileOnly: volatileOnly) else {
                continue
            }
            for sample in samples {
                let rank: Double
                switch policy {
                case .allkeysLFU, .volatileLFU: rank = 255 - Double(sample.frequency) + Double(sample.idleMilliseconds) / 1e12
                case .volatileTTL: rank = -Double(sample.expiresAt ?? .max)
                case .fifo: rank = -sample.storageDate - Double(sample.seq) / 1e15
                default: rank = Double(sample.idleMilliseconds)
                }
                evictionPool.removeAll { $0.cache == cache.name && $0.key == sample.key }
                evictionPool.append(EvictionCandidate(cache: cache.name, key: sample.key, rank: rank))
            }
        }
        evictionPool.sort { $0.rank > $1.rank }
        if evictionPool.count > Self.evictionPoolSize { evictionPool.removeLast(evictionPool.count - Self.evictionPoolSize) }
        while !evictionPool.isEmpty {
            let best = evictionPool.removeFirst()
            if let cache = registry.open[best.cache] { return (cache, best.key) }
        }
        return nil
    }

    /// Subcommands of Redis's container commands that Redis flags `denyoom`
    /// (their container is not).
    static let denyOOMSubcommands: Set<String> = ["function|load", "function|restore", "xgroup|create"]

    /// Whether a call is Redis's `denyoom`: its command's flag, or its
    /// subcommand's (FUNCTION LOAD and RESTORE; the FUNCTION container is not).
    /// - Parameter subcommand: the call's second argument, lowercased (nil: none).
    static func deniesOOM(_ command: Command, subcommand: @autoclosure () -> String?) -> Bool {
        if command.deniesOOM { return true }
        guard !command.subcommands.isEmpty, let sub = subcommand() else { return false }
        return denyOOMSubcommands.contains(command.name + "|" + sub)
    }

    /// Whether a call is refused while the server is over maxmemory
    /// (Redis's processCommand): one that may take room (denyoom, or an
    /// EXEC holding one, subcommands included), or any but EXEC, DISCARD,
    /// QUIT and RESET inside MULTI.
    func refusedWhenOutOfMemory(_ command: Command, _ args: Arguments, _ connection: Connection) -> Bool {
        if Self.deniesOOM(command, subcommand: args.count >= 2 ? args[1].lowercasedText : nil) { return true }
        if let queued = connection.transaction {
            if command.isExec {
                return queued.commands.contains { call in
                    guard let queuedCommand = commands.lookup(call[0]) else { return false }
                    return Self.deniesOOM(queuedCommand, subcommand: call.count >= 2
                        ? String(decoding: call[1].map(asciiLower), as: UTF8.self) : nil)
                }
            }
            return !["discard", "quit", "reset"].contains(command.name)
        }
        return false
    }
}
