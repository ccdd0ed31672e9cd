import Foundation
import IvyCore
import IvySystem
import Synchronization

/// Spaces out request starts for the whole client. A rate-limit answer widens the gap for
/// every request (not just the one that got it); each success narrows it a little, so a
/// burst of parallel uploads settles near Drive's sustained write rate (as rclone does).
///
/// Requests already under way when the gap widened were sent at the old pace: their rate
/// limits say nothing new, so only a request started at the current pace widens it again.
///
/// A lock, not an actor: every request asks it, and an actor's hop onto a busy cooperative
/// pool, twice a request, is time the next request in a window waits to start.
package final class Pacer: Sendable {
    /// The gap right after the first rate limit: Drive sustains a few writes a second.
    static let floor: Duration = .milliseconds(250)
    static let ceiling: Duration = .seconds(4)
    static let widen = 1.3
    static let narrow = 0.997
    static let pause: Duration = .seconds(1)

    private struct State {
        var interval: Duration = .zero
        var nextStart: Duration?
        var generation = 0
    }

    private let sleep: @Sendable (Duration) async throws -> Void
    /// The time, on a clock that only goes forward; the process's own unless a test gives
    /// one that moves with `sleep`, so pacing does not depend on how busy the machine is.
    private let now: @Sendable () -> Duration
    private let state = Mutex(State())

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
        let (pace, wait) = state.withLock { state -> (Int, Duration) in
            guard state.interval > .zero else { return (state.generation, .zero) }
            let now = now()
            let start = max(now, state.nextStart ?? now)
            state.nextStart = start + state.interval
            return (state.generation, start - now)
        }
        if wait > .zero { try await sleep(wait) }
        return pace
    }

    package func rateLimited(pace: Int) {
        state.withLock { state in
            guard pace == state.generation else { return }
            state.generation += 1
            state.interval = min(Self.ceiling, max(Self.floor, state.interval * Self.widen))
            // Pause everyone briefly so the quota refills before the next request.
            let now = now()
            state.nextStart = max(state.nextStart ?? now, now + Self.pause)
        }
    }

    package func succeeded() {
        state.withLock { state in
            guard state.interval > .zero else { return }
            state.interval = state.interval * Self.narrow
            if state.interval < .milliseconds(20) { state.interval = .zero }
        }
    }
}

/// At most `limit` requests in flight for the whole client: a slot let go goes straight to
/// the longest waiter. A lock, not an actor, for the reason `Pacer` gives.
package final class RequestLimiter: Sendable {
    private struct State {
        var inFlight = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let limit: Int
    private let state = Mutex(State())

    package init(limit: Int) { self.limit = max(1, limit) }

    package func acquire() async {
        let acquired = state.withLock { state in
            guard state.inFlight < limit else { return false }
            state.inFlight += 1
            return true
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            // A slot let go since the look above is taken at once.
            let now = state.withLock { state in
                if state.inFlight < limit {
                    state.inFlight += 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    package func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.inFlight -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
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
