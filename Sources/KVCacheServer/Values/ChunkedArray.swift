/// An array kept in chunks of 4,096 elements, for the slots of a live set
/// or hash (`MemberSlots`), which a thawed value shares with the frozen one
/// (`LiveValue.thawed`). The first change after that copies the list of
/// chunks and the one chunk changed, not every element: for a plain array
/// of a million members it was a million retains of members cold in cache,
/// and the slowest of 700k SREMs over a 1M-member set took 22.6 ms against
/// 11.5 ms now (`bench/collection_removals.py`, medians of 3 rounds).
struct ChunkedArray<Element>: RandomAccessCollection, MutableCollection {
    private static var shift: Int { 12 }
    private static var chunkSize: Int { 1 << shift }

    private var chunks: [[Element]] = []
    private(set) var count = 0

    init() {}

    init(_ elements: some Sequence<Element>) {
        for element in elements { append(element) }
    }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(position: Int) -> Element {
        get {
            precondition(position >= 0 && position < count, "index out of range")
            return chunks[position >> Self.shift][position & (Self.chunkSize - 1)]
        }
        set {
            precondition(position >= 0 && position < count, "index out of range")
            chunks[position >> Self.shift][position & (Self.chunkSize - 1)] = newValue
        }
    }

    mutating func reserveCapacity(_ n: Int) {
        chunks.reserveCapacity((n + Self.chunkSize - 1) >> Self.shift)
    }

    mutating func append(_ element: Element) {
        if count & (Self.chunkSize - 1) == 0 { chunks.append([]) }
        chunks[chunks.count - 1].append(element)
        count += 1
    }

    @discardableResult
    mutating func removeLast() -> Element {
        precondition(count > 0, "removeLast from an empty array")
        let element = chunks[chunks.count - 1].removeLast()
        if chunks[chunks.count - 1].isEmpty { chunks.removeLast() }
        count -= 1
        return element
    }

    mutating func removeLast(_ k: Int) {
        for _ in 0..<k { removeLast() }
    }

    /// Removes the element at `position`, moving the later ones down one (O(n)).
    @discardableResult
    mutating func remove(at position: Int) -> Element {
        let element = self[position]
        for i in position..<(count - 1) { self[i] = self[i + 1] }
        removeLast()
        return element
    }
}
