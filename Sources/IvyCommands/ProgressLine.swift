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
    /// Asked to stop: the line says so, and what it waits for, until the summary.
    private let stopped = Mutex(false)
    /// The last progress told, for what a stop waits for; and when the stopping line was last
    /// drawn, with how many operations, so bytes moving redraw it at most ten times a second.
    private let last = Mutex<SyncProgress?>(nil)
    private let stopDrawn = Mutex<(time: Milliseconds, inFlight: Int)?>(nil)

    init(output: Output, clock: WallClock, width: @escaping @Sendable () -> Int) {
        self.output = output
        self.clock = clock
        self.width = width
    }

    func show(_ progress: SyncProgress) {
        last.withLock { $0 = progress }
        // Drawn under the lock: two lines written at once would garble each other.
        meter.withLock { meter in
            if stopped.withLock({ $0 }) { return drawStopping(progress) }
            guard let reading = meter.update(progress, now: clock.now()) else { return }
            draw(reading.text(width: width()))
        }
    }

    /// The first Ctrl-C: what is in flight finishes, and a second stops at once; the line says
    /// how many operations it waits for, and their bytes, as they finish.
    func stopping() {
        meter.withLock { _ in
            stopped.withLock { $0 = true }
            drawStopping(last.withLock { $0 } ?? SyncProgress(phase: ""), always: true)
        }
    }

    private func drawStopping(_ progress: SyncProgress, always: Bool = false) {
        let now = clock.now()
        let due = stopDrawn.withLock { drawn in
            guard always || drawn.map({ $0.inFlight != progress.inFlight || now - $0.time >= 100 }) ?? true else {
                return false
            }
            drawn = (now, progress.inFlight)
            return true
        }
        if due { draw(progress.stoppingText) }
    }

    private func draw(_ text: String) {
        output.errorText("\r" + TerminalText.truncated(text, toWidth: max(width() - 1, 20)) + "\u{1B}[K")
    }

    func clear() {
        meter.withLock { _ in output.errorText("\r\u{1B}[K") }
    }
}
