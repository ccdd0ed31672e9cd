package import Foundation
package import IvyCore
package import IvyGoogle
import IvySystem
package import Logging
import Synchronization

/// Health-check pings (setting `health_url`), in the convention of healthchecks.io: `URL/start`
/// when a sync begins, `URL` when it left everything on Drive, `URL/fail` when it did not.
/// Silent is not unaware: cron's `--auto` says nothing on a terminal, and a person who wants to
/// know hears from the health-check service instead. A ping never changes how a sync ends: it
/// is a POST whose body is the one-line summary, given up after `deadline` (10 s) and logged.
/// Only the answer's status is read: ivy hangs up once it has it, so a service that answers
/// with a body that never ends costs a sync next to nothing. Pings go to their own host's
/// connections, never queued behind Drive's transfers.
package final class HealthCheck: Sendable {
    package enum Signal: String, Sendable {
        case start
        case success
        case fail

        /// The path after the recorded URL: none for success.
        var suffix: String {
            switch self {
            case .start: "/start"
            case .success: ""
            case .fail: "/fail"
            }
        }
    }

    /// 10 KB: what healthchecks.io keeps of a ping's body.
    package static let bodyLimit = 10_000
    /// The most a sync waits for one ping, all in.
    package static let defaultDeadline = Duration.seconds(10)

    /// Where pings go: a URL, or the stored value ivy will not send to, and why.
    package enum Target: Sendable {
        case url(URL)
        case refused(String)
    }

    let target: Target
    /// `health_url` as stored: what each ping's outcome is recorded for.
    let setting: String
    let transport: any HTTPTransport
    let deadline: Duration
    let logger: Logger
    let clock: WallClock
    /// Keeps each ping's outcome for `ivy status` and `ivy doctor`.
    let record: @Sendable (HealthPingRecord) async -> Void
    /// What is left of `deadline` for this sync's pings: a slow service delays a sync by at
    /// most `deadline` in all, however many pings it is sent.
    private let left: Mutex<Duration>

    package init(
        target: Target, setting: String, transport: any HTTPTransport, deadline: Duration, logger: Logger,
        clock: WallClock, record: @escaping @Sendable (HealthPingRecord) async -> Void
    ) {
        self.target = target
        self.setting = setting
        self.transport = transport
        self.deadline = deadline
        self.logger = logger
        self.clock = clock
        self.record = record
        left = Mutex(deadline)
    }

    /// Sends `signal` with `text` as its body (cut to 10 KB); logs and records how it went, and
    /// changes nothing else. Returns when the answer came or the deadline passed, whichever is
    /// first: the request still in flight then is cancelled, and not waited for. A stored URL
    /// ivy refuses is not sent to; that is recorded as this ping's outcome.
    package func ping(_ signal: Signal, _ text: String) async {
        let url: URL
        switch target {
        case .url(let given): url = given
        case .refused(let why):
            logger.warning("health ping not sent", metadata: ["signal": "\(signal.rawValue)", "error": "\(why)"])
            return await keep(signal, problem: "was not sent: \(why)")
        }
        guard let target = Self.target(url, signal) else { return }
        var request = HTTPRequest(
            method: "POST", url: target, headers: ["Content-Type": "text/plain; charset=utf-8"],
            body: .data(Self.body(text)), responseLimit: 0)
        request.statusOnly = true
        let allowed = left.withLock { $0 }
        guard allowed > .zero else {
            logger.warning(
                "health ping not sent: the earlier ones took all the time allowed",
                metadata: ["signal": "\(signal.rawValue)", "after_s": "\(deadline.components.seconds)"])
            return
        }
        let transport = transport
        let started = ContinuousClock.now
        let sending = Task(executorPreference: BlockingExecutor.shared) { try await transport.send(request) }
        let result = await Self.first(of: sending, within: allowed)
        let spent = ContinuousClock.now - started
        left.withLock { $0 -= spent }
        switch result {
        case .answered(let response) where (200..<300).contains(response.status):
            logger.debug("health ping sent", metadata: ["signal": "\(signal.rawValue)"])
            await keep(signal, status: response.status)
        case .answered(let response):
            logger.warning(
                "health ping refused", metadata: ["signal": "\(signal.rawValue)", "status": "\(response.status)"])
            await keep(signal, status: response.status)
        case .failed(let error):
            let message = URLText.masked(error.localizedDescription)
            logger.warning("health ping failed", metadata: ["signal": "\(signal.rawValue)", "error": "\(message)"])
            await keep(signal, problem: "could not be sent: \(message)")
        case .timedOut:
            logger.warning(
                "health ping given up",
                metadata: ["signal": "\(signal.rawValue)", "after_s": "\(deadline.components.seconds)"])
            await keep(signal, problem: "got no answer within \(Self.seconds(deadline)) s")
        }
    }

    /// `deadline` in seconds, as a person reads it: `10`, or `0.3` for a test's.
    static func seconds(_ deadline: Duration) -> String {
        (deadline / .seconds(1)).formatted(.number.precision(.fractionLength(0...1)))
    }

    /// Records how this ping went: `problem` reads after "the start ping" (`HealthPingRecord.outcome`).
    private func keep(_ signal: Signal, status: Int? = nil, problem: String? = nil) async {
        await record(
            HealthPingRecord(at: clock.now(), signal: signal.rawValue, url: setting, status: status, problem: problem))
    }

    /// `url` with the signal's suffix on its path: a query (healthchecks.io's `?rid=…` or
    /// `?create=1`) stays after it.
    static func target(_ url: URL, _ signal: Signal) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        components.percentEncodedPath += signal.suffix
        return components.url
    }

    /// The body: `text` cut to 10 KB on a character boundary.
    static func body(_ text: String) -> Data {
        var cut = Substring(text)
        while cut.utf8.count > bodyLimit { cut = cut.dropLast(max(1, (cut.utf8.count - bodyLimit) / 4)) }
        return Data(cut.utf8)
    }

    private enum Result: Sendable {
        case answered(HTTPResponse)
        case failed(any Error)
        case timedOut
    }

    /// `sending`'s result, or `.timedOut` once `deadline` passed (then `sending` is cancelled).
    /// Not a task group: a group waits for every child, and a transport slow to notice a
    /// cancellation would hold the sync as long as it liked.
    private static func first(of sending: Task<HTTPResponse, any Error>, within deadline: Duration) async -> Result {
        let race = Race()
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result, Never>) in
            race.begin(continuation)
            Task {
                do { race.end(.answered(try await sending.value)) } catch { race.end(.failed(error)) }
            }
            race.timer(
                Task {
                    try? await Task.sleep(for: deadline)
                    race.end(.timedOut)
                })
        }
        sending.cancel()
        race.stopTimer()
        return result
    }

    /// The first of an answer and the deadline, told once.
    private final class Race: Sendable {
        private let state = Mutex<(waiting: CheckedContinuation<Result, Never>?, timer: Task<Void, Never>?)>((nil, nil))

        func begin(_ continuation: CheckedContinuation<Result, Never>) { state.withLock { $0.waiting = continuation } }

        func timer(_ task: Task<Void, Never>) { state.withLock { $0.timer = task } }

        func end(_ result: Result) {
            let waiting = state.withLock { state in
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume(returning: result)
        }

        func stopTimer() { state.withLock { $0.timer }?.cancel() }
    }
}
