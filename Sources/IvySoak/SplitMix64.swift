import IvyCore

/// The soak draws its own integers from SplitMix64 (IvyCore) instead of using
/// `Int.random(in:using:)`, whose algorithm the standard library is free to change, so one
/// seed keeps meaning one run.
extension SplitMix64 {
    /// What a stream is for. Each round draws its device edits, the app's writes, the faults,
    /// the kill and the overlap (with the partner's edits) from separate streams: how many
    /// numbers one of them consumes (which depends on the library's state) never shifts what
    /// the others, or later rounds, draw.
    enum Purpose: UInt64 {
        case setup = 1
        case edits, app, faults, kill, overlap, restore
        /// The edit and the restore check made on a device whose clock just jumped.
        case clock
    }

    /// The stream for one purpose of one round, a pure function of the run's seed.
    static func stream(seed: UInt64, round: Int, _ purpose: Purpose) -> SplitMix64 {
        var mixer = SplitMix64(seed: seed)
        let base = mixer.next()
        var derived = SplitMix64(seed: base ^ (UInt64(round) &* 0xD1B5_4A32_D192_ED03) ^ (purpose.rawValue << 56))
        _ = derived.next()
        return derived
    }

    /// A number in `0..<bound` (Lemire's multiply-high; the tiny bias does not matter here).
    mutating func below(_ bound: Int) -> Int {
        guard bound > 1 else { return 0 }
        return Int(next().multipliedFullWidth(by: UInt64(bound)).high)
    }

    mutating func int(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.upperBound - range.lowerBound + 1)
    }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool {
        Double(next() >> 11) * 0x1p-53 < p
    }

    mutating func pick<T>(_ items: [T]) -> T? {
        items.isEmpty ? nil : items[below(items.count)]
    }

    /// An index chosen with the given weights (all zero: nil).
    mutating func weighted(_ weights: [Int]) -> Int? {
        let total = weights.reduce(0, +)
        guard total > 0 else { return nil }
        var roll = below(total)
        for (index, weight) in weights.enumerated() {
            if roll < weight { return index }
            roll -= weight
        }
        return nil
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count + 8)
        while result.count < count {
            var word = next()
            for _ in 0..<8 {
                result.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return Array(result.prefix(count))
    }
}
