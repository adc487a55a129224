import SQLiteKVCache

/// A stream, as Redis 7.0 keeps one (t_stream.c): its entries in nodes,
/// each a listpack in Redis's own layout (a master entry naming the first
/// entry's fields, then entries whose IDs are deltas from the node's
/// master ID, flagged deleted or "same fields as the master"), the nodes
/// in ID order in an array where Redis has a radix tree; the stream's
/// counters; its consumer groups. Keeping Redis's nodes byte for byte makes
/// what a client can see of them come out as in Redis: approximate trimming
/// (`MAXLEN ~`, which removes whole nodes), `stream-node-max-entries` and
/// `-bytes`, XINFO's node counts, MEMORY USAGE, and DUMP's payload.
///
/// Costs, as Redis's: an entry by ID is a binary search over the nodes,
/// then a walk of one node (at most `stream-node-max-entries`, 100 by
/// default); XADD appends to the last node (O(1) amortized); trimming from
/// the head drops whole nodes. A live value (see `LiveValue`): commands
/// change it in place; SQLite stores its encoding (StreamValue+Codec).
final class StreamValue: LiveValue {
    /// One node: its master ID (the radix tree key), its listpack, and the
    /// bytes jemalloc would hold for that listpack in Redis (for MEMORY USAGE:
    /// a new node is allocated 4096 bytes up front, a full one shrunk to fit).
    struct Node {
        var master: StreamID
        var lp: [UInt8]
        var allocated: Int
    }

    static let flagDeleted: Int64 = 1
    static let flagSameFields: Int64 = 2
    /// Redis's STREAM_LISTPACK_MAX_SIZE and STREAM_LISTPACK_MAX_PRE_ALLOCATE.
    static let listpackMaxSize = 1 << 30
    static let listpackPreallocation = 4096

    private(set) var nodes: [Node] = []
    private(set) var length = 0
    var lastID = StreamID.zero
    private(set) var firstID = StreamID.zero
    var maxDeletedID = StreamID.zero
    var entriesAdded: UInt64 = 0
    /// The consumer groups by name (XINFO lists them sorted: `sortedGroupNames`).
    var groups: [[UInt8]: StreamGroup] = [:]

    var isFrozen = false
    var sizeAtLoad = 0
    /// The nodes' bytes in the stored form (StreamValue+Codec).
    var nodeBytes = 0

    init() {}

    init(copying other: StreamValue) {
        nodes = other.nodes
        length = other.length
        lastID = other.lastID
        firstID = other.firstID
        maxDeletedID = other.maxDeletedID
        entriesAdded = other.entriesAdded
        groups = other.groups
        nodeBytes = other.nodeBytes
    }

    func copy() -> LiveValue { StreamValue(copying: self) }

    /// A copy as Redis's COPY makes one (streamDup): listpacks allocated to fit.
    func duplicate() -> StreamValue {
        let copy = StreamValue(copying: self)
        for i in copy.nodes.indices { copy.nodes[i].allocated = RedisFootprint.allocation(copy.nodes[i].lp.count) }
        return copy
    }

    /// A stream is never deleted for being empty (XDEL of its last entry and
    /// `MAXLEN 0` leave the key), so the collection rules see it as full.
    var count: Int { length }
    var isEmpty: Bool { false }

    var sortedGroupNames: [[UInt8]] { groups.keys.sorted { $0.lexicographicallyPrecedes($1) } }

    // MARK: Nodes and entries

    /// One entry found in a node: where it is and what it holds.
    struct Entry {
        let node: Int
        /// The position of its flags element.
        let at: Int
        let id: StreamID
        let flags: Int64
        let fieldCount: Int
        /// The first field (or, with the master's fields, the first value).
        let fieldsAt: Int?
        /// The position of its lp-count element (its last).
        let endAt: Int
        /// Its node's master entry.
        let master: Master

        var deleted: Bool { flags & StreamValue.flagDeleted != 0 }
        var sameFields: Bool { flags & StreamValue.flagSameFields != 0 }
    }

    /// A node's master entry: the positions of its counts and fields.
    struct Master {
        let countAt: Int
        let deletedAt: Int
        let fieldCount: Int
        let fieldsAt: Int?
        /// The first entry's flags, nil when the node holds none.
        let firstEntryAt: Int?
    }

    static func master(_ lp: [UInt8]) -> Master {
        let countAt = Listpack.headerSize
        let deletedAt = Listpack.next(lp, countAt)!
        let numAt = Listpack.next(lp, deletedAt)!
        let fieldCount = Int(Listpack.integer(lp, numAt))
        var p = Listpack.next(lp, numAt)!
        let fieldsAt = fieldCount > 0 ? p : nil
        for _ in 0..<fieldCount { p = Listpack.next(lp, p)! }
        // `p` is the master entry's terminating zero.
        return Master(countAt: countAt, deletedAt: deletedAt, fieldCount: fieldCount, fieldsAt: fieldsAt,
                      firstEntryAt: Listpack.next(lp, p))
    }

    /// The entry whose flags are at `at` in node `i` (`m`: that node's master entry).
    func entry(node i: Int, at: Int, master m: Master) -> Entry {
        let lp = nodes[i].lp
        let flags = Listpack.integer(lp, at)
        let msAt = Listpack.next(lp, at)!
        let seqAt = Listpack.next(lp, msAt)!
        let master = nodes[i].master
        let id = StreamID(ms: master.ms &+ UInt64(bitPattern: Listpack.integer(lp, msAt)),
                          seq: master.seq &+ UInt64(bitPattern: Listpack.integer(lp, seqAt)))
        var p = Listpack.next(lp, seqAt)!
        let fieldCount: Int
        let fieldsAt: Int?
        let elements: Int
        if flags & Self.flagSameFields != 0 {
            fieldCount = m.fieldCount
            fieldsAt = fieldCount > 0 ? p : nil
            elements = fieldCount
        } else {
            fieldCount = Int(Listpack.integer(lp, p))
            p = Listpack.next(lp, p)!
            fieldsAt = fieldCount > 0 ? p : nil
            elements = 2 * fieldCount
        }
        for _ in 0..<elements { p = Listpack.next(lp, p)! }
        return Entry(node: i, at: at, id: id, flags: flags, fieldCount: fieldCount, fieldsAt: fieldsAt, endAt: p, master: m)
    }

    func firstEntry(inNode i: Int) -> Entry? {
        let m = Self.master(nodes[i].lp)
        return m.firstEntryAt.map { entry(node: i, at: $0, master: m) }
    }

    func lastEntry(inNode i: Int) -> Entry? {
        let lp = nodes[i].lp
        guard let last = Listpack.last(lp) else { return nil }
        return entry(node: i, endingAt: last, master: Self.master(lp))
    }

    /// The entry whose lp-count element is at `end`, nil for the master's terminator.
    private func entry(node i: Int, endingAt end: Int, master m: Master) -> Entry? {
        let lp = nodes[i].lp
        let elements = Listpack.integer(lp, end)
        guard elements > 0 else { return nil }
        var p = end
        for _ in 0..<elements { p = Listpack.prev(lp, p)! }
        return entry(node: i, at: p, master: m)
    }

    func entry(after e: Entry) -> Entry? {
        let lp = nodes[e.node].lp
        return Listpack.next(lp, e.endAt).map { entry(node: e.node, at: $0, master: e.master) }
    }

    func entry(before e: Entry) -> Entry? {
        Listpack.prev(nodes[e.node].lp, e.at).flatMap { entry(node: e.node, endingAt: $0, master: e.master) }
    }

    /// Calls `body` with each field and value of `e`.
    func forEachField(_ e: Entry, _ body: (Listpack.Element, Listpack.Element) -> Void) {
        let lp = nodes[e.node].lp
        guard var p = e.fieldsAt else { return }
        var f = e.sameFields ? e.master.fieldsAt : nil
        for k in 0..<e.fieldCount {
            let field: Listpack.Element
            if let at = f {
                field = Listpack.element(lp, at)
                f = Listpack.next(lp, at)
            } else {
                field = Listpack.element(lp, p)
                p = Listpack.next(lp, p)!
            }
            let value = Listpack.element(lp, p)
            body(field, value)
            if k + 1 < e.fieldCount { p = Listpack.next(lp, p)! }
        }
    }

    /// The fields and values of `e`, flattened, as a client sees them.
    func fields(of e: Entry) -> [[UInt8]] {
        let lp = nodes[e.node].lp
        var out: [[UInt8]] = []
        out.reserveCapacity(2 * e.fieldCount)
        forEachField(e) { field, value in
            out.append(Listpack.bytes(lp, field))
            out.append(Listpack.bytes(lp, value))
        }
        return out
    }

    /// The index of the last node whose master ID is at most `id`, nil when none.
    func nodeIndex(atOrBefore id: StreamID) -> Int? {
        var lo = 0, hi = nodes.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if nodes[mid].master <= id { lo = mid + 1 } else { hi = mid }
        }
        return lo == 0 ? nil : lo - 1
    }

    /// Calls `body` for the entries from `start` to `end` (inclusive), in ID
    /// order or in reverse, skipping deleted ones unless `tombstones`, until
    /// it returns false (Redis's streamIterator).
    func forEach(from start: StreamID = .zero, to end: StreamID = .max, reverse: Bool = false, tombstones: Bool = false,
                 _ body: (Entry) -> Bool) {
        guard !nodes.isEmpty, start <= end else { return }
        if !reverse {
            var i = nodeIndex(atOrBefore: start) ?? 0
            while i < nodes.count {
                var e = firstEntry(inNode: i)
                while let current = e {
                    if current.id > end { return }
                    if current.id >= start && (tombstones || !current.deleted) && !body(current) { return }
                    e = entry(after: current)
                }
                i += 1
            }
        } else {
            guard var i = nodeIndex(atOrBefore: end) else { return }
            while i >= 0 {
                var e = lastEntry(inNode: i)
                while let current = e {
                    if current.id < start { return }
                    if current.id <= end && (tombstones || !current.deleted) && !body(current) { return }
                    e = entry(before: current)
                }
                i -= 1
            }
        }
    }

    /// The entry with ID `id`, when it is there and not deleted.
    func find(_ id: StreamID) -> Entry? {
        var found: Entry?
        forEach(from: id, to: id) { found = $0; return false }
        return found
    }

    func contains(_ id: StreamID) -> Bool { find(id) != nil }

    /// The first or last entry's ID, deleted ones included unless
    /// `skipTombstones` (Redis's streamGetEdgeID): when there is none, the
    /// greatest ID for the first, 0-0 for the last.
    func edgeID(first: Bool, skipTombstones: Bool) -> StreamID {
        var found: StreamID?
        forEach(reverse: !first, tombstones: !skipTombstones) { found = $0.id; return false }
        return found ?? (first ? .max : .zero)
    }

    /// The last entry's ID (Redis's streamLastValidID), 0-0 when empty.
    var lastValidID: StreamID { edgeID(first: false, skipTombstones: true) }

    // MARK: Changing the nodes

    /// Notes a listpack's new size as Redis's allocator would see it: it
    /// grows past its allocation by reallocating to the new size, and any
    /// shrink reallocates to fit.
    private static func resized(_ node: inout Node, from old: Int) {
        let new = node.lp.count
        if (new > old && new > node.allocated) || new < old { node.allocated = RedisFootprint.allocation(new) }
    }

    private func appendElement(_ i: Int, _ bytes: some Collection<UInt8>) {
        let old = nodes[i].lp.count
        Listpack.append(&nodes[i].lp, bytes)
        Self.resized(&nodes[i], from: old)
        nodeBytes += nodes[i].lp.count - old
    }

    private func appendInteger(_ i: Int, _ v: Int64) {
        let old = nodes[i].lp.count
        Listpack.append(&nodes[i].lp, integer: v)
        Self.resized(&nodes[i], from: old)
        nodeBytes += nodes[i].lp.count - old
    }

    private func replaceInteger(_ i: Int, at p: Int, _ v: Int64) {
        let old = nodes[i].lp.count
        Listpack.replaceInteger(&nodes[i].lp, at: p, v)
        Self.resized(&nodes[i], from: old)
        nodeBytes += nodes[i].lp.count - old
    }

    /// Why XADD could not add an entry.
    enum AppendFailure: Error {
        /// The ID is not above the last one (Redis's EDOM).
        case notGreater
        /// The sequence would overflow, or the fields are too large (the rest).
        case tooLarge
    }

    /// Adds an entry (Redis's streamAppendItem): at `id` when given (its
    /// sequence generated when not `seqGiven`), else at the next ID for
    /// `now`. `pairs` are the fields and values, flattened.
    /// - Returns: the entry's ID.
    func append(_ pairs: [[UInt8]], id given: StreamID?, seqGiven: Bool, now: UInt64,
                limits: EncodingLimits) throws(AppendFailure) -> StreamID {
        let id: StreamID
        if let given {
            if seqGiven {
                id = given
            } else if lastID.ms == given.ms {
                guard lastID.seq != .max else { throw .tooLarge }
                id = StreamID(ms: lastID.ms, seq: lastID.seq + 1)
            } else {
                id = given
            }
        } else {
            guard let next = StreamID.next(after: lastID, now: now) else { throw .notGreater }
            id = next
        }
        guard id > lastID else { throw .notGreater }
        let total = pairs.reduce(0) { $0 + $1.count }
        guard total <= Self.listpackMaxSize else { throw .tooLarge }
        let fieldCount = pairs.count / 2

        var maxBytes = limits.streamNodeMaxBytes
        if maxBytes == 0 || maxBytes > Self.listpackMaxSize { maxBytes = Self.listpackMaxSize }
        var tail = nodes.isEmpty ? nil : nodes.count - 1
        if let t = tail {
            var full = nodes[t].lp.count + total >= maxBytes
            if !full && limits.streamNodeMaxEntries > 0 {
                let m = Self.master(nodes[t].lp)
                let entries = Listpack.integer(nodes[t].lp, m.countAt) + Listpack.integer(nodes[t].lp, m.deletedAt)
                full = entries >= Int64(limits.streamNodeMaxEntries)
            }
            if full {
                // lpShrinkToFit before the next node starts.
                if nodes[t].lp.count < nodes[t].allocated { nodes[t].allocated = RedisFootprint.allocation(nodes[t].lp.count) }
                tail = nil
            }
        }
        var flags: Int64 = 0
        let i: Int
        if let t = tail {
            i = t
            let m = Self.master(nodes[i].lp)
            replaceInteger(i, at: m.countAt, Listpack.integer(nodes[i].lp, m.countAt) + 1)
            let header = Self.master(nodes[i].lp)
            if header.fieldCount == fieldCount {
                var same = true
                var p = header.fieldsAt
                for k in 0..<fieldCount {
                    guard let at = p, Listpack.equals(nodes[i].lp, at, pairs[2 * k]) else { same = false; break }
                    p = Listpack.next(nodes[i].lp, at)
                }
                if same { flags |= Self.flagSameFields }
            }
        } else {
            var prealloc = Self.listpackPreallocation
            if limits.streamNodeMaxBytes > 0 && limits.streamNodeMaxBytes < prealloc { prealloc = limits.streamNodeMaxBytes }
            nodes.append(Node(master: id, lp: Listpack.empty(), allocated: RedisFootprint.allocation(max(prealloc, 7))))
            nodeBytes += Self.nodeOverhead + 7
            i = nodes.count - 1
            appendInteger(i, 1)
            appendInteger(i, 0)
            appendInteger(i, Int64(fieldCount))
            for k in 0..<fieldCount { appendElement(i, pairs[2 * k]) }
            appendInteger(i, 0)
            flags |= Self.flagSameFields
        }
        let master = nodes[i].master
        appendInteger(i, flags)
        appendInteger(i, Int64(bitPattern: id.ms &- master.ms))
        appendInteger(i, Int64(bitPattern: id.seq &- master.seq))
        let same = flags & Self.flagSameFields != 0
        if !same { appendInteger(i, Int64(fieldCount)) }
        for k in 0..<fieldCount {
            if !same { appendElement(i, pairs[2 * k]) }
            appendElement(i, pairs[2 * k + 1])
        }
        appendInteger(i, Int64(fieldCount + 3 + (same ? 0 : fieldCount + 1)))
        length += 1
        entriesAdded &+= 1
        lastID = id
        if length == 1 { firstID = id }
        return id
    }

    /// Marks `e` deleted (Redis's streamIteratorRemoveEntry): its node goes
    /// when it was the node's last live entry.
    func remove(_ e: Entry) {
        markDeleted(e)
        let live = Listpack.integer(nodes[e.node].lp, Listpack.headerSize)
        if live == 1 {
            removeNodes(e.node..<(e.node + 1))
        } else {
            adjustCounts(node: e.node, live: -1, deleted: 1)
        }
        length -= 1
    }

    /// Sets `e`'s deleted flag (the flags take one byte either way, so no
    /// position in the node moves). The counts are the caller's.
    func markDeleted(_ e: Entry) {
        replaceInteger(e.node, at: e.at, e.flags | Self.flagDeleted)
    }

    /// Changes a node's master counts of live and deleted entries.
    func adjustCounts(node i: Int, live: Int, deleted: Int) {
        let m = Self.master(nodes[i].lp)
        replaceInteger(i, at: m.countAt, Listpack.integer(nodes[i].lp, m.countAt) + Int64(live))
        let after = Self.master(nodes[i].lp)
        replaceInteger(i, at: after.deletedAt, Listpack.integer(nodes[i].lp, after.deletedAt) + Int64(deleted))
    }

    func reduceLength(by n: Int) { length -= n }

    func removeNodes(_ range: Range<Int>) {
        for node in nodes[range] { nodeBytes -= Self.nodeOverhead + node.lp.count }
        nodes.removeSubrange(range)
    }

    /// Deletes the entry `id` (Redis's streamDeleteItem).
    /// - Returns: whether it was there.
    func delete(_ id: StreamID) -> Bool {
        guard let e = find(id) else { return false }
        remove(e)
        return true
    }

    /// XDEL's bookkeeping after its deletes: the first ID moves on when the
    /// first entry went, and the greatest deleted ID is kept.
    func noteDeleted(_ ids: [StreamID], firstWasDeleted: Bool) {
        for id in ids where id > maxDeletedID { maxDeletedID = id }
        if length == 0 {
            firstID = .zero
        } else if firstWasDeleted {
            firstID = edgeID(first: true, skipTombstones: true)
        }
    }

    /// Recomputes the first ID after trimming removed `deleted` entries.
    func noteTrimmed(_ deleted: Int) {
        if length == 0 {
            firstID = .zero
        } else if deleted > 0 {
            firstID = edgeID(first: true, skipTombstones: true)
        }
    }

    /// Sets the counters as loaded (RDB, the stored form).
    func load(length: Int, lastID: StreamID, firstID: StreamID?, maxDeletedID: StreamID, entriesAdded: UInt64) {
        self.length = length
        self.lastID = lastID
        self.maxDeletedID = maxDeletedID
        self.entriesAdded = entriesAdded
        self.firstID = firstID ?? edgeID(first: true, skipTombstones: true)
    }

    /// Adds a node as loaded (RDB, the stored form), after the others.
    func loadNode(master: StreamID, lp: [UInt8]) {
        nodes.append(Node(master: master, lp: lp, allocated: RedisFootprint.allocation(lp.count)))
        nodeBytes += Self.nodeOverhead + lp.count
    }

    // MARK: Groups

    /// Redis's streamEstimateDistanceFromFirstEverEntry: the entries-read
    /// counter `id` stands for, when it can be known.
    func estimatedEntriesRead(at id: StreamID) -> Int64? {
        if entriesAdded == 0 { return 0 }
        if length == 0 && id <= lastID { return Int64(bitPattern: entriesAdded) }
        if id == lastID { return Int64(bitPattern: entriesAdded) }
        if id > lastID { return nil }
        if maxDeletedID.isZero || maxDeletedID < firstID {
            if id < firstID { return Int64(bitPattern: entriesAdded) - Int64(length) }
            if id == firstID { return Int64(bitPattern: entriesAdded) - Int64(length) + 1 }
        }
        return nil
    }

    /// Redis's streamRangeHasTombstones from `start` to the end.
    func hasTombstones(from start: StreamID) -> Bool {
        if length == 0 || maxDeletedID.isZero { return false }
        if firstID > maxDeletedID { return false }
        return start <= maxDeletedID
    }

    /// A group's lag (Redis's streamReplyWithCGLag), nil when it cannot be known.
    func lag(of group: StreamGroup) -> Int64? {
        if entriesAdded == 0 { return 0 }
        let added = Int64(bitPattern: entriesAdded)
        if group.entriesRead != StreamGroup.unknownEntriesRead && !hasTombstones(from: group.lastID) {
            return added - group.entriesRead
        }
        return estimatedEntriesRead(at: group.lastID).map { added - $0 }
    }

    /// Advances `group` past a delivered `id` (streamReplyWithRange's
    /// counter of entries read).
    func advance(_ name: [UInt8], to id: StreamID) {
        guard let group = groups[name], id > group.lastID else { return }
        var read = group.entriesRead
        if read != StreamGroup.unknownEntriesRead && !hasTombstones(from: id) {
            read += 1
        } else if entriesAdded > 0 {
            read = estimatedEntriesRead(at: id) ?? StreamGroup.unknownEntriesRead
        }
        groups[name]!.entriesRead = read
        groups[name]!.lastID = id
    }
}
