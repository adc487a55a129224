import CCrypto

/// One-shot digests and random bytes through OpenSSL, and hex: the few
/// places that hand buffers to libcrypto (DEBUG DIGEST, ACL passwords and
/// ACL GENPASS).
enum Digest {
    /// SHA-256 of `bytes` (32 bytes).
    static func sha256(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_sha256(), length: 32) }

    /// SHA-1 of `bytes` (20 bytes).
    static func sha1(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_sha1(), length: 20) }

    private static func digest(_ bytes: [UInt8], _ md: OpaquePointer?, length expected: Int) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: expected)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { out in
                EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, md, nil)
            }
        }
        precondition(ok == 1 && Int(length) == expected, "digest failed in OpenSSL")
        return digest
    }

    /// `count` bytes from OpenSSL's CSPRNG (RAND_bytes).
    static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        precondition(ok == 1, "RAND_bytes failed")
        return bytes
    }

    /// Lowercase hex of `bytes`.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    /// Equal-length secrets compared without an early exit (CRYPTO_memcmp).
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { p in b.withUnsafeBytes { q in CRYPTO_memcmp(p.baseAddress, q.baseAddress, a.count) == 0 } }
    }
}
