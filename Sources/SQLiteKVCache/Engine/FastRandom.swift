/// A small, fast pseudo-random generator (xorshift64*, Vigna 2016) for
/// decisions that need no secrecy but run on every request: the LFU
/// counter's probabilistic increment. Not for anything an attacker must
/// not predict.
public struct FastRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// - Parameter seed: any value but 0 (0 is replaced: xorshift's state must not be 0).
    public init(seed: UInt64) {
        state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed
    }

    public mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }

    /// A uniform double in [0, 1), from the top 53 bits of one draw.
    public mutating func unitInterval() -> Double {
        Double(next() >> 11) * (1.0 / 9_007_199_254_740_992.0)
    }
}
