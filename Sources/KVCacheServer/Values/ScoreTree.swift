#if canImport(Glibc)
import Glibc
#endif

/// Compares two byte strings as Redis's `sdscmp` does: `memcmp` over the
/// shorter length, then the shorter first.
@inline(__always)
func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    let n = min(a.count, b.count)
    if n > 0 {
        let c = a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in memcmp(x.baseAddress!, y.baseAddress!, n) } }
        if c != 0 { return Int(c) }
    }
    return a.count - b.count
}

/// A sorted set's order, as Redis's skiplist keeps it: by score, then by
/// member bytes. The tree of `ZSetValue`: an order-statistic treap (a
/// binary search tree by that order, heap-ordered by random priorities, so
/// its depth is O(log n) expected), each node counting the elements under
/// it. Insert, remove, rank and select are O(log n); a range is O(log n)
/// to find and O(1) per element to walk (an explicit stack, no parent
/// links). Nodes live in one array indexed by `Int32` (members in another),
/// so a tree is two arrays (no object per element), and a copy is a copy
/// of those arrays.
struct ScoreTree {
    /// A node: its children (-1: none), the elements under it, its heap
    /// priority and its score, in 24 bytes, so a step of a descent touches
    /// one cache line (four parallel arrays took four misses a step at 1M
    /// elements). A copy of the tree copies these bytes, without a retain.
    private struct Node {
        var left: Int32
        var right: Int32
        var size: Int32
        var priority: UInt32
        var score: Double
    }

    private var nodes: [Node] = []
    private(set) var members: [[UInt8]] = []
    /// Nodes freed by removals, reused by insertions.
    private var free: [Int32] = []
    private var root: Int32 = -1
    private var seed: UInt64 = 0x9E37_79B9_7F4A_7C15

    init() {}

    /// A tree of `elements`, given in order (score, then member), built in O(n).
    init(sorted elements: [(member: [UInt8], score: Double)]) {
        let n = elements.count
        nodes = elements.map { Node(left: -1, right: -1, size: 0, priority: 0, score: $0.score) }
        members = elements.map(\.member)
        root = build(0, n)
    }

    /// Builds a balanced subtree of the nodes `lo..<hi` (already in order).
    /// Priorities follow subtree sizes (the expected maximum of that many
    /// uniform priorities), so the heap order holds and later insertions,
    /// with random priorities, interleave as in a treap built at random.
    private mutating func build(_ lo: Int, _ hi: Int) -> Int32 {
        guard lo < hi else { return -1 }
        let mid = (lo + hi) / 2
        nodes[mid].left = build(lo, mid)
        nodes[mid].right = build(mid + 1, hi)
        let n = hi - lo
        nodes[mid].size = Int32(n)
        nodes[mid].priority = UInt32(Double(UInt32.max) * Double(n) / Double(n + 1))
        return Int32(mid)
    }

    var count: Int { root < 0 ? 0 : Int(nodes[Int(root)].size) }

    /// Nodes in the arrays, free ones included.
    var capacity: Int { nodes.count }

    // MARK: Order

    /// Whether (s1, m1) comes before (s2, m2).
    @inline(__always)
    static func precedes(_ s1: Double, _ m1: [UInt8], _ s2: Double, _ m2: [UInt8]) -> Bool {
        if s1 != s2 { return s1 < s2 }
        return compareBytes(m1, m2) < 0
    }

    /// Whether (score, member) comes before node `i`'s element; the
    /// member is read only on a tie of scores.
    @inline(__always)
    private func precedes(_ score: Double, _ member: [UInt8], node i: Int) -> Bool {
        let s = nodes[i].score
        if score != s { return score < s }
        return compareBytes(member, members[i]) < 0
    }

    /// Whether node `i`'s element comes before (score, member).
    @inline(__always)
    private func node(_ i: Int, precedes score: Double, _ member: [UInt8]) -> Bool {
        let s = nodes[i].score
        if s != score { return s < score }
        return compareBytes(members[i], member) < 0
    }

    @inline(__always)
    private func sizeOf(_ t: Int32) -> Int { t < 0 ? 0 : Int(nodes[Int(t)].size) }

    @inline(__always)
    private mutating func update(_ t: Int32) {
        nodes[Int(t)].size = Int32(1 + sizeOf(nodes[Int(t)].left) + sizeOf(nodes[Int(t)].right))
    }

    private mutating func nextPriority() -> UInt32 {
        // xorshift64*: fast, and the tree's shape never shows in a result.
        seed ^= seed >> 12
        seed ^= seed << 25
        seed ^= seed >> 27
        return UInt32(truncatingIfNeeded: (seed &* 0x2545_F491_4F6C_DD1D) >> 32)
    }

    // MARK: Changes

    /// Inserts (score, member), which must not be in the tree.
    mutating func insert(_ member: [UInt8], score: Double) {
        let node: Int32
        if let reused = takeFreeSlot() {
            node = reused
            let i = Int(node)
            nodes[i].left = -1
            nodes[i].right = -1
            nodes[i].size = 1
            nodes[i].priority = nextPriority()
            nodes[i].score = score
            members[i] = member
        } else {
            node = Int32(nodes.count)
            nodes.append(Node(left: -1, right: -1, size: 1, priority: nextPriority(), score: score))
            members.append(member)
        }
        root = insert(node, into: root)
    }

    private mutating func insert(_ n: Int32, into t: Int32) -> Int32 {
        guard t >= 0 else { return n }
        let i = Int(t)
        if nodes[Int(n)].priority > nodes[i].priority {
            let (l, r) = split(t, beforeScore: nodes[Int(n)].score, member: members[Int(n)])
            nodes[Int(n)].left = l
            nodes[Int(n)].right = r
            update(n)
            return n
        }
        if precedes(nodes[Int(n)].score, members[Int(n)], node: i) {
            nodes[i].left = insert(n, into: nodes[i].left)
        } else {
            nodes[i].right = insert(n, into: nodes[i].right)
        }
        nodes[i].size += 1
        return t
    }

    /// Removes (score, member), which must be in the tree.
    mutating func remove(_ member: [UInt8], score: Double) {
        root = remove(score, member, from: root)
        shrinkIfSparse()
    }

    private mutating func remove(_ score: Double, _ member: [UInt8], from t: Int32) -> Int32 {
        precondition(t >= 0, "ScoreTree.remove of an element not in the tree")
        let i = Int(t)
        let s = nodes[i].score
        if s == score, compareBytes(members[i], member) == 0 {
            let merged = merge(nodes[i].left, nodes[i].right)
            release(t)
            return merged
        }
        if precedes(score, member, node: i) {
            nodes[i].left = remove(score, member, from: nodes[i].left)
        } else {
            nodes[i].right = remove(score, member, from: nodes[i].right)
        }
        nodes[i].size -= 1
        return t
    }

    /// Frees node `t`: a size of 0 marks a free node.
    private mutating func release(_ t: Int32) {
        members[Int(t)] = []
        nodes[Int(t)].size = 0
        free.append(t)
    }

    /// The elements at ranks `range` (ascending), removed from the tree.
    mutating func removeRanks(_ range: Range<Int>) -> [(member: [UInt8], score: Double)] {
        guard !range.isEmpty else { return [] }
        let (before, rest) = split(root, firstCount: range.lowerBound)
        let (middle, after) = split(rest, firstCount: range.count)
        var removed: [(member: [UInt8], score: Double)] = []
        removed.reserveCapacity(range.count)
        var stack: [Int32] = []
        var t = middle
        while t >= 0 || !stack.isEmpty {
            while t >= 0 {
                stack.append(t)
                t = nodes[Int(t)].left
            }
            let n = stack.removeLast()
            removed.append((members[Int(n)], nodes[Int(n)].score))
            t = nodes[Int(n)].right
            release(n)
        }
        root = merge(before, after)
        // A rebuild costs what is left, which this removal outweighs.
        if range.count >= count { compactIfSparse() } else { shrinkIfSparse() }
        return removed
    }

    /// A free node to reuse, if any. `free` may list nodes taken back since
    /// (dropped from the end, or reused after that), skipped here.
    private mutating func takeFreeSlot() -> Int32? {
        while let t = free.popLast() {
            if Int(t) < nodes.count && nodes[Int(t)].size == 0 { return t }
        }
        return nil
    }

    /// A tree of at most this many elements is rebuilt at once when two
    /// thirds of its nodes are free (a few ms); a larger one shrinks a few
    /// nodes a removal (`shrinkIfSparse`).
    var rebuildLimit = 65_536

    /// Once two thirds of the nodes are free (after many removals): a small
    /// tree is rebuilt; a large one moves up to four nodes from the end of
    /// the arrays into free ones each removal, so its arrays shrink without
    /// a pause: a rebuild of what was left of a 1M-member set took 72 ms in
    /// one ZREM. A moved node's parent is found by a descent to its
    /// element, so a removal then costs a few descents instead of one.
    private mutating func shrinkIfSparse() {
        guard nodes.count - count > 2 * count else { return }
        if count <= rebuildLimit {
            compactIfSparse()
            return
        }
        var moves = 0
        while moves < 4 && 3 * count < nodes.count {
            dropFreeTail()
            guard let slot = takeFreeSlot() else { break }
            let last = nodes.count - 1
            let score = nodes[last].score, member = members[last]
            var parent: Int32 = -1, t = root, left = false
            while Int(t) != last {
                parent = t
                left = precedes(score, member, node: Int(t))
                t = left ? nodes[Int(t)].left : nodes[Int(t)].right
            }
            nodes[Int(slot)] = nodes[last]
            members[Int(slot)] = member
            if parent < 0 {
                root = slot
            } else if left {
                nodes[Int(parent)].left = slot
            } else {
                nodes[Int(parent)].right = slot
            }
            nodes.removeLast()
            members.removeLast()
            moves += 1
        }
        dropFreeTail()
        if free.count > nodes.count + 64 { free = (0..<Int32(nodes.count)).filter { nodes[Int($0)].size == 0 } }
    }

    /// Drops the free nodes at the end of the arrays.
    private mutating func dropFreeTail() {
        while let last = nodes.last, last.size == 0 {
            nodes.removeLast()
            members.removeLast()
        }
    }

    /// Rebuilds the arrays when most of their nodes are free (after large removals).
    private mutating func compactIfSparse() {
        let freeNodes = nodes.count - count
        guard freeNodes > 1024, freeNodes > 2 * count else { return }
        var elements: [(member: [UInt8], score: Double)] = []
        elements.reserveCapacity(count)
        forEach(fromRank: 0, reverse: false) { member, score in
            elements.append((member, score))
            return true
        }
        self = ScoreTree(sorted: elements)
    }

    /// Splits `t` into the elements before (score, member) and the rest.
    private mutating func split(_ t: Int32, beforeScore score: Double, member: [UInt8]) -> (Int32, Int32) {
        guard t >= 0 else { return (-1, -1) }
        let i = Int(t)
        if node(i, precedes: score, member) {
            let (l, r) = split(nodes[i].right, beforeScore: score, member: member)
            nodes[i].right = l
            update(t)
            return (t, r)
        } else {
            let (l, r) = split(nodes[i].left, beforeScore: score, member: member)
            nodes[i].left = r
            update(t)
            return (l, t)
        }
    }

    /// Splits `t` into its first `k` elements and the rest.
    private mutating func split(_ t: Int32, firstCount k: Int) -> (Int32, Int32) {
        guard t >= 0 else { return (-1, -1) }
        let i = Int(t)
        let leftSize = sizeOf(nodes[i].left)
        if k <= leftSize {
            let (l, r) = split(nodes[i].left, firstCount: k)
            nodes[i].left = r
            update(t)
            return (l, t)
        } else {
            let (l, r) = split(nodes[i].right, firstCount: k - leftSize - 1)
            nodes[i].right = l
            update(t)
            return (t, r)
        }
    }

    /// Joins `a` and `b`, every element of `a` coming before every one of `b`.
    private mutating func merge(_ a: Int32, _ b: Int32) -> Int32 {
        if a < 0 { return b }
        if b < 0 { return a }
        if nodes[Int(a)].priority > nodes[Int(b)].priority {
            nodes[Int(a)].right = merge(nodes[Int(a)].right, b)
            update(a)
            return a
        } else {
            nodes[Int(b)].left = merge(a, nodes[Int(b)].left)
            update(b)
            return b
        }
    }

    // MARK: Queries

    /// How many elements come before (score, member).
    func rank(_ member: [UInt8], score: Double) -> Int {
        var t = root, n = 0
        while t >= 0 {
            let i = Int(t)
            if node(i, precedes: score, member) {
                n += sizeOf(nodes[i].left) + 1
                t = nodes[i].right
            } else {
                t = nodes[i].left
            }
        }
        return n
    }

    /// How many elements have a score below `score` (or equal to it, when `orEqual`).
    func countBelow(_ score: Double, orEqual: Bool) -> Int {
        var t = root, n = 0
        while t >= 0 {
            let i = Int(t)
            if nodes[i].score < score || (orEqual && nodes[i].score == score) {
                n += sizeOf(nodes[i].left) + 1
                t = nodes[i].right
            } else {
                t = nodes[i].left
            }
        }
        return n
    }

    /// How many elements come before the first whose member is at or after
    /// `member` (after it, when `orEqual`), comparing members only: a binary
    /// search that is exact when every score is equal (what lexicographical
    /// ranges are for), as Redis's skiplist descent is.
    func countMembersBelow(_ member: [UInt8], orEqual: Bool) -> Int {
        var t = root, n = 0
        while t >= 0 {
            let i = Int(t)
            let c = compareBytes(members[i], member)
            if c < 0 || (orEqual && c == 0) {
                n += sizeOf(nodes[i].left) + 1
                t = nodes[i].right
            } else {
                t = nodes[i].left
            }
        }
        return n
    }

    /// The element at `rank` (0 is the first).
    func element(at rank: Int) -> (member: [UInt8], score: Double) {
        precondition(rank >= 0 && rank < count, "ScoreTree rank out of range")
        var t = root, k = rank
        while true {
            let i = Int(t)
            let leftSize = sizeOf(nodes[i].left)
            if k < leftSize {
                t = nodes[i].left
            } else if k == leftSize {
                return (members[i], nodes[i].score)
            } else {
                k -= leftSize + 1
                t = nodes[i].right
            }
        }
    }

    /// Calls `body` on the elements from `rank`, ascending (or descending
    /// when `reverse`), until it returns false or the elements run out.
    func forEach(fromRank rank: Int, reverse: Bool, _ body: ([UInt8], Double) throws -> Bool) rethrows {
        guard rank >= 0 && rank < count else { return }
        var stack: [Int32] = []
        stack.reserveCapacity(64)
        var t = root, k = rank
        // The path to `rank`, keeping the nodes still to visit after it.
        while t >= 0 {
            let i = Int(t)
            let leftSize = sizeOf(nodes[i].left)
            if k == leftSize {
                stack.append(t)
                break
            }
            if k < leftSize {
                if !reverse { stack.append(t) }
                t = nodes[i].left
            } else {
                if reverse { stack.append(t) }
                k -= leftSize + 1
                t = nodes[i].right
            }
        }
        while let n = stack.popLast() {
            let i = Int(n)
            guard try body(members[i], nodes[i].score) else { return }
            var c = reverse ? nodes[i].left : nodes[i].right
            while c >= 0 {
                stack.append(c)
                c = reverse ? nodes[Int(c)].right : nodes[Int(c)].left
            }
        }
    }

    // MARK: Invariants (for tests)

    /// Checks order, sizes and heap order; returns the depth.
    func checkInvariants() -> (ok: Bool, depth: Int) {
        var ok = true
        var maxDepth = 0
        func visit(_ t: Int32, _ depth: Int) -> Int {
            guard t >= 0 else { return 0 }
            maxDepth = max(maxDepth, depth)
            let i = Int(t)
            for child in [nodes[i].left, nodes[i].right] where child >= 0 && nodes[Int(child)].priority > nodes[i].priority { ok = false }
            if nodes[i].left >= 0 && !Self.precedes(nodes[Int(nodes[i].left)].score, members[Int(nodes[i].left)], nodes[i].score, members[i]) {
                // only the immediate child is compared here; the in-order walk below checks the rest
                ok = false
            }
            let n = 1 + visit(nodes[i].left, depth + 1) + visit(nodes[i].right, depth + 1)
            if n != Int(nodes[i].size) { ok = false }
            return n
        }
        _ = visit(root, 1)
        var previous: (member: [UInt8], score: Double)?
        forEach(fromRank: 0, reverse: false) { member, score in
            if let p = previous, !Self.precedes(p.score, p.member, score, member) { ok = false }
            previous = (member, score)
            return true
        }
        return (ok, maxDepth)
    }
}
