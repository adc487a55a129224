/// What a `Heap` orders: an element's type says which of two comes first,
/// so the heap's code compares inline (a comparison through a stored
/// closure was an indirect call at every level of every pop).
protocol HeapElement {
    static func precedes(_ a: Self, _ b: Self) -> Bool
}

/// A binary min-heap. Sifting moves a hole down (or up) and writes the
/// element once at its place, instead of swapping at every level.
struct Heap<Element: HeapElement> {
    private(set) var elements: [Element] = []

    init() {}

    var count: Int { elements.count }
    var isEmpty: Bool { elements.isEmpty }
    var top: Element? { elements.first }

    mutating func push(_ element: Element) {
        elements.append(element)
        elements.withUnsafeMutableBufferPointer { b in
            var hole = b.count - 1
            while hole > 0 {
                let parent = (hole - 1) / 2
                guard Element.precedes(element, b[parent]) else { break }
                b[hole] = b[parent]
                hole = parent
            }
            b[hole] = element
        }
    }

    @discardableResult
    mutating func pop() -> Element? {
        guard let last = elements.popLast() else { return nil }
        guard let top = elements.first else { return last }
        elements.withUnsafeMutableBufferPointer { Self.siftDown(last, from: 0, in: $0) }
        return top
    }

    mutating func removeAll() { elements.removeAll() }

    mutating func reserveCapacity(_ count: Int) { elements.reserveCapacity(count) }

    /// Empties the heap, giving its elements (in heap order, not sorted).
    mutating func takeAll() -> [Element] {
        defer { elements = [] }
        return elements
    }

    /// Puts `element` at `start` or below, moving the children that precede it up.
    private static func siftDown(_ element: Element, from start: Int, in b: UnsafeMutableBufferPointer<Element>) {
        let n = b.count
        var hole = start
        while true {
            var child = 2 * hole + 1
            guard child < n else { break }
            if child + 1 < n && Element.precedes(b[child + 1], b[child]) { child += 1 }
            guard Element.precedes(b[child], element) else { break }
            b[hole] = b[child]
            hole = child
        }
        b[hole] = element
    }
}
