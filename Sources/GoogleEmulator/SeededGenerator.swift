/// The emulator's one source of randomness: file ids, device and user codes, tokens and
/// fault probabilities all draw from it, so a run with the same seed makes the same choices
/// and a failing test reproduces. SplitMix64 (Steele, Lea and Flood, "Fast splittable
/// pseudorandom number generators", 2014): tiny, fast, and not for secrets, which the
/// emulator has none of.
package struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// FNV-1a over UTF-8: a hash that is the same in every process, unlike `hashValue`, which
/// Swift seeds afresh per process. For values the emulator derives from text (default
/// permission ids, page-token fingerprints), so they too repeat from run to run.
func stableHash(_ text: String) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in text.utf8 {
        hash ^= UInt64(byte)
        hash &*= 0x0000_0100_0000_01B3
    }
    return hash
}
