import IvyCore
import Testing

@Suite("When ivy sync --watch syncs")
struct WatchScheduleTests {
    @Test("it syncs at once on start, then every interval")
    func polls() {
        var schedule = WatchSchedule(interval: .seconds(10))
        #expect(schedule.due(at: .zero) == .start)
        schedule.synced(at: .seconds(1))
        #expect(schedule.due(at: .seconds(10.9)) == nil)
        #expect(schedule.due(at: .seconds(11)) == .poll)
    }

    @Test("a burst of local changes is one sync, a second after the last, five at most after the first")
    func debounce() {
        var schedule = WatchSchedule(interval: .seconds(600))
        schedule.synced(at: .zero)
        schedule.changed(at: .seconds(10))
        schedule.changed(at: .seconds(10.5))
        #expect(schedule.due(at: .seconds(11.4)) == nil)
        #expect(schedule.due(at: .seconds(11.5)) == .localChange)
        schedule.synced(at: .seconds(12))
        for tenth in 0..<100 { schedule.changed(at: .seconds(20) + .milliseconds(100 * tenth)) }
        #expect(schedule.due(at: .seconds(24.9)) == nil)
        #expect(schedule.due(at: .seconds(25)) == .localChange, "steady typing still syncs")
        schedule.synced(at: .seconds(26))
        #expect(schedule.due(at: .seconds(100)) == nil, "the burst is spent")
    }

    @Test("failures back off: twice the interval, doubling, at most five minutes; a success resets it")
    func backoff() {
        var schedule = WatchSchedule(interval: .seconds(10))
        var waits: [Duration] = []
        var now = Duration.zero
        for _ in 0..<7 {
            let wait = schedule.failed(at: now)
            waits.append(wait)
            #expect(schedule.due(at: now + wait - .milliseconds(1)) == nil)
            now += wait
            #expect(schedule.due(at: now) == .retry)
        }
        #expect(waits == [20, 40, 80, 160, 300, 300, 300].map { .seconds($0) })
        schedule.synced(at: now)
        #expect(schedule.failed(at: now) == .seconds(20))
    }

    @Test("while backing off, a local change waits for the retry")
    func changeDuringBackoff() {
        var schedule = WatchSchedule(interval: .seconds(10))
        schedule.failed(at: .zero)
        schedule.changed(at: .seconds(1))
        #expect(schedule.due(at: .seconds(5)) == nil)
        #expect(schedule.due(at: .seconds(20)) == .retry)
    }

    @Test("postponed (the lock is busy): nothing is due until the wait is over, then what was due still is")
    func postpone() {
        var schedule = WatchSchedule(interval: .seconds(10))
        schedule.synced(at: .zero)
        schedule.changed(at: .seconds(3))
        schedule.postpone(at: .seconds(4), by: .seconds(1))
        #expect(schedule.due(at: .seconds(4.5)) == nil)
        #expect(schedule.due(at: .seconds(5)) == .localChange)
    }

    @Test("idle, the interval doubles after five quiet ones up to the maximum; a change here or on Drive snaps it back")
    func adaptive() {
        var schedule = WatchSchedule(interval: .seconds(10), maxInterval: .seconds(60))
        var now = Duration.zero
        var waits: [Duration] = []
        for _ in 0..<10 {
            schedule.synced(at: now, active: false)
            waits.append(schedule.currentInterval)
            now += schedule.currentInterval
        }
        #expect(waits.map { $0.components.seconds } == [10, 10, 10, 10, 10, 20, 40, 60, 60, 60])
        schedule.synced(at: now, active: true)
        #expect(schedule.currentInterval == .seconds(10), "a change on Drive")
        for _ in 0..<8 {
            now += schedule.currentInterval
            schedule.synced(at: now, active: false)
        }
        #expect(schedule.currentInterval == .seconds(60))
        schedule.changed(at: now + .seconds(3))
        #expect(schedule.currentInterval == .seconds(10), "a change here")
        #expect(schedule.due(at: now + .seconds(4)) == .localChange)
    }

    @Test("a maximum no longer than the interval keeps it fixed")
    func fixed() {
        var schedule = WatchSchedule(interval: .seconds(10), maxInterval: .seconds(5))
        for step in 0..<20 { schedule.synced(at: .seconds(10 * step), active: false) }
        #expect(schedule.currentInterval == .seconds(10))
    }
}
