import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging
import Synchronization

/// The live progress line of `ivy sync` on standard error, for a person at a terminal:
/// rewritten in place (carriage return, text, clear to the end of the line), at most ten
/// times a second, and cleared before the summary.
final class ProgressLine: Sendable {
    private let output: Output
    private let clock: WallClock
    private let width: @Sendable () -> Int
    private let meter = Mutex(ProgressMeter())
    /// Asked to stop: the line says so, and stays until the summary.
    private let stopped = Mutex(false)

    init(output: Output, clock: WallClock, width: @escaping @Sendable () -> Int) {
        self.output = output
        self.clock = clock
        self.width = width
    }

    func show(_ progress: SyncProgress) {
        // Drawn under the lock: two lines written at once would garble each other.
        meter.withLock { meter in
            guard !stopped.withLock({ $0 }), let reading = meter.update(progress, now: clock.now()) else { return }
            output.errorText("\r" + reading.text(width: width()) + "\u{1B}[K")
        }
    }

    /// The first Ctrl-C: what is in flight finishes, and a second stops at once.
    func stopping() {
        meter.withLock { _ in
            stopped.withLock { $0 = true }
            let text = "stopping: the operations in flight finish first; interrupt again to stop at once"
            output.errorText("\r" + TerminalText.truncated(text, toWidth: max(width() - 1, 20)) + "\u{1B}[K")
        }
    }

    func clear() {
        meter.withLock { _ in output.errorText("\r\u{1B}[K") }
    }
}
