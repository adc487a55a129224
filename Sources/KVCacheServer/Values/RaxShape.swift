/// How many nodes Redis's radix tree (rax.c) has for a set of stream IDs
/// (16-byte big-endian keys): what XINFO STREAM's `radix-tree-nodes` and
/// MEMORY USAGE's estimate count. A rax holds a chain of single children
/// in one compressed node, so its nodes are the root, every branching
/// point, the node after each branch, and one node per key. This is the
/// tree as inserting the keys builds it; deletions in Redis can leave a
/// tree that is not merged back as far, so after them the figure may
/// differ from Redis's by a few nodes.
enum RaxShape {
    /// - Parameter ids: sorted, distinct.
    static func nodeCount(_ ids: [StreamID]) -> Int {
        guard !ids.isEmpty else { return 1 }
        return count(ids[...], depth: 0, startsNode: true)
    }

    private static func byte(_ id: StreamID, _ depth: Int) -> UInt8 {
        depth < 8 ? UInt8(truncatingIfNeeded: id.ms >> UInt64(56 - 8 * depth))
            : UInt8(truncatingIfNeeded: id.seq >> UInt64(56 - 8 * (depth - 8)))
    }

    private static func count(_ ids: ArraySlice<StreamID>, depth: Int, startsNode: Bool) -> Int {
        if depth == 16 { return 1 }
        // Runs of IDs sharing the next byte: the children.
        var children: [Range<Int>] = []
        var start = ids.startIndex
        var current = byte(ids[start], depth)
        for i in ids.indices.dropFirst() {
            let b = byte(ids[i], depth)
            if b != current {
                children.append(start..<i)
                start = i
                current = b
            }
        }
        children.append(start..<ids.endIndex)
        let branching = children.count > 1
        var n = startsNode || branching ? 1 : 0
        for child in children { n += count(ids[child], depth: depth + 1, startsNode: branching) }
        return n
    }
}
