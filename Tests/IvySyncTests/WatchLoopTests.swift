import IvyCore
import IvyStore
import IvySync
import Logging
import Synchronization
import Testing

/// A watch on a clock that moves only when it sleeps, with scripted syncs: what it tries
/// when, and what it tells.
private final class ScriptedWatch: Sendable {
    private let now = Mutex(Duration.zero)
    private let script: Mutex<[Watch.Attempt]>
    private let attempts = Mutex<[Duration]>([])
    private let told = Mutex<[Watch.Event]>([])
    private let pendingChanges: LocalChangeProbe.Pending

    init(
        _ script: [Watch.Attempt],
        pending: LocalChangeProbe.Pending = .init(count: 0, queuedAt: 0, attempts: 0, dataVersion: 1)
    ) {
        self.script = Mutex(script)
        pendingChanges = pending
    }

    /// Runs the watch until the script is spent (or `until` passes); the times of its attempts.
    func run(interval: Duration, until end: Duration = .seconds(3600)) async -> (
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
            interval: interval, timing: timing,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            pending: { [pendingChanges] _ in pendingChanges },
            attempt: { [self] _, _, stop in
                attempts.withLock { $0.append(now.withLock { $0 }) }
                let next = script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                guard let next else {
                    stop.request()
                    return .synced(SyncReport())
                }
                return next
            },
            events: { [self] event in told.withLock { $0.append(event) } })
        await watch.run(until: stop)
        return (attempts.withLock { $0 }, told.withLock { $0 })
    }
}

@Suite("The watch loop, on a scripted clock")
struct WatchLoopTests {
    @Test("signed out: told once however often it looks, one look per interval, then it goes on by itself")
    func signedOutOnce() async {
        let pause = Watch.Attempt.paused(.signedOut("revoked"))
        let watch = ScriptedWatch([.synced(SyncReport()), pause, pause, pause, pause, .synced(SyncReport())])
        let (attempts, events) = await watch.run(interval: .seconds(10))
        #expect(Array(attempts.prefix(6)) == [0, 10, 20, 30, 40, 50].map { .seconds($0) }, "\(attempts)")
        let kinds = events.map { event -> String in
            switch event {
            case .synced: "synced"
            case .paused: "paused"
            case .failed: "failed"
            case .busy: "busy"
            }
        }
        #expect(kinds.prefix(3) == ["synced", "paused", "synced"], "\(kinds)")
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
}
