import Foundation

/// Threads of ivy's own for async code that may block the thread it runs on: a synchronous
/// database call that waits in SQLite's busy handler (up to its 10 s timeout) while another
/// process writes, or hashing a large audio file.
///
/// Swift's cooperative pool has one thread per core, two on a small machine; two blocked
/// calls there stop every task in the process, including the network answers the blocked
/// work may be waiting for. Code that runs with this executor as its task executor preference
/// (`run`), and every child task it makes, runs here instead: a blocked thread holds up only
/// the job on it, because a job that finds every thread busy gets a new one. Threads idle for
/// a while end, so a burst leaves none behind.
package final class BlockingExecutor: TaskExecutor, @unchecked Sendable {
    /// The one pool every ivy module shares.
    package static let shared = BlockingExecutor()

    /// How long a thread with nothing to do waits for a job before it ends.
    private static let idleLifetime: TimeInterval = 10

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var idle = 0

    private init() {}

    /// Runs `operation`, and every child task it makes, on this pool's threads.
    package static func run<T, Failure: Error>(
        _ operation: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        try await withTaskExecutorPreference(shared, operation: operation)
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        defer { condition.unlock() }
        jobs.append(job)
        // Every waiting thread will take one job; a job beyond those gets a thread of its own.
        if jobs.count > idle {
            let thread = Thread { [self] in work() }
            thread.name = "ivy-blocking"
            thread.start()
        } else {
            condition.signal()
        }
    }

    private func work() {
        condition.lock()
        while true {
            if jobs.isEmpty {
                idle += 1
                let woken = condition.wait(until: Date(timeIntervalSinceNow: Self.idleLifetime))
                idle -= 1
                if !woken && jobs.isEmpty {
                    condition.unlock()
                    return
                }
                continue
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.lock()
        }
    }
}
