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
/// links). Nodes live in parallel arrays indexed by `Int32`, so a tree is
/// a handful of arrays (no object per element), and a copy is a copy of
/// those arrays.
struct ScoreTree {
    private var left: [Int32] = []
    private var right: [Int32] = []
    private var size: [Int32] = []
    private var priority: [UInt32] = []
    private(set) var scores: [Double] = []
    private(set) var members: [[UInt8]] = []
    /// Nodes freed by removals, reused by insertions.
    private var free: [Int32] = []
    private var root: Int32 = -1
    private var seed: UInt64 = 0x9E37_79B9_7F4A_7C15

    init() {}

    /// A tree of `elements`, given in order (score, then member), built in O(n).
    init(sorted elements: [(member: [UInt8], score: Double)]) {
        let n = elements.count
        left = Array(repeating: -1, count: n)
        right = Array(repeating: -1, count: n)
        size = Array(repeating: 0, count: n)
        priority = Array(repeating: 0, count: n)
        scores = elements.map(\.score)
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
        left[mid] = build(lo, mid)
        right[mid] = build(mid + 1, hi)
        let n = hi - lo
        size[mid] = Int32(n)
        priority[mid] = UInt32(Double(UInt32.max) * Double(n) / Double(n + 1))
        return Int32(mid)
    }

    var count: Int { root < 0 ? 0 : Int(size[Int(root)]) }

    // MARK: Order

    /// Whether (s1, m1) comes before (s2, m2).
    @inline(__always)
    static func precedes(_ s1: Double, _ m1: [UInt8], _ s2: Double, _ m2: [UInt8]) -> Bool {
        if s1 != s2 { return s1 < s2 }
        return compareBytes(m1, m2) < 0
    }

    @inline(__always)
    private func sizeOf(_ t: Int32) -> Int { t < 0 ? 0 : Int(size[Int(t)]) }

    @inline(__always)
    private mutating func update(_ t: Int32) {
        size[Int(t)] = Int32(1 + sizeOf(left[Int(t)]) + sizeOf(right[Int(t)]))
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
        if let reused = free.popLast() {
            node = reused
            let i = Int(node)
            left[i] = -1
            right[i] = -1
            size[i] = 1
            priority[i] = nextPriority()
            scores[i] = score
            members[i] = member
        } else {
            node = Int32(left.count)
            left.append(-1)
            right.append(-1)
            size.append(1)
            priority.append(nextPriority())
            scores.append(score)
            members.append(member)
        }
        root = insert(node, into: root)
    }

    private mutating func insert(_ n: Int32, into t: Int32) -> Int32 {
        guard t >= 0 else { return n }
        let i = Int(t)
        if priority[Int(n)] > priority[i] {
            let (l, r) = split(t, beforeScore: scores[Int(n)], member: members[Int(n)])
            left[Int(n)] = l
            right[Int(n)] = r
            update(n)
            return n
        }
        if Self.precedes(scores[Int(n)], members[Int(n)], scores[i], members[i]) {
            left[i] = insert(n, into: left[i])
        } else {
            right[i] = insert(n, into: right[i])
        }
        size[i] += 1
        return t
    }

    /// Removes (score, member), which must be in the tree.
    mutating func remove(_ member: [UInt8], score: Double) {
        root = remove(score, member, from: root)
        compactIfSparse()
    }

    private mutating func remove(_ score: Double, _ member: [UInt8], from t: Int32) -> Int32 {
        precondition(t >= 0, "ScoreTree.remove of an element not in the tree")
        let i = Int(t)
        if scores[i] == score && members[i] == member {
            let merged = merge(left[i], right[i])
            release(t)
            return merged
        }
        if Self.precedes(score, member, scores[i], members[i]) {
            left[i] = remove(score, member, from: left[i])
        } else {
            right[i] = remove(score, member, from: right[i])
        }
        size[i] -= 1
        return t
    }

    private mutating func release(_ t: Int32) {
        members[Int(t)] = []
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
                t = left[Int(t)]
            }
            let n = stack.removeLast()
            removed.append((members[Int(n)], scores[Int(n)]))
            t = right[Int(n)]
            release(n)
        }
        root = merge(before, after)
        compactIfSparse()
        return removed
    }

    /// Rebuilds the arrays when most of their nodes are free (after large removals).
    private mutating func compactIfSparse() {
        guard free.count > 1024, free.count > 2 * count else { return }
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
        if Self.precedes(scores[i], members[i], score, member) {
            let (l, r) = split(right[i], beforeScore: score, member: member)
            right[i] = l
            update(t)
            return (t, r)
        } else {
            let (l, r) = split(left[i], beforeScore: score, member: member)
            left[i] = r
            update(t)
            return (l, t)
        }
    }

    /// Splits `t` into its first `k` elements and the rest.
    private mutating func split(_ t: Int32, firstCount k: Int) -> (Int32, Int32) {
        guard t >= 0 else { return (-1, -1) }
        let i = Int(t)
        let leftSize = sizeOf(left[i])
        if k <= leftSize {
            let (l, r) = split(left[i], firstCount: k)
            left[i] = r
            update(t)
            return (l, t)
        } else {
            let (l, r) = split(right[i], firstCount: k - leftSize - 1)
            right[i] = l
            update(t)
            return (t, r)
        }
    }

    /// Joins `a` and `b`, every element of `a` coming before every one of `b`.
    private mutating func merge(_ a: Int32, _ b: Int32) -> Int32 {
        if a < 0 { return b }
        if b < 0 { return a }
        if priority[Int(a)] > priority[Int(b)] {
            right[Int(a)] = merge(right[Int(a)], b)
            update(a)
            return a
        } else {
            left[Int(b)] = merge(a, left[Int(b)])
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
            if Self.precedes(scores[i], members[i], score, member) {
                n += sizeOf(left[i]) + 1
                t = right[i]
            } else {
                t = left[i]
            }
        }
        return n
    }

    /// How many elements have a score below `score` (or equal to it, when `orEqual`).
    func countBelow(_ score: Double, orEqual: Bool) -> Int {
        var t = root, n = 0
        while t >= 0 {
            let i = Int(t)
            if scores[i] < score || (orEqual && scores[i] == score) {
                n += sizeOf(left[i]) + 1
                t = right[i]
            } else {
                t = left[i]
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
                n += sizeOf(left[i]) + 1
                t = right[i]
            } else {
                t = left[i]
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
            let leftSize = sizeOf(left[i])
            if k < leftSize {
                t = left[i]
            } else if k == leftSize {
                return (members[i], scores[i])
            } else {
                k -= leftSize + 1
                t = right[i]
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
            let leftSize = sizeOf(left[i])
            if k == leftSize {
                stack.append(t)
                break
            }
            if k < leftSize {
                if !reverse { stack.append(t) }
                t = left[i]
            } else {
                if reverse { stack.append(t) }
                k -= leftSize + 1
                t = right[i]
            }
        }
        while let n = stack.popLast() {
            let i = Int(n)
            guard try body(members[i], scores[i]) else { return }
            var c = reverse ? left[i] : right[i]
            while c >= 0 {
                stack.append(c)
                c = reverse ? right[Int(c)] : left[Int(c)]
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
            for child in [left[i], right[i]] where child >= 0 && priority[Int(child)] > priority[i] { ok = false }
            if left[i] >= 0 && !Self.precedes(scores[Int(left[i])], members[Int(left[i])], scores[i], members[i]) {
                // only the immediate child is compared here; the in-order walk below checks the rest
                ok = false
            }
            let n = 1 + visit(left[i], depth + 1) + visit(right[i], depth + 1)
            if n != Int(size[i]) { ok = false }
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
