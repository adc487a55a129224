#if canImport(Glibc)
import Glibc
#endif
import CPrefetch

/// What the next batch must write for a key.
enum SlotChange: UInt8 {
    /// The file has (or is being given) this state.
    case none
    /// Only the write order changed (LRU recency).
    case touch
    /// The row was written or deleted.
    case row
}

/// The fixed part of a `KeySlot`: its state and bookkeeping, followed in
/// the same heap block by its bytes: the key (after its length, for a key
/// of 32,767 bytes or more), the metadata (after its length, when there is
/// any), then the value.
///
/// Widest fields first, then the 32- and 16-bit ones, the one-byte fields
/// and the flags last: 68 bytes, so with the object's header a 16-byte key
/// and a 100-byte value fill a 208-byte heap chunk (Redis's 1M-key fill;
/// 224 bytes with a pointer each for the live value and the spilled
/// bytes and 32-bit key and metadata lengths; 240 with a 64-bit LRU clock,
/// a stored cost and room; 288 with the whole digest, 64-bit lengths and a
/// byte per flag).
struct SlotFields {
    /// The first two words of the key's digest (SHA-256 of the key): the
    /// index tells slots apart by these 128 bits, and the unapplied index
    /// files a slot by `w0`'s top bits. The whole digest is computed from
    /// the key when needed (`KeySlot.digest()`).
    let w0: UInt64, w1: UInt64
    /// The value's working form (a list, a hash, …) and the block the
    /// bytes spilled to, in one word: 0 (neither); a retained object's
    /// address | 1 (the live value; the bytes then hold no value); a
    /// block's address | 2 (the bytes outgrew the room in the slot's own
    /// block); a block's address | 3 (both: the block's first word holds
    /// the live value's retained address). A block's bytes start after its
    /// first word, used or not. The slot's `deinit` releases and frees.
    private(set) var extra: UInt = 0
    var storageDate: Double = 0
    var seq: Int64 = 0
    var expiresAt: Int64 = SlotFields.noExpiry
    /// The value's bytes; for a live value (which keeps none), the memory
    /// its estimate was when the slot was last counted, in 16-byte units
    /// (`KeySlot.countedBytes`).
    var valueLength: UInt32 = 0
    /// Where it is in its bucket of the index of unapplied slots (-1: not there).
    var bucketPosition: Int32 = -1
    /// The LRU clock at the last access (`AccessTracking.clock`: 16 ms
    /// units, modulo 2^32; 0: never stamped).
    var lruClock: UInt32 = 0
    /// The key's length in the low 15 bits (`longKey`: 32,767 bytes or
    /// more, the length then in the 4 bytes before the key) and, in the
    /// top bit, whether the row has metadata (its length then in the 4
    /// bytes after the key).
    var keyBits: UInt16
    /// The low 16 bits of the batch carrying this key's last sealed state,
    /// until it completes (0: none; the engine skips ids whose low bits are 0).
    var inFlight: UInt16 = 0
    /// When the LFU counter last decayed (minutes since 1970, modulo 2^16,
    /// as Redis's 16-bit LFU clock).
    var frequencyMinutes: UInt16 = 0
    /// Redis's logarithmic LFU counter.
    var frequency: UInt8 = AccessTracking.initialFrequency
    /// `change` (two bits), the flags below and `kind`, packed. A new slot starts
    /// referenced: the clock's hand, passing over the index in bucket
    /// order, may be just before it, and must not drop it unread at once.
    private var bits: UInt8 = SlotFields.referencedBit

    init(digest: KeyDigest, keyLength: Int) {
        w0 = digest.w0
        w1 = digest.w1
        keyBits = UInt16(min(keyLength, Int(Self.longKey)))
    }

    /// `keyBits` of a key whose length is kept before it.
    static let longKey: UInt16 = 0x7FFF
    static let metadataBit: UInt16 = 0x8000

    /// `expiresAt` when the row has no expiry (an expiry that far in the
    /// past never stays on a key).
    static let noExpiry = Int64.min

    private static let referencedBit: UInt8 = 4, assumedNewBit: UInt8 = 8, hasRowBit: UInt8 = 16, kindShift: UInt8 = 5

    @inline(__always)
    private mutating func set(_ bit: UInt8, _ on: Bool) {
        bits = on ? bits | bit : bits & ~bit
    }

    var change: SlotChange {
        get { SlotChange(rawValue: bits & 3)! }
        set { bits = bits & ~3 | newValue.rawValue }
    }
    /// The clock's bit: read since the hand last passed.
    var referenced: Bool {
        get { bits & Self.referencedBit != 0 }
        set { set(Self.referencedBit, newValue) }
    }
    /// Written while the log was replayed without looking the key up in the
    /// file: the totals count it as new until the writer, applying it,
    /// finds what the file held and corrects them.
    var assumedNew: Bool {
        get { bits & Self.assumedNewBit != 0 }
        set { set(Self.assumedNewBit, newValue) }
    }
    /// False when the key is known to be absent (a delete not yet applied,
    /// or a miss remembered).
    var hasRow: Bool {
        get { bits & Self.hasRowBit != 0 }
        set { set(Self.hasRowBit, newValue) }
    }
    /// The value's kind, in the top three bits.
    var kind: ValueKind {
        get { ValueKind(rawValue: bits >> Self.kindShift) ?? .string }
        set { bits = bits & (1 << Self.kindShift - 1) | newValue.rawValue << Self.kindShift }
    }
    var hasExpiry: Bool { expiresAt != Self.noExpiry }
    var live: LiveValue? {
        get { liveObject.map { $0 as! LiveValue } }
        set { setLiveObject(newValue) }
    }

    // MARK: The live value and the spilled bytes (`extra`)

    private static let liveTag: UInt = 1, blockTag: UInt = 2, tags: UInt = 3

    var hasLive: Bool { extra & Self.liveTag != 0 }
    /// The block the bytes spilled to (its first word is not theirs).
    var block: UnsafeMutableRawPointer? {
        extra & Self.blockTag != 0 ? UnsafeMutableRawPointer(bitPattern: extra & ~Self.tags) : nil
    }
    /// The room of the block the bytes spilled to (0: none).
    var spillCapacity: Int { block.map { kv_usable_size($0) - Self.blockPrefix } ?? 0 }
    /// Bytes of a block before the slot's bytes: the live value's word.
    static let blockPrefix = MemoryLayout<UInt>.stride

    /// The live value's retained address (0: none).
    private var liveAddress: UInt {
        switch extra & Self.tags {
        case Self.liveTag: return extra & ~Self.tags
        case Self.tags: return block!.load(as: UInt.self)
        default: return 0
        }
    }
    var liveObject: AnyObject? {
        let address = liveAddress
        guard address != 0 else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).takeUnretainedValue()
    }
    private mutating func setLiveObject(_ object: AnyObject?) {
        let old = liveAddress
        let address = object.map { UInt(bitPattern: Unmanaged.passRetained($0).toOpaque()) } ?? 0
        precondition(address & Self.tags == 0, "a live value's address not 4-byte aligned")
        store(block: block, liveAddress: address)
        if old != 0 { Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: old)!).release() }
    }
    /// Puts the bytes in `newBlock` (nil: back in the slot's own block),
    /// keeping the live value; the caller frees the old block.
    mutating func setBlock(_ newBlock: UnsafeMutableRawPointer?) {
        precondition(newBlock.map { UInt(bitPattern: $0) & Self.tags == 0 } ?? true, "a block not 4-byte aligned")
        store(block: newBlock, liveAddress: liveAddress)
    }
    /// Sets `extra` to `block` and the live value at `address` (0: none),
    /// the address in the block's first word when there is a block.
    private mutating func store(block: UnsafeMutableRawPointer?, liveAddress address: UInt) {
        if let block {
            block.storeBytes(of: address, as: UInt.self)
            extra = UInt(bitPattern: block) | (address != 0 ? Self.tags : Self.blockTag)
        } else {
            extra = address != 0 ? address | Self.liveTag : 0
        }
    }
    /// Releases the live value and frees the block (the slot's end).
    mutating func releaseExtra() {
        setLiveObject(nil)
        if let block {
            extra = 0
            free(block)
        }
    }
}

/// The non-byte part of a row: what `KeySlot.assign` takes beside the
/// metadata and value bytes.
struct RowHead {
    var storageDate: Double
    var seq: Int64
    var expiresAt: Int64?
    var kind: ValueKind
}

/// One key the engine knows in memory: its current state, and where that
/// state is on its way to the file. One heap block holds the bookkeeping,
/// the key, the metadata and the value (a value of more than
/// `inlineLimit` bytes, or one that outgrew the block, has a block of its
/// own), so a key in memory costs one allocation, and overwriting a value
/// with one that fits allocates nothing.
///
/// The key never changes (a slot is found by its digest). Not thread-safe:
/// a batch copies what it needs at its seal.
final class KeySlot: ManagedBuffer<SlotFields, UInt8> {
    typealias Change = SlotChange

    /// Asks for the block's first four cache lines (the fields, the key
    /// and a short value) ahead of a pass that will read them.
    @inline(__always)
    func prefetch() {
        kv_prefetch(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()), Self.prefetchLines)
    }
    /// The 64-byte lines a prefetch of a slot asks for: the object's
    /// header, the fields, the key and a short value.
    static let prefetchLines: Int32 = 4

    /// Bytes (key, metadata and value) kept in the slot's own block; more
    /// go to a block of their own, so a slot overwritten with a smaller
    /// value never keeps more than this much unused.
    static let inlineLimit = 1024

    /// The bytes a slot keeps for a key of `key` bytes, `metadata` bytes
    /// of metadata and `value` bytes of value, the lengths kept with them
    /// included.
    @inline(__always)
    static func bytes(key: Int, metadata: Int, value: Int) -> Int {
        (key >= Int(SlotFields.longKey) ? 4 : 0) + key + (metadata > 0 ? 4 + metadata : 0) + value
    }

    /// A slot for `key` with room for `metadata` and `value` bytes beside it.
    static func make(digest: KeyDigest, key: UnsafeRawBufferPointer, metadata: Int, value: Int) -> KeySlot {
        let payload = bytes(key: key.count, metadata: metadata, value: value)
        let inline = payload <= inlineLimit ? payload : 0
        let slot = unsafeDowncast(create(minimumCapacity: inline) { _ in
            SlotFields(digest: digest, keyLength: key.count)
        }, to: KeySlot.self)
        slot.reserve(payload, keeping: 0)
        let base = slot.base
        if slot.keyIsLong { base.storeBytes(of: UInt32(key.count), as: UInt32.self) }
        if key.count > 0 { (base + slot.keyStart).copyMemory(from: key.baseAddress!, byteCount: key.count) }
        return slot
    }

    /// A slot for `key` holding `row` (nil: known to be absent).
    static func make(digest: KeyDigest, key: [UInt8], row: Row?) -> KeySlot {
        let slot = key.withUnsafeBytes {
            make(digest: digest, key: $0, metadata: row?.metadata.count ?? 0, value: row?.value.inlineSize ?? 0)
        }
        slot.row = row
        return slot
    }

    deinit {
        header.releaseExtra()
    }

    // MARK: The bytes

    /// Bytes the slot's own block has room for after its fields (at most
    /// `inlineLimit`): the block's usable size, as malloc reports it, less
    /// the object's header and the fields; the same figure for as long as
    /// the block lives.
    @inline(__always)
    private var inlineCapacity: Int { min(capacity, Self.inlineLimit) }

    /// Where the bytes start: in the spilled block, or right after the fields.
    @inline(__always)
    private var base: UnsafeMutableRawPointer {
        if let block = header.block { return block + SlotFields.blockPrefix }
        return withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
    }

    /// Whether the key's length is kept before it (32,767 bytes or more).
    @inline(__always)
    private var keyIsLong: Bool { header.keyBits & SlotFields.longKey == SlotFields.longKey }
    /// Where the key starts among the bytes.
    @inline(__always)
    private var keyStart: Int { keyIsLong ? 4 : 0 }
    /// The key's bytes.
    var keyCount: Int {
        keyIsLong ? Int(base.loadUnaligned(as: UInt32.self)) : Int(header.keyBits & SlotFields.longKey)
    }
    /// Where the key ends: the bytes a change of the row keeps.
    @inline(__always)
    private var keyEnd: Int { keyStart + keyCount }
    @inline(__always)
    private var hasMetadata: Bool { header.keyBits & SlotFields.metadataBit != 0 }
    /// The metadata's bytes.
    @inline(__always)
    private var metadataCount: Int { hasMetadata ? Int((base + keyEnd).loadUnaligned(as: UInt32.self)) : 0 }
    /// Where the metadata starts among the bytes.
    @inline(__always)
    private var metadataStart: Int { keyEnd + (hasMetadata ? 4 : 0) }
    /// Where the value starts among the bytes.
    @inline(__always)
    private var valueStart: Int { hasMetadata ? metadataStart + metadataCount : keyEnd }

    /// Makes room for `count` bytes, keeping the first `keeping` (the key,
    /// and whatever else the caller still needs) where `base` will be.
    private func reserve(_ count: Int, keeping: Int) {
        if count <= inlineCapacity {
            guard let block = header.block else { return }
            // Back into the slot's own block.
            withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
                .copyMemory(from: block + SlotFields.blockPrefix, byteCount: keeping)
            header.setBlock(nil)
            free(block)
            return
        }
        let capacity = header.spillCapacity
        if header.block != nil && count <= capacity && count >= capacity / 4 { return }
        guard let block = malloc(SlotFields.blockPrefix + count) else { fatalError("out of memory for a slot of \(count) bytes") }
        if keeping > 0 { (block + SlotFields.blockPrefix).copyMemory(from: base, byteCount: keeping) }
        let old = header.block
        header.setBlock(block)
        old.map { free($0) }
    }

    /// Sets the row: its fields, and its metadata and value bytes (or the
    /// live value, whose bytes are not kept).
    func assign(_ head: RowHead, metadata: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, live: LiveValue?) {
        let keyEnd = self.keyEnd
        let valueCount = live == nil ? value.count : 0
        let metadataBytes = metadata.count > 0 ? 4 + metadata.count : 0
        reserve(keyEnd + metadataBytes + valueCount, keeping: keyEnd)
        let base = self.base
        if metadata.count > 0 {
            (base + keyEnd).storeBytes(of: UInt32(metadata.count), as: UInt32.self)
            (base + keyEnd + 4).copyMemory(from: metadata.baseAddress!, byteCount: metadata.count)
            header.keyBits |= SlotFields.metadataBit
        } else {
            header.keyBits &= ~SlotFields.metadataBit
        }
        if valueCount > 0 { (base + keyEnd + metadataBytes).copyMemory(from: value.baseAddress!, byteCount: valueCount) }
        header.valueLength = UInt32(valueCount)
        header.live = live
        header.storageDate = head.storageDate
        header.seq = head.seq
        header.expiresAt = head.expiresAt.map { max($0, SlotFields.noExpiry + 1) } ?? SlotFields.noExpiry
        header.kind = head.kind
        header.hasRow = true
    }

    /// Gives the row `value` as its live value in place of its value bytes
    /// (its fields and metadata stay).
    func setLive(_ value: LiveValue) {
        precondition(header.hasRow, "setLive on a slot without a row")
        header.live = value
        header.valueLength = 0  // counted at the table's next attach
        let kept = valueStart
        reserve(kept, keeping: kept)  // a large value's block goes
    }

    /// Marks the key absent (a delete, or a miss remembered): only the key is kept.
    func clearRow() {
        header.live = nil
        header.keyBits &= ~SlotFields.metadataBit
        header.valueLength = 0
        header.hasRow = false
        header.expiresAt = SlotFields.noExpiry
        let keyEnd = self.keyEnd
        reserve(keyEnd, keeping: keyEnd)
    }

    /// Calls `body` with the key's bytes (valid only inside it).
    @inline(__always)
    func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(UnsafeRawBufferPointer(start: base + keyStart, count: keyCount)) }
    }

    /// Calls `body` with the metadata's bytes (valid only inside it).
    @inline(__always)
    func withMetadata<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) {
            try body(UnsafeRawBufferPointer(start: base + metadataStart, count: metadataCount))
        }
    }

    /// Calls `body` with the value's bytes (valid only inside it; empty for a live value).
    @inline(__always)
    func withValueBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) {
            try body(UnsafeRawBufferPointer(start: base + valueStart, count: header.hasLive ? 0 : Int(header.valueLength)))
        }
    }

    /// A copy of the key.
    var key: [UInt8] { withKey { [UInt8]($0) } }

    // MARK: The row

    /// The key's current row, or nil when it is known to be absent; a copy
    /// (the metadata and value bytes are copied out). Setting it copies the
    /// row's bytes in.
    var row: Row? {
        get {
            guard header.hasRow else { return nil }
            let value: StoredValue = header.live.map { .live($0) } ?? .bytes(withValueBytes { [UInt8]($0) })
            return Row(storageDate: header.storageDate, seq: header.seq, expiresAt: expiresAt, kind: header.kind,
                       metadata: hasMetadata ? withMetadata { [UInt8]($0) } : [], value: value)
        }
        set {
            guard let row = newValue else { return clearRow() }
            let head = RowHead(storageDate: row.storageDate, seq: row.seq, expiresAt: row.expiresAt, kind: row.kind)
            row.metadata.withUnsafeBytes { metadata in
                switch row.value {
                case .bytes(let bytes): bytes.withUnsafeBytes { assign(head, metadata: metadata, value: $0, live: nil) }
                case .live(let value): assign(head, metadata: metadata, value: UnsafeRawBufferPointer(start: nil, count: 0), live: value)
                }
            }
        }
    }

    /// The key's digest, computed from the key (SHA-256: about 50 ns for a
    /// short key); a slot keeps only its first two words.
    func digest() -> KeyDigest { withKey { KeyHasher.digest($0) } }
    /// Whether `digest` is this slot's key's (its first 128 bits are).
    @inline(__always)
    func matches(_ digest: KeyDigest) -> Bool { header.w0 == digest.w0 && header.w1 == digest.w1 }
    /// The digest's first word: its top bits order digests.
    var digestPrefix: UInt64 { header.w0 }
    var hasRow: Bool { header.hasRow }
    var kind: ValueKind { header.kind }
    var live: LiveValue? { header.live }
    var storageDate: Double {
        get { header.storageDate }
        set { header.storageDate = newValue }
    }
    var seq: Int64 {
        get { header.seq }
        set { header.seq = newValue }
    }
    /// The row's expiry (nil: none, or no row).
    var expiresAt: Int64? {
        get { header.hasExpiry ? header.expiresAt : nil }
        set {
            header.expiresAt = header.hasRow ? newValue.map { max($0, SlotFields.noExpiry + 1) } ?? SlotFields.noExpiry
                                             : SlotFields.noExpiry
        }
    }

    func isExpired(at now: Int64) -> Bool { header.hasExpiry && header.expiresAt <= now }

    /// The row's content bytes without the key (0 without a row).
    var bodySize: Int {
        guard header.hasRow else { return 0 }
        return metadataCount + (header.live.map(\.encodedSize) ?? Int(header.valueLength))
    }

    /// The bytes this entry counts against its cache's capacity (0 when absent).
    var contentSize: Int { header.hasRow ? keyCount + bodySize : 0 }

    // MARK: Bookkeeping

    /// The low 16 bits of the id of the batch carrying the slot's last
    /// sealed state (0: none).
    var inFlight: UInt16 {
        get { header.inFlight }
        set { header.inFlight = newValue }
    }
    /// Whether batch `id` carries the slot's last sealed state.
    @inline(__always)
    func isInFlight(in id: UInt64) -> Bool { header.inFlight == UInt16(truncatingIfNeeded: id) }
    /// Puts the slot in flight with batch `id` (whose low 16 bits are not 0).
    func setInFlight(_ id: UInt64) { header.inFlight = UInt16(truncatingIfNeeded: id) }
    /// The memory the slot is counted for, beside the table's fixed
    /// overhead a slot: the room of its blocks, and a live value's estimate
    /// as `countLive()` last recorded it (rounded up to 16 bytes, at most
    /// 64 GiB). The same figure on every read until the slot's bytes or
    /// live value change, so the table takes a slot out of its totals
    /// before changing it and puts it back after (`KeyTable.detach` and
    /// `attach`): what is added to a total is what is taken off it later.
    var countedBytes: Int {
        inlineCapacity + header.spillCapacity + (header.hasLive ? Int(header.valueLength) << 4 : 0)
    }
    /// Records a live value's estimate for `countedBytes`.
    func countLive() {
        guard let live = header.live else { return }
        header.valueLength = UInt32(truncatingIfNeeded: min((live.memoryCost + 15) >> 4, Int(UInt32.max)))
    }
    /// The LRU clock at the last access (`AccessTracking.clock`; 0: never stamped).
    var lruClock: UInt32 {
        get { header.lruClock }
        set { header.lruClock = newValue }
    }
    var frequencyMinutes: UInt16 {
        get { header.frequencyMinutes }
        set { header.frequencyMinutes = newValue }
    }
    var frequency: UInt8 {
        get { header.frequency }
        set { header.frequency = newValue }
    }
    var change: Change {
        get { header.change }
        set { header.change = newValue }
    }
    var referenced: Bool {
        get { header.referenced }
        set { header.referenced = newValue }
    }
    var assumedNew: Bool {
        get { header.assumedNew }
        set { header.assumedNew = newValue }
    }
    /// Where it is in its bucket of the index of unapplied slots (-1: not there).
    var indexPosition: Int {
        get { Int(header.bucketPosition) }
        set { header.bucketPosition = Int32(truncatingIfNeeded: newValue) }
    }
    var indexed: Bool { header.bucketPosition >= 0 }

    /// Not yet in the file: changed since the last seal, or in a batch not yet applied.
    var isUnapplied: Bool { header.change != .none || header.inFlight != 0 }
}

extension StoredValue {
    /// Bytes a slot keeps for the value (none for a live value).
    var inlineSize: Int {
        if case .bytes(let bytes) = self { return bytes.count }
        return 0
    }
}
