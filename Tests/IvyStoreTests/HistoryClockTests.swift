import Foundation
import GRDB
import IvyCore
import IvyTestSupport
import Synchronization
import Testing

@testable import IvyStore

/// The history under any clock (issue 48): versions dated by ivy's clock, Google's when known,
/// never clamped; retention that never prunes on a clock it cannot trust.
@Suite("History dated by Google's clock")
struct HistoryClockTests {
    static let day: Milliseconds = 86_400_000
    let home: TemporaryHome
    let book: BookID = testID(1)

    init() throws {
        home = try TemporaryHome()
    }

    func titles(_ library: LibraryDatabase) throws -> [String] {
        try library.externalConnection().read { db in
            try String.fetchAll(db, sql: "SELECT json_extract(json, '$.title') FROM history ORDER BY id")
        }
    }

    /// A clock that follows Google's time as a release's does, with its wall and boot clocks
    /// set by the test.
    final class Machine: Sendable {
        final class Dials: Sendable {
            let wall = Mutex<Milliseconds>(1_796_000_000_000)
            let boot = Mutex<Milliseconds>(5_000)
        }
        let dials = Dials()
        let time: GoogleTime

        init() {
            let dials = dials
            time = GoogleTime(
                wall: { dials.wall.withLock { $0 } }, bootClock: { dials.boot.withLock { $0 } }, boot: "boot")
        }

        var clock: WallClock { WallClock(google: time) }
    }

    @Test("each version is dated by the clock its transaction read, and says which; Google's is kept for the next run")
    func datedByGoogle() async throws {
        let machine = Machine()
        let library = try await LibraryDatabase(paths: home.paths, clock: machine.clock)
        _ = try await library.addBook(id: book, title: "Dune", artist: nil, artwork: nil, position: 0)
        // Google answers: its time is two days behind this wall clock (which ran ahead).
        let google = machine.dials.wall.withLock { $0 } - 2 * Self.day
        machine.time.learn(date: google, sent: 5_000, received: 5_000)
        _ = try await library.updateBook(id: book, BookChanges(title: "Dune II"))
        let rows = try library.externalConnection().read { db in
            try Row.fetchAll(db, sql: "SELECT recorded_at, clock FROM history ORDER BY id")
        }
        #expect(rows.map { $0["clock"] as String } == ["device", "google"])
        #expect(rows[0]["recorded_at"] as Milliseconds == machine.dials.wall.withLock { $0 })
        #expect((rows[1]["recorded_at"] as Milliseconds) - google < 1000, "Google's time, not the wall clock's")
        #expect(try await library.history(of: EntityKey(book)).map(\.sureClock) == [true, false])

        // The next run of this boot takes up what this one learned, before any answer.
        let next = Machine()
        next.dials.boot.withLock { $0 = 65_000 }
        let reopened = try await LibraryDatabase(paths: home.paths, clock: next.clock)
        let reading = reopened.clock.reading()
        #expect(reading.sure && abs(reading.now - (google + 60_000)) < 1000, "\(reading)")
        // Another program's write carries the machine's clock, and says so.
        try await reopened.externalConnection().write { db in try db.execute(sql: "UPDATE books SET title = 'By hand'")
        }
        #expect(try await reopened.history(of: EntityKey(book)).first?.sureClock == false)
    }

    @Test("retention counts from the newest version not in the future, and stops while the last is dated after now")
    func referenceNotInFuture() async throws {
        let now: Milliseconds = 1_796_000_000_000
        let clock = TestClock(now - 3 * Self.day)
        let library = try await LibraryDatabase(paths: home.paths, clock: clock.clock)
        _ = try await library.addBook(id: book, title: "A", artist: nil, artwork: nil, position: 0)
        clock.advance(seconds: 20)
        _ = try await library.updateBook(id: book, BookChanges(title: "B"))
        // One command 400 days ahead; then the clock is right again.
        clock.set(now + 400 * Self.day)
        _ = try await library.updateBook(id: book, BookChanges(title: "Far"))
        clock.set(now)
        #expect(try await library.pruneHistory(days: 365) == 0, "this clock is behind the version written last")
        #expect(try titles(library) == ["A", "B", "Far"])
        _ = try await library.updateBook(id: book, BookChanges(title: "Now"))
        // Ages count from "Now"; "Far" is dated no later than what was written before it: three
        // days old, the newest of that day, kept; the day's older ones go.
        #expect(try await library.pruneHistory(days: 365) == 2)
        #expect(try titles(library) == ["Far", "Now"])
    }

    @Test("a clock never checked against Google's prunes nothing, however old the versions look")
    func unsurePrunesNothing() async throws {
        let machine = Machine()
        let library = try await LibraryDatabase(paths: home.paths, clock: machine.clock)
        machine.dials.wall.withLock { $0 -= 3 * Self.day }
        _ = try await library.addBook(id: book, title: "A", artist: nil, artwork: nil, position: 0)
        _ = try await library.updateBook(id: book, BookChanges(title: "B"))
        machine.dials.wall.withLock { $0 += 400 * Self.day }
        #expect(try await library.pruneHistoryIfDue(days: 365) == 0)
        #expect(try titles(library) == ["A", "B"])
        // Once Google's time is known (400 days on, as the wall clock said), it prunes.
        machine.time.learn(date: machine.dials.wall.withLock { $0 }, sent: 5_000, received: 5_000)
        _ = try await library.updateBook(id: book, BookChanges(title: "C"))
        #expect(try await library.pruneHistoryIfDue(days: 365) == 2)
        #expect(try titles(library) == ["C"])
    }
}
