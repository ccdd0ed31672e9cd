import Synchronization

/// Milliseconds since the Unix epoch: the unit of every timestamp ivy stores.
package typealias Milliseconds = Int64

/// A reading of ivy's clock: the time, and whether it was checked against Google's.
package struct ClockReading: Sendable, Equatable {
    package let now: Milliseconds
    /// True when the time is Google's (carried from an answer's `Date` by the boot clock), or
    /// a clock a test set; false for this device's own clock, which may have run ahead or
    /// been stepped back.
    package let sure: Bool

    package init(now: Milliseconds, sure: Bool) {
        self.now = now
        self.sure = sure
    }
}

/// The clock ivy records times by, injected so that tests control time. In a release it is
/// `GoogleTime`'s (DESIGN.md §12, one clock: Google's): the time Google's answers give,
/// carried between them by the boot clock, or this device's own clock, unsure, until an
/// answer has come in since the machine booted. A clock made from a closure is one the
/// caller vouches for (a test's): sure, learning nothing from answers.
package struct WallClock: Sendable {
    private let readBest: @Sendable () -> ClockReading
    private let readWall: @Sendable () -> Milliseconds
    /// The Google time this clock follows, when it follows one.
    package let google: GoogleTime?

    package init(_ read: @escaping @Sendable () -> Milliseconds) {
        readBest = { ClockReading(now: read(), sure: true) }
        readWall = read
        google = nil
    }

    /// Google's time as `google` knows it, else `wall` (unsure).
    package init(google: GoogleTime) {
        readBest = { google.reading() }
        readWall = { google.wall() }
        self.google = google
    }

    /// The time to record: Google's when known.
    package func now() -> Milliseconds { readBest().now }

    /// The time to record, and whether it was checked against Google's.
    package func reading() -> ClockReading { readBest() }

    /// This device's own clock, whatever Google says (for `ivy doctor`'s comparison).
    package func wall() -> Milliseconds { readWall() }
}

package enum Timestamp {
    /// The `updated_at` for a write at `now` to a row last stamped `previous`.
    /// It always moves forward, so a clock that stepped back still registers a change.
    package static func next(now: Milliseconds, previous: Milliseconds?) -> Milliseconds {
        guard let previous else { return now }
        return max(now, previous + 1)
    }
}

/// What is known of Google's clock against this machine's boot clock (`CLOCK_BOOTTIME`,
/// which counts from boot, suspend included, and never steps): the offset to add to a boot
/// clock reading to get Google's time, as the range every answer so far allows. An answer
/// dated `D` (whole seconds) that was asked at boot time `s` and came back at `r` was dated
/// between the two, so the offset lies in `[D - r, D + 999 - s]`; each answer narrows the
/// range, as NTP's filter does, and one that does not fit it (Google's clock or the machine's
/// boot changed) starts it afresh. Kept in the library between runs, and valid only for the
/// boot it was measured in.
package struct GoogleTimeRange: Sendable, Equatable {
    package var low: Milliseconds
    package var high: Milliseconds
    /// The boot the offsets belong to (`/proc/sys/kernel/random/boot_id`).
    package var boot: String
    /// The latest Google time an answer gave: in any later boot, the time is at least this.
    package var seen: Milliseconds

    package init(low: Milliseconds, high: Milliseconds, boot: String, seen: Milliseconds) {
        self.low = low
        self.high = high
        self.boot = boot
        self.seen = seen
    }

    /// The range an answer dated `date` allows, asked at boot time `sent` and answered at
    /// `received`.
    package init(date: Milliseconds, sent: Milliseconds, received: Milliseconds, boot: String) {
        self.init(low: date - received, high: date + 999 - min(sent, received), boot: boot, seen: date)
    }

    /// This range narrowed by `other`, or `other` alone when they do not overlap or belong to
    /// different boots.
    package func narrowed(by other: GoogleTimeRange) -> GoogleTimeRange {
        guard other.boot == boot else { return other }
        let low = max(self.low, other.low)
        let high = min(self.high, other.high)
        guard low <= high else { return other }
        return GoogleTimeRange(low: low, high: high, boot: boot, seen: max(seen, other.seen))
    }

    /// Google's time at boot time `boot`: the middle of the range.
    package func time(atBoot clock: Milliseconds) -> Milliseconds {
        clock + low + (high - low) / 2
    }

    /// As the library keeps it: `low high boot seen`.
    package var text: String { "\(low) \(high) \(boot) \(seen)" }

    package init?(text: String) {
        let parts = text.split(separator: " ")
        guard parts.count == 4, let low = Milliseconds(parts[0]), let high = Milliseconds(parts[1]), low <= high,
            let seen = Milliseconds(parts[3])
        else { return nil }
        self.init(low: low, high: high, boot: String(parts[2]), seen: seen)
    }
}

/// Google's clock for one process: what its answers said (`learn`), or what an earlier run
/// in the same boot learned (`adopt`, from the library). The readings of the boot clock, the
/// wall clock and the boot's id are injected.
package final class GoogleTime: Sendable {
    package let wall: @Sendable () -> Milliseconds
    /// The boot clock in ms (`CLOCK_BOOTTIME`).
    package let bootClock: @Sendable () -> Milliseconds
    package let boot: String
    private let known = Mutex<GoogleTimeRange?>(nil)
    /// The latest Google time known from another boot: the time now is at least that.
    private let floor = Mutex<Milliseconds>(0)
    /// The latest of Google's time read: within one run it never goes back, though an answer
    /// may narrow the range to an earlier middle.
    private let latest = Mutex<Milliseconds>(.min)

    package init(
        wall: @escaping @Sendable () -> Milliseconds, bootClock: @escaping @Sendable () -> Milliseconds, boot: String
    ) {
        self.wall = wall
        self.bootClock = bootClock
        self.boot = boot
    }

    /// Google's time when known in this boot (sure), else this device's clock but never
    /// before a Google time already passed (unsure).
    package func reading() -> ClockReading {
        guard let range = known.withLock({ $0 }), range.boot == boot else {
            return ClockReading(now: max(wall(), floor.withLock { $0 }), sure: false)
        }
        let now = range.time(atBoot: bootClock())
        return ClockReading(
            now: latest.withLock {
                $0 = max($0, now)
                return $0
            }, sure: true)
    }

    /// What is known now, to keep in the library for the next run.
    package var range: GoogleTimeRange? { known.withLock { $0 } }

    /// Takes a range an earlier run of this boot kept, narrowed by what this run learned.
    /// One from another boot says only that its time has passed.
    package func adopt(_ kept: GoogleTimeRange) {
        guard !boot.isEmpty, kept.boot == boot else {
            // The boot clock restarted: only a lower bound of the time now is left.
            floor.withLock { $0 = max($0, kept.seen) }
            return
        }
        known.withLock { current in current = current.map { kept.narrowed(by: $0) } ?? kept }
    }

    /// Learns from an answer dated `date` (an HTTP `Date`, whole seconds) that was asked at
    /// boot time `sent` and answered at `received`.
    package func learn(date: Milliseconds, sent: Milliseconds, received: Milliseconds) {
        let answer = GoogleTimeRange(date: date, sent: sent, received: received, boot: boot)
        known.withLock { current in current = current.map { $0.narrowed(by: answer) } ?? answer }
    }
}
