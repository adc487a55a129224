#if canImport(Glibc)
import Glibc
#endif
import Foundation
import RESP
import SQLiteKVCache

// Lists, sets, hashes and sorted sets, serialized into an entry's value
// bytes (the entry's `ValueKind` says which). A cache's collections are
// small: a command decodes the whole value, changes it and stores it again,
// inside the loop iteration's transaction.
//
// The encoding: one flags byte, the element count as a LEB128 varint, then
// the elements, each a varint length and its bytes (a list's element is
// followed by its length again, the varint's bytes reversed, so a list
// reads from its tail too; a hash: field then value; a sorted set: member
// then its score as 8 little-endian bytes of an IEEE double, in score order). Flag bit 0 records that the collection
// has taken Redis's large encoding (hashtable, skiplist), which in Redis
// 7.0 is never undone, so OBJECT ENCODING answers as Redis would.

extension ReplyError {
    static let wrongType = ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value")
    static let corruptValue = ReplyError("ERR the stored value is corrupt")
}

/// Redis 7.0's thresholds between its small and large encodings.
struct EncodingLimits: Sendable, Equatable {
    var setMaxIntsetEntries = 512
    var hashMaxListpackEntries = 512
    var hashMaxListpackValue = 64
    var zsetMaxListpackEntries = 128
    var zsetMaxListpackValue = 64
}

/// Appends and reads the pieces of the encoding.
enum CollectionCodec {
    static let largeFlag: UInt8 = 1

    static func appendVarint(_ value: Int, to out: inout [UInt8]) {
        var v = UInt64(value)
        while v >= 0x80 {
            out.append(UInt8(v & 0x7f) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    static func appendElement(_ bytes: [UInt8], to out: inout [UInt8]) {
        appendVarint(bytes.count, to: &out)
        out.append(contentsOf: bytes)
    }

    static func appendElement(_ bytes: ArraySlice<UInt8>, to out: inout [UInt8]) {
        appendVarint(bytes.count, to: &out)
        out.append(contentsOf: bytes)
    }

    /// A list element: length, bytes, then the length's varint reversed.
    static func appendListElement(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        let start = out.count
        appendVarint(bytes.count, to: &out)
        let prefix = out[start...].reversed()
        out.append(contentsOf: bytes)
        out.append(contentsOf: prefix)
    }

    static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bitPattern.littleEndian) { out.append(contentsOf: $0) }
    }

    /// The header: flags and count.
    static func header(large: Bool, count: Int, capacity: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(capacity + 10)
        out.append(large ? largeFlag : 0)
        appendVarint(count, to: &out)
        return out
    }
}

/// Reads an encoded value, refusing anything malformed.
struct ByteReader {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func byte() throws(ReplyError) -> UInt8 {
        guard index < bytes.count else { throw .corruptValue }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func varint() throws(ReplyError) -> Int {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 63 else { throw .corruptValue }
            result |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { break }
            shift += 7
        }
        guard result <= UInt64(Int32.max) * 16 else { throw .corruptValue }
        return Int(result)
    }

    mutating func take(_ n: Int) throws(ReplyError) -> [UInt8] {
        guard n >= 0, bytes.count - index >= n else { throw .corruptValue }
        defer { index += n }
        return Array(bytes[index..<index + n])
    }

    mutating func element() throws(ReplyError) -> [UInt8] {
        try take(try varint())
    }

    /// A list element, checking the trailing length against the leading one.
    mutating func listElement() throws(ReplyError) -> [UInt8] {
        let start = index
        let element = try element()
        let prefixLength = index - element.count - start
        guard try take(prefixLength) == Array(bytes[start..<start + prefixLength].reversed()) else { throw .corruptValue }
        return element
    }

    /// Reads backwards the list element that ends at `end`.
    /// - Returns: the range of its bytes and where its encoding starts.
    func listElement(endingAt end: Int) throws(ReplyError) -> (payload: Range<Int>, start: Int) {
        var result = 0, shift = 0, i = end
        while true {
            guard i > 0, shift < 63 else { throw .corruptValue }
            i -= 1
            let b = bytes[i]
            result |= Int(b & 0x7f) << shift
            if b & 0x80 == 0 { break }
            shift += 7
        }
        let prefixLength = end - i
        guard result <= i - prefixLength else { throw .corruptValue }
        return ((i - result)..<i, i - result - prefixLength)
    }

    mutating func double() throws(ReplyError) -> Double {
        let raw = try take(8)
        var bits: UInt64 = 0
        for (i, b) in raw.enumerated() { bits |= UInt64(b) << (8 * UInt64(i)) }
        return Double(bitPattern: bits)
    }

    /// Flags and count; the count is checked against the bytes left (each element takes at least one).
    mutating func header() throws(ReplyError) -> (large: Bool, count: Int) {
        let flags = try byte()
        let count = try varint()
        guard count <= bytes.count - index else { throw .corruptValue }
        return (flags & CollectionCodec.largeFlag != 0, count)
    }
}

/// An encoded collection read in place, without copying its elements: the
/// count, and where each element's bytes lie. For the commands that touch
/// a few elements of a long collection (a push, a pop, an index, a range,
/// a count), so they cost a walk and a copy of bytes, not one array per element.
struct EncodedLayout {
    let bytes: [UInt8]
    let large: Bool
    let count: Int
    /// Where the first element starts.
    let body: Int

    /// Reads the header only.
    init(_ bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.bytes = bytes
        self.large = large
        self.count = count
        self.body = reader.index
    }

    /// The start of each list element's encoding and the range of its
    /// bytes, for the first `limit` elements.
    func listElements(limit: Int = .max) throws(ReplyError) -> (starts: [Int], payloads: [Range<Int>]) {
        var reader = ByteReader(bytes)
        reader.index = body
        let n = min(count, limit)
        var starts: [Int] = [], payloads: [Range<Int>] = []
        starts.reserveCapacity(n)
        payloads.reserveCapacity(n)
        for _ in 0..<n {
            let start = reader.index
            starts.append(start)
            let length = try reader.varint()
            let prefixLength = reader.index - start
            guard length <= bytes.count - reader.index - prefixLength else { throw .corruptValue }
            payloads.append(reader.index..<reader.index + length)
            reader.index += length + prefixLength
        }
        if n == count && reader.index != bytes.count { throw .corruptValue }
        return (starts, payloads)
    }

    /// The last `n` list elements, last first: their byte ranges, and where
    /// the earliest of them starts.
    func lastListElements(_ n: Int) throws(ReplyError) -> (payloads: [Range<Int>], start: Int) {
        let reader = ByteReader(bytes)
        var end = bytes.count
        var payloads: [Range<Int>] = []
        for _ in 0..<min(n, count) {
            let (payload, start) = try reader.listElement(endingAt: end)
            guard start >= body else { throw .corruptValue }
            payloads.append(payload)
            end = start
        }
        return (payloads, end)
    }

    /// The encoding of `count` elements whose encoded bytes are `parts`, in order.
    static func assemble(large: Bool, count: Int, _ parts: [ArraySlice<UInt8>]) -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: count, capacity: parts.reduce(0) { $0 + $1.count })
        for part in parts { out.append(contentsOf: part) }
        return out
    }
}

/// Point lookups in an encoded set, hash or sorted set, without decoding
/// it: one walk noting where the elements lie, then byte comparisons.
struct EncodedLookup {
    let bytes: [UInt8]
    let kind: ValueKind
    /// A set's members; a hash's fields and values, alternating; a sorted
    /// set's members (each followed by its 8 score bytes).
    private var ranges: [Range<Int>] = []
    private let bodyStart: Int

    init(_ bytes: [UInt8], kind: ValueKind) throws(ReplyError) {
        self.bytes = bytes
        self.kind = kind
        var reader = ByteReader(bytes)
        let (_, count) = try reader.header()
        bodyStart = reader.index
        let perEntry = kind == .hash ? 2 : 1
        let trailing = kind == .zset ? 8 : 0
        ranges.reserveCapacity(count * perEntry)
        for _ in 0..<count * perEntry {
            let length = try reader.varint()
            guard length <= bytes.count - reader.index - trailing else { throw .corruptValue }
            ranges.append(reader.index..<reader.index + length)
            reader.index += length + trailing
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    private func matches(_ range: Range<Int>, _ target: some Collection<UInt8>) -> Bool {
        guard range.count == target.count else { return false }
        if target.isEmpty { return true }
        return bytes.withUnsafeBufferPointer { b in
            target.withContiguousStorageIfAvailable { t in
                memcmp(b.baseAddress! + range.lowerBound, t.baseAddress!, t.count) == 0
            } ?? b[range].elementsEqual(target)
        }
    }

    /// The position among the members (fields for a hash) of `target`.
    func find(_ target: some Collection<UInt8>) -> Int? {
        let step = kind == .hash ? 2 : 1
        var i = 0
        while i < ranges.count {
            if matches(ranges[i], target) { return i / step }
            i += step
        }
        return nil
    }

    func contains(_ member: some Collection<UInt8>) -> Bool { find(member) != nil }

    /// The number of members (fields of a hash).
    var count: Int { kind == .hash ? ranges.count / 2 : ranges.count }

    /// The bytes after the header, as they are.
    var body: ArraySlice<UInt8> { bytes[bodyStart...] }

    /// A hash's field and value at position `i`.
    func pair(_ i: Int) -> (field: ArraySlice<UInt8>, value: ArraySlice<UInt8>) {
        (bytes[ranges[2 * i]], bytes[ranges[2 * i + 1]])
    }

    /// A hash's value for `field`.
    func value(_ field: some Collection<UInt8>) -> ArraySlice<UInt8>? {
        find(field).map { bytes[ranges[2 * $0 + 1]] }
    }

    /// A sorted set's score for `member`.
    func score(_ member: some Collection<UInt8>) -> Double? {
        find(member).map(scoreAt)
    }

    /// The score of a sorted set's element at rank `i`.
    func scoreAt(_ i: Int) -> Double {
        var bits: UInt64 = 0
        let at = ranges[i].upperBound
        for b in 0..<8 { bits |= UInt64(bytes[at + b]) << (8 * UInt64(b)) }
        return Double(bitPattern: bits)
    }

    /// The member at rank `i` of a sorted set (or the `i`th member of a set).
    func member(_ i: Int) -> ArraySlice<UInt8> { bytes[ranges[i]] }

    /// How many elements of a sorted set precede (score, member): where it goes.
    func position(_ score: Double, _ member: [UInt8]) -> Int {
        var low = 0, high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            let s = scoreAt(mid)
            if s < score || (s == score && bytes[ranges[mid]].lexicographicallyPrecedes(member)) {
                low = mid + 1
            } else {
                high = mid
            }
        }
        return low
    }

    /// The encoded bytes of a sorted set's element at rank `i`, length prefix and score included.
    func zsetEntry(_ i: Int) -> ArraySlice<UInt8> {
        bytes[(i == 0 ? bodyStart : ranges[i - 1].upperBound + 8)..<(ranges[i].upperBound + 8)]
    }
}

/// A sorted set edited on its encoded bytes: each change copies the bytes
/// once around the element it moves, nothing is decoded. For ZADD of a few
/// members to a large sorted set.
struct EncodedZSet {
    private(set) var bytes: [UInt8]
    private var lookup: EncodedLookup
    private(set) var large: Bool

    init(_ bytes: [UInt8]) throws(ReplyError) {
        self.bytes = bytes
        lookup = try EncodedLookup(bytes, kind: .zset)
        large = try EncodedLayout(bytes).large
    }

    var count: Int { lookup.count }

    func score(_ member: [UInt8]) -> Double? { lookup.score(member) }

    /// Inserts `member` at `score`, or moves it there.
    mutating func set(_ member: [UInt8], score: Double) throws(ReplyError) {
        let existing = lookup.find(member)
        if let existing, lookup.scoreAt(existing) == score { return }
        let at = lookup.position(score, member)
        var entry: [UInt8] = []
        CollectionCodec.appendElement(member, to: &entry)
        CollectionCodec.appendDouble(score, to: &entry)
        var out = CollectionCodec.header(large: large, count: count + (existing == nil ? 1 : 0),
                                         capacity: bytes.count + entry.count)
        for i in 0..<count {
            if i == at { out.append(contentsOf: entry) }
            if i != existing { out.append(contentsOf: lookup.zsetEntry(i)) }
        }
        if at == count { out.append(contentsOf: entry) }
        bytes = out
        lookup = try EncodedLookup(out, kind: .zset)
    }

    /// As `ZSetValue.noteInsert`.
    mutating func noteInsert(_ member: [UInt8], limits: EncodingLimits) {
        if !large && (count > limits.zsetMaxListpackEntries || member.count > limits.zsetMaxListpackValue) {
            large = true
            bytes[0] |= CollectionCodec.largeFlag
        }
    }
}

// MARK: Lists

/// A list: its elements in order. Redis 7.0 keeps every list as a quicklist.
struct ListValue {
    var items: [[UInt8]] = []

    init(items: [[UInt8]] = []) { self.items = items }

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (_, count) = try reader.header()
        items.reserveCapacity(count)
        for _ in 0..<count { items.append(try reader.listElement()) }
        guard reader.atEnd else { throw .corruptValue }
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: false, count: items.count, capacity: items.reduce(0) { $0 + $1.count + 4 })
        for item in items { CollectionCodec.appendListElement(item, to: &out) }
        return out
    }

    var encodingName: String { "quicklist" }
}

// MARK: Sets

/// A set: members in order of insertion (an intset's in numeric order),
/// with an index for membership.
struct SetValue {
    private(set) var members: [[UInt8]] = []
    private var positions: [[UInt8]: Int] = [:]
    /// Whether Redis would hold it as a hashtable rather than an intset.
    var large = false

    init() {}

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.large = large
        members.reserveCapacity(count)
        positions.reserveCapacity(count)
        for _ in 0..<count {
            let member = try reader.element()
            guard positions.updateValue(members.count, forKey: member) == nil else { throw .corruptValue }
            members.append(member)
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: members.count, capacity: members.reduce(0) { $0 + $1.count + 2 })
        for member in members { CollectionCodec.appendElement(member, to: &out) }
        return out
    }

    var count: Int { members.count }
    var isEmpty: Bool { members.isEmpty }

    func contains(_ member: [UInt8]) -> Bool { positions[member] != nil }

    /// Adds `member`, switching to the hashtable encoding as Redis's
    /// `setTypeAdd` does (a non-integer, or more than set-max-intset-entries).
    /// - Returns: whether it was new.
    @discardableResult
    mutating func add(_ member: [UInt8], limits: EncodingLimits) -> Bool {
        guard positions[member] == nil else { return false }
        if !large {
            if let value = parseStrictInt64(member) {
                // An intset keeps its members sorted: insert in numeric order.
                let at = members.partitioningIndex { (parseStrictInt64($0) ?? .max) > value }
                members.insert(member, at: at)
                reindex(from: at)
                if members.count > limits.setMaxIntsetEntries { large = true }
                return true
            }
            large = true
        }
        positions[member] = members.count
        members.append(member)
        return true
    }

    /// - Returns: whether it was there.
    @discardableResult
    mutating func remove(_ member: [UInt8]) -> Bool {
        guard let at = positions.removeValue(forKey: member) else { return false }
        members.remove(at: at)
        reindex(from: at)
        return true
    }

    private mutating func reindex(from start: Int) {
        for i in start..<members.count { positions[members[i]] = i }
    }

    /// Sets the encoding from the contents, as loading one from a DUMP does.
    mutating func settleEncoding(limits: EncodingLimits) {
        if members.count > limits.setMaxIntsetEntries || members.contains(where: { parseStrictInt64($0) == nil }) {
            large = true
            return
        }
        members.sort { parseStrictInt64($0)! < parseStrictInt64($1)! }  // all integers here
        reindex(from: 0)
    }

    var encodingName: String { large ? "hashtable" : "intset" }
}

// MARK: Hashes

/// A hash: fields and values in order of insertion, with an index.
struct HashValue {
    private(set) var fields: [[UInt8]] = []
    private(set) var values: [[UInt8]] = []
    private var positions: [[UInt8]: Int] = [:]
    /// Whether Redis would hold it as a hashtable rather than a listpack.
    var large = false

    init() {}

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.large = large
        fields.reserveCapacity(count)
        values.reserveCapacity(count)
        for _ in 0..<count {
            let field = try reader.element()
            guard positions.updateValue(fields.count, forKey: field) == nil else { throw .corruptValue }
            fields.append(field)
            values.append(try reader.element())
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    func encoded() -> [UInt8] {
        let size = fields.reduce(0) { $0 + $1.count + 2 } + values.reduce(0) { $0 + $1.count + 2 }
        var out = CollectionCodec.header(large: large, count: fields.count, capacity: size)
        for i in fields.indices {
            CollectionCodec.appendElement(fields[i], to: &out)
            CollectionCodec.appendElement(values[i], to: &out)
        }
        return out
    }

    var count: Int { fields.count }
    var isEmpty: Bool { fields.isEmpty }

    subscript(field: [UInt8]) -> [UInt8]? {
        positions[field].map { values[$0] }
    }

    /// Sets a field. The encoding check is the caller's (`noteWrite`), made
    /// on the arguments as Redis's `hashTypeTryConversion` does.
    /// - Returns: whether the field was new.
    @discardableResult
    mutating func set(_ field: [UInt8], _ value: [UInt8]) -> Bool {
        if let at = positions[field] {
            values[at] = value
            return false
        }
        positions[field] = fields.count
        fields.append(field)
        values.append(value)
        return true
    }

    @discardableResult
    mutating func remove(_ field: [UInt8]) -> Bool {
        guard let at = positions.removeValue(forKey: field) else { return false }
        fields.remove(at: at)
        values.remove(at: at)
        for i in at..<fields.count { positions[fields[i]] = i }
        return true
    }

    /// Switches to the hashtable encoding when a written field or value is
    /// longer than hash-max-listpack-value, or there are more fields than
    /// hash-max-listpack-entries.
    /// - Parameter longestWritten: the length of the longest field or value written.
    mutating func noteWrite(longestWritten: Int, limits: EncodingLimits) {
        if large { return }
        if longestWritten > limits.hashMaxListpackValue || count > limits.hashMaxListpackEntries {
            large = true
        }
    }

    mutating func settleEncoding(limits: EncodingLimits) {
        large = count > limits.hashMaxListpackEntries
            || fields.contains { $0.count > limits.hashMaxListpackValue }
            || values.contains { $0.count > limits.hashMaxListpackValue }
    }

    var encodingName: String { large ? "hashtable" : "listpack" }
}

// MARK: Sorted sets

/// A sorted set: members ordered by score, then by their bytes, with an
/// index from member to score.
struct ZSetValue {
    private(set) var members: [[UInt8]] = []
    private(set) var scores: [Double] = []
    private var scoreOf: [[UInt8]: Double] = [:]
    /// Whether Redis would hold it as a skiplist rather than a listpack.
    var large = false

    init() {}

    init(decoding bytes: [UInt8]) throws(ReplyError) {
        var reader = ByteReader(bytes)
        let (large, count) = try reader.header()
        self.large = large
        members.reserveCapacity(count)
        scores.reserveCapacity(count)
        for _ in 0..<count {
            let member = try reader.element()
            let score = try reader.double()
            guard !score.isNaN, scoreOf.updateValue(score, forKey: member) == nil else { throw .corruptValue }
            if let last = members.last, !Self.precedes(scores[scores.count - 1], last, score, member) {
                throw .corruptValue
            }
            members.append(member)
            scores.append(score)
        }
        guard reader.atEnd else { throw .corruptValue }
    }

    func encoded() -> [UInt8] {
        var out = CollectionCodec.header(large: large, count: members.count, capacity: members.reduce(0) { $0 + $1.count + 10 })
        for i in members.indices {
            CollectionCodec.appendElement(members[i], to: &out)
            CollectionCodec.appendDouble(scores[i], to: &out)
        }
        return out
    }

    var count: Int { members.count }
    var isEmpty: Bool { members.isEmpty }

    func score(_ member: [UInt8]) -> Double? { scoreOf[member] }

    /// Redis's order: by score, then by member bytes (memcmp, shorter first on a tie).
    static func precedes(_ s1: Double, _ m1: [UInt8], _ s2: Double, _ m2: [UInt8]) -> Bool {
        if s1 != s2 { return s1 < s2 }
        return m1.lexicographicallyPrecedes(m2)
    }

    /// Where (score, member) sits or would sit.
    func position(_ score: Double, _ member: [UInt8]) -> Int {
        var low = 0, high = members.count
        while low < high {
            let mid = (low + high) / 2
            if Self.precedes(scores[mid], members[mid], score, member) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The rank of `member`, from the lowest score.
    func rank(_ member: [UInt8]) -> Int? {
        guard let score = scoreOf[member] else { return nil }
        return position(score, member)
    }

    /// Inserts or moves `member` to `score`. The caller checks the encoding (`noteInsert`).
    mutating func set(_ member: [UInt8], score: Double) {
        if let old = scoreOf[member] {
            if old == score { return }
            let at = position(old, member)
            members.remove(at: at)
            scores.remove(at: at)
        }
        scoreOf[member] = score
        let at = position(score, member)
        members.insert(member, at: at)
        scores.insert(score, at: at)
    }

    @discardableResult
    mutating func remove(_ member: [UInt8]) -> Bool {
        guard let old = scoreOf.removeValue(forKey: member) else { return false }
        let at = position(old, member)
        members.remove(at: at)
        scores.remove(at: at)
        return true
    }

    /// Removes the elements at `range` (ranks).
    mutating func removeSubrange(_ range: Range<Int>) {
        for i in range { scoreOf[members[i]] = nil }
        members.removeSubrange(range)
        scores.removeSubrange(range)
    }

    /// Switches to the skiplist encoding as Redis's `zsetAdd` does on an
    /// insertion: past zset-max-listpack-entries, or a member longer than
    /// zset-max-listpack-value.
    mutating func noteInsert(_ member: [UInt8], limits: EncodingLimits) {
        if !large && (count > limits.zsetMaxListpackEntries || member.count > limits.zsetMaxListpackValue) { large = true }
    }

    mutating func settleEncoding(limits: EncodingLimits) {
        large = count > limits.zsetMaxListpackEntries || members.contains { $0.count > limits.zsetMaxListpackValue }
    }

    var encodingName: String { large ? "skiplist" : "listpack" }
}

extension Array {
    /// The first index whose element satisfies `predicate`, for a predicate
    /// false then true along the array (binary search).
    func partitioningIndex(where predicate: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if predicate(self[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}

/// Redis's name for a kind, as TYPE answers.
extension ValueKind {
    var typeName: String {
        switch self {
        case .string: return "string"
        case .list: return "list"
        case .set: return "set"
        case .hash: return "hash"
        case .zset: return "zset"
        }
    }

    init?(typeName: String) {
        guard let kind = ValueKind.allCases.first(where: { $0.typeName == typeName }) else { return nil }
        self = kind
    }
}

/// The encoding OBJECT ENCODING reports for an entry, as Redis 7.0 names it.
func encodingName(of entry: SQLiteKVCache.Entry) -> String {
    switch entry.kind {
    case .string:
        let value = entry.value
        if value.count <= 20 && parseStrictInt64(value) != nil { return "int" }
        return value.count <= 44 ? "embstr" : "raw"
    case .list: return "quicklist"
    case .set: return ((try? SetValue(decoding: entry.value))?.large ?? true) ? "hashtable" : "intset"
    case .hash: return ((try? HashValue(decoding: entry.value))?.large ?? true) ? "hashtable" : "listpack"
    case .zset: return ((try? ZSetValue(decoding: entry.value))?.large ?? true) ? "skiplist" : "listpack"
    }
}
