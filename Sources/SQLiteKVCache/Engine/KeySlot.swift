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
/// the same heap block by its bytes (the key, the metadata, then the value).
///
/// Widest fields first, then the 32- and 16-bit ones, the one-byte fields
/// and the flags last: 84 bytes, so with the object's header a 16-byte key
/// and a 100-byte value fill a 224-byte heap chunk (Redis's 1M-key fill;
/// 240 bytes with a 64-bit LRU clock, a stored cost and room; 288 with
/// the whole digest, 64-bit lengths and a byte per flag).
struct SlotFields {
    /// The first two words of the key's digest (SHA-256 of the key): the
    /// index tells slots apart by these 128 bits, and the unapplied index
    /// files a slot by `w0`'s top bits. The whole digest is computed from
    /// the key when needed (`KeySlot.digest()`).
    let w0: UInt64, w1: UInt64
    /// The value in its working form (a list, a hash, …), when it has one:
    /// the bytes then hold no value. An `AnyObject`, not a `LiveValue`
    /// existential (16 bytes): `live` casts it.
    var liveObject: AnyObject?
    /// The bytes, when they outgrew the room in the slot's own block: a
    /// block of their own (`malloc_usable_size` gives its room).
    var spill: UnsafeMutableRawPointer?
    var storageDate: Double = 0
    var seq: Int64 = 0
    var expiresAt: Int64 = SlotFields.noExpiry
    /// The low 32 bits of the batch carrying this key's last sealed state,
    /// until it completes (0: none; the engine skips ids whose low bits are 0).
    var inFlight: UInt32 = 0
    let keyLength: UInt32
    var metadataLength: UInt32 = 0
    /// The value's bytes; for a live value (which keeps none), the memory
    /// its estimate was when the slot was last counted, in 16-byte units
    /// (`KeySlot.countedBytes`).
    var valueLength: UInt32 = 0
    /// Where it is in its bucket of the index of unapplied slots (-1: not there).
    var bucketPosition: Int32 = -1
    /// The LRU clock at the last access (`AccessTracking.clock`: 16 ms
    /// units, modulo 2^32; 0: never stamped).
    var lruClock: UInt32 = 0
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
        self.keyLength = UInt32(keyLength)
    }

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
        set { liveObject = newValue }
    }
    /// The room of the block the bytes spilled to (0: none).
    var spillCapacity: Int { spill.map { kv_usable_size($0) } ?? 0 }
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

    /// A slot for `key` with room for `payload` bytes (key included).
    static func make(digest: KeyDigest, key: UnsafeRawBufferPointer, payload: Int) -> KeySlot {
        let inline = payload <= inlineLimit ? payload : 0
        let slot = unsafeDowncast(create(minimumCapacity: inline) { _ in
            SlotFields(digest: digest, keyLength: key.count)
        }, to: KeySlot.self)
        slot.reserve(payload, keeping: 0)
        if key.count > 0 { slot.base.copyMemory(from: key.baseAddress!, byteCount: key.count) }
        return slot
    }

    /// A slot for `key` holding `row` (nil: known to be absent).
    static func make(digest: KeyDigest, key: [UInt8], row: Row?) -> KeySlot {
        let payload = key.count + (row.map { $0.metadata.count + $0.value.inlineSize } ?? 0)
        let slot = key.withUnsafeBytes { make(digest: digest, key: $0, payload: payload) }
        slot.row = row
        return slot
    }

    deinit {
        header.spill.map { free($0) }
    }

    // MARK: The bytes

    /// Bytes the slot's own block has room for after its fields (at most
    /// `inlineLimit`): the block's usable size, as malloc reports it, less
    /// the object's header and the fields; the same figure for as long as
    /// the block lives.
    @inline(__always)
    private var inlineCapacity: Int { min(capacity, Self.inlineLimit) }

    /// Where the bytes start: the spilled block, or right after the fields.
    @inline(__always)
    private var base: UnsafeMutableRawPointer {
        if let spill = header.spill { return spill }
        return withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
    }

    /// Makes room for `count` bytes, keeping the first `keeping` (the key,
    /// and whatever else the caller still needs) where `base` will be.
    private func reserve(_ count: Int, keeping: Int) {
        if count <= inlineCapacity {
            guard let spill = header.spill else { return }
            // Back into the slot's own block.
            withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }.copyMemory(from: spill, byteCount: keeping)
            free(spill)
            header.spill = nil
            return
        }
        let capacity = header.spillCapacity
        if header.spill != nil && count <= capacity && count >= capacity / 4 { return }
        guard let block = malloc(max(count, 1)) else { fatalError("out of memory for a slot of \(count) bytes") }
        if keeping > 0 { block.copyMemory(from: base, byteCount: keeping) }
        header.spill.map { free($0) }
        header.spill = block
    }

    /// Sets the row: its fields, and its metadata and value bytes (or the
    /// live value, whose bytes are not kept).
    func assign(_ head: RowHead, metadata: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, live: LiveValue?) {
        let keyCount = Int(header.keyLength)
        let valueCount = live == nil ? value.count : 0
        reserve(keyCount + metadata.count + valueCount, keeping: keyCount)
        let base = self.base
        if metadata.count > 0 { (base + keyCount).copyMemory(from: metadata.baseAddress!, byteCount: metadata.count) }
        if valueCount > 0 { (base + keyCount + metadata.count).copyMemory(from: value.baseAddress!, byteCount: valueCount) }
        header.metadataLength = UInt32(metadata.count)
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
        let kept = Int(header.keyLength) + Int(header.metadataLength)
        reserve(kept, keeping: kept)  // a large value's block goes
    }

    /// Marks the key absent (a delete, or a miss remembered): only the key is kept.
    func clearRow() {
        header.live = nil
        header.metadataLength = 0
        header.valueLength = 0
        header.hasRow = false
        header.expiresAt = SlotFields.noExpiry
        reserve(Int(header.keyLength), keeping: Int(header.keyLength))
    }

    /// Calls `body` with the key's bytes (valid only inside it).
    @inline(__always)
    func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(UnsafeRawBufferPointer(start: base, count: Int(header.keyLength))) }
    }

    /// Calls `body` with the metadata's bytes (valid only inside it).
    @inline(__always)
    func withMetadata<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) {
            try body(UnsafeRawBufferPointer(start: base + Int(header.keyLength), count: Int(header.metadataLength)))
        }
    }

    /// Calls `body` with the value's bytes (valid only inside it; empty for a live value).
    @inline(__always)
    func withValueBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) {
            try body(UnsafeRawBufferPointer(start: base + Int(header.keyLength) + Int(header.metadataLength),
                                            count: header.liveObject == nil ? Int(header.valueLength) : 0))
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
                       metadata: header.metadataLength == 0 ? [] : withMetadata { [UInt8]($0) }, value: value)
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
        return Int(header.metadataLength) + (header.live.map(\.encodedSize) ?? Int(header.valueLength))
    }

    /// The bytes this entry counts against its cache's capacity (0 when absent).
    var contentSize: Int { header.hasRow ? Int(header.keyLength) + bodySize : 0 }

    var keyCount: Int { Int(header.keyLength) }

    // MARK: Bookkeeping

    /// The low 32 bits of the id of the batch carrying the slot's last
    /// sealed state (0: none).
    var inFlight: UInt32 {
        get { header.inFlight }
        set { header.inFlight = newValue }
    }
    /// Whether batch `id` carries the slot's last sealed state.
    @inline(__always)
    func isInFlight(in id: UInt64) -> Bool { header.inFlight == UInt32(truncatingIfNeeded: id) }
    /// Puts the slot in flight with batch `id` (whose low 32 bits are not 0).
    func setInFlight(_ id: UInt64) { header.inFlight = UInt32(truncatingIfNeeded: id) }
    /// The memory the slot is counted for, beside the table's fixed
    /// overhead a slot: the room of its blocks, and a live value's estimate
    /// as `countLive()` last recorded it (rounded up to 16 bytes, at most
    /// 64 GiB). The same figure on every read until the slot's bytes or
    /// live value change, so the table takes a slot out of its totals
    /// before changing it and puts it back after (`KeyTable.detach` and
    /// `attach`): what is added to a total is what is taken off it later.
    var countedBytes: Int {
        inlineCapacity + header.spillCapacity + (header.liveObject == nil ? 0 : Int(header.valueLength) << 4)
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
