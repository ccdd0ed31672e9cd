package import Foundation

/// The one place the emulator reads the time: token and device-code expiry, polling
/// intervals, page-token lifetime, the name-index delay, the rate-limit buckets and every
/// file time. `system` follows real time (what `ivy-emulator` serves with); `manual` stands
/// still until a test moves it, so what depends on time happens exactly when the test says.
/// Either moves on by `advance`, which is how tests expire codes and tokens without waiting.
package struct EmulatorClock: Sendable {
    private enum Source: Sendable {
        case system
        case manual(Date)
    }

    private var source: Source
    private var offset: TimeInterval = 0

    /// Real time, plus whatever `advance` has added.
    package static var system: EmulatorClock { EmulatorClock(source: .system) }

    /// Time that stands at `start` and moves only by `advance`.
    package static func manual(at start: Date = EmulatorClock.epoch) -> EmulatorClock {
        EmulatorClock(source: .manual(start))
    }

    /// Where a manual clock starts unless told otherwise: 2026-01-01T00:00:00Z. A fixed
    /// instant, so a seeded run gives the same times as well as the same ids.
    package static let epoch = Date(timeIntervalSince1970: 1_767_225_600)

    /// True for a clock that moves only by `advance`.
    package var isManual: Bool {
        if case .manual = source { return true }
        return false
    }

    /// The current time in whole milliseconds, the precision of Drive's RFC 3339 times.
    package func now() -> Date {
        let base: TimeInterval =
            switch source {
            case .system: Date().timeIntervalSince1970
            case .manual(let start): start.timeIntervalSince1970
            }
        return Date(timeIntervalSince1970: ((base + offset) * 1000).rounded(.down) / 1000)
    }

    package mutating func advance(by seconds: TimeInterval) { offset += seconds }

    /// The same clock stopped where it reads now: from here on it moves only by `advance`.
    package func frozen() -> EmulatorClock { .manual(at: now()) }
}
