import Foundation
package import IvyCore

/// How often and how long to retry: exponential backoff with full jitter, honouring
/// Retry-After, bounded in attempts and in total time.
package struct RetryPolicy: Sendable {
    /// The longest ivy waits before one retry, however long an answer's `Retry-After` asks.
    /// Google's backoff guidance tops out at 32 or 64 s (Drive's "Resolve errors" page:
    /// `maximum_backoff` "is typically 32 or 64 seconds"), and the retry settings of Google's
    /// client libraries commonly cap a retry's delay at 60 s (google-gax's
    /// `maxRetryDelayMillis: 60000`, Pub/Sub's documented defaults). Nothing bounds
    /// `Retry-After` itself, and rclone honours it however long (lib/pacer's `Calculate`
    /// returns it as is): a hostile or broken answer could hold a sync, its lock and every
    /// cron run after it. An answer that asks for more than this is not waited out: the sync
    /// stops at once with every change kept (`GoogleError.retryLater`).
    package static let longestWait = Duration.seconds(60)

    package var maxAttempts: Int
    package var baseDelay: Duration
    package var maxDelay: Duration
    package var maxTotal: Duration

    package init(
        maxAttempts: Int = 6, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(32),
        maxTotal: Duration = .seconds(180)
    ) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxTotal = maxTotal
    }

    /// The wait before retry number `attempt` (1-based), never more than `longestWait`.
    func delay(attempt: Int, retryAfter: Duration?, random: Double) -> Duration {
        if let retryAfter { return Self.bounded(retryAfter) }
        let ceiling = min(maxDelay, baseDelay * (1 << min(max(attempt, 1) - 1, 20)))
        return Self.bounded(ceiling * Self.unit(random))
    }

    /// The wait before retry number `attempt` after the whole Cloud project's quota ran out
    /// (`defaultPerMinutePerProject`): everyone's budget, refilled by the minute, so four
    /// times the usual backoff (up to twice its ceiling), jittered over its upper half so
    /// that the many installs sharing the project do not come back together.
    func sharedQuotaDelay(attempt: Int, retryAfter: Duration?, random: Double) -> Duration {
        if let retryAfter { return Self.bounded(retryAfter) }
        let ceiling = min(maxDelay * 2, baseDelay * 4 * (1 << min(max(attempt, 1) - 1, 20)))
        return Self.bounded(ceiling * (0.5 + Self.unit(random) / 2))
    }

    /// `wait` within 0 and `longestWait`.
    static func bounded(_ wait: Duration) -> Duration {
        min(max(wait, .zero), longestWait)
    }

    /// A jitter factor within 0 and 1 (NaN as 0).
    static func unit(_ random: Double) -> Double {
        random.isNaN ? 0 : min(max(random, 0), 1)
    }
}

/// When the sync under way must end (setting `sync_timeout`), for every retry made on its
/// behalf: the engine sets it around the whole sync, and a retry whose wait would still be
/// going on then is not waited, it ends the sync (`GoogleError.retryLater`). Unstructured
/// tasks (an id batch, a token refresh shared by several requests) inherit it too.
package enum SyncDeadline {
    @TaskLocal package static var current: ContinuousClock.Instant?
}

/// What one try of a retried request came to.
enum RetryOutcome<Value> {
    case done(Value)
    /// A failure worth another try, after at least `retryAfter` when the answer asked for it.
    case retry(any Error, retryAfter: Duration?)
}

/// The retries left to one request, or to one resumable upload: every retry of the Google
/// clients waits here (`backOff`), so each honours Retry-After, backs off with full jitter
/// and sleeps through the injected sleep (virtual in tests).
struct RetryBudget {
    let policy: RetryPolicy
    let sleep: @Sendable (Duration) async throws -> Void
    /// Retries allowed before the last failure is thrown.
    let retries: Int
    /// Whether the time the tries themselves take counts against `maxTotal`, or only the waits.
    let clocked: Bool
    /// Whether the sign-in's OAuth client is the one built into this release (whose quota
    /// every user of it shares), for what a spent per-project quota says to do.
    let builtInClient: Bool
    private let started = ContinuousClock.now
    private(set) var failures = 0
    private var waited = Duration.zero

    /// A request's budget: `maxAttempts` tries in all, within `maxTotal` by the clock.
    init(
        request policy: RetryPolicy, sleep: @escaping @Sendable (Duration) async throws -> Void,
        builtInClient: Bool = false
    ) {
        self.policy = policy
        self.sleep = sleep
        retries = policy.maxAttempts - 1
        clocked = true
        self.builtInClient = builtInClient
    }

    /// A resumable upload's budget: each failure is followed by a status query on the same
    /// session, so `maxAttempts` retries across its sessions, their waits within `maxTotal`.
    /// Only the waits count: the bytes of a large MP3 on a slow line may take longer than
    /// that to send, and that is progress, not retrying (the requests that start a session
    /// have budgets of their own).
    init(
        upload policy: RetryPolicy, sleep: @escaping @Sendable (Duration) async throws -> Void,
        builtInClient: Bool = false
    ) {
        self.policy = policy
        self.sleep = sleep
        retries = policy.maxAttempts
        clocked = false
        self.builtInClient = builtInClient
    }

    /// Waits before the next try, as long as Retry-After asks or a jittered backoff, or
    /// throws `failure` when no retry is left. Time spent counts by the clock and by the
    /// waits asked for, whichever is more: an injected sleep that returns at once (tests)
    /// still spends the budget, and so does a slow request.
    ///
    /// A wait is never more than `RetryPolicy.longestWait`: an answer that asks for longer,
    /// and a wait that would outlast the sync's deadline (`SyncDeadline`), end the whole sync
    /// at once as `GoogleError.retryLater` instead of a sleep with the sync lock held. Like a
    /// per-project rate limit whose retries are spent (`GoogleError.sharedQuotaExhausted`;
    /// it waits longer first, `sharedQuotaDelay`), no item counts that as one of its
    /// attempts: every change stays queued for the next sync.
    mutating func backOff(after failure: any Error, retryAfter: Duration?) async throws {
        failures += 1
        let shared = (failure as? DriveError)?.sharedQuota == true
        let exhausted = GoogleError.sharedQuotaExhausted(builtInClient: builtInClient)
        if let retryAfter, retryAfter > RetryPolicy.longestWait {
            throw shared ? exhausted : GoogleError.retryLater(.askedTooLong)
        }
        let random = Double.random(in: 0...1)
        let wait =
            shared
            ? policy.sharedQuotaDelay(attempt: failures, retryAfter: retryAfter, random: random)
            : policy.delay(attempt: failures, retryAfter: retryAfter, random: random)
        let spent = clocked ? max(ContinuousClock.now - started, waited) : waited
        guard failures <= retries, spent + wait < policy.maxTotal else {
            throw shared ? exhausted : failure
        }
        if let deadline = SyncDeadline.current, ContinuousClock.now + wait >= deadline {
            throw GoogleError.retryLater(.pastDeadline)
        }
        try await sleep(wait)
        waited += wait
    }
}

extension RetryPolicy {
    /// Runs `attempt` until it is done, throws, or its failures use up a request's budget;
    /// each retry goes through `RetryBudget.backOff`. A cancelled task sends nothing more.
    /// Runs on the caller's actor, so an actor's tries may use its state.
    func run<Value>(
        isolation: isolated (any Actor)? = #isolation, sleep: @escaping @Sendable (Duration) async throws -> Void,
        builtInClient: Bool = false, _ attempt: () async throws -> RetryOutcome<Value>
    ) async throws -> Value {
        var budget = RetryBudget(request: self, sleep: sleep, builtInClient: builtInClient)
        while true {
            try Task.checkCancellation()
            switch try await attempt() {
            case .done(let value): return value
            case .retry(let failure, let retryAfter): try await budget.backOff(after: failure, retryAfter: retryAfter)
            }
        }
    }
}

extension HTTPResponse {
    /// The wait this answer's `Retry-After` asks for (`RetryAfter.wait`), an HTTP-date read
    /// against the answer's own `Date` (Google's clock, not this machine's) when it has one.
    var retryAfter: Duration? {
        RetryAfter.wait(
            headers["retry-after"],
            now: headers["date"].flatMap(HTTPDateHeader.milliseconds)
                ?? Milliseconds((Date().timeIntervalSince1970 * 1000).rounded()))
    }
}

/// What a `Retry-After` header asks (RFC 9110 §10.2.3): `delay-seconds` (a run of digits) or an
/// HTTP-date. Read without trapping on any text an answer may hold.
package enum RetryAfter {
    /// Digits past this many are read as this many nines: far past any wait ivy takes, and
    /// still a `Duration` (`.seconds` of 9223372036854775807 once overflowed `Task.sleep`).
    static let mostDigits = 12

    /// The wait `header` asks for, measured from `now` (ms since the epoch) when it is a date
    /// (0 for a date already past); nil when there is none, or for anything else (a negative
    /// or fractional number, `1e30`, text), which leaves the usual backoff in charge.
    package static func wait(_ header: String?, now: Milliseconds) -> Duration? {
        guard let text = header?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            let digits = text.drop { $0 == "0" }
            guard digits.count <= mostDigits, let seconds = Int64(digits.isEmpty ? "0" : String(digits)) else {
                return .seconds(Int64(String(repeating: "9", count: mostDigits)) ?? Int64.max)
            }
            return .seconds(seconds)
        }
        guard let date = HTTPDateHeader.milliseconds(text) else { return nil }
        let (ahead, overflow) = date.subtractingReportingOverflow(now)
        guard !overflow else { return nil }
        return .milliseconds(max(0, ahead))
    }
}
