import Foundation
import Synchronization

/// Where ivy's blocking calls (a synchronous database call, hashing a file) ran, for a test
/// that proves none of them ran on Swift's cooperative pool.
///
/// A call checks itself (`check`); nothing is recorded unless the task it runs in, or one it
/// descends from, is being watched (`watching`), so the check costs a task-local read and
/// one thread-local read, and a watched command sees only its own calls, never those of
/// other tests in the same process.
package enum BlockingCalls {
    /// What a watched task's blocking calls that ran off ivy's own threads were.
    package final class Record: Sendable {
        private let calls = Mutex<[String]>([])

        package init() {}

        package var offOwnThreads: [String] { calls.withLock { $0 } }

        fileprivate func add(_ call: String) { calls.withLock { $0.append(call) } }
    }

    @TaskLocal private static var record: Record?

    /// Runs `body` with every blocking call it makes (in child and unstructured tasks too)
    /// that runs on a thread not ivy's own noted in `record`.
    package static func watching<T>(
        _ record: Record, _ body: () async throws -> T, isolation: isolated (any Actor)? = #isolation
    ) async rethrows -> T {
        try await $record.withValue(record, operation: body, isolation: isolation)
    }

    /// Called by a call that blocks its thread, before it blocks.
    package static func check(_ call: @autoclosure () -> String) {
        guard let record, !BlockingExecutor.onOwnThread else { return }
        record.add(call())
    }
}
