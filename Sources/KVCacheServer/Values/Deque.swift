/// A double-ended queue in a ring buffer: O(1) at both ends, O(1) by
/// index, O(n) in the middle. A list's elements live in one, so LPUSH and
/// LPOP cost what RPUSH and RPOP do, whatever the list's length.
struct Deque<Element>: RandomAccessCollection {
    private var buffer: [Element?] = []
    private var head = 0
    private(set) var count = 0

    init() {}

    init<S: Sequence>(_ elements: S) where S.Element == Element {
        buffer = elements.map { Optional($0) }
        count = buffer.count
    }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    private func slot(_ index: Int) -> Int {
        let i = head + index
        return i >= buffer.count ? i - buffer.count : i
    }

    subscript(index: Int) -> Element {
        get {
            precondition(index >= 0 && index < count, "Deque index out of range")
            return buffer[slot(index)]!
        }
        set {
            precondition(index >= 0 && index < count, "Deque index out of range")
            buffer[slot(index)] = newValue
        }
    }

    private mutating func grow(to minimum: Int) {
        guard minimum > buffer.count else { return }
        var fresh = [Element?]()
        fresh.reserveCapacity(Swift.max(minimum, buffer.count * 2, 8))
        for i in 0..<count { fresh.append(buffer[slot(i)]) }
        fresh.append(contentsOf: repeatElement(nil, count: fresh.capacity - fresh.count))
        buffer = fresh
        head = 0
    }

    mutating func append(_ element: Element) {
        grow(to: count + 1)
        buffer[slot(count)] = element
        count += 1
    }

    mutating func prepend(_ element: Element) {
        grow(to: count + 1)
        head = head == 0 ? buffer.count - 1 : head - 1
        buffer[head] = element
        count += 1
    }

    @discardableResult
    mutating func removeFirst() -> Element {
        precondition(count > 0, "removeFirst() of an empty Deque")
        let element = buffer[head]!
        buffer[head] = nil
        head = head + 1 == buffer.count ? 0 : head + 1
        count -= 1
        return element
    }

    @discardableResult
    mutating func removeLast() -> Element {
        precondition(count > 0, "removeLast() of an empty Deque")
        let at = slot(count - 1)
        let element = buffer[at]!
        buffer[at] = nil
        count -= 1
        return element
    }

    /// Inserts `element` before position `index` (O(n) from the nearer end).
    mutating func insert(_ element: Element, at index: Int) {
        precondition(index >= 0 && index <= count, "Deque index out of range")
        if index == count { return append(element) }
        if index == 0 { return prepend(element) }
        var items = Array(self)
        items.insert(element, at: index)
        self = Deque(items)
    }

    /// Keeps only the elements `keep` says so, in order.
    mutating func removeAll(where remove: (Int, Element) -> Bool) {
        var kept: [Element] = []
        kept.reserveCapacity(count)
        for (i, element) in enumerated() where !remove(i, element) { kept.append(element) }
        self = Deque(kept)
    }

    mutating func removeAll() {
        self = Deque()
    }
}
