import Testing
@testable import KVCacheServer

private func b(_ text: String) -> [UInt8] { Array(text.utf8) }

/// `MemberSlots`: the slots of a large set, hash or sorted set. A scan
/// returns every member present for its whole run, once while no member
/// moved meanwhile, and at least once whatever happened; random picks only
/// ever land on members.
@Suite("Member slots")
struct MemberSlotsTests {
    /// A deterministic generator, so a failure reproduces.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func chunkedArrayActsAsAnArrayAcrossChunks() {
        var chunked = ChunkedArray<Int>()
        var plain: [Int] = []
        for i in 0..<10_000 {
            chunked.append(i)
            plain.append(i)
        }
        #expect(Array(chunked) == plain && chunked.count == 10_000)
        let copy = chunked
        chunked[4095] = -1
        chunked[4096] = -2
        plain[4095] = -1
        plain[4096] = -2
        #expect(copy[4095] == 4095 && copy[4096] == 4096, "a copy keeps its elements")
        #expect(chunked.remove(at: 100) == plain.remove(at: 100))
        for _ in 0..<5_000 { #expect(chunked.removeLast() == plain.removeLast()) }
        chunked.removeLast(903)
        plain.removeLast(903)
        #expect(Array(chunked) == plain && chunked.count == plain.count && chunked.last == plain.last)
        #expect(Array(copy) == Array(0..<10_000))
        #expect(ChunkedArray(plain.lazy.map { $0 }).elementsEqual(plain))
    }

    @Test func removalsLeaveHolesAndTheEndIsTrimmed() {
        var slots = MemberSlots<Int>()
        for i in 0..<10 { #expect(slots.append(i) == i) }
        slots.remove(at: 3) { _, _ in Issue.record("nothing moves for one hole") }
        #expect(slots.count == 9 && slots.end == 10 && slots[3] == nil && slots[4] == 4)
        slots.remove(at: 9) { _, _ in }
        slots.remove(at: 8) { _, _ in }
        #expect(slots.end == 8 && slots.count == 7)
        // Holes at the end are dropped, the one in the middle with them once it is last.
        for slot in [7, 6, 5, 4] { slots.remove(at: slot) { _, _ in } }
        #expect(slots.end == 3 && slots.count == 3 && slots.holes == 0)
        #expect(slots.elements == [0, 1, 2])
    }

    @Test func pastHalfHolesEachRemovalMovesAFewMembersFromTheEnd() {
        var slots = MemberSlots<Int>()
        for i in 0..<100 { _ = slots.append(i) }
        var slotOf = Dictionary(uniqueKeysWithValues: (0..<100).map { ($0, $0) })
        func remove(_ member: Int) -> Int {
            var moves = 0
            slots.remove(at: slotOf[member]!) { moved, slot in
                #expect(slot < slotOf[moved]!, "a member only moves toward the start")
                slotOf[moved] = slot
                moves += 1
            }
            slotOf[member] = nil
            return moves
        }
        for i in stride(from: 0, to: 100, by: 2) { #expect(remove(i) == 0) }
        #expect(slots.holes == 50 && slots.end == 100, "half the slots are holes: nothing moved yet")
        #expect((1...MemberSlots<Int>.movesPerRemoval).contains(remove(1)), "past half: a few moves, not all at once")
        for i in stride(from: 3, to: 60, by: 2) { #expect(remove(i) <= MemberSlots<Int>.movesPerRemoval) }
        #expect(slots.holes * 2 <= slots.end)
        #expect(slots.count == slotOf.count)
        for (member, slot) in slotOf { #expect(slots[slot] == member) }
        // An addition fills a hole before it takes a new slot.
        let end = slots.end
        if slots.holes > 0 {
            let slot = slots.append(1000)
            #expect(slot < end && slots.end == end && slots[slot] == 1000)
        }
    }

    @Test func randomPicksLandOnMembersOnly() {
        var slots = MemberSlots<Int>()
        for i in 0..<64 { _ = slots.append(i) }
        for i in stride(from: 0, to: 60, by: 3) { slots.remove(at: i) { _, _ in } }
        var generator = Generator(state: 7)
        let random = { (n: Int) in Int.random(in: 0..<n, using: &generator) }
        for _ in 0..<500 { #expect(slots[slots.randomSlot(random)] != nil) }
        for n in [1, 5, 20, 43, 44, 100] {
            let picked = slots.distinctRandomSlots(n, random)
            #expect(picked.count == min(n, slots.count))
            #expect(Set(picked).count == picked.count)
            #expect(picked.allSatisfy { slots[$0] != nil })
        }
    }

    /// Scans interleaved with random additions and removals, against a
    /// model: no member missed, and none returned twice unless one moved.
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func aScanReturnsEveryMemberPresentThroughoutOnce(seed: UInt64) {
        var generator = Generator(state: seed)
        var slots = MemberSlots<Int>()
        var slotOf: [Int: Int] = [:]
        var next = 0
        func add() {
            slotOf[next] = slots.append(next)
            next += 1
        }
        func removeOne() {
            guard let member = slotOf.keys.randomElement(using: &generator) else { return }
            slots.remove(at: slotOf[member]!) { moved, slot in
                slotOf[moved] = slot
                moves += 1
            }
            slotOf[member] = nil
        }
        for _ in 0..<Int.random(in: 50...2000, using: &generator) { add() }
        let startMembers = Set(slotOf.keys)
        var removedDuringScan = Set<Int>()
        var returned: [Int] = []
        var cursor = 0
        var moves = 0
        moves = 0
        repeat {
            cursor = slots.scan(below: cursor, count: Int.random(in: 1...50, using: &generator)) { returned.append($0) }
            for _ in 0..<Int.random(in: 0...8, using: &generator) {
                if Bool.random(using: &generator) {
                    add()
                } else {
                    let before = Set(slotOf.keys)
                    removeOne()
                    removedDuringScan.formUnion(before.subtracting(slotOf.keys))
                }
            }
        } while cursor != 0
        let present = startMembers.subtracting(removedDuringScan)
        #expect(present.isSubset(of: Set(returned)), "a member present throughout was missed")
        if moves == 0 {
            let counts = Dictionary(returned.map { ($0, 1) }, uniquingKeysWith: +)
            #expect(counts.values.allSatisfy { $0 == 1 }, "a member returned twice without a close-up")
        }
        for (member, slot) in slotOf { #expect(slots[slot] == member) }
        #expect(slots.count == slotOf.count)
    }

    /// The case fakeredis's own tests check against a real server: a member
    /// not yet returned is removed mid-scan; the rest come back once each.
    @Test func setHashAndSortedSetScansReturnNoDuplicateAfterARemoval() {
        let limits = EncodingLimits()
        let set = SetValue(), hash = HashValue(), zset = ZSetValue()
        for i in 0..<600 {
            set.add(b("\(i)x"), limits: limits)
            hash.set(b("f\(i)"), b("v\(i)"))
            zset.set(b("m\(i)"), score: Double(i))
        }
        hash.noteWrite(longestWritten: 4, limits: limits)
        zset.large = true
        #expect(set.large && hash.large)

        var members: [[UInt8]] = []
        var cursor = set.scan(below: 0, count: 10) { members.append($0) }
        let victim = set.allMembers.first { !members.contains($0) }!
        #expect(set.remove(victim))
        while cursor != 0 { cursor = set.scan(below: cursor, count: 10) { members.append($0) } }
        #expect(members.count == 599 && Set(members).count == 599 && !members.contains(victim))

        var fields: [[UInt8]] = []
        cursor = hash.scan(below: 0, count: 10) { fields.append($0.field) }
        let field = hash.fields.first { !fields.contains($0) }!
        #expect(hash.remove(field))
        while cursor != 0 { cursor = hash.scan(below: cursor, count: 10) { fields.append($0.field) } }
        #expect(fields.count == 599 && Set(fields).count == 599 && !fields.contains(field))

        var zmembers: [[UInt8]] = []
        cursor = zset.scan(below: 0, count: 10) { member, _ in zmembers.append(member) }
        let zvictim = zset.unorderedMembers.first { !zmembers.contains($0) }!
        #expect(zset.remove(zvictim))
        while cursor != 0 { cursor = zset.scan(below: cursor, count: 10) { member, _ in zmembers.append(member) } }
        #expect(zmembers.count == 599 && Set(zmembers).count == 599 && !zmembers.contains(zvictim))
    }

    /// Values with holes still encode, decode, thaw twice and answer random picks whole.
    @Test func valuesWithHolesEncodeAndThawWhole() throws {
        let limits = EncodingLimits()
        let set = SetValue(), hash = HashValue()
        for i in 0..<300 {
            set.add(b("s\(i)"), limits: limits)
            hash.set(b("f\(i)"), b("v\(i)"))
        }
        hash.noteWrite(longestWritten: 4, limits: limits)
        for i in stride(from: 0, to: 200, by: 3) {
            set.remove(b("s\(i)"))
            hash.remove(b("f\(i)"))
        }
        let keptSet = Set((0..<300).filter { $0 >= 200 || $0 % 3 != 0 }.map { b("s\($0)") })
        #expect(Set(set.allMembers) == keptSet && set.count == keptSet.count)
        #expect(Set(try SetValue(decoding: set.encoded()).allMembers) == keptSet)
        #expect(set.encodedSize == set.encoded().count && hash.encodedSize == hash.encoded().count)
        let decodedHash = try HashValue(decoding: hash.encoded())
        #expect(decodedHash.count == hash.count && decodedHash[b("f1")] == b("v1") && decodedHash[b("f0")] == nil)
        var generator = Generator(state: 3)
        let random = { (n: Int) in Int.random(in: 0..<n, using: &generator) }
        for _ in 0..<200 {
            #expect(keptSet.contains(set.randomMember(random)))
            #expect(hash[hash.randomPair(random).field] != nil)
        }
        #expect(Set(set.distinctRandomMembers(1000, random)) == keptSet)
        set.isFrozen = true
        hash.isFrozen = true
        _ = set.thawed()
        _ = hash.thawed()
        let setAgain = try #require(set.thawed() as? SetValue)
        let hashAgain = try #require(hash.thawed() as? HashValue)
        #expect(Set(setAgain.allMembers) == keptSet)
        setAgain.remove(b("s1"))
        #expect(!setAgain.contains(b("s1")) && setAgain.count == keptSet.count - 1)
        #expect(hashAgain[b("f2")] == b("v2"))
        hashAgain.remove(b("f2"))
        #expect(hashAgain[b("f2")] == nil && hashAgain[b("f4")] == b("v4"))
    }
}

/// `ScoreTree` after many removals: a large tree's arrays shrink a few
/// nodes a removal (no rebuild at once), a small one's are rebuilt, and the
/// order, ranks and scores stay right either way.
@Suite("Score tree shrink")
struct ScoreTreeShrinkTests {
    @Test(arguments: [(11, 0), (12, 0), (13, 65_536)])
    func removalsShrinkTheArraysAndKeepTheOrder(seed: UInt64, rebuildLimit: Int) {
        var generator = MemberSlotsTests.Generator(state: seed)
        var tree = ScoreTree()
        tree.rebuildLimit = rebuildLimit
        var model: [String: Double] = [:]
        for i in 0..<6000 {
            let score = Double(Int.random(in: 0..<500, using: &generator))
            tree.insert(Array("m\(i)".utf8), score: score)
            model["m\(i)"] = score
        }
        let names = Array(model.keys).shuffled(using: &generator)
        for (n, name) in names.prefix(5800).enumerated() {
            tree.remove(Array(name.utf8), score: model[name]!)
            model[name] = nil
            if n % 500 == 0 { #expect(tree.checkInvariants().ok) }
            if rebuildLimit == 0 {
                // Never more than two thirds free, give or take the four moves a removal.
                #expect(tree.capacity <= 3 * tree.count + 4)
            }
        }
        #expect(tree.count == 200 && tree.checkInvariants().ok)
        #expect(tree.capacity < 1500, "taken back: \(tree.capacity) nodes for 200 elements")
        let expected = model.sorted { $0.value != $1.value ? $0.value < $1.value : $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        var walked: [String] = []
        tree.forEach(fromRank: 0, reverse: false) { member, score in
            walked.append(String(decoding: member, as: UTF8.self))
            #expect(model[walked.last!] == score)
            return true
        }
        #expect(walked == expected.map(\.key))
        for (rank, element) in expected.enumerated() { #expect(tree.rank(Array(element.key.utf8), score: element.value) == rank) }
        // Insertions reuse what is free and the tree stays whole.
        for i in 0..<300 { tree.insert(Array("n\(i)".utf8), score: Double(i)) }
        #expect(tree.count == 500 && tree.checkInvariants().ok)
    }
}
