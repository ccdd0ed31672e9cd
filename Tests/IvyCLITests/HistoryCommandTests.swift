import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

@Suite("ivy history and ivy restore")
struct HistoryCommandTests {
    /// A moment (RFC 3339, in ms) after every version recorded so far and before whatever is
    /// recorded next: a millisecond after the newest version, once SQLite's clock (which
    /// records versions to the millisecond) has moved past it. That wait is for the clock, a
    /// millisecond or two.
    func moment(_ ivy: IvyHome) throws -> String {
        let newest = Int64(try ivy.count("SELECT coalesce(max(recorded_at), 0) FROM history"))
        while Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) <= newest + 1 {}
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(newest + 1) / 1000))
    }

    func positions(_ ivy: IvyHome) async throws -> [Double] {
        let books = try #require(try await ivy.run("book", "list", "--json").json() as? [[String: Any]])
        return books.compactMap { $0["position"] as? Double }.sorted()
    }

    @Test("positions wiped by another device come back with `ivy restore --at` and reach that device")
    func wipedPositions() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let b = try await SignInHarness.signedIn(emulator)
            for (title, position) in [("Dune", "1:00:00"), ("Emma", "2:00:00")] {
                _ = try await a.ivy.id("book", "add", "--title", title, "--position", position)
            }
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            let before = try moment(b.ivy)
            // A bug on `a` resets every position; the sync carries it to `b`.
            try a.ivy.execute("UPDATE books SET position = 0, updated_at = updated_at + 1")
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try await positions(b.ivy) == [0, 0])
            let drive = try #require(
                try await b.ivy.run("history", "--since", before, "--json").json() as? [[String: Any]])
            #expect(drive.count == 2 && drive.allSatisfy { $0["source"] as? String == "drive" }, "\(drive)")
            #expect(drive.allSatisfy { $0["changed"] as? [String] == ["position"] })

            // Without a terminal, a whole-library restore needs --yes.
            let refused = try await b.ivy.run("restore", "--at", before)
            #expect(refused.status == 64 && refused.stderr.contains("pass --yes"), "\(refused.stderr)")
            let preview = try await b.ivy.run("restore", "--at", before, "--dry-run")
            #expect(preview.status == 0 && preview.stdout.contains("would restore book"), "\(preview.stderr)")
            #expect(try await positions(b.ivy) == [0, 0])

            let restored = try await b.ivy.runBinaryAsync("restore", "--at", before, "--yes")
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(restored.stdout.contains("Restored 2 books and clips"), "\(restored.stdout)")
            #expect(restored.stdout.contains("position"))
            #expect(try await positions(b.ivy) == [3600, 7200])
            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await positions(a.ivy) == [3600, 7200])
            // The next sync uploads nothing more.
            let again = try #require(try await b.ivy.run("sync", "--json").json() as? [String: Any])
            #expect((again["uploaded"] as? [String: Int])?["books"] == 0, "\(again)")
        }
    }

    @Test("a restore that undoes changes never synced uploads only what differs from Drive")
    func onlyWhatDiffers() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            for index in 0..<3 { _ = try await a.ivy.id("book", "add", "--title", "Book \(index)", "--position", "60") }
            #expect(try await a.ivy.run("sync").status == 0)
            let before = try moment(a.ivy)
            // Two positions wiped here, never synced; one book renamed, and that rename synced.
            let books = try a.ivy.sql("SELECT id FROM books ORDER BY title").map { $0["id"] as String }
            try a.ivy.execute(
                "UPDATE books SET title = 'Renamed', updated_at = updated_at + 1 WHERE id = '\(books[2])'")
            #expect(try await a.ivy.run("sync").status == 0)
            try a.ivy.execute("UPDATE books SET position = 0, updated_at = updated_at + 1 WHERE id <> '\(books[2])'")
            let restored = try await a.ivy.run("restore", "--at", before, "--yes")
            #expect(restored.stdout.contains("Restored 3 books and clips"), "\(restored.stdout)")
            // The message says what the next sync does: two are back to what Drive has, one is sent.
            #expect(
                restored.stdout.contains("the next `ivy sync` sends 1 of them to Drive; the other 2 are as this"),
                "\(restored.stdout)")
            #expect(try a.ivy.count("SELECT count(*) FROM sync_queue") == 1)
            let synced = try #require(try await a.ivy.run("sync", "--json").json() as? [String: Any])
            #expect((synced["uploaded"] as? [String: Int])?["books"] == 1, "\(synced)")
            #expect(
                try a.ivy.sql("SELECT title FROM books ORDER BY title").map { $0["title"] as String } == [
                    "Book 0", "Book 1", "Book 2",
                ])
        }
    }

    @Test("a clip deleted on another device comes back with its MP3 from `restore --at WHEN ID`")
    func clipDeletedElsewhere() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let b = try await SignInHarness.signedIn(emulator)
            let book = try await a.ivy.id("book", "add", "--title", "Dune")
            let audio = try a.ivy.mp3("litany.mp3", size: 5000, header: Array("ID3\u{4}\0fear".utf8))
            let clip = try await a.ivy.id(
                "clip", "add", "--book", book, "--start", "10", "--duration", "5", "--audio", audio, "--note", "fear")
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            let original = try #require(FileManager.default.contents(atPath: b.ivy.home + "/audio/\(clip).mp3"))
            let before = try moment(b.ivy)
            #expect(try await a.ivy.run("clip", "delete", clip).status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            #expect(!FileManager.default.fileExists(atPath: b.ivy.home + "/audio/\(clip).mp3"))
            let versions = try #require(try await b.ivy.run("history", clip, "--json").json() as? [[String: Any]])
            #expect(versions.first?["deleted"] as? Bool == true && versions.first?["source"] as? String == "drive")
            #expect(versions.first.map { $0["entity"] is NSNull } == true)

            let restored = try await b.ivy.runBinaryAsync("restore", "--at", before, clip)
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(restored.stdout.contains("made again clip \(clip) (fear)"), "\(restored.stdout)")
            #expect(FileManager.default.contents(atPath: b.ivy.home + "/audio/\(clip).mp3") == original)
            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            let back = try #require(try await a.ivy.run("clip", "list", "--json").json() as? [[String: Any]])
            #expect(back.map { $0["id"] as? String } == [clip] && back.first?["note"] as? String == "fear")
            #expect(FileManager.default.contents(atPath: a.ivy.home + "/audio/\(clip).mp3") == original)
        }
    }

    @Test("history says a book is archived as book show and book list do: archived=yes, never hidden=true")
    func archivedIsOneWord() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        #expect(try await ivy.runBinaryAsync("book", "archive", book).status == 0)
        let history = try await ivy.runBinaryAsync("history", book)
        #expect(history.lines.dropFirst().first?.hasSuffix("here*   archived=yes") == true, "\(history.stdout)")
        #expect(history.stdout.contains("created artist=null artwork=null archived=no position=0"), "\(history.stdout)")
        #expect(!history.stdout.contains("hidden"), "\(history.stdout)")
        #expect(try await ivy.runBinaryAsync("book", "show", book).stdout.contains("\narchived  yes\n"))
    }

    @Test("a change written by sqlite3 appears in `ivy history`, and a restore is undone by restoring before it")
    func sqliteChangeAndUndo() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune", "--position", "600")
        let before = try moment(ivy)
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") {
            let sqlite = try await runChild(
                ChildCommand(
                    "/usr/bin/sqlite3",
                    [ivy.home + "/library.db", "UPDATE books SET title = 'Dune (edited)', position = 5;"]
                ))
            #expect(sqlite.exit == .exited(0), "\(sqlite.stderr)")
        } else {
            try ivy.execute("UPDATE books SET title = 'Dune (edited)', position = 5")
        }
        let versions = try #require(try await ivy.run("history", book, "--json").json() as? [[String: Any]])
        #expect(versions.count == 2)
        let newest = try #require(versions.first)
        #expect(newest["source"] as? String == "here" && newest["entity_type"] as? String == "book")
        #expect(newest["changed"] as? [String] == ["position", "title"] && newest["deleted"] as? Bool == false)
        #expect((newest["entity"] as? [String: Any])?["title"] as? String == "Dune (edited)")
        #expect(newest["time"] as? String != nil && newest["entity_id"] as? String == book)
        let table = try await ivy.run("history", book)
        #expect(table.lines.first?.hasPrefix("TIME") == true)
        #expect(table.stdout.contains("position=5 title=\"Dune (edited)\""), "\(table.stdout)")
        let library = try await ivy.run("history")
        #expect(library.lines.count == 4 && library.stdout.contains(book))
        // sqlite3 dated its version by this device's clock, which ivy did not check.
        #expect(newest["clock"] as? String == "device" && library.stdout.contains("here*"), "\(library.stdout)")
        #expect(library.lines.last?.hasPrefix("* dated by this machine's own clock") == true)

        // Restore, then undo the restore by restoring to just before it.
        let beforeRestore = try moment(ivy)
        let restored = try await ivy.run("restore", "--at", before, "--yes")
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try ivy.sql("SELECT title FROM books").first?["title"] == "Dune")
        let undone = try await ivy.run("restore", "--at", beforeRestore, book)
        #expect(undone.status == 0, "\(undone.stderr)")
        #expect(try ivy.sql("SELECT title, position FROM books").first?["title"] == "Dune (edited)")
        let sources = try #require(try await ivy.run("history", book, "--json").json() as? [[String: Any]])
        #expect(sources.prefix(2).map { $0["source"] as? String } == ["restore", "restore"])
    }

    /// Book "Dune" on two devices, retitled `there` on a and synced, then "Dune (laptop)" on b
    /// (the later write), whose sync merges the two: one conflict, recorded on b.
    static func titleConflict(_ emulator: GoogleEmulator, there: String) async throws
        -> (a: SignInHarness, b: SignInHarness, book: String)
    {
        let a = try await SignInHarness.signedIn(emulator)
        let b = try await SignInHarness.signedIn(emulator)
        let book = try await a.ivy.id("book", "add", "--title", "Dune")
        #expect(try await a.ivy.run("sync").status == 0)
        #expect(try await b.ivy.run("sync").status == 0)
        #expect(try await a.ivy.run("book", "update", book, "--title", there).status == 0)
        #expect(try await a.ivy.run("sync").status == 0)
        #expect(try await b.ivy.run("book", "update", book, "--title", "Dune (laptop)").status == 0)
        #expect(try await b.ivy.run("sync").status == 0)
        return (a, b, book)
    }

    @Test("a title changed on two devices: the merging device lists both titles and the rule, status counts it once")
    func conflictsYouCanSee() async throws {
        try await withEmulator { emulator in
            // Drive's title is long, and holds a C1 control: the table escapes it and cuts it.
            let phone = "Dune (phone)\u{9B}31m, the edition with a much longer subtitle"
            let (a, b, book) = try await Self.titleConflict(emulator, there: phone)

            let status = try #require(try await b.ivy.run("status", "--json").json() as? [String: Any])
            #expect(status["new_conflicts"] as? Int == 1, "\(status)")
            let table = try await b.ivy.run("status").stdout
            #expect(table.contains("conflicts         1 new; see `ivy history --conflicts`"), "\(table)")

            let listing = try await b.ivy.runBinaryAsync("history", "--conflicts")
            #expect(listing.status == 0, "\(listing.stderr)")
            #expect(listing.lines.first?.hasPrefix("TIME") == true && listing.lines.count == 2, "\(listing.stdout)")
            let row = listing.lines.last ?? ""
            let shownValues = ["\"Dune (laptop)\"  here", "\"Dune (phone)\\u{9B}31m", "…", "later_write"]
            for shown in ["book", "title"] + shownValues {
                #expect(row.contains(shown), "\(shown) in \(row)")
            }
            #expect(!row.contains("subtitle") && !row.unicodeScalars.contains("\u{9B}"), "\(row)")
            let listed = try #require(
                try await b.ivy.runBinaryAsync("history", "--conflicts", "--json").json() as? [[String: Any]])
            #expect(listed.count == 1)
            let conflict = try #require(listed.first)
            #expect(conflict["entity_type"] as? String == "book" && conflict["entity_id"] as? String == book)
            #expect(conflict["field"] as? String == "title" && conflict["rule"] as? String == "later_write")
            #expect(conflict["kept"] as? String == "Dune (laptop)" && conflict["lost"] as? String == phone)
            #expect(conflict["winner"] as? String == "here" && conflict["time"] is String)
            // Tied to the version the merge wrote, which holds the kept title.
            let versions = try #require(try await b.ivy.run("history", book, "--json").json() as? [[String: Any]])
            let version = try #require(versions.first { $0["version"] as? Int == conflict["version"] as? Int })
            #expect((version["entity"] as? [String: Any])?["title"] as? String == "Dune (laptop)")

            let after = try #require(try await b.ivy.run("status", "--json").json() as? [String: Any])
            #expect(after["new_conflicts"] as? Int == 0, "\(after)")
            #expect(try await b.ivy.run("status").stdout.contains("conflicts         none new"))
            // The device that did not merge has none to show; the merge reached it.
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await a.ivy.run("history", "--conflicts").stdout == "No conflicts recorded.\n")
            #expect(try a.ivy.sql("SELECT title FROM books").first?["title"] == "Dune (laptop)")
        }
    }

    @Test("history_days 0 stops the history, and the next sync purges it")
    func purge() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let book = try await a.ivy.id("book", "add", "--title", "Dune")
            _ = try await a.ivy.run("book", "update", book, "--position", "30")
            let status = try #require(try await a.ivy.run("status", "--json").json() as? [String: Any])
            #expect(status["history_versions"] as? Int == 2 && status["history_since"] is String)
            #expect((status["history_bytes"] as? Int ?? 0) > 0)
            #expect(try await a.ivy.run("config", "set", "history_days", "0").status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try a.ivy.count("SELECT count(*) FROM history") == 0)
            let table = try await a.ivy.run("status")
            #expect(table.stdout.contains("history           none kept"), "\(table.stdout)")
        }
    }

    @Test("WHEN that is no time exits 64 and says what is accepted")
    func badWhen() async throws {
        let ivy = try IvyHome()
        let result = try await ivy.run("restore", "--at", "yesterday", "--dry-run")
        #expect(result.status == 64 && result.stderr.contains("invalid --at 'yesterday'"), "\(result.stderr)")
        #expect(try await ivy.run("history", "--since", "2h").status == 0)
    }

    @Test("a restore killed inside its transaction leaves the library whole; run again, it restores")
    func killedRestore() async throws {
        let ivy = try IvyHome()
        let (book, clip, first, second) = try await ivy.clipWithTwoTakes()
        let before = try moment(ivy)
        #expect(try await ivy.run("clip", "update", clip, "--audio", second, "--note", "two").status == 0)
        #expect(try await ivy.run("book", "update", book, "--position", "99").status == 0)
        let library = try ivy.sql("SELECT * FROM books").description + ivy.sql("SELECT * FROM clips").description
        let queue = try ivy.sql("SELECT * FROM sync_queue ORDER BY entity_id").description
        let audio = FileManager.default.contents(atPath: ivy.home + "/audio/\(clip).mp3")

        let killed = try await ivy.runBinaryAsync(
            ["restore", "--at", before, "--yes"], environment: ["IVY_CRASH_AT": "restore.before-commit"])
        #expect(killed.status == 128 + SIGKILL, "\(killed.stderr)")
        #expect(try ivy.sql("SELECT * FROM books").description + ivy.sql("SELECT * FROM clips").description == library)
        #expect(try ivy.sql("SELECT * FROM sync_queue ORDER BY entity_id").description == queue)
        // The next opening of the library puts the audio back as it was (the MP3 that the
        // killed run had moved in goes).
        #expect(try await ivy.run("config", "set", "concurrency", "8").status == 0)
        #expect(FileManager.default.contents(atPath: ivy.home + "/audio/\(clip).mp3") == audio)

        let restored = try await ivy.runBinaryAsync("restore", "--at", before, "--yes")
        #expect(restored.status == 0, "\(restored.stderr) \(restored.stdout)")
        #expect(try ivy.sql("SELECT note FROM clips").first?["note"] == "one")
        #expect(
            FileManager.default.contents(atPath: ivy.home + "/audio/\(clip).mp3")
                == FileManager.default.contents(atPath: first))
    }

    /// Another program (the Ivy app) replaces only the clip's MP3 on Drive, as it does: the
    /// old file deleted, the new one created under the same JSON.
    func replaceMP3OnDrive(_ emulator: GoogleEmulator, clip: String, with content: Data) async throws {
        let old = try #require(
            await emulator.state.dump().first { $0.name == "clip_\(clip).mp3" && !$0.explicitlyTrashed })
        try await emulator.state.trash(id: old.id)
        await emulator.state.putFile(
            email: "alice@example.com", name: old.name, parents: old.parents, content: content, mimeType: "audio/mpeg")
    }

    @Test("an MP3 replaced alone on Drive is a version: `restore --at` a moment after the download gives it back")
    func mp3ReplacedAloneOnDrive() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let book = try await a.ivy.id("book", "add", "--title", "Dune")
            let first = try a.ivy.mp3("first.mp3", size: 3000, header: Array("ID3\u{4}\0first take".utf8))
            let clip = try await a.ivy.id(
                "clip", "add", "--book", book, "--start", "10", "--duration", "5", "--audio", first, "--note", "fear")
            #expect(try await a.ivy.run("sync").status == 0)
            let second = Data("ID3\u{4}\0second take, from the app".utf8) + Data(repeating: 7, count: 4000)
            try await replaceMP3OnDrive(emulator, clip: clip, with: second)
            #expect(try await a.ivy.run("sync").status == 0)
            let audio = a.ivy.home + "/audio/\(clip).mp3"
            #expect(FileManager.default.contents(atPath: audio) == second)
            let versions = try #require(try await a.ivy.run("history", clip, "--json").json() as? [[String: Any]])
            #expect(versions.first?["source"] as? String == "drive", "the download is a version: \(versions)")
            #expect(versions.first?["changed"] as? [String] == ["audio"], "\(versions)")
            let afterDownload = try moment(a.ivy)
            #expect(try await a.ivy.run("clip", "update", clip, "--note", "later").status == 0)

            let restored = try await a.ivy.runBinaryAsync("restore", "--at", afterDownload, clip)
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(try a.ivy.sql("SELECT note FROM clips").first?["note"] == "fear")
            #expect(FileManager.default.contents(atPath: audio) == second, "the MP3 it had then, byte for byte")
            // So the next sync sends the note, never the old MP3 over Drive's.
            #expect(try await a.ivy.run("sync").status == 0)
            let onDrive = try #require(
                await emulator.state.dump().first { $0.name == "clip_\(clip).mp3" && !$0.explicitlyTrashed })
            #expect(onDrive.content == second)
        }
    }

    @Test("a kept MP3 cut short is never restored, and `ivy check` removes it and says so")
    func keptFileCutShort() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let book = try await a.ivy.id("book", "add", "--title", "Dune")
            let first = try a.ivy.mp3("first.mp3", size: 30000, header: Array("ID3\u{4}\0first".utf8))
            let second = try a.ivy.mp3("second.mp3", size: 4000, header: Array("ID3\u{4}\0second".utf8))
            let clip = try await a.ivy.id(
                "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", first, "--note", "one")
            let before = try moment(a.ivy)
            #expect(try await a.ivy.run("clip", "update", clip, "--audio", second).status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            // The first take, kept by its md5 when the second replaced it: the only kept MP3.
            let names = try FileManager.default.contentsOfDirectory(atPath: a.ivy.home + "/history")
            #expect(names.count == 1, "\(names)")
            let md5 = String(try #require(names.first).prefix { $0 != "." })
            let kept = a.ivy.home + "/history/\(md5).mp3"
            #expect(FileManager.default.contents(atPath: kept) == FileManager.default.contents(atPath: first))
            // A copy cut short under its final name (a kill mid-copy, before kept files were
            // written under a temporary name), or changed in place since.
            let handle = try #require(FileHandle(forWritingAtPath: kept))
            try handle.truncate(atOffset: 1000)
            try handle.close()
            let audio = a.ivy.home + "/audio/\(clip).mp3"
            let now = FileManager.default.contents(atPath: audio)

            let restore = try await a.ivy.runBinaryAsync("restore", "--at", before, clip)
            #expect(restore.status != 0, "\(restore.stdout)")
            #expect(FileManager.default.contents(atPath: audio) == now, "the short copy was restored as the recording")

            let check = try await a.ivy.run("check")
            #expect(check.status == 6, "\(check.stdout)\(check.stderr)")
            #expect(
                check.stdout.contains("damaged_kept_audio: history/\(md5).mp3: holds 1000 bytes"), "\(check.stdout)")
            #expect(!FileManager.default.fileExists(atPath: kept))
        }
    }

    @Test("history turned off and on with no sync between: a version never takes another version's MP3")
    func historyOffAndOn() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let takes = try ["one", "two", "three"].map {
            try ivy.mp3("\($0).mp3", size: 3000, header: Array("ID3\u{4}\0\($0)".utf8))
        }
        let clip = try await ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", takes[0], "--note", "one")
        let first = try moment(ivy)
        #expect(try await ivy.run("config", "set", "history_days", "0").status == 0)
        #expect(try await ivy.run("clip", "update", clip, "--audio", takes[1]).status == 0)
        #expect(try await ivy.run("config", "set", "history_days", "365").status == 0)
        #expect(try await ivy.run("clip", "update", clip, "--audio", takes[2]).status == 0)

        // The first version's MP3 was replaced while the history was off, so it is not kept: the
        // restore puts back no MP3 rather than the second take, which no version of then had.
        _ = try await ivy.run("restore", "--at", first, clip)
        let audio = FileManager.default.contents(atPath: ivy.home + "/audio/\(clip).mp3")
        #expect(audio != FileManager.default.contents(atPath: takes[1]), "the first version took the second take")
        #expect(audio == FileManager.default.contents(atPath: takes[2]))
    }
}
