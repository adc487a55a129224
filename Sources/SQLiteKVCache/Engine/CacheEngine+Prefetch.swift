import CPrefetch

/// Looking up a pipeline's keys ahead: at a million keys a lookup is two
/// cache misses in a row (the index's bucket, then the slot it points
/// to), a fifth of the loop's time under SET -P 16. Asked for together
/// before the requests run, the misses overlap.
extension CacheEngine {
    /// Computes the digests of `keys` and asks for the memory their
    /// lookups will read: every key's index bucket, then every slot found
    /// there. The digests are kept, by each key's address and length, for
    /// the reads and writes that follow (`withValue`, `put(key:…)`), until
    /// `endPrefetch()`.
    /// - Precondition: the bytes of `keys` stay where they are, unchanged,
    ///   until `endPrefetch()` (keys viewed in a request buffer while its
    ///   requests run).
    public func prefetch(_ keys: [UnsafeRawBufferPointer]) {
        digestsAhead.removeAll(keepingCapacity: true)
        nextAhead = 0
        for key in keys {
            guard let base = key.baseAddress else { continue }
            let digest = hasher.digest(key)
            digestsAhead.append((base, key.count, digest))
            table.prefetchBucket(digest)
        }
        for ahead in digestsAhead { table.prefetchSlot(ahead.digest) }
    }

    /// Forgets the digests `prefetch(_:)` kept (their keys' bytes may move).
    public func endPrefetch() {
        digestsAhead.removeAll(keepingCapacity: true)
        nextAhead = 0
    }

    /// The digest of `key`: the one computed ahead for the bytes at its
    /// address, if any (requests run in the order their keys were given,
    /// so the search starts after the last one used), else computed.
    @inline(__always)
    func digest(of key: UnsafeRawBufferPointer) -> KeyDigest {
        if nextAhead < digestsAhead.count, let base = key.baseAddress {
            for i in nextAhead..<digestsAhead.count where digestsAhead[i].base == base && digestsAhead[i].count == key.count {
                nextAhead = i + 1
                return digestsAhead[i].digest
            }
        }
        return hasher.digest(key)
    }
}
