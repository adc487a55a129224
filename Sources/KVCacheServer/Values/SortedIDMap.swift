/// Values by stream ID in ID order, as Redis keeps a pending-entries list
/// in a radix tree: sorted chunks of up to `chunkLimit` IDs, found by a
/// binary search over the chunks and then within one. Lookup, insert and
/// remove cost O(log n + chunkLimit) (plus a move of the chunk array when a
/// chunk is added or emptied, n / chunkLimit pointers); an append past the
/// last ID, the usual case (deliveries in ID order), costs O(1). A value
/// type: copies share storage until one changes (copy on write).
struct SortedIDMap<Value> {
    struct Chunk {
        var ids: [StreamID]
        var values: [Value]
    }

    static var chunkLimit: Int { 128 }

    private(set) var chunks: [Chunk] = []
    private(set) var count = 0

    init() {}

    var isEmpty: Bool { count == 0 }
    var first: StreamID? { chunks.first?.ids.first }
    var last: StreamID? { chunks.last?.ids.last }

    /// The index of the first chunk whose last ID is at least `id` (chunks.count when none).
    private func chunkIndex(for id: StreamID) -> Int {
        var lo = 0, hi = chunks.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if chunks[mid].ids[chunks[mid].ids.count - 1] < id { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The first position in `ids` whose ID is at least `id`.
    private static func slot(_ ids: [StreamID], _ id: StreamID) -> Int {
        var lo = 0, hi = ids.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ids[mid] < id { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    private func position(of id: StreamID) -> (chunk: Int, slot: Int)? {
        let c = chunkIndex(for: id)
        guard c < chunks.count else { return nil }
        let s = Self.slot(chunks[c].ids, id)
        return chunks[c].ids[s] == id ? (c, s) : nil
    }

    func contains(_ id: StreamID) -> Bool { position(of: id) != nil }

    subscript(id: StreamID) -> Value? {
        guard let (c, s) = position(of: id) else { return nil }
        return chunks[c].values[s]
    }

    /// Changes the value at `id` in place.
    /// - Returns: false when there is none.
    @discardableResult
    mutating func update(_ id: StreamID, _ body: (inout Value) -> Void) -> Bool {
        guard let (c, s) = position(of: id) else { return false }
        body(&chunks[c].values[s])
        return true
    }

    /// Adds `value` at `id`.
    /// - Returns: false (and changes nothing) when `id` is there already.
    @discardableResult
    mutating func insert(_ id: StreamID, _ value: Value) -> Bool {
        if let last = chunks.last?.ids.last, last < id {
            if chunks[chunks.count - 1].ids.count >= Self.chunkLimit {
                chunks.append(Chunk(ids: [id], values: [value]))
            } else {
                chunks[chunks.count - 1].ids.append(id)
                chunks[chunks.count - 1].values.append(value)
            }
            count += 1
            return true
        }
        if chunks.isEmpty {
            chunks = [Chunk(ids: [id], values: [value])]
            count = 1
            return true
        }
        let c = min(chunkIndex(for: id), chunks.count - 1)
        let s = Self.slot(chunks[c].ids, id)
        if s < chunks[c].ids.count && chunks[c].ids[s] == id { return false }
        chunks[c].ids.insert(id, at: s)
        chunks[c].values.insert(value, at: s)
        count += 1
        if chunks[c].ids.count > 2 * Self.chunkLimit {
            let half = chunks[c].ids.count / 2
            let tail = Chunk(ids: Array(chunks[c].ids[half...]), values: Array(chunks[c].values[half...]))
            chunks[c].ids.removeSubrange(half...)
            chunks[c].values.removeSubrange(half...)
            chunks.insert(tail, at: c + 1)
        }
        return true
    }

    /// Removes the value at `id`.
    /// - Returns: it, or nil when there was none.
    @discardableResult
    mutating func remove(_ id: StreamID) -> Value? {
        guard let (c, s) = position(of: id) else { return nil }
        chunks[c].ids.remove(at: s)
        let value = chunks[c].values.remove(at: s)
        count -= 1
        if chunks[c].ids.isEmpty { chunks.remove(at: c) }
        return value
    }

    /// The first ID at least `id`, with its value.
    func lowerBound(_ id: StreamID) -> (id: StreamID, value: Value)? {
        let c = chunkIndex(for: id)
        guard c < chunks.count else { return nil }
        let s = Self.slot(chunks[c].ids, id)
        return (chunks[c].ids[s], chunks[c].values[s])
    }

    /// Calls `body` for each ID from `start` on, in order, until it returns false.
    func forEach(from start: StreamID = .zero, _ body: (StreamID, Value) -> Bool) {
        var c = chunkIndex(for: start)
        guard c < chunks.count else { return }
        var s = Self.slot(chunks[c].ids, start)
        while c < chunks.count {
            let chunk = chunks[c]
            while s < chunk.ids.count {
                if !body(chunk.ids[s], chunk.values[s]) { return }
                s += 1
            }
            c += 1
            s = 0
        }
    }

    /// Every ID in order.
    var ids: [StreamID] { chunks.flatMap(\.ids) }
}
