/// When `ivy sync --watch` syncs next, and why: a pure function of what it noticed and how
/// its syncs ended. Times are durations since the watch started, on a clock that only
/// goes forward.
///
/// - It syncs at once when it starts, then polls Drive's change feed every `interval`.
/// - A local change syncs `debounce` after the last change of a burst, but no later than
///   `longestDebounce` after the first, so steady typing still syncs.
/// - A failed sync backs off: `interval` × 2ⁿ after the n-th failure in a row, at most
///   `longestBackoff`; local changes wait for it too, so a failing Drive is never hammered.
/// - Another sync holding the lock, or a pause (signed out, sync disabled), postpones.
package struct WatchSchedule: Sendable {
    package enum Trigger: String, Sendable, Equatable {
        case start
        case localChange = "local change"
        case poll
        case retry
    }

    package static let debounce: Duration = .seconds(1)
    package static let longestDebounce: Duration = .seconds(5)
    package static let longestBackoff: Duration = .seconds(300)
    /// The shortest and the longest interval `--interval` accepts, in seconds.
    package static let shortestInterval = 2
    package static let longestInterval = 86_400

    package let interval: Duration
    /// Failed syncs in a row.
    package private(set) var failures = 0
    private var nextPoll: Duration = .zero
    private var pollTrigger: Trigger = .start
    private var notBefore: Duration = .zero
    /// The first and the latest local change not synced yet.
    private var burst: (first: Duration, last: Duration)?
    /// Whether local changes wait for the retry too (the sync could not run at all).
    private var localWaits = false

    package init(interval: Duration) {
        self.interval = interval
    }

    /// What is due at `now`, if anything.
    package func due(at now: Duration) -> Trigger? {
        guard now >= notBefore else { return nil }
        if !localWaits, let burst, now >= min(burst.last + Self.debounce, burst.first + Self.longestDebounce) {
            return .localChange
        }
        return now >= nextPoll ? pollTrigger : nil
    }

    /// A change here is waiting to reach Drive.
    package mutating func changed(at now: Duration) {
        burst = (burst?.first ?? now, now)
    }

    /// A sync finished without failures.
    package mutating func synced(at now: Duration) {
        failures = 0
        localWaits = false
        burst = nil
        notBefore = now
        nextPoll = now + interval
        pollTrigger = .poll
    }

    /// A sync could not run (Drive out of reach or failing): everything waits for the retry;
    /// returns how long that is.
    @discardableResult
    package mutating func failed(at now: Duration) -> Duration {
        let wait = backOff(at: now)
        notBefore = now + wait
        localWaits = true
        return wait
    }

    /// A sync ran but some items failed: the next poll backs off, as `failed`, but a change
    /// made here still syncs soon (one failing file must not hold back every other change).
    @discardableResult
    package mutating func itemsFailed(at now: Duration) -> Duration {
        let wait = backOff(at: now)
        notBefore = now
        localWaits = false
        return wait
    }

    private mutating func backOff(at now: Duration) -> Duration {
        failures += 1
        let wait = Self.backoff(interval: interval, failures: failures)
        burst = nil
        nextPoll = now + wait
        pollTrigger = .retry
        return wait
    }

    /// Nothing could run now (another sync holds the lock; signed out): try again after `wait`,
    /// keeping what is due.
    package mutating func postpone(at now: Duration, by wait: Duration) {
        notBefore = now + wait
    }

    /// The wait after the `failures`-th failed sync in a row.
    package static func backoff(interval: Duration, failures: Int) -> Duration {
        let doubled = interval * (1 << min(max(failures, 1), 20))
        return min(doubled, longestBackoff)
    }
}
