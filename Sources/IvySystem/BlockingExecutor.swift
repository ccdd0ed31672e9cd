package import Dispatch
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
    package static let shared = BlockingExecutor(name: "ivy-blocking")

    /// How long a thread with nothing to do waits for a job before it ends.
    private static let idleLifetime: TimeInterval = 10

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var idle = 0

    /// What its threads are called (in gdb, `top -H`, a watchdog's report).
    private let name: String

    /// A pool of its own, for a part that must answer whatever blocks the others: the
    /// emulator, whose answers every test and every blocked call in the process wait on.
    package init(name: String) {
        self.name = name
    }

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
            thread.name = name
            thread.start()
        } else {
            condition.signal()
        }
    }

    /// Runs a synchronous body that may block (open and migrate the library, hash or move a
    /// file) on this pool's threads, so that the awaiting task's thread is never held.
    package static func blocking<T>(_ body: () throws -> T) async throws -> T {
        try await run { () async throws -> T in try body() }
    }

    /// The dispatch queue a library that runs its own blocking work on dispatch queues (GRDB:
    /// every database access runs on a serial queue of its own) is given as their target, so
    /// that work counts as ivy's own (`onOwnThread`). Concurrent, because GRDB's readers and
    /// its writer must be able to run at once.
    package static let dispatchQueue: DispatchQueue = {
        let queue = DispatchQueue(label: "ivy-database", qos: .userInitiated, attributes: .concurrent)
        queue.setSpecific(key: dispatchQueueKey, value: ())
        return queue
    }()

    private static let dispatchQueueKey = DispatchSpecificKey<Void>()

    /// Whether the calling thread is one of a `BlockingExecutor`'s (any pool's), or runs work
    /// of `dispatchQueue`.
    package static var onOwnThread: Bool {
        pthread_getspecific(ownThreadKey) != nil || DispatchQueue.getSpecific(key: dispatchQueueKey) != nil
    }

    private static let ownThreadKey: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left")
        return key
    }()

    private func work() {
        pthread_setspecific(Self.ownThreadKey, UnsafeRawPointer(bitPattern: 1))
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
