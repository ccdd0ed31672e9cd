import Foundation
import GRDB
import IvyTestSupport
import Testing

/// Issue 48, item 6: five small findings, each through the built `ivy`.
@Suite("ivy's lows: whole restore lines, a killed import's copies, twice-named entries, full disks, shared ids")
struct LowFindingsTests {
    @Test("restore and restore --dry-run print every word into a pipe, whatever COLUMNS says")
    func restoreLinesWhole() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let then = try HistoryCommandTests().moment(ivy)
        let title = "The Hitchhiker's Guide to the Galaxy: the trilogy in five parts, read by Stephen Fry"
        let book = try await ivy.id("book", "add", "--title", title)
        for columns in ["80", "200"] {
            let named = try await ivy.runBinaryAsync(
                ["restore", "--at", then, book], environment: ["COLUMNS": columns])
            #expect(named.status == 0, "\(named.stderr)")
            #expect(
                named.stdout.contains(
                    "left book \(book): it did not exist then; only a whole-library restore deletes it\n"),
                "\(named.stdout)")
            // Not "it is as it was" of a book that did not exist then.
            #expect(
                named.stdout.hasSuffix("\nNothing restored: what was named is left as it is (said above).\n"),
                "\(named.stdout)")
            let dry = try await ivy.runBinaryAsync(
                ["restore", "--at", then, "--dry-run"], environment: ["COLUMNS": columns])
            #expect(dry.status == 0, "\(dry.stderr)")
            #expect(dry.stdout.contains("would delete book \(book) (\(title)): made after "), "\(dry.stdout)")
        }
    }

    /// Every file under `directory` whose name says it is an MP3 on its way in.
    static func incoming(under directory: String) -> [String] {
        let all = FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []
        return all.filter { $0.contains(".incoming-") || $0.contains(".importing") }
    }

    @Test(
        "what a killed import copied in is gone after the next command, even one that only reads",
        arguments: ["import.after-copy", "import.before-commit"])
    func killedImportLeavesNothing(_ point: String) async throws {
        let a = try IvyHome()
        let (_, clip, audio) = try await ArchiveTests.library(a)
        let file = a.path + "/library.zip"
        #expect(try await a.runBinaryAsync("export", file).status == 0)
        let b = try IvyHome()
        let killed = try await b.runBinaryAsync("import", file, environment: ["IVY_CRASH_AT": point])
        #expect(killed.status == 128 + 9 || killed.status == -9 || killed.status == 9, "\(killed.status)")
        if point == "import.after-copy" {
            // Killed with the MP3 copied out and not yet in place: that copy is what must not stay.
            #expect(Self.incoming(under: b.home).contains { $0.hasSuffix(".mp3") }, "\(b.files())")
        }
        let listed = try await b.runBinaryAsync("book", "list")
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(Self.incoming(under: b.home).isEmpty, "\(b.files())")
        #expect(!FileManager.default.fileExists(atPath: b.home + "/audio/\(clip).mp3"))
        let again = try await b.runBinaryAsync("import", file)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: b.home + "/audio/\(clip).mp3")) == audio)
        #expect(Self.incoming(under: b.home).isEmpty, "\(b.files())")
    }

    @Test("an export to a full disk says the disk is full, where, and the fix, and leaves nothing there")
    func exportToFullDisk() async throws {
        let a = try IvyHome()
        _ = try await ArchiveTests.library(a)
        let out = a.path + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        let result = try await a.run(on: .full(leaving: 8 << 10), "export", out + "/library.zip", over: out)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix(
                "Error: no space left on device for \(out)/library.zip: free some space on that disk"),
            "\(result.stderr)")
        #expect(a.files(under: out).isEmpty, "\(a.files(under: out))")
    }

    @Test("an import onto a full disk says the disk is full, where, and the fix, not that the archive is damaged")
    func importToFullDisk() async throws {
        let a = try IvyHome()
        let book = try await a.id("book", "add", "--title", "Dune")
        let audio = try a.mp3("long.mp3", size: 3 << 20)
        _ = try await a.id("clip", "add", "--book", book, "--start", "0", "--duration", "5", "--audio", audio)
        let file = a.path + "/library.zip"
        #expect(try await a.runBinaryAsync("export", file).status == 0)
        let b = try IvyHome()
        try FileManager.default.createDirectory(
            atPath: b.home, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        // Room for the library, not for the MP3.
        let result = try await b.run(on: .full(leaving: 1 << 20), "import", file)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: no space left on device for \(b.home)/audio: "), "\(result.stderr)")
        #expect(result.stderr.contains("free some space on that disk"), "\(result.stderr)")
        #expect(!result.stderr.contains("damaged") && !result.stderr.contains("changed while"), "\(result.stderr)")
        #expect(Self.incoming(under: b.home).isEmpty, "\(b.files())")
        #expect(try b.count("SELECT count(*) FROM books") + b.count("SELECT count(*) FROM clips") == 0)
    }

    @Test("an id a book and a clip share is refused by history and restore, naming both; book: and clip: pick one")
    func sharedID() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let other = try await ivy.id("book", "add", "--title", "Emma")
        // Another program wrote a clip with the book's id.
        try ivy.execute(
            """
            INSERT INTO clips (id, book_id, start, duration, note, created_at, updated_at)
            VALUES ('\(book)', '\(other)', 0, 5, 'The litany', 1, 1)
            """)
        let then = try HistoryCommandTests().moment(ivy)
        for arguments in [["history", book], ["history", String(book.prefix(8))], ["restore", "--at", then, book]] {
            let refused = try await ivy.runBinaryAsync(arguments)
            #expect(refused.status == 64, "\(arguments): \(refused.stderr)")
            #expect(
                refused.stderr.hasPrefix(
                    "Error: \(book) is the id of a book and of a clip; give book:\(book) or clip:\(book) to say "
                        + "which:"),
                "\(refused.stderr)")
            #expect(refused.stderr.contains("  book \(book)  Dune"), "\(refused.stderr)")
            #expect(refused.stderr.contains("  clip \(book)  Emma"), "\(refused.stderr)")
        }
        let books = try await ivy.runBinaryAsync("history", "book:\(book)", "--json")
        let clips = try await ivy.runBinaryAsync("history", "clip:" + String(book.prefix(8)), "--json")
        #expect(books.status == 0 && clips.status == 0, "\(books.stderr)\(clips.stderr)")
        let bookVersions = try #require(try books.json() as? [[String: Any]])
        let clipVersions = try #require(try clips.json() as? [[String: Any]])
        #expect(!bookVersions.isEmpty && bookVersions.allSatisfy { $0["entity_type"] as? String == "book" })
        #expect(!clipVersions.isEmpty && clipVersions.allSatisfy { $0["entity_type"] as? String == "clip" })
        let restored = try await ivy.runBinaryAsync("restore", "--at", then, "clip:\(book)")
        #expect(restored.status == 0, "\(restored.stderr)")

        // The trash takes either kind too: an entry of each.
        let clipJSON =
            #"{"book_id":"\#(other)","created_at":1,"duration":5,"id":"\#(book)","note":"The litany","start":0,"#
            + #""updated_at":1}"#
        try ivy.execute(
            """
            INSERT INTO trash (entity_type, entity_id, reason, trashed_at, json) VALUES
                ('book', '\(book)', 'merge', 1000, '\(IDPrefixTests.bookJSON(book, "Dune (then)"))'),
                ('clip', '\(book)', 'merge', 1000, '\(clipJSON)');
            """)
        let both = try await ivy.runBinaryAsync("trash", "restore", book)
        #expect(both.status == 64, "\(both.stderr)")
        #expect(both.stderr.contains("is the id of a book and of a clip in the trash"), "\(both.stderr)")
        #expect(both.stderr.contains("book:\(book) or clip:\(book)"), "\(both.stderr)")
        let picked = try await ivy.runBinaryAsync("trash", "restore", "book:\(book)", "--yes")
        #expect(picked.status == 0, "\(picked.stderr)")
        #expect(picked.stdout.hasPrefix("Restored book \(book) from trash entry "), "\(picked.stdout)")
        #expect(try ivy.sql("SELECT title FROM books WHERE id = '\(book)'").first?["title"] == "Dune (then)")
    }
}
