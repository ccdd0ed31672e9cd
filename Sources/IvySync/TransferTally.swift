import IvyCore
import Synchronization

/// One sync's operations and MP3 bytes, counted for the progress line as they finish and
/// move. An operation's bytes count as they move, against what it was expected to move
/// (more, when it moves more: a resumed upload sends a part again, a merge was expected to
/// move none); once it finishes, what it did move replaces what it was expected to move in
/// the total, and adds to what it moved so far (never takes from it: bytes done only grow).
/// The total thus ends as the bytes the report says were sent and received, plus those of
/// operations that failed after moving some.
///
/// `progress` is told inside the lock, so the line is drawn in the order things happened
/// and the last operation's line is the last one drawn.
final class TransferTally: Sendable {
    private struct State {
        var done = 0
        var bytesDone: Int64 = 0
        var bytesTotal: Int64 = 0
        /// By action index: bytes expected, and bytes moved so far; removed once it finishes.
        var running: [Int: (expected: Int64, moved: Int64)] = [:]
        /// The actions started, by index; one that finished is no longer `running`.
        var started: Set<Int> = []
    }

    private let total: Int
    private let state: Mutex<State>
    private let progress: @Sendable (SyncProgress) -> Void

    /// `expected` is asked once per action, in plan order.
    init(_ plan: SyncPlan, expected: (PlannedAction) -> Int64, progress: @escaping @Sendable (SyncProgress) -> Void) {
        var state = State()
        for (index, action) in plan.actions.enumerated() {
            let bytes = max(0, expected(action))
            state.running[index] = (bytes, 0)
            state.bytesTotal += bytes
        }
        total = plan.actions.count + plan.staleDuplicates.count
        self.state = Mutex(state)
        self.progress = progress
        progress(SyncProgress(phase: "syncing", total: total, bytesTotal: state.bytesTotal))
    }

    /// `bytes` more moved by action `index`.
    func moved(_ bytes: Int64, by index: Int) {
        state.withLock { state in
            guard bytes > 0, var entry = state.running[index] else { return }
            let counted = max(entry.expected, entry.moved)
            entry.moved += bytes
            state.running[index] = entry
            state.bytesDone += bytes
            state.bytesTotal += max(entry.expected, entry.moved) - counted
            tell(state)
        }
    }

    /// Action `index` started.
    func started(_ index: Int) {
        state.withLock { state in
            state.started.insert(index)
            tell(state)
        }
    }

    /// Action `index` finished (nil: one of the settling steps after them), having moved `bytes`.
    func finished(_ index: Int?, bytes: Int64) {
        state.withLock { state in
            state.done += 1
            if let index, let entry = state.running.removeValue(forKey: index) {
                // Bytes that moved stay done even when the operation then failed or was
                // skipped: a line going back from "30 MiB / 50 MiB" to "20 MiB / 40 MiB" reads
                // as lost work. Only the total takes the correction, to what it did move.
                let counted = max(bytes, entry.moved)
                state.bytesDone += counted - entry.moved
                state.bytesTotal += counted - max(entry.expected, entry.moved)
            }
            tell(state)
        }
    }

    private func tell(_ state: State) {
        let flying = state.started.compactMap { state.running[$0] }
        progress(
            SyncProgress(
                phase: "syncing", done: state.done, total: total, bytesDone: state.bytesDone,
                bytesTotal: state.bytesTotal, inFlight: flying.count,
                inFlightBytesLeft: flying.reduce(0) { $0 + max(0, $1.expected - $1.moved) }))
    }
}
