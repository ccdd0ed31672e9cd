import Foundation
import GRDB
import Testing

@Suite("Times on the command line")
struct TimeRangeCLITests {
    let ivy: IvyHome
    init() throws { ivy = try IvyHome() }

    @Test(
        "a time option out of range exits 64 with the range in the message, and writes nothing",
        arguments: [
            (["book", "add", "--title", "X", "--position", "-5"], "positions are 0 or more"),
            (["book", "add", "--title", "X", "--position", "10000000.5"], "positions are at most 10,000,000 seconds"),
            (["book", "add", "--title", "X", "--position", "2777:46:41"], "at most 10,000,000 seconds"),
            (["book", "add", "--title", "X", "--position", "soon"], "from 0 to 10,000,000 seconds"),
            (
                ["clip", "add", "--book", "0000", "--start", "-1:00", "--duration", "1", "--audio", "a.mp3"],
                "starts are 0 or more"
            ),
            (
                ["clip", "add", "--book", "0000", "--start", "1", "--duration", "99999999", "--audio", "a.mp3"],
                "durations are at most 10,000,000 seconds"
            ),
        ])
    func outOfRange(arguments: [String], message: String) async throws {
        let result = try await ivy.run(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: ivy.home + "/library.db"))
    }

    @Test("update refuses an out-of-range time like add does")
    func updateOutOfRange() async throws {
        let id = try await ivy.id("book", "add", "--title", "Dune")
        let result = try await ivy.run("book", "update", id, "--position", "-5")
        #expect(result.status == 64)
        #expect(result.stderr.contains("positions are 0 or more"), "stderr: \(result.stderr)")
        #expect(try ivy.sql("SELECT position FROM books").first?["position"] == 0.0)
    }

    @Test("rows another program wrote before the time rules list and show without crashing")
    func oldRowsShow() async throws {
        let book = try await ivy.id("book", "add", "--title", "Huge")
        let clip = try await ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", try ivy.mp3("a.mp3"))
        // As the library looked before the time-range migration: no triggers, odd values.
        try ivy.execute(
            """
            DROP TRIGGER IF EXISTS books_times_valid_insert; DROP TRIGGER IF EXISTS books_times_valid_update;
            DROP TRIGGER IF EXISTS clips_times_valid_insert; DROP TRIGGER IF EXISTS clips_times_valid_update;
            DELETE FROM grdb_migrations WHERE identifier = 'v3: time ranges';
            UPDATE books SET position = 1e300;
            UPDATE clips SET start = -1, duration = 9e999;
            """)
        let list = try await ivy.run("book", "list")
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("1e+300 s"))
        let show = try await ivy.run("book", "show", book)
        #expect(show.status == 0 && show.stdout.contains("1e+300 s"), "\(show.stderr)")
        let clips = try await ivy.run("clip", "list")
        #expect(
            clips.status == 0 && clips.stdout.contains("-0:00:01") && clips.stdout.contains("inf s"), "\(clips.stderr)")
        let clipShow = try await ivy.run("clip", "show", clip)
        #expect(clipShow.status == 0 && clipShow.stdout.contains("inf s"), "\(clipShow.stderr)")
        let json = try await ivy.run("clip", "show", clip, "--json")
        #expect(json.status == 0, "\(json.stderr)")

        // The next write must bring the time into range, and says how.
        let rename = try await ivy.run("book", "update", book, "--title", "Renamed")
        #expect(rename.status == 1)
        #expect(rename.stderr.contains("--position"), "\(rename.stderr)")
        #expect(try await ivy.run("book", "update", book, "--title", "Renamed", "--position", "10").status == 0)
    }
}
