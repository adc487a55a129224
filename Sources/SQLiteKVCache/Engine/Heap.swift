/// A binary min-heap ordered by `precedes`.
struct Heap<Element> {
    private(set) var elements: [Element] = []
    private let precedes: (Element, Element) -> Bool

    init(by precedes: @escaping (Element, Element) -> Bool) {
        self.precedes = precedes
    }

    var count: Int { elements.count }
    var isEmpty: Bool { elements.isEmpty }
    var top: Element? { elements.first }

    mutating func push(_ element: Element) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(elements[child], elements[parent]) else { break }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    @discardableResult
    mutating func pop() -> Element? {
        guard !elements.isEmpty else { return nil }
        elements.swapAt(0, elements.count - 1)
        let top = elements.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < elements.count && precedes(elements[left], elements[first]) { first = left }
            if right < elements.count && precedes(elements[right], elements[first]) { first = right }
            if first == parent { break }
            elements.swapAt(parent, first)
            parent = first
        }
        return top
    }

    mutating func removeAll() { elements.removeAll() }
}
