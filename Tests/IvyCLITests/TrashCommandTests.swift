import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

@Suite("ivy trash")
struct TrashCommandTests {
    /// Two devices of one account with one synced book and clip; the clip is then deleted on
    /// `a`, and `b`'s sync deletes it there too (into `b`'s trash). `CrashPointCLITests` starts
    /// from it too.
    static func clipDeletedElsewhere(_ emulator: GoogleEmulator) async throws -> (
        a: SignInHarness, b: SignInHarness, clip: String
    ) {
        let a = try await SignInHarness.signedIn(emulator)
        let b = try await SignInHarness.signedIn(emulator)
        try await a.addLibrary(books: 1, clips: 1)
        #expect(try await a.ivy.run("sync").status == 0)
        #expect(try await b.ivy.run("sync").status == 0)
        let clips = try #require(try await b.ivy.run("clip", "list", "--json").json() as? [[String: Any]])
        let clip = try #require(clips.first?["id"] as? String)
        #expect(try await a.ivy.run("clip", "delete", clip).status == 0)
        #expect(try await a.ivy.run("sync").status == 0)
        let synced = try await b.ivy.run("sync")
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect((try await b.ivy.run("clip", "list", "--json").json() as? [Any])?.isEmpty == true)
        return (a, b, clip)
    }

    @Test("a clip deleted on another device is listed, restored with `ivy trash restore`, and reaches every device")
    func restoreReachesEveryDevice() async throws {
        try await withEmulator { emulator in
            let (a, b, clip) = try await Self.clipDeletedElsewhere(emulator)
            let listed = try #require(try await b.ivy.run("trash", "list", "--json").json() as? [[String: Any]])
            #expect(listed.count == 1)
            let entry = try #require(listed.first)
            #expect(entry["entity_type"] as? String == "clip" && entry["entity_id"] as? String == clip)
            #expect(entry["reason"] as? String == "deleted" && entry["why"] as? String == "deleted by sync")
            #expect(entry["note"] as? String == "note 0" && entry["has_audio"] as? Bool == true)
            #expect((entry["backup"] as? [String: Any])?["id"] as? String == clip)
            #expect(entry["trashed_at"] is String && entry["trashed_at_ms"] is Int, "\(entry)")
            let id = try #require(entry["id"] as? Int)

            let table = try await b.ivy.run("trash", "list")
            #expect(table.lines.first?.hasPrefix("ID") == true)
            #expect(table.stdout.contains("deleted by sync (with MP3)") && table.stdout.contains("note 0"))

            let restored = try await b.ivy.run("trash", "restore", String(id))
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(restored.stdout.contains("Restored clip \(clip) from trash entry \(id)"))
            #expect(try await b.ivy.run("trash", "list").stdout == "The trash is empty.\n")
            #expect(try b.ivy.count("SELECT count(*) FROM sync_queue WHERE entity_id = '\(clip)'") == 1)

            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            let back = try #require(try await a.ivy.run("clip", "list", "--json").json() as? [[String: Any]])
            #expect(back.map { $0["id"] as? String } == [clip] && back.first?["note"] as? String == "note 0")
            #expect(
                FileManager.default.contents(atPath: a.ivy.home + "/audio/\(clip).mp3")
                    == FileManager.default.contents(atPath: b.ivy.home + "/audio/\(clip).mp3"))
        }
    }

    @Test("trash restore takes the clip's id for its newest entry, and the history records it as a restore")
    func restoreByEntityID() async throws {
        try await withEmulator { emulator in
            let (_, b, clip) = try await Self.clipDeletedElsewhere(emulator)
            let restored = try await b.ivy.run("trash", "restore", clip)
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(restored.stdout.contains("Restored clip \(clip) from trash entry"))
            let versions = try #require(try await b.ivy.run("history", clip, "--json").json() as? [[String: Any]])
            #expect(versions.prefix(2).map { $0["source"] as? String } == ["restore", "drive"])
            #expect(versions.first?["deleted"] as? Bool == false)
            let missing = try await b.ivy.run("trash", "restore", clip)
            #expect(missing.status == 1 && missing.stderr.contains("no trash entry for \(clip)"), "\(missing.stderr)")
        }
    }

    @Test("trash list shows the clip's id cut short, and trash restore takes that prefix")
    func restoreByPrefix() async throws {
        try await withEmulator { emulator in
            let (_, b, clip) = try await Self.clipDeletedElsewhere(emulator)
            let cut = String(clip.prefix(8))
            let table = try await b.ivy.run("trash", "list")
            #expect(table.stdout.contains("  clip  \(cut)  note 0  "), "\(table.stdout)")
            #expect(!table.stdout.contains(clip))
            #expect(try await b.ivy.run("trash", "list", "--full-ids").stdout.contains("  clip  \(clip)  "))
            let restored = try await b.ivy.run("trash", "restore", cut)
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(restored.stdout.contains("Restored clip \(clip) from trash entry"), "\(restored.stdout)")
        }
    }

    @Test("trash restore over a clip made again since refuses without --yes (exit 64); --yes keeps what it replaces")
    func restoreOverNewer() async throws {
        try await withEmulator { emulator in
            let (_, b, clip) = try await Self.clipDeletedElsewhere(emulator)
            let listed = try #require(try await b.ivy.run("trash", "list", "--json").json() as? [[String: Any]])
            let id = try #require(listed.first?["id"] as? Int)
            let book: String = try #require(b.ivy.sql("SELECT id FROM books").first?["id"])
            // The app makes the clip again (a sync brought it here): newer than the entry.
            try b.ivy.execute(
                """
                INSERT INTO clips (id, book_id, start, duration, note, transcription, created_at, updated_at)
                VALUES ('\(clip)', '\(book)', 5, 5, 'made again', NULL, 1, 9000000000000)
                """)
            let refused = try await b.ivy.run("trash", "restore", String(id))
            #expect(refused.status == 64, "\(refused.stderr)")
            #expect(refused.stderr.contains("clip \(clip) here changed after trash entry \(id) was kept"))
            #expect(refused.stderr.contains("pass --yes"))
            #expect(try b.ivy.sql("SELECT note FROM clips").first?["note"] == "made again")

            let forced = try await b.ivy.run("trash", "restore", String(id), "--yes")
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(try b.ivy.sql("SELECT note FROM clips").first?["note"] == "note 0")
            let after = try #require(try await b.ivy.run("trash", "list", "--json").json() as? [[String: Any]])
            #expect(after.count == 1 && after.first?["reason"] as? String == "restore")
            #expect(after.first?["note"] as? String == "made again")
        }
    }

    @Test("a negative number given last is named as the invalid value, not taken for a missing one (issue 28 #14)")
    func negativeValues() async throws {
        let ivy = try IvyHome()
        let restore = try await ivy.run("trash", "restore", "-5")
        #expect(restore.status == 64, "\(restore.stderr)")
        #expect(restore.stderr.hasPrefix("Error: -5 is not a trash entry id"), "\(restore.stderr)")
        let days = try await ivy.run("config", "set", "trash_days", "-1")
        #expect(days.status == 64, "\(days.stderr)")
        #expect(days.stderr.hasPrefix("Error: invalid value '-1' for trash_days"), "\(days.stderr)")
        #expect(!(restore.stderr + days.stderr).contains("Missing expected argument"))
        // An option's negative value is still that option's, said as such.
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let position = try await ivy.run("book", "update", book, "--position", "-5")
        #expect(position.status == 64 && position.stderr.contains("invalid --position '-5'"), "\(position.stderr)")
    }

    @Test("trash restore of an unknown id says so and exits 1")
    func restoreUnknown() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let result = try await ivy.run("trash", "restore", "7")
        #expect(result.status == 1 && result.stderr.contains("no trash entry 7; `ivy trash list`"))
        #expect(try await ivy.run("trash", "list").stdout == "The trash is empty.\n")
        #expect((try await ivy.run("trash", "list", "--json").json() as? [Any])?.isEmpty == true)
    }

    /// Found by `ivy-soak --crash-check --story 'phone-replace,trash-restore' --crash-at
    /// store.commit.trash-restore:1`: the restore killed once it committed, run again, put back
    /// the clip whose id began with 1, over the phone's newer note.
    @Test("trash restore N once entry N is gone says so, whatever id in the trash starts with N's digits")
    func restoreGoneNumber() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let id = "1aaaaaaa-0000-4000-8000-000000000001"
        let json =
            #"{"artist":null,"artwork":null,"created_at":1,"hidden":false,"id":"\#(id)","position":0,"#
            + #""title":"Old","updated_at":2}"#
        try ivy.execute(
            "INSERT INTO trash (id, entity_type, entity_id, reason, trashed_at, json) VALUES (5, 'book', '\(id)', "
                + "'deleted', 3, '\(json)')")
        let result = try await ivy.run("trash", "restore", "1")
        #expect(result.status == 1 && result.stderr.contains("no trash entry 1; `ivy trash list`"), "\(result.stderr)")
        #expect(try ivy.count("SELECT count(*) FROM books WHERE id = '\(id)'") == 0, "nothing put back")
        #expect(try ivy.count("SELECT count(*) FROM trash") == 1)
        // Four characters are an id's start: that entry is put back.
        #expect(try await ivy.run("trash", "restore", "1aaa").status == 0)
        #expect(try ivy.count("SELECT count(*) FROM books WHERE id = '\(id)'") == 1)
    }

    @Test("trash empty needs --yes without a terminal (exit 64); on a terminal it asks, and only yes empties")
    func emptyAsks() async throws {
        try await withEmulator { emulator in
            let (_, b, _) = try await Self.clipDeletedElsewhere(emulator)
            let refused = try await b.ivy.run("trash", "empty")
            #expect(refused.status == 64 && refused.stderr.contains("pass --yes"))
            let declined = try await b.ivy.runOnTerminal(["trash", "empty"], typing: "n\n")
            #expect(declined.status == 0 && declined.stdout.hasSuffix("Nothing changed.\n"))
            #expect(declined.stdout.hasPrefix("Remove the 1 entry in the trash for good?"))
            #expect(try b.ivy.count("SELECT count(*) FROM trash") == 1)
            let files = try FileManager.default.contentsOfDirectory(atPath: b.ivy.home + "/trash")
            #expect(files.count == 1)
            let emptied = try await b.ivy.runOnTerminal(["trash", "empty"], typing: "y\n")
            #expect(emptied.status == 0 && emptied.stdout.hasSuffix("Removed 1 trash entry.\n"))
            #expect(try b.ivy.count("SELECT count(*) FROM trash") == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: b.ivy.home + "/trash").isEmpty)
            #expect(try await b.ivy.run("trash", "empty", "--yes").stdout == "Removed 0 trash entries.\n")
        }
    }

    @Test("trash_days takes 0 to 3650 days")
    func trashDaysSetting() async throws {
        let ivy = try IvyHome()
        #expect(try await ivy.run("config", "set", "trash_days", "0").status == 0)
        #expect(try await ivy.run("config", "get", "trash_days").stdout == "0\n")
        let refused = try await ivy.run("config", "set", "trash_days", "3651")
        #expect(refused.status != 0 && refused.stderr.contains("from 0 to 3650"))
    }
}
