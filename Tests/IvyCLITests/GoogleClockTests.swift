import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// History under any clock (issue 48): one order (the order of changes) and one clock
/// (Google's), through the built binary, its wall clock moved by libfaketime.
extension HistoryCommandTests {
    /// Runs the binary with its wall clock `offset` (`+2d`, `+400d`, `-90m`) off the real one
    /// and running on, as a bad RTC or a person sets it; the boot clock runs on untouched.
    static func clock(off offset: String) -> [String] {
        ["/usr/bin/env", "FAKETIME_DONT_FAKE_MONOTONIC=1", "/usr/bin/faketime", "-m", "-f", offset]
    }

    func versionTimes(_ ivy: IvyHome, _ id: String) async throws -> [(title: String, time: String, clock: String)] {
        let versions = try #require(try await ivy.runBinaryAsync("history", id, "--json").json() as? [[String: Any]])
        return versions.map {
            (
                ($0["entity"] as? [String: Any])?["title"] as? String ?? "", $0["time"] as? String ?? "",
                $0["clock"] as? String ?? ""
            )
        }
    }

    @Test("a clock two days ahead, then stepped back, re-dates nothing: a restore after it keeps every change")
    func clockAheadThenBack() async throws {
        let ivy = try IvyHome()
        // Three days ago: made at 10:00; renamed at 10:05 while the clock ran two days ahead
        // (it shows 10:05 two days later); renamed at 10:10 after NTP stepped it back; a
        // second book at 10:11. This device never reached Google: its own clock dates all.
        let day = Self.utcDay(-3)
        let book = try await writtenAt(ivy, day: day, [("First", "10:00:00")])
        let ahead = try await ivy.runBinaryAsync(
            ["book", "update", book, "--title", "Ahead"], through: Self.clock(startingAt: Self.utcDay(-1) + " 10:05:00")
        )
        #expect(ahead.status == 0, "\(ahead.stderr)")
        let back = try await ivy.runBinaryAsync(
            ["book", "update", book, "--title", "Current"], through: Self.clock(startingAt: day + " 10:10:00"))
        #expect(back.status == 0, "\(back.stderr)")
        let later = try await ivy.runBinaryAsync(
            ["book", "add", "--title", "Later"], through: Self.clock(startingAt: day + " 10:11:00"))
        let laterID = try #require(later.lines.first, "\(later.stderr)")

        // Each version keeps the time its clock gave (no clamp), marked as this device's own.
        let versions = try await versionTimes(ivy, book)
        #expect(versions.map(\.title) == ["Current", "Ahead", "First"], "\(versions)")
        #expect(versions.allSatisfy { $0.clock == "device" })
        #expect(versions[0].time.hasPrefix(day + "T10:10:00"), "\(versions)")
        let table = try await ivy.runBinaryAsync("history", book)
        #expect(table.stdout.contains("here*") && table.stdout.contains("* dated by this machine's own clock"))
        let status = try await ivy.runBinaryAsync("status")
        #expect(status.stdout.contains("this machine's own: ivy has not reached Google since"), "\(status.stdout)")

        // A moment between the last rename and the second book is a point in the order of
        // changes: the rename made while the clock ran ahead was written before it, so it
        // existed then, whatever its date says.
        let when = day + " 10:10:30 +00:00"
        let until = try #require(
            try await ivy.runBinaryAsync("history", "--until", when, "--json").json() as? [[String: Any]])
        #expect(until.count == 3, "every version written up to the point: \(until)")
        let restored = try await ivy.runBinaryAsync("restore", "--at", when, "--yes")
        #expect(restored.status == 0, "\(restored.stdout) \(restored.stderr)")
        #expect(try books(ivy)[book]?.title == "Current" && books(ivy)[book]?.hidden == false)
        #expect(try books(ivy)[laterID]?.hidden == true, "made here after the point: deleted")
    }

    @Test("a device that has reached Google records Google's time, whatever its own clock says")
    func googleTimeCarried() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let book = try await a.ivy.id("book", "add", "--title", "Dune")
            let synced = try await a.ivy.runBinaryAsync("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            #expect(try a.ivy.count("SELECT count(*) FROM settings WHERE key = 'google_time'") == 1)
            let status = try #require(try await a.ivy.runBinaryAsync("status", "--json").json() as? [String: Any])
            #expect(status["clock"] as? String == "google", "\(status)")

            // The clock jumps two days ahead (a bad RTC), then 400 days: ivy still records
            // Google's time, carried from the sync's answers by the boot clock.
            for offset in ["+2d", "+400d"] {
                let renamed = try await a.ivy.runBinaryAsync(
                    ["book", "update", book, "--title", "Dune " + offset], through: Self.clock(off: offset))
                #expect(renamed.status == 0, "\(renamed.stderr)")
            }
            let now = Date()
            let formatter = ISO8601DateFormatter()
            let versions = try await versionTimes(a.ivy, book)
            #expect(versions.count == 3, "\(versions)")
            for version in versions.prefix(2) {
                let time = try #require(formatter.date(from: version.time), "\(version)")
                #expect(abs(time.timeIntervalSince(now)) < 120, "\(version) is Google's time, not the clock's")
                #expect(version.clock == "google")
            }
            let renamed = try #require(try a.ivy.sql("SELECT updated_at FROM books").first?["updated_at"] as Int64?)
            #expect(abs(Double(renamed) / 1000 - now.timeIntervalSince1970) < 120, "updated_at is Google's time too")
            let restore = try await a.ivy.runBinaryAsync(
                ["restore", "--at", "1s", "--dry-run"], through: Self.clock(off: "+400d"))
            #expect(restore.status == 0 && restore.stderr.isEmpty, "\(restore.stdout) \(restore.stderr)")
        }
    }

    @Test("one command 400 days ahead prunes nothing, before or after, on a clock Google never checked")
    func farAheadPrunesNothing() async throws {
        let ivy = try IvyHome()
        let day = Self.utcDay(-3)
        let book = try await writtenAt(
            ivy, day: day, [("First", "10:00:00"), ("Second", "11:00:00"), ("Third", "12:00:00")])
        #expect(try ivy.count("SELECT count(*) FROM history") == 3)
        let far = try await ivy.runBinaryAsync(
            ["book", "update", book, "--title", "Far"], through: Self.clock(off: "+400d"))
        #expect(far.status == 0, "\(far.stderr)")
        // The next ordinary commands: the clock is behind the newest version, and unchecked.
        for _ in 0..<2 {
            #expect(try await ivy.runBinaryAsync("config", "set", "history_days", "365").status == 0)
        }
        #expect(try ivy.count("SELECT count(*) FROM history") == 4, "the first version of each period stays")
        // A restore says that a version is dated in the future.
        let preview = try await ivy.runBinaryAsync("restore", "--at", "1m", "--dry-run")
        #expect(preview.status == 0, "\(preview.stderr)")
        #expect(preview.stderr.contains("warning: a version is dated"), "\(preview.stderr)")
        #expect(preview.stderr.contains("a clock ran ahead when it was recorded"), "\(preview.stderr)")
    }

    @Test("a time from a fast clock elsewhere is bounded by Google's, so a late device's restore keeps what existed")
    func fastClockElsewhere() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            // Device a's clock runs 20 hours ahead when it makes a book.
            let ahead = Int64(Date().timeIntervalSince1970 * 1000) + 20 * 3_600_000
            let book = try await a.ivy.id("book", "add", "--title", "Dune")
            try a.ivy.execute("UPDATE books SET created_at = \(ahead), updated_at = \(ahead)")
            #expect(try await a.ivy.run("sync").status == 0)

            // Device b joins later and syncs: the book's times are no later than when Google
            // received its file, plus a minute.
            let b = try await SignInHarness.signedIn(emulator)
            let synced = try await b.ivy.runBinaryAsync("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            let row = try #require(try b.ivy.sql("SELECT created_at, updated_at FROM books").first)
            let limit = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
            #expect((row["created_at"] as Int64) < limit && (row["updated_at"] as Int64) < limit)
            let log = try String(contentsOfFile: b.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains("later than when Google received its file"), "\(log)")

            // A whole-library restore to now: the book existed, and stays.
            let restored = try await b.ivy.runBinaryAsync("restore", "--at", "1s", "--yes")
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(try books(b.ivy)[book]?.hidden == false)
            let check = try await b.ivy.runBinaryAsync("check", "--read-data")
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")

            // A book b knows only from a download an older ivy recorded (its times unchecked):
            // a restore to before it was made leaves it, and --dry-run says why.
            let when = try moment(b.ivy)
            let emma = try await a.ivy.id("book", "add", "--title", "Emma")
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.runBinaryAsync("sync").status == 0)
            try b.ivy.execute("UPDATE history SET clock = NULL WHERE entity_id = '\(emma)'")
            let preview = try await b.ivy.runBinaryAsync("restore", "--at", when, "--dry-run")
            #expect(preview.status == 0, "\(preview.stderr)")
            #expect(
                preview.stdout.contains("left book \(emma): dated ") && preview.stdout.contains("could not check"),
                "\(preview.stdout)")
            #expect(!preview.stdout.contains("would delete"), "\(preview.stdout)")
            // Recorded by this ivy, its times bounded by Google's: made after WHEN, deleted.
            try b.ivy.execute("UPDATE history SET clock = 'google' WHERE entity_id = '\(emma)'")
            let again = try await b.ivy.runBinaryAsync("restore", "--at", when, "--dry-run")
            #expect(again.stdout.contains("would delete book \(emma) (Emma): made after"), "\(again.stdout)")
        }
    }
}
