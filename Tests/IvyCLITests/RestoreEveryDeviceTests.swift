import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// A restore on every device, whatever its past and its clock: the cases of issue 37 through
/// the built binary (`ivy restore`, `ivy trash restore`) against the emulator.
extension HistoryCommandTests {
    /// Runs the binary with its clock started at `start` (UTC, `YYYY-MM-DD HH:MM:SS`) and
    /// running on: libfaketime's `faketime` (Debian's package; `.ci/run` installs it), which
    /// moves SQLite's clock, and so the history's, with the process's. Only the wall clock,
    /// as NTP moves it: the monotonic clock that timed waits use runs on.
    static func clock(startingAt start: String) -> [String] {
        ["/usr/bin/env", "FAKETIME_DONT_FAKE_MONOTONIC=1", "/usr/bin/faketime", "-m", "-f", "@" + start]
    }

    /// The UTC date `days` days from now (negative: ago), as `clock(startingAt:)` takes it.
    static func utcDay(_ days: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: Date().addingTimeInterval(Double(days) * 86_400))
    }

    /// Adds a book with the first title at the first time of `day`, and renames it to each later
    /// title at its time, each through the binary on a clock started then. Returns its id.
    func writtenAt(_ ivy: IvyHome, day: String, _ versions: [(title: String, time: String)]) async throws -> String {
        let first = versions[0]
        let made = try await ivy.runBinaryAsync(
            ["book", "add", "--title", first.title], through: Self.clock(startingAt: day + " " + first.time))
        let book = try #require(made.lines.first, "\(made.stderr)")
        for (title, time) in versions.dropFirst() {
            let renamed = try await ivy.runBinaryAsync(
                ["book", "update", book, "--title", title], through: Self.clock(startingAt: day + " " + time))
            #expect(renamed.status == 0, "\(renamed.stderr)")
        }
        return book
    }

    func books(_ ivy: IvyHome) throws -> [String: (title: String, hidden: Bool, uri: String?)] {
        var books: [String: (title: String, hidden: Bool, uri: String?)] = [:]
        for row in try ivy.sql("SELECT id, title, hidden, uri FROM books") {
            books[row["id"]] = (row["title"], row["hidden"], row["uri"])
        }
        return books
    }

    @Test("a device that joined late restores to before it joined and deletes only what was made after")
    func lateJoiner() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let book = try await a.ivy.id("book", "add", "--title", "Dune")
            let audio = try a.ivy.mp3("spice.mp3", size: 3000)
            let clip = try await a.ivy.id(
                "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", audio, "--note", "spice")
            #expect(try await a.ivy.run("sync").status == 0)
            let when = try moment(a.ivy)
            let later = try await a.ivy.id("book", "add", "--title", "Emma")
            #expect(try await a.ivy.run("sync").status == 0)
            // The desk joins now: the first version it has of anything is after WHEN.
            let b = try await SignInHarness.signedIn(emulator)
            #expect(try await b.ivy.run("sync").status == 0)

            let preview = try await b.ivy.runBinaryAsync("restore", "--at", when, "--dry-run")
            #expect(preview.status == 0, "\(preview.stderr)")
            #expect(preview.stdout.contains("left book \(book): unknown here at "), "\(preview.stdout)")
            #expect(preview.stdout.contains("left clip \(clip): unknown here at "), "\(preview.stdout)")
            #expect(preview.stdout.contains("would delete book \(later) (Emma): made after"), "\(preview.stdout)")
            #expect(!preview.stdout.contains("would delete book \(book)") && !preview.stdout.contains("delete clip"))

            let restored = try await b.ivy.runBinaryAsync("restore", "--at", when, "--yes")
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(restored.stdout.contains("Left 2 books and clips as they are"), "\(restored.stdout)")
            #expect(try books(b.ivy)[book]?.hidden == false && books(b.ivy)[later]?.hidden == true)
            #expect(try b.ivy.count("SELECT count(*) FROM clips") == 1)
            #expect(FileManager.default.fileExists(atPath: b.ivy.home + "/audio/\(clip).mp3"))
            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try books(a.ivy)[book]?.hidden == false, "the book made before WHEN stays on every device")
            #expect(try a.ivy.count("SELECT count(*) FROM clips") == 1)
        }
    }

    @Test("a clock that ran ahead and stepped back: the change written last stays the current version")
    func clockSteppedBack() async throws {
        let ivy = try IvyHome()
        // Three days ago, within one UTC day: made at 11:00; renamed while the clock ran ahead
        // (12:30), then again after NTP stepped it back (12:00).
        let book = try await writtenAt(
            ivy, day: Self.utcDay(-3), [("First", "11:00:00"), ("Ahead", "12:30:00"), ("Current", "12:00:00")])
        // A command that writes, today, prunes the history (at most once a day).
        #expect(try await ivy.runBinaryAsync("config", "set", "history_days", "365").status == 0)

        let versions = try #require(try await ivy.run("history", book, "--json").json() as? [[String: Any]])
        let titles = versions.compactMap { ($0["entity"] as? [String: Any])?["title"] as? String }
        #expect(titles == ["Current", "Ahead", "First"], "newest first is the order written")
        // Each version keeps the time its clock gave; the order is the order written.
        let times = try ivy.sql("SELECT recorded_at FROM history ORDER BY id").map { $0["recorded_at"] as Int64 }
        #expect(times[1] > times[2] && times[0] < times[2], "no version re-dated: \(times)")
        let restored = try await ivy.runBinaryAsync("restore", "--at", "1m", "--yes")
        #expect(restored.status == 0 && restored.stdout.contains("Nothing to restore"), "\(restored.stdout)")
        #expect(try books(ivy)[book]?.title == "Current")
    }

    @Test("a device whose clock Google never checked prunes nothing; once a sync checks it, it prunes")
    func prunedOnceChecked() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            // Three days ago, within a minute: three versions that one day's bucket keeps one of.
            let book = try await writtenAt(
                a.ivy, day: Self.utcDay(-3), [("First", "10:00:00"), ("Second", "10:00:20"), ("Third", "10:00:40")])
            #expect(try await a.ivy.runBinaryAsync("book", "update", book, "--title", "Today").status == 0)
            // Days later by this device's own clock, never checked against Google's: a clock
            // that ran ahead would age the whole past at once, so nothing goes.
            let later = try await a.ivy.runBinaryAsync(
                ["config", "set", "history_days", "365"], through: Self.clock(startingAt: Self.utcDay(2) + " 00:00:00"))
            #expect(later.status == 0, "\(later.stderr)")
            #expect(try a.ivy.count("SELECT count(*) FROM history") == 4)

            // Two days pass by Google's clock; a sync learns its time, and prunes at its end, the
            // ages counted back from the newest version.
            await emulator.state.advanceClock(by: 2 * 86_400)
            let synced = try await a.ivy.runBinaryAsync("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            let titles = try a.ivy.sql("SELECT json_extract(json, '$.title') AS title FROM history ORDER BY id")
                .map { $0["title"] as String }
            #expect(titles == ["Third", "Today"], "one of that day's versions, and the current one")
        }
    }

    @Test("a clip whose MP3 is missing is skipped and said, the rest is restored, and the exit status is 5")
    func missingAudio() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune", "--position", "60")
        let audio = try ivy.mp3("spice.mp3", size: 2000)
        let clip = try await ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", audio, "--note", "kept")
        let when = try moment(ivy)
        try ivy.execute("UPDATE books SET position = 0, updated_at = updated_at + 1")
        try ivy.execute("UPDATE clips SET note = 'changed', updated_at = updated_at + 1")
        // The held state `ivy status` documents: a clip's MP3 removed by hand.
        try FileManager.default.removeItem(atPath: ivy.home + "/audio/\(clip).mp3")

        let preview = try await ivy.runBinaryAsync("restore", "--at", when, "--dry-run")
        #expect(preview.status == 5, "\(preview.stderr)")
        #expect(preview.stdout.contains("would restore book \(book) (Dune): position"), "\(preview.stdout)")
        #expect(preview.stdout.contains("could not restore clip \(clip): its MP3 is missing here"))
        let restored = try await ivy.runBinaryAsync("restore", "--at", when, "--yes")
        #expect(restored.status == 5, "\(restored.stderr)")
        #expect(restored.stdout.contains("1 book or clip could not be restored"), "\(restored.stdout)")
        #expect(try ivy.sql("SELECT position FROM books").map { $0["position"] as Double } == [60])
        #expect(try ivy.sql("SELECT note FROM clips").map { $0["note"] as String } == ["changed"])
    }

    @Test("trash restore's 'changed here since' is this library's order of changes, not another device's clock")
    func trashGuardOnOneClock() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let b = try await SignInHarness.signedIn(emulator)
            let book = try await a.ivy.id("book", "add", "--title", "Dune")
            let audio = try a.ivy.mp3("spice.mp3", size: 2000)
            _ = try await a.ivy.id(
                "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", audio, "--note", "one")
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            func note(_ ivy: IvyHome) throws -> String? { try ivy.sql("SELECT note FROM clips").first?["note"] }
            func newestEntry(_ ivy: IvyHome) throws -> String {
                String(try ivy.count("SELECT max(id) FROM trash"))
            }

            // The phone's clock runs two hours ahead: its edit carries a time later than any here.
            let ahead = Int64(Date().timeIntervalSince1970 * 1000) + 7_200_000
            try a.ivy.execute("UPDATE clips SET note = 'two', updated_at = \(ahead)")
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try note(b.ivy) == "two")
            // Nothing changed here since the download kept 'one': it is restored.
            let first = try await b.ivy.runBinaryAsync("trash", "restore", try newestEntry(b.ivy))
            #expect(first.status == 0, "\(first.stderr)")
            #expect(try note(b.ivy) == "one")
            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try await a.ivy.run("sync").status == 0)

            // Now a device whose clock is behind: its edits carry times before the entry was kept.
            try a.ivy.execute("UPDATE clips SET note = 'three', updated_at = 1000")
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            let entry = try newestEntry(b.ivy)
            try a.ivy.execute("UPDATE clips SET note = 'four', updated_at = 2000")
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try note(b.ivy) == "four")
            // 'four' reached this library after the entry was kept: a newer version, refused.
            let refused = try await b.ivy.runBinaryAsync("trash", "restore", entry)
            #expect(refused.status == 64, "\(refused.stdout) \(refused.stderr)")
            #expect(refused.stderr.contains("changed after trash entry \(entry) was kept"), "\(refused.stderr)")
            #expect(try note(b.ivy) == "four")
        }
    }

    @Test("a time on Drive years ahead is taken as when Google received it, logged, and ivy check sees no difference")
    func farFutureTime() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let b = try await SignInHarness.signedIn(emulator)
            _ = try await a.ivy.id("book", "add", "--title", "Dune")
            // Year 2255, as a device with a broken clock (or a hostile program) would write it.
            try a.ivy.execute("UPDATE books SET title = 'Dune II', updated_at = 9000000000000")
            #expect(try await a.ivy.run("sync").status == 0)
            let synced = try await b.ivy.runBinaryAsync("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            let limit = Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000
            let row = try #require(try b.ivy.sql("SELECT title, updated_at FROM books").first)
            #expect(row["title"] as String == "Dune II" && (row["updated_at"] as Int64) < limit)
            let log = try String(contentsOfFile: b.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains("later than when Google received its file"), "\(log)")
            let check = try await b.ivy.runBinaryAsync("check", "--read-data")
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        }
    }

    @Test("undoing a restore that deleted a book brings back its uri")
    func undoKeepsURI() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let when = try moment(ivy)
        let late = try await ivy.id("book", "add", "--title", "Late")
        try ivy.execute("UPDATE books SET uri = 'file:///books/late.m4b' WHERE id = '\(late)'")
        let beforeRestore = try moment(ivy)
        #expect(try await ivy.runBinaryAsync("restore", "--at", when, "--yes").status == 0)
        #expect(try books(ivy)[late]?.hidden == true)
        let undone = try await ivy.runBinaryAsync("restore", "--at", beforeRestore, "--yes")
        #expect(undone.status == 0, "\(undone.stderr)")
        #expect(try books(ivy)[late]?.hidden == false && books(ivy)[late]?.uri == "file:///books/late.m4b")
    }

    @Test("history_days 0 purges the history on a device that never syncs")
    func purgeWithoutSync() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        #expect(try ivy.count("SELECT count(*) FROM history") > 0)
        #expect(try await ivy.runBinaryAsync("config", "set", "history_days", "0").status == 0)
        _ = try await ivy.runBinaryAsync("book", "add", "--title", "Emma")
        #expect(try ivy.count("SELECT count(*) FROM history") == 0)
    }
}
