import Foundation
import IvyCore
import IvySystem

/// Spaces out request starts for the whole client. A rate-limit answer widens the gap for
/// every request (not just the one that got it); each success narrows it a little, so a
/// burst of parallel uploads settles near Drive's sustained write rate (as rclone does).
///
/// Requests already under way when the gap widened were sent at the old pace: their rate
/// limits say nothing new, so only a request started at the current pace widens it again.
package actor Pacer {
    /// The gap right after the first rate limit: Drive sustains a few writes a second.
    static let floor: Duration = .milliseconds(250)
    static let ceiling: Duration = .seconds(4)
    static let widen = 1.3
    static let narrow = 0.997
    static let pause: Duration = .seconds(1)

    private let sleep: @Sendable (Duration) async throws -> Void
    /// The time, on a clock that only goes forward; the process's own unless a test gives
    /// one that moves with `sleep`, so pacing does not depend on how busy the machine is.
    private let now: @Sendable () -> Duration
    private(set) var interval: Duration = .zero
    private var nextStart: Duration?
    private var generation = 0

    package init(
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        now: @escaping @Sendable () -> Duration = Pacer.monotonic()
    ) {
        self.sleep = sleep
        self.now = now
    }

    /// The process's monotonic clock, as time since this call.
    package static func monotonic() -> @Sendable () -> Duration {
        let origin = ContinuousClock.now
        return { ContinuousClock.now - origin }
    }

    /// Waits for this request's turn; returns the pace it was sent at.
    @discardableResult
    package func wait() async throws -> Int {
        let pace = generation
        guard interval > .zero else { return pace }
        let now = now()
        let start = max(now, nextStart ?? now)
        nextStart = start + interval
        if start > now { try await sleep(start - now) }
        return pace
    }

    package func rateLimited(pace: Int) {
        guard pace == generation else { return }
        generation += 1
        interval = min(Self.ceiling, max(Self.floor, interval * Self.widen))
        // Pause everyone briefly so the quota refills before the next request.
        let now = now()
        nextStart = max(nextStart ?? now, now + Self.pause)
    }

    package func succeeded() {
        guard interval > .zero else { return }
        interval = interval * Self.narrow
        if interval < .milliseconds(20) { interval = .zero }
    }
}

/// At most `limit` requests in flight for the whole client.
package actor RequestLimiter {
    private let limit: Int
    private var inFlight = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    package init(limit: Int) { self.limit = max(1, limit) }

    package func acquire() async {
        if inFlight < limit {
            inFlight += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    package func release() {
        if waiting.isEmpty {
            inFlight -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// Ids from `files.generateIds`, fetched in batches and handed out one by one. A create
/// that carries its id can be retried safely: a second attempt answers 409.
package actor IDPool {
    private var ids: [String] = []
    private var fetching: Task<Void, any Error>?
    private let batch: Int
    private let fetch: @Sendable (Int) async throws -> [String]

    package init(batch: Int = 1000, fetch: @escaping @Sendable (Int) async throws -> [String]) {
        self.batch = batch
        self.fetch = fetch
    }

    package func next() async throws -> String {
        while true {
            if !ids.isEmpty { return ids.removeFirst() }
            let task = fetching ?? Task(executorPreference: BlockingExecutor.shared) { try await self.refill() }
            fetching = task
            do {
                try await task.valueCancellingWithCaller()
            } catch {
                fetching = nil
                throw error
            }
        }
    }

    /// Runs on the actor, so waiters find the ids in place as soon as the fetch is done.
    private func refill() async throws {
        let fresh = try await fetch(batch)
        ids += fresh
        fetching = nil
    }
}
