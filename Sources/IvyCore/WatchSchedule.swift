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
/// - Idle, it spends less: every poll costs Google quota units (a change-feed page bills as
///   a list, 100 units), so after `calmPolls` intervals with no change here or on Drive each
///   quiet poll doubles the interval, up to `maxInterval`; the first change seen here or on
///   Drive brings it back to `interval`. A `maxInterval` no longer than `interval` keeps it
///   fixed.
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
    /// `watch_max_interval`'s default, in seconds: 5 minutes. An idle watch then looks 296
    /// times a day, 29,600 units at 100 a look, against 864,000 at a fixed 10 s: under the
    /// 50,000 a day that lets 8,000 always-on watches share one project's 400,000,000, and
    /// an edit made elsewhere after an idle hour still arrives within 5 minutes.
    package static let defaultMaxInterval = 300
    /// Quiet intervals, after the last change, before the interval starts to lengthen.
    package static let calmPolls = 5

    package let interval: Duration
    /// The longest the interval grows to while nothing changes.
    package let maxInterval: Duration
    /// The wait between polls now: `interval` while changes flow, longer while idle.
    package private(set) var currentInterval: Duration
    /// When a change was last seen, here or on Drive (or the watch started).
    private var lastActivity: Duration = .zero
    /// Failed syncs in a row.
    package private(set) var failures = 0
    private var nextPoll: Duration = .zero
    private var pollTrigger: Trigger = .start
    private var notBefore: Duration = .zero
    /// The first and the latest local change not synced yet.
    private var burst: (first: Duration, last: Duration)?
    /// Whether local changes wait for the retry too (the sync could not run at all).
    private var localWaits = false

    package init(interval: Duration, maxInterval: Duration? = nil) {
        self.interval = interval
        self.maxInterval = max(interval, maxInterval ?? interval)
        currentInterval = interval
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
        lastActivity = now
        currentInterval = interval
    }

    /// A sync finished without failures; `active` when it moved something either way (a
    /// change here or on Drive), which keeps (or brings back) the interval at `interval`.
    package mutating func synced(at now: Duration, active: Bool = true) {
        failures = 0
        localWaits = false
        burst = nil
        notBefore = now
        if active {
            lastActivity = now
            currentInterval = interval
        } else if now - lastActivity >= interval * Self.calmPolls {
            currentInterval = min(maxInterval, currentInterval * 2)
        }
        nextPoll = now + currentInterval
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
