import CCrypto

/// The SHA-256 digest of a key: the primary key of an entry.
/// Four words, so it hashes and compares fast as a dictionary key.
public struct KeyDigest: Hashable, Sendable, Comparable {
    public var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

    /// Builds a digest from its 32 raw bytes (big-endian words, so the
    /// ordering of digests is the ordering of their bytes, as in SQLite).
    public init(bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count == 32, "a SHA-256 digest has 32 bytes")
        func word(_ i: Int) -> UInt64 {
            UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self))
        }
        w0 = word(0); w1 = word(1); w2 = word(2); w3 = word(3)
    }

    /// Calls `body` with the 32 raw bytes.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var words = (w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian)
        return try withUnsafeBytes(of: &words) { try body($0) }
    }

    public var bytes: [UInt8] { withBytes { [UInt8]($0) } }

    /// Hashes one word, not four: a SHA-256 word is already uniform, and
    /// Hasher's per-process seed still keeps dictionary buckets unpredictable
    /// to a client choosing keys. Equality compares all four.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(w0)
    }

    /// What a dictionary asks: one word of the digest mixed with the
    /// dictionary's seed (murmur3's 64-bit finalizer), not a SipHash of it.
    /// SipHash seeding and finalizing took about 3% of the server's time under
    /// SET -P 16. The seed is per dictionary storage (its address), so a
    /// client still cannot aim keys at one bucket.
    public func _rawHashValue(seed: Int) -> Int {
        var h = w0 ^ UInt64(UInt(bitPattern: seed))
        h ^= h >> 33
        h &*= 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h &*= 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return Int(Int64(bitPattern: h))
    }

    public static func < (a: KeyDigest, b: KeyDigest) -> Bool {
        (a.w0, a.w1, a.w2, a.w3) < (b.w0, b.w1, b.w2, b.w3)
    }
}

/// Computes SHA-256 through OpenSSL's low-level SHA-256 (`kv_sha256` in
/// CCrypto's shim): no allocation and no algorithm lookup per digest, about
/// 0.6x the time of a reused EVP context and 0.1x that of `SHA256()`.
/// Stateless, so safe from any thread.
final class KeyHasher: Sendable {
    init() {}

    /// Returns the SHA-256 digest of `key`.
    func digest(_ key: [UInt8]) -> KeyDigest {
        key.withUnsafeBytes { digest($0) }
    }

    /// Returns the SHA-256 digest of the bytes in `key`.
    func digest(_ key: UnsafeRawBufferPointer) -> KeyDigest { Self.digest(key) }

    /// Returns the SHA-256 digest of the bytes in `key`.
    static func digest(_ key: UnsafeRawBufferPointer) -> KeyDigest {
        var out = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &out) { outBytes in
            kv_sha256(key.baseAddress, key.count, outBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return withUnsafeBytes(of: &out) { KeyDigest(bytes: $0) }
    }
}
