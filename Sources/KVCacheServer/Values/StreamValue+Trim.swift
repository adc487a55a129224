/// How XADD and XTRIM trim a stream (Redis's streamAddTrimArgs).
struct StreamTrim: Equatable {
    enum Strategy: Equatable {
        /// Keep at most this many entries.
        case maxLength(Int)
        /// Keep no entry below this ID.
        case minID(StreamID)
    }

    var strategy: Strategy
    /// `~`: only whole nodes go.
    var approximate: Bool
    /// The most entries one trim may remove (0: no bound).
    var limit: Int
}

extension StreamValue {
    /// Trims from the head (Redis's streamTrim): whole nodes while the
    /// strategy allows and `limit` is not passed; then, unless approximate,
    /// the entries of the first node that must go are marked deleted.
    /// - Returns: how many entries went.
    @discardableResult
    func trim(_ t: StreamTrim) -> Int {
        var deleted = 0
        while !nodes.isEmpty {
            if case .maxLength(let maxLength) = t.strategy, length <= maxLength { break }
            let master = Self.master(nodes[0].lp)
            let entries = Int(Listpack.integer(nodes[0].lp, master.countAt))
            if t.limit > 0 && deleted + entries > t.limit { break }
            let removeNode: Bool
            switch t.strategy {
            case .maxLength(let maxLength):
                removeNode = length - entries >= maxLength
            case .minID(let minID):
                removeNode = (lastEntry(inNode: 0)?.id ?? .zero) < minID
            }
            if removeNode {
                removeNodes(0..<1)
                reduceLength(by: entries)
                deleted += entries
                continue
            }
            if t.approximate { break }
            // Entries within the node: marked deleted until the strategy is met.
            var marked = 0
            var e = firstEntry(inNode: 0)
            while let current = e {
                switch t.strategy {
                case .maxLength(let maxLength): if length <= maxLength { e = nil; continue }
                case .minID(let minID): if current.id >= minID { e = nil; continue }
                }
                if !current.deleted {
                    markDeleted(current)
                    marked += 1
                    reduceLength(by: 1)
                }
                e = entry(after: current)
            }
            deleted += marked
            if marked > 0 { adjustCounts(node: 0, live: -marked, deleted: marked) }
            break
        }
        noteTrimmed(deleted)
        return deleted
    }
}
