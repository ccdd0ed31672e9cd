import Foundation
package import IvyCore
import IvyGoogle
package import IvyStore
package import Logging
import Synchronization

/// A request to end a watch: the first asks it to finish what is in flight and stop, a
/// second to stop at once (the running operations are cancelled; what finished is recorded).
package final class StopRequest: Sendable {
    private let state = Mutex<(count: Int, force: (@Sendable () -> Void)?)>((0, nil))
    /// The request that cancels `cancellable`'s body: the second, unless there is nothing in
    /// flight worth finishing (`ivy login` waiting for approval: the first).
    private let forcedAt: Int

    package init(forcedAt: Int = 2) {
        self.forcedAt = forcedAt
    }

    package func request() {
        let force = state.withLock { state in
            state.count += 1
            return state.count >= forcedAt ? state.force : nil
        }
        force?()
    }

    package var requested: Bool { state.withLock { $0.count > 0 } }

    /// Runs `body` as a child task that a second request cancels. A child, not an unstructured
    /// `Task`: only a child inherits the caller's task executor preference (SE-0417), so the
    /// sync's synchronous library calls stay on ivy's own threads, never the cooperative pool.
    package func cancellable<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T {
        let (forced, force) = AsyncStream<Void>.makeStream()
        let already = state.withLock { state in
            state.force = { force.finish() }
            return state.count >= forcedAt
        }
        if already { force.finish() }
        defer { state.withLock { $0.force = nil } }
        return await withTaskGroup(of: Arm<T>.self) { group in
            group.addTask { .finished(await body()) }
            // Ends when forced, or when cancelled because the body finished first.
            group.addTask {
                for await _ in forced {}
                return .forced
            }
            while let arm = await group.next() {
                group.cancelAll()
                if case .finished(let value) = arm { return value }
            }
            preconditionFailure("the body's child task always ends with a value")
        }
    }

    private enum Arm<T: Sendable>: Sendable {
        case finished(T)
        case forced
    }
}

/// `ivy sync --watch`: syncs when it starts, soon after a change here, and whenever Drive's
/// change feed (read once per interval, one request when idle) shows one; backs off while
/// syncs fail; waits while signed out or disabled and goes on by itself afterwards. It
/// holds the sync lock only while a sync runs, so `ivy sync` by hand and cron's `--auto`
/// run between its syncs.
package final class Watch: Sendable {
    /// Why the watch waits: nothing to do until something outside ivy changes.
    package enum Pause: Sendable, Equatable {
        case signedOut(String)
        case syncDisabled

        /// The same wait, whatever words its reason came in (Google's refusal first, then the
        /// token file's record of it): told once.
        func isSameWait(as other: Pause?) -> Bool {
            switch (self, other) {
            case (.signedOut, .signedOut?), (.syncDisabled, .syncDisabled?): true
            default: false
            }
        }

        package var description: String {
            switch self {
            case .signedOut(let reason): "signed out (\(reason)); waiting for `ivy login`"
            case .syncDisabled: "sync_enabled is false; waiting for `ivy config set sync_enabled true`"
            }
        }

        /// The wait's end, in words: what a person reads when the watch goes on.
        package var endDescription: String {
            switch self {
            case .signedOut: "signed in again: syncing goes on"
            case .syncDisabled: "sync_enabled is true again: syncing goes on"
            }
        }
    }

    /// What the watch remembers of its last sync, for the next.
    package struct Memory: Sendable {
        /// No sync has finished yet (`--full` is for the first only).
        package var first = true
        /// Drive files skipped and logged already.
        package var skips: Set<SyncReport.Problem> = []
        /// The standing doubt about the mirror a full listing confirmed (`SyncReport.checkedDoubt`).
        package var doubt: String?
        /// The safety valve's hold, said already.
        package var hold: String?

        package init() {}
    }

    /// What the watch tells whoever shows it.
    package enum Event: Sendable {
        /// `retryIn` when items failed: the next poll backs off (local changes still sync).
        /// `nextPoll`: how long until the next look at Drive (longer while the watch idles).
        case synced(SyncReport, WatchSchedule.Trigger, changed: Bool, retryIn: Duration?, nextPoll: Duration)
        case failed(String, WatchSchedule.Trigger, retryIn: Duration)
        case paused(Pause)
        /// The wait `Pause` said is over: a sync went through (told just before its `synced`).
        case resumed(after: Pause)
        /// Another sync holds the lock; the watch tries again in a second.
        case busy(pid: Int32?)
    }

    /// The clock the schedule runs on, and how the watch waits between looks.
    package struct Timing: Sendable {
        package var now: @Sendable () -> Duration
        package var sleep: @Sendable (Duration) async -> Void
        /// How often the library is looked at for local changes (and the stop request).
        package var tick: Duration

        package init(
            now: @escaping @Sendable () -> Duration, sleep: @escaping @Sendable (Duration) async -> Void,
            tick: Duration = .milliseconds(250)
        ) {
            self.now = now
            self.sleep = sleep
            self.tick = tick
        }

        /// The process's monotonic clock and real sleeps.
        package static func system() -> Timing {
            let start = ContinuousClock.now
            return Timing(now: { ContinuousClock.now - start }, sleep: { try? await Task.sleep(for: $0) })
        }
    }

    let interval: Duration
    /// The longest an idle watch's interval grows to (`watch_max_interval`).
    let maxInterval: Duration?
    let timing: Timing
    let logger: Logger
    /// The library's pending changes, as `LocalChangeProbe.pending(since:)` reads them.
    let pending: @Sendable (LocalChangeProbe.Pending?) async throws -> LocalChangeProbe.Pending
    /// One sync through the door and the watch's layers, knowing what the last one found
    /// (`request(_:full:steps:stop:)`).
    let attempt: @Sendable (Memory, StopRequest) async throws -> SyncOutcome
    let events: @Sendable (Event) -> Void
    private let probeFailed = Mutex(false)

    package init(
        interval: Duration, maxInterval: Duration? = nil, timing: Timing, logger: Logger,
        pending: @escaping @Sendable (LocalChangeProbe.Pending?) async throws -> LocalChangeProbe.Pending,
        attempt: @escaping @Sendable (Memory, StopRequest) async throws -> SyncOutcome,
        events: @escaping @Sendable (Event) -> Void
    ) {
        self.interval = interval
        self.maxInterval = maxInterval
        self.timing = timing
        self.logger = logger
        self.pending = pending
        self.attempt = attempt
        self.events = events
    }

    /// Watches until `stop` is requested (a sync in flight then finishes what it started),
    /// or until it must not go on: then the reason.
    package func run(until stop: StopRequest) async -> String? {
        var schedule = WatchSchedule(interval: interval, maxInterval: maxInterval)
        var seen = await look(since: nil)
        /// What was left queued after the last clean sync: it is synced again once.
        var leftover: LocalChangeProbe.Pending?
        var memory = Memory()
        var pause: Pause?
        var busy = false
        /// Waits for something outside ivy; said once, until a sync goes through: a busy lock
        /// (an `ivy login` under way) or a failure in between is no end of the wait.
        func wait(_ why: Pause, from now: Duration) {
            schedule.postpone(at: now, by: interval)
            if !why.isSameWait(as: pause) {
                logger.warning("watch waiting", metadata: ["reason": "\(why.description)"])
                events(.paused(why))
            }
            pause = why
        }
        logger.info("watch started", metadata: ["interval_s": "\(interval.components.seconds)"])
        defer { logger.info("watch stopped") }
        while !stop.requested {
            let now = timing.now()
            if let latest = await look(since: seen), latest != seen {
                seen = latest
                if !latest.isEmpty { schedule.changed(at: now) }
            }
            guard let trigger = schedule.due(at: now) else {
                await timing.sleep(timing.tick)
                continue
            }
            let known = memory
            let result = await stop.cancellable { [attempt] () async -> Result<SyncOutcome, any Error> in
                do { return .success(try await attempt(known, stop)) } catch { return .failure(error) }
            }
            let after = timing.now()
            let outcome: SyncOutcome
            switch result {
            case .success(let ended):
                outcome = ended
            case .failure(let error as NewerIvy):
                let reason = error.localizedDescription
                logger.error("watch ending", metadata: ["reason": "\(reason)"])
                return reason
            case .failure(let error):
                // Endpoints the sign-in cannot use wait like a sign-out: `ivy login` in another
                // terminal is one fix.
                if case .endpointMismatch = error as? GoogleError {
                    busy = false
                    wait(.signedOut(error.localizedDescription), from: after)
                    continue
                }
                logger.error("watch sync could not start", metadata: ["error": "\(error.localizedDescription)"])
                outcome = .failed(error, cronHears: false)
            }
            if case .busy = outcome {} else { busy = false }
            switch outcome {
            case .failed(let error, _) where error is CancellationError && stop.requested:
                break
            case .finished(let report, _):
                if let was = pause {
                    pause = nil
                    logger.info("watch resumed", metadata: ["after": "\(was.description)"])
                    events(.resumed(after: was))
                }
                let changed = Self.changed(report, since: memory)
                memory = Memory()
                memory.first = false
                memory.skips = Set(report.skipped)
                memory.doubt = report.checkedDoubt
                memory.hold = report.deletionsHeld
                var retry: Duration?
                if report.failures.isEmpty {
                    schedule.synced(at: after, active: changed || trigger == .localChange)
                } else {
                    retry = schedule.itemsFailed(at: after)
                }
                if changed {
                    logger.info(
                        "watch sync", metadata: ["trigger": "\(trigger.rawValue)", "summary": "\(report.summary)"])
                }
                if let retry {
                    logger.warning(
                        "watch backing off",
                        metadata: ["retry_in_s": "\(retry.components.seconds)", "failed": "\(report.failures.count)"])
                }
                events(
                    .synced(
                        report, trigger, changed: changed, retryIn: retry, nextPoll: retry ?? schedule.currentInterval))
                // The sync's own writes are not changes to push; a change queued while it
                // ran is, once. After failed items (still queued, tried) only a change no sync
                // tried yet counts: it goes out a second later, not after the back-off.
                seen = await look(since: nil)
                if let seen, !seen.isEmpty, report.failures.isEmpty || seen.fresh > 0, report.leftForNextSync == 0,
                    seen != leftover
                {
                    leftover = seen
                    schedule.changed(at: after)
                }
            case .failed(let error, _):
                let wait = schedule.failed(at: after)
                // The error itself is logged once, by the door that recorded it.
                logger.warning("watch backing off", metadata: ["retry_in_s": "\(wait.components.seconds)"])
                events(.failed(error.localizedDescription, trigger, retryIn: wait))
            case .skipped(.syncDisabled), .skipped(.signedOut), .notSignedIn, .signedOut:
                wait(Self.pause(outcome), from: after)
            case .busy, .skipped:
                schedule.postpone(at: after, by: .seconds(1))
                let pid: Int32? = if case .busy(let pid) = outcome { pid } else { nil }
                if !busy { events(.busy(pid: pid)) }
                busy = true
            }
        }
        return nil
    }

    /// The library's pending changes; a probe that fails (logged once) leaves the watch to
    /// its polls, which push every change anyway.
    private func look(since last: LocalChangeProbe.Pending?) async -> LocalChangeProbe.Pending? {
        do {
            return try await pending(last)
        } catch {
            if probeFailed.withLock({ reported in
                defer { reported = true }
                return !reported
            }) {
                logger.warning(
                    "watching the library for changes failed; they sync at the next poll",
                    metadata: ["error": "\(error.localizedDescription)"])
            }
            return last
        }
    }

    /// The wait a sync that did not run stands for.
    private static func pause(_ outcome: SyncOutcome) -> Pause {
        switch outcome {
        case .skipped(.syncDisabled): .syncDisabled
        case .notSignedIn(.stopped(let reason, _)): .signedOut("the sign-in stopped working: \(reason)")
        case .signedOut(let error): .signedOut(error.localizedDescription)
        default: .signedOut("not signed in")
        }
    }

    /// The request for one of a watch's syncs, knowing what the last one found: `full` is
    /// `--full`, for the first sync only; `steps` is told of each operation.
    package static func request(
        _ memory: Memory, full: Bool, steps: (@Sendable (SyncStep) -> Void)?, stop: StopRequest
    ) -> SyncRequest {
        SyncRequest(
            full: memory.first && full, knownSkips: memory.skips, knownDoubt: memory.doubt,
            stopping: { stop.requested }, steps: steps)
    }

    /// The layers a watch's syncs go through: its health pings, then its gate.
    package static func layers() -> [any SyncMiddleware] { [WatchHealthPings(), WatchGate()] }

    /// Whether a sync did anything worth a line: moved, merged or deleted something, failed,
    /// was stopped early, skipped a Drive file, or held deletions back, that was not said before.
    static func changed(_ report: SyncReport, since memory: Memory) -> Bool {
        let counts = [report.uploaded, report.downloaded, report.merged, report.deletedRemote, report.deletedLocal]
        return counts.contains { $0.total > 0 } || report.staleDuplicatesDeleted > 0 || !report.failures.isEmpty
            || report.leftForNextSync > 0 || !Set(report.skipped).isSubset(of: memory.skips)
            || (report.deletionsHeld != nil && report.deletionsHeld != memory.hold)
    }
}
