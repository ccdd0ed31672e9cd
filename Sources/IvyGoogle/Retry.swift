import Foundation

/// How often and how long to retry: exponential backoff with full jitter, honouring
/// Retry-After, bounded in attempts and in total time.
package struct RetryPolicy: Sendable {
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

    /// The wait before retry number `attempt` (1-based).
    func delay(attempt: Int, retryAfter: Duration?, random: Double) -> Duration {
        if let retryAfter { return retryAfter }
        let ceiling = min(maxDelay, baseDelay * (1 << min(attempt - 1, 20)))
        return ceiling * random
    }

    /// The wait before retry number `attempt` after the whole Cloud project's quota ran out
    /// (`defaultPerMinutePerProject`): everyone's budget, refilled by the minute, so four
    /// times the usual backoff (up to twice its ceiling), jittered over its upper half so
    /// that the many installs sharing the project do not come back together.
    func sharedQuotaDelay(attempt: Int, retryAfter: Duration?, random: Double) -> Duration {
        if let retryAfter { return retryAfter }
        let ceiling = min(maxDelay * 2, baseDelay * 4 * (1 << min(attempt - 1, 20)))
        return ceiling * (0.5 + random / 2)
    }
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
    /// Whether the policy's total time bounds these retries.
    let timed: Bool
    private let started = ContinuousClock.now
    private(set) var failures = 0
    private var waited = Duration.zero

    /// A request's budget: `maxAttempts` tries in all, within `maxTotal`.
    init(request policy: RetryPolicy, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.policy = policy
        self.sleep = sleep
        retries = policy.maxAttempts - 1
        timed = true
    }

    /// A resumable upload's budget: each failure is followed by a status query on the same
    /// session, so `maxAttempts` retries across its sessions, not bounded in time (the
    /// requests that start a session have budgets of their own).
    init(upload policy: RetryPolicy, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.policy = policy
        self.sleep = sleep
        retries = policy.maxAttempts
        timed = false
    }

    /// Waits before the next try, as long as Retry-After asks or a jittered backoff, or
    /// throws `failure` when no retry is left. Time spent counts by the clock and by the
    /// waits asked for, whichever is more: an injected sleep that returns at once (tests)
    /// still spends the budget, and so does a slow request.
    ///
    /// A per-project rate limit waits longer (`sharedQuotaDelay`) and, once its retries are
    /// spent, ends as `GoogleError.sharedQuotaExhausted`: the whole sync stops, and no item
    /// counts it as one of its attempts (every change stays queued for the next sync).
    mutating func backOff(after failure: any Error, retryAfter: Duration?) async throws {
        failures += 1
        let shared = (failure as? DriveError)?.sharedQuota == true
        let random = Double.random(in: 0...1)
        let wait =
            shared
            ? policy.sharedQuotaDelay(attempt: failures, retryAfter: retryAfter, random: random)
            : policy.delay(attempt: failures, retryAfter: retryAfter, random: random)
        let spent = max(ContinuousClock.now - started, waited)
        guard failures <= retries, !timed || spent + wait < policy.maxTotal else {
            throw shared ? GoogleError.sharedQuotaExhausted : failure
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
        _ attempt: () async throws -> RetryOutcome<Value>
    ) async throws -> Value {
        var budget = RetryBudget(request: self, sleep: sleep)
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
    /// The wait a `Retry-After` header asks for, in whole seconds as Google sends it.
    var retryAfter: Duration? {
        headers["retry-after"].flatMap { Int($0) }.map { .seconds(max(0, $0)) }
    }
}
