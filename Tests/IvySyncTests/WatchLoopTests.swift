import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging
import Synchronization
import Testing

/// One scripted attempt: what the door answered, through the watch's layers.
private typealias Attempt = Result<SyncOutcome, any Error>

private struct ScriptedFailure: LocalizedError {
    let errorDescription: String?
}

extension Result where Success == SyncOutcome, Failure == any Error {
    fileprivate static func synced(_ report: SyncReport) -> Self { .success(.finished(report, cronNews: nil)) }
    fileprivate static func failed(_ message: String) -> Self {
        .success(.failed(ScriptedFailure(errorDescription: message), cronHears: true))
    }
    fileprivate static func busy(pid: Int32?) -> Self { .success(.busy(pid: pid)) }
    fileprivate static func signedOut(_ reason: String) -> Self { .success(.signedOut(.signedOut(reason: reason))) }
    fileprivate static func fatal(_ reason: String) -> Self { .failure(NewerIvy(errorDescription: reason)) }
}

/// A watch on a clock that moves only when it sleeps, with scripted syncs: what it tries
/// when, and what it tells.
private final class ScriptedWatch: Sendable {
    private let now = Mutex(Duration.zero)
    private let script: Mutex<[Attempt]>
    private let attempts = Mutex<[Duration]>([])
    private let told = Mutex<[Watch.Event]>([])
    private let pendingChanges: @Sendable (Duration) -> LocalChangeProbe.Pending
    private let ended = Mutex<String?>(nil)

    init(
        _ script: [Attempt],
        pending: LocalChangeProbe.Pending = .init(count: 0, queuedAt: 0, attempts: 0, dataVersion: 1)
    ) {
        self.script = Mutex(script)
        pendingChanges = { _ in pending }
    }

    /// `pending` says what is queued at each moment.
    init(_ script: [Attempt], pending: @escaping @Sendable (Duration) -> LocalChangeProbe.Pending) {
        self.script = Mutex(script)
        pendingChanges = pending
    }

    /// What `run` returned: why the watch ended, if it had to.
    var endedBecause: String? { ended.withLock { $0 } }

    /// Runs the watch until the script is spent (or `until` passes); the times of its attempts.
    func run(interval: Duration, maxInterval: Duration? = nil, until end: Duration = .seconds(3600)) async -> (
        attempts: [Duration], events: [Watch.Event]
    ) {
        let stop = StopRequest()
        let timing = Watch.Timing(
            now: { [self] in self.now.withLock { $0 } },
            sleep: { [self] wait in
                let time = self.now.withLock { time in
                    time += wait
                    return time
                }
                if time >= end { stop.request() }
            })
        let watch = Watch(
            interval: interval, maxInterval: maxInterval, timing: timing,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            pending: { [self] _ in pendingChanges(now.withLock { $0 }) },
            attempt: { [self] _, stop in
                attempts.withLock { $0.append(now.withLock { $0 }) }
                let next = script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                guard let next else {
                    stop.request()
                    return .finished(SyncReport(), cronNews: nil)
                }
                return try next.get()
            },
            events: { [self] event in told.withLock { $0.append(event) } })
        let reason = await watch.run(until: stop)
        ended.withLock { $0 = reason }
        return (attempts.withLock { $0 }, told.withLock { $0 })
    }
}

@Suite("The watch loop, on a scripted clock")
struct WatchLoopTests {
    @Test("signed out: told once however often it looks, one look per interval, then it goes on by itself")
    func signedOutOnce() async {
        // Google's refusal first, then the token file's record of it: the same wait, told once.
        let refused = Attempt.signedOut("invalid_grant")
        let pause = Attempt.signedOut("the sign-in stopped working: invalid_grant")
        let watch = ScriptedWatch([.synced(SyncReport()), refused, pause, pause, pause, .synced(SyncReport())])
        let (attempts, events) = await watch.run(interval: .seconds(10))
        #expect(Array(attempts.prefix(6)) == [0, 10, 20, 30, 40, 50].map { .seconds($0) }, "\(attempts)")
        let kinds = events.map { event -> String in
            switch event {
            case .synced: "synced"
            case .paused: "paused"
            case .resumed: "resumed"
            case .failed: "failed"
            case .busy: "busy"
            }
        }
        #expect(kinds.prefix(4) == ["synced", "paused", "resumed", "synced"], "\(kinds)")
    }

    @Test("syncs that fail back off, 20 s, 40 s, 80 s at a 10 s interval, and one that works resets it")
    func backoff() async {
        var failing = SyncReport()
        failing.failures = [.init(entity: "book b1", reason: "Drive answered 500")]
        let watch = ScriptedWatch([
            .failed("down"), .synced(failing), .failed("down"), .synced(SyncReport()), .failed("down"),
        ])
        let (attempts, _) = await watch.run(interval: .seconds(10))
        #expect(Array(attempts.prefix(6)) == [0, 20, 60, 140, 150, 170].map { .seconds($0) }, "\(attempts)")
    }

    @Test("another sync holding the lock: it tries again each second, and says so once")
    func busy() async {
        let watch = ScriptedWatch([.busy(pid: 42), .busy(pid: 42), .busy(pid: 42), .synced(SyncReport())])
        let (attempts, events) = await watch.run(interval: .seconds(10))
        #expect(Array(attempts.prefix(4)) == [0, 1, 2, 3].map { .seconds($0) }, "\(attempts)")
        #expect(events.filter { if case .busy = $0 { true } else { false } }.count == 1)
    }

    @Test("a change still queued after a complete sync is synced once more, not again and again")
    func leftoverOnce() async {
        let queued = LocalChangeProbe.Pending(count: 1, queuedAt: 5, attempts: 0, dataVersion: 1)
        let watch = ScriptedWatch(Array(repeating: .synced(SyncReport()), count: 10), pending: queued)
        let (attempts, _) = await watch.run(interval: .seconds(600), until: .seconds(300))
        #expect(attempts.count == 2 && attempts.last! < .seconds(2), "\(attempts)")
    }

    @Test("a sync with failed items backs off its polls, but a change made here still syncs about a second later")
    func itemFailuresLetLocalChangesThrough() async {
        var failing = SyncReport()
        failing.failures = [.init(entity: "book b1", reason: "Drive answered 500")]
        let watch = ScriptedWatch([.synced(failing), .synced(SyncReport())]) { now in
            now < .seconds(5)
                ? .init(count: 0, queuedAt: 0, attempts: 0, dataVersion: 1)
                : .init(count: 1, queuedAt: 5000, attempts: 0, dataVersion: 2)
        }
        let (attempts, events) = await watch.run(interval: .seconds(10))
        #expect(attempts.count >= 2 && attempts[1] > .seconds(5) && attempts[1] < .seconds(7), "\(attempts)")
        guard case .synced(_, _, _, let retry, _) = events.first else {
            Issue.record("\(events)")
            return
        }
        #expect(retry == .seconds(20))
    }

    @Test("a change made while a sync runs that then ends with failed items goes out a second later (issue 28 #13)")
    func changeDuringAFailingSync() async {
        var failing = SyncReport()
        failing.failures = [.init(entity: "book b1", reason: "Drive answered 500")]
        let looks = Mutex(0)
        let watch = ScriptedWatch([.synced(failing), .synced(SyncReport())]) { _ in
            // The first look is before the first sync; every later one sees the failed item
            // (tried once) and a change made while the sync ran (never tried).
            let first = looks.withLock { count in
                count += 1
                return count == 1
            }
            return first
                ? .init(count: 0, queuedAt: 0, attempts: 0, dataVersion: 1)
                : .init(count: 2, queuedAt: 9000, attempts: 1, dataVersion: 2, fresh: 1)
        }
        let (attempts, _) = await watch.run(interval: .seconds(10), until: .seconds(15))
        #expect(attempts.count >= 2 && attempts[1] < .seconds(2), "\(attempts)")
    }

    @Test("signed out, then the lock busy (an ivy login under way), then signed out still: told once")
    func busyDuringAWait() async {
        let pause = Attempt.signedOut("revoked")
        let watch = ScriptedWatch([pause, .busy(pid: 7), pause, .failed("down"), pause])
        let (_, events) = await watch.run(interval: .seconds(10))
        #expect(events.filter { if case .paused = $0 { true } else { false } }.count == 1, "\(events)")
    }

    @Test("a library a newer ivy migrated ends the watch, with the reason")
    func newerIvyEndsIt() async {
        let watch = ScriptedWatch([.synced(SyncReport()), .fatal("library.db was upgraded by a newer ivy")])
        let (attempts, _) = await watch.run(interval: .seconds(10))
        #expect(attempts.count == 2)
        #expect(watch.endedBecause == "library.db was upgraded by a newer ivy")
    }

    @Test("deletions held back are told once while the hold stays")
    func holdToldOnce() async {
        var held = SyncReport()
        held.deletionsHeld = "12 of 20 clips would be deleted"
        held.checkedDoubt = held.deletionsHeld
        let watch = ScriptedWatch([.synced(held), .synced(held), .synced(held)])
        let (_, events) = await watch.run(interval: .seconds(10))
        let changed = events.compactMap { event -> Bool? in
            if case .synced(_, _, let changed, _, _) = event { return changed }
            return nil
        }
        #expect(Array(changed.prefix(3)) == [true, false, false], "\(changed)")
    }

    /// A day on the watch's own clock with nothing changing: at a fixed 10 s it looks 8,640
    /// times; adaptive, up to `watch_max_interval`'s default 300 s, under 300. At a change-feed
    /// page's 100 units that is 864,000 units a day against under 30,000.
    @Test(
        "a quiet day: 8,640 looks at a fixed 10 s, under 300 adaptive",
        arguments: [(nil as Int?, 8_640...8_641), (WatchSchedule.defaultMaxInterval, 280...300)])
    func quietDay(maxInterval: Int?, polls: ClosedRange<Int>) async {
        let day = 86_400
        let watch = ScriptedWatch(Array(repeating: .synced(SyncReport()), count: 9_000))
        // A day of looks with no real sleep between them keeps a thread busy for a while: ivy's
        // own, not one of the cooperative pool's two, which every other test shares.
        let attempts = await BlockingExecutor.run {
            await watch.run(
                interval: .seconds(10), maxInterval: maxInterval.map { .seconds($0) }, until: .seconds(day)
            ).attempts
        }
        let looks = attempts.filter { $0 < .seconds(day) }.count
        #expect(polls.contains(looks), "\(looks) looks in a day")
        #expect(looks * QuotaUnits.list <= (maxInterval == nil ? 864_100 : 30_000))
    }
}
