/// The members of a set, hash or sorted set in slots, for O(1) random
/// picks and a SSCAN/HSCAN/ZSCAN cursor that survives changes, as Redis's
/// dict buckets are for its reverse-binary cursor.
///
/// A removal leaves a hole where the member was (holes at the end are
/// dropped at once), so the members a scan has not reached stay where they
/// were; an addition fills a hole, or takes a new slot at the end. A scan
/// walks the slots from the end toward the start (`scan(below:count:_:)`):
/// a member present for the whole scan is returned, and returned once.
/// While holes are more than half the slots, each removal also moves a few
/// members from the end into holes (`moved` tells the owner each member's
/// new slot), a few at a time so no single command pays for many, as
/// Redis rehashes a step at a time. A member moved from the end can be
/// returned twice by a scan running meanwhile, never missed: a member only
/// ever moves toward the start, where a scan has yet to go.
struct MemberSlots<Element> {
    /// In chunks, so the copy a frozen value's first change makes is cheap.
    private(set) var slots = ChunkedArray<Element?>()
    /// How many slots are holes.
    private(set) var holes = 0
    /// Slots that were left as holes, the latest last; some may have been
    /// filled or dropped since (checked when taken).
    private var holeStack: [Int] = []
    /// Members moved into holes per removal while holes pass half the slots.
    static var movesPerRemoval: Int { 4 }

    init() {}

    init(_ elements: [Element]) { slots = ChunkedArray(elements.lazy.map { $0 }) }

    /// How many members.
    var count: Int { slots.count - holes }
    var isEmpty: Bool { count == 0 }
    /// One past the last slot in use: where a scan starts.
    var end: Int { slots.count }

    subscript(slot: Int) -> Element? { slots[slot] }

    mutating func reserveCapacity(_ n: Int) { slots.reserveCapacity(n) }

    /// Adds `element` in a hole, or in a new slot at the end; returns the slot.
    mutating func append(_ element: Element) -> Int {
        if holes > 0, let hole = takeHole() {
            slots[hole] = element
            holes -= 1
            return hole
        }
        slots.append(element)
        return slots.count - 1
    }

    /// Replaces the member in `slot` (not a hole) with `element`.
    mutating func replace(at slot: Int, with element: Element) {
        precondition(slots[slot] != nil, "no member in slot \(slot)")
        slots[slot] = element
    }

    /// Leaves a hole in `slot`. While holes pass half the slots, moves up to
    /// `movesPerRemoval` members from the end into holes, calling `moved`
    /// with each and its new slot.
    mutating func remove(at slot: Int, moved: (Element, Int) -> Void) {
        precondition(slots[slot] != nil, "no member in slot \(slot)")
        slots[slot] = nil
        holes += 1
        if slot == slots.count - 1 {
            trimEnd()
        } else {
            holeStack.append(slot)
            if holeStack.count > 2 * slots.count + 64 {  // mostly filled or dropped since: listed again
                holeStack = Array(slots.indices.filter { slots[$0] == nil }.reversed())
            }
        }
        var moves = 0
        while holes * 2 > slots.count && moves < Self.movesPerRemoval, let hole = takeHole() {
            let last = slots.removeLast()!
            slots[hole] = last
            holes -= 1
            moved(last, hole)
            trimEnd()
            moves += 1
        }
    }

    /// Drops the holes at the end.
    private mutating func trimEnd() {
        while let last = slots.last, last == nil {
            slots.removeLast()
            holes -= 1
        }
        if holes == 0 { holeStack.removeAll(keepingCapacity: holeStack.count < 1024) }
    }

    /// A hole to fill (there are holes), below the last slot.
    private mutating func takeHole() -> Int? {
        while let hole = holeStack.popLast() {
            if hole < slots.count && slots[hole] == nil { return hole }
        }
        return nil
    }

    /// Takes the member out of `slot` and moves the later ones down one
    /// slot each (a listpack's order kept), calling `moved` for each. For
    /// slots without holes (a collection in a small encoding).
    mutating func removeClosingGap(at slot: Int, moved: (Element, Int) -> Void) {
        precondition(holes == 0, "removeClosingGap over holes")
        slots.remove(at: slot)
        for i in slot..<slots.count { moved(slots[i]!, i) }
    }

    /// Moves every member down over the holes, keeping their order.
    mutating func closeHoles(moved: (Element, Int) -> Void) {
        guard holes > 0 else { return }
        var to = 0
        for from in slots.indices {
            guard let element = slots[from] else { continue }
            if from != to {
                slots[to] = element
                moved(element, to)
            }
            to += 1
        }
        slots.removeLast(slots.count - to)
        holes = 0
        holeStack = []
    }

    /// Calls `body` on every member, in slot order.
    func forEach(_ body: (Element) throws -> Void) rethrows {
        for case let element? in slots { try body(element) }
    }

    /// Every member, in slot order.
    var elements: [Element] { slots.compactMap { $0 } }

    /// Every member, in slot order, without building an array.
    var lazyElements: some Sequence<Element> { slots.lazy.compactMap { $0 } }

    /// A slot holding a member, at random (the collection is not empty).
    func randomSlot(_ random: (Int) -> Int) -> Int {
        while true {
            let slot = random(slots.count)
            if slots[slot] != nil { return slot }
        }
    }

    /// `n` distinct slots holding members, at random (all of them, in
    /// order, when `n` covers them).
    func distinctRandomSlots(_ n: Int, _ random: (Int) -> Int) -> [Int] {
        if holes == 0 { return distinctRandomIndices(slots.count, n, random) }
        if n * 3 > count {
            let live = slots.indices.filter { slots[$0] != nil }
            return distinctRandomIndices(live.count, n, random).map { live[$0] }
        }
        return distinctDraws(n) { randomSlot(random) }
    }

    /// One step of a scan: the members in the slots below `cursor` (the end
    /// when 0 or past it), walking toward the start until `count` members
    /// or ten times as many slots were seen. Returns the cursor to go on
    /// from, 0 when the walk reached the start.
    func scan(below cursor: Int, count: Int, _ body: (Element) -> Void) -> Int {
        var slot = cursor == 0 || cursor > slots.count ? slots.count : cursor
        var seen = 0, visited = 0
        let maxVisits = count > Int.max / 10 ? Int.max : count * 10
        while slot > 0 && seen < count && visited < maxVisits {
            slot -= 1
            visited += 1
            if let element = slots[slot] {
                body(element)
                seen += 1
            }
        }
        return slot
    }
}

/// `count` distinct indices in 0..<size at random (all of them, in order,
/// when count covers them); `random(n)` picks one in 0..<n.
func distinctRandomIndices(_ size: Int, _ count: Int, _ random: (Int) -> Int) -> [Int] {
    if count >= size { return Array(0..<size) }
    if count * 3 > size {
        var indices = Array(0..<size)
        for i in 0..<count { indices.swapAt(i, i + random(size - i)) }
        return Array(indices.prefix(count))
    }
    return distinctDraws(count) { random(size) }
}

/// `n` distinct results of `draw()`, in the order first drawn (there are at least `n`).
private func distinctDraws(_ n: Int, _ draw: () -> Int) -> [Int] {
    var drawn = Set<Int>()
    var order: [Int] = []
    while order.count < n {
        let i = draw()
        if drawn.insert(i).inserted { order.append(i) }
    }
    return order
}
