import Foundation
package import IvyCore
import Synchronization

/// A wall clock the test sets by hand. A ticking clock also moves 1 ms on with every read,
/// so successive writes (on any device) get ever later `updated_at` values, and a write made
/// later in a test is the later write for last-write-wins.
package final class TestClock: Sendable {
    private let value: Mutex<Milliseconds>
    private let tick: Milliseconds

    package init(_ start: Milliseconds = 1_700_000_000_000, tickPerRead: Milliseconds = 0) {
        value = Mutex(start)
        tick = tickPerRead
    }

    /// Starts at the real time and moves 1 ms on with every read.
    package static func ticking() -> TestClock {
        TestClock(Milliseconds(Date().timeIntervalSince1970 * 1000), tickPerRead: 1)
    }

    package func set(_ now: Milliseconds) { value.withLock { $0 = now } }
    package func advance(seconds: Int64) { value.withLock { $0 += seconds * 1000 } }

    /// The time now, without a tick.
    package var now: Milliseconds { value.withLock { $0 } }

    package var clock: WallClock {
        WallClock { [self] in
            value.withLock { now in
                now += tick
                return now
            }
        }
    }
}

/// Records the sleeps asked for (in whole seconds); the test decides what happens during
/// each, and none is really waited.
package final class Sleeper: Sendable {
    private let recorded = Mutex<[Int]>([])
    private let onSleep: @Sendable (Int, Duration) async -> Void

    /// `onSleep` gets each sleep's number (from 1) and duration.
    package init(_ onSleep: @escaping @Sendable (Int, Duration) async -> Void = { _, _ in }) {
        self.onSleep = onSleep
    }

    package var durations: [Int] { recorded.withLock { $0 } }

    package var sleep: @Sendable (Duration) async throws -> Void {
        { [self] duration in
            let index = recorded.withLock { list in
                list.append(Int(duration.components.seconds))
                return list.count
            }
            await onSleep(index, duration)
        }
    }
}
