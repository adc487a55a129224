/// A delivered entry not yet acknowledged (Redis's streamNACK): when it
/// was last delivered, how often, and to which consumer.
struct StreamNACK: Equatable {
    var deliveryTime: Int64
    var deliveryCount: UInt64
    var consumer: [UInt8]
}

/// One consumer of a group (Redis's streamConsumer): its name, when it was
/// last active, and the IDs pending for it (the group's NACKs hold the rest).
struct StreamConsumer: Equatable {
    let name: [UInt8]
    var seenTime: Int64
    var pending = SortedIDMap<Void>()

    static func == (a: StreamConsumer, b: StreamConsumer) -> Bool {
        a.name == b.name && a.seenTime == b.seenTime && a.pending.ids == b.pending.ids
    }
}

/// A consumer group (Redis's streamCG): the last ID delivered, the count of
/// entries read (-1 when unknown), the pending-entries list, the consumers.
struct StreamGroup {
    static let unknownEntriesRead: Int64 = -1

    let name: [UInt8]
    var lastID: StreamID
    var entriesRead: Int64
    private(set) var pel = SortedIDMap<StreamNACK>()
    private(set) var consumers: [[UInt8]: StreamConsumer] = [:]
    /// The bytes the consumers take in the stream's encoding (see StreamValue+Codec).
    private(set) var consumerBytes = 0

    init(name: [UInt8], lastID: StreamID, entriesRead: Int64) {
        self.name = name
        self.lastID = lastID
        self.entriesRead = entriesRead
    }

    /// The consumers in Redis's order (its radix tree's: bytewise by name).
    var sortedConsumers: [StreamConsumer] {
        consumers.values.sorted { $0.name.lexicographicallyPrecedes($1.name) }
    }

    func consumer(_ name: [UInt8]) -> StreamConsumer? { consumers[name] }

    /// Adds a consumer seen at `now`.
    /// - Returns: false when one of that name exists.
    @discardableResult
    mutating func createConsumer(_ name: [UInt8], now: Int64) -> Bool {
        guard consumers[name] == nil else { return false }
        consumers[name] = StreamConsumer(name: name, seenTime: now)
        consumerBytes += StreamValue.consumerEncodedSize(name)
        return true
    }

    /// Marks a consumer active at `now` (Redis's streamLookupConsumer with refresh).
    mutating func touchConsumer(_ name: [UInt8], now: Int64) {
        consumers[name]?.seenTime = now
    }

    mutating func setSeenTime(_ name: [UInt8], _ time: Int64) {
        consumers[name]?.seenTime = time
    }

    /// Removes a consumer and its pending entries (Redis's streamDelConsumer).
    /// - Returns: how many entries were pending for it, nil when there was no such consumer.
    @discardableResult
    mutating func deleteConsumer(_ name: [UInt8]) -> Int? {
        guard let consumer = consumers.removeValue(forKey: name) else { return nil }
        for id in consumer.pending.ids { pel.remove(id) }
        consumerBytes -= StreamValue.consumerEncodedSize(name)
        return consumer.pending.count
    }

    // MARK: The pending-entries list

    func nack(_ id: StreamID) -> StreamNACK? { pel[id] }

    /// Delivers `id` to `consumer` at `now`: a new NACK, or an existing one
    /// taken over with its count reset to 1 (Redis's streamReplyWithRange).
    mutating func deliver(_ id: StreamID, to consumer: [UInt8], now: Int64) {
        if let old = pel[id] {
            consumers[old.consumer]?.pending.remove(id)
            pel.update(id) { $0 = StreamNACK(deliveryTime: now, deliveryCount: 1, consumer: consumer) }
        } else {
            pel.insert(id, StreamNACK(deliveryTime: now, deliveryCount: 1, consumer: consumer))
        }
        consumers[consumer]?.pending.insert(id, ())
    }

    /// Gives the NACK of `id` (created when missing) to `consumer`, with
    /// the delivery time and count given (XCLAIM's and XAUTOCLAIM's work).
    mutating func claim(_ id: StreamID, by consumer: [UInt8], deliveryTime: Int64, deliveryCount: UInt64) {
        if let old = pel[id] {
            if old.consumer != consumer {
                consumers[old.consumer]?.pending.remove(id)
                consumers[consumer]?.pending.insert(id, ())
            }
            pel.update(id) { $0 = StreamNACK(deliveryTime: deliveryTime, deliveryCount: deliveryCount, consumer: consumer) }
        } else {
            pel.insert(id, StreamNACK(deliveryTime: deliveryTime, deliveryCount: deliveryCount, consumer: consumer))
            consumers[consumer]?.pending.insert(id, ())
        }
    }

    /// Records a new delivery of `id` to its owner (XREADGROUP with a history ID).
    mutating func redeliver(_ id: StreamID, now: Int64) {
        pel.update(id) {
            $0.deliveryTime = now
            $0.deliveryCount &+= 1
        }
    }

    /// Acknowledges `id`.
    /// - Returns: whether it was pending.
    @discardableResult
    mutating func acknowledge(_ id: StreamID) -> Bool {
        guard let nack = pel.remove(id) else { return false }
        consumers[nack.consumer]?.pending.remove(id)
        return true
    }

    /// Adds a pending entry as loaded (RDB, the stored form), owned by
    /// `nack.consumer`, which must exist.
    /// - Returns: false for a duplicate or an unknown consumer (a corrupt payload).
    mutating func loadPending(_ id: StreamID, _ nack: StreamNACK) -> Bool {
        guard consumers[nack.consumer] != nil, pel.insert(id, nack) else { return false }
        consumers[nack.consumer]!.pending.insert(id, ())
        return true
    }
}
