import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 41, item 6: small answers that misled a newcomer, each said plainly now, through the
/// built binary.
@Suite("Answers that say what went wrong, through the binary")
struct PlainAnswersTests {
    @Test("an option before its command (ivy -v sync) is a usage error that says where it goes")
    func optionBeforeCommand() async throws {
        let ivy = try IvyHome()
        let verbose = try await ivy.runBinaryAsync("-v", "sync")
        #expect(verbose.status == 64)
        #expect(
            verbose.stderr.hasPrefix(
                "Error: -v is an option of `ivy sync`: put it after the command's name, as in `ivy sync -v` (only "
                    + "--home and --log-format go before it)\nUsage: ivy sync "), "\(verbose.stderr)")
        #expect(verbose.stdout.isEmpty)

        let two = try await ivy.runBinaryAsync("--home", ivy.home, "--dry-run", "--json", "sync")
        #expect(two.status == 64)
        #expect(
            two.stderr.hasPrefix(
                "Error: --dry-run --json are options of `ivy sync`: put them after the command's name, as in "
                    + "`ivy --home \(ivy.home) sync --dry-run --json`"), "\(two.stderr)")

        // An option the command does not take either is ArgumentParser's unknown option, as before.
        let unknown = try await ivy.runBinaryAsync("-v", "book", "list")
        #expect(unknown.status == 64)
        #expect(unknown.stderr.hasPrefix("Error: Unknown option '-v'"), "\(unknown.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ivy.home + "/library.db"), "nothing ran")
    }

    @Test("a book's id given to a clip command, or a clip's to a book command, is said to be one (exit 1)")
    func otherKindsID() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let clip = try await ivy.id(
            "clip", "add", "--book", book, "--start", "0", "--duration", "5", "--audio", try ivy.mp3("a.mp3"))
        let bookSays =
            "Error: \(book) is a book, not a clip: `ivy book show \(book)` shows it, and "
            + "`ivy clip list --book \(book)` its clips\n"
        for arguments in [["clip", "update", book, "--note", "x"], ["clip", "show", String(book.prefix(8))]] {
            let result = try await ivy.runBinaryAsync(arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr == bookSays, "\(arguments): \(result.stderr)")
        }
        let clipSays = "Error: \(clip) is a clip, not a book: `ivy clip show \(clip)` shows it and its book\n"
        let audio = try ivy.mp3("b.mp3")
        let adding = ["clip", "add", "--book", clip, "--start", "0", "--duration", "1", "--audio", audio]
        for arguments in [["book", "show", clip], adding] {
            let result = try await ivy.runBinaryAsync(arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr == clipSays, "\(arguments): \(result.stderr)")
        }
        #expect(try ivy.count("SELECT count(*) FROM clips WHERE note = 'x'") == 0)
    }

    @Test("an id that names nothing is an unknown id, exit 1, in history, restore and trash restore as elsewhere")
    func unknownWholeID() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let unknown = "3f2a9c1e-0000-4000-8000-000000000000"
        let cases: [([String], String)] = [
            (["history", unknown], "no book or clip \(unknown) in this library or its history"),
            (["history", "3f2a9c"], "no book or clip with an id starting 3f2a9c in this library or its history"),
            (["restore", "--at", "1h", unknown], "no book or clip \(unknown) in this library or its history"),
            (["trash", "restore", unknown], "no trash entry for \(unknown); `ivy trash list` shows the entries kept"),
            (["book", "show", unknown], "no book with id \(unknown); `ivy book list --all` shows every book"),
        ]
        for (arguments, message) in cases {
            let result = try await ivy.runBinaryAsync(arguments)
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            #expect(result.stderr == "Error: \(message)\n", "\(arguments)")
        }
    }

    @Test("a restore --at in the future, and history --since after --until, are refused saying so (exit 64)")
    func momentsOutOfOrder() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let versions = try ivy.count("SELECT count(*) FROM history")
        let future = try await ivy.runBinaryAsync("restore", "--at", "2099-01-01T00:00:00Z", "--yes")
        #expect(future.status == 64)
        #expect(
            future.stderr.hasPrefix("Error: --at '2099-01-01T00:00:00Z' is in the future (it is 20"),
            "\(future.stderr)")
        #expect(
            future.stderr.contains(
                " now): a restore goes back to a moment that has passed; give an earlier one (`ivy history` shows "
                    + "when each change was made)\n"), "\(future.stderr)")
        #expect(future.stdout.isEmpty, "\(future.stdout)")
        #expect(try ivy.count("SELECT count(*) FROM history") == versions, "nothing restored")

        let swapped = try await ivy.runBinaryAsync(
            "history", "--since", "2026-03-02T00:00:00Z", "--until", "2026-03-01T00:00:00Z")
        #expect(swapped.status == 64)
        #expect(
            swapped.stderr.hasPrefix(
                "Error: --since '2026-03-02T00:00:00Z' is after --until '2026-03-01T00:00:00Z': no change can be in "
                    + "that period; give --since the earlier moment\n"), "\(swapped.stderr)")
    }

    @Test("a duration ago in weeks (1w) is accepted, and named where WHEN's forms are listed")
    func weeks() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let week = try await ivy.runBinaryAsync("history", "--since", "1w", "--json")
        #expect(week.status == 0, "\(week.stderr)")
        #expect((try week.json() as? [Any])?.count == 1, "\(week.stdout)")
        let wrong = try await ivy.runBinaryAsync("history", "--since", "1y")
        #expect(wrong.status == 64)
        #expect(wrong.stderr.contains("a duration ago (90s, 90m, 2h, 3d, 1w)"), "\(wrong.stderr)")
        let help = try await ivy.runBinaryAsync("history", "--help")
        #expect(help.stdout.contains("1w)"), "\(help.stdout)")
    }

    @Test("a duration ago with a minus (-2h) is taken by --since, --until, restore --at and export --at")
    func minusDurations() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let since = try await ivy.runBinaryAsync("history", "--since", "-2h", "--until", "-0s", "--json")
        #expect(since.status == 0, "\(since.stderr)")
        #expect((try since.json() as? [Any])?.count == 1, "\(since.stdout)")
        // Two hours ago the library was empty: the dry run would delete Dune.
        let restore = try await ivy.runBinaryAsync("restore", "--at", "-2h", "--dry-run")
        #expect(restore.status == 0 && restore.stdout.contains("Dune"), "\(restore.stdout)\(restore.stderr)")
        let file = ivy.home + "/then.zip"
        let export = try await ivy.runBinaryAsync("export", "--at", "-0s", file)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(FileManager.default.fileExists(atPath: file))
    }

    @Test("a sync that skips files on Drive says how many, in good grammar, and which with why")
    func skippedOnDrive() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
            let books = try #require(
                await emulator.state.dump(email: "alice@example.com").first {
                    $0.name == "books" && $0.mimeType == DriveFile.folderType
                })
            await emulator.state.putFile(
                email: "alice@example.com", name: "notes.txt", parents: [books.id], content: Data("hi".utf8))
            let one = try await device.ivy.runBinaryAsync("sync")
            #expect(one.status == 0, "\(one.stderr)")
            #expect(
                one.stdout.contains("; skipped on Drive: notes.txt (not an ivy file name; left alone)\n"),
                "\(one.stdout)")
            #expect(!one.stdout.contains("files skipped"), "\(one.stdout)")

            await emulator.state.putFile(
                email: "alice@example.com", name: "cover.jpg", parents: [books.id], content: Data("jpg".utf8))
            let two = try await device.ivy.runBinaryAsync("sync")
            let more = " (not an ivy file name; left alone) and 1 more (`ivy sync -v` lists them, and why)\n"
            #expect(two.stdout.contains(more), "\(two.stdout)")
            #expect(two.stdout.contains("; 2 skipped on Drive: "), "\(two.stdout)")
        }
    }

    @Test("status's last error keeps the fix the failed sync printed", .timeLimit(.minutes(10)))
    func lastErrorKeepsTheFix() async throws {
        let device = try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
            return device
        }
        // The emulator is gone: every request is refused, and retried to the end of its budget
        // (15 s or so of real backoff in the binary).
        _ = try await device.ivy.id("book", "add", "--title", "Dune")
        let sync = try await device.ivy.runBinaryAsync("sync")
        #expect(sync.status == 1, "\(sync.stderr)")
        #expect(sync.stderr.contains("does not answer: if it was ivy-emulator, start it again"), "\(sync.stderr)")
        let printed = sync.stderr.replacingOccurrences(of: "Error: ", with: "").trimmingCharacters(in: .newlines)
        let status = try #require(try await device.ivy.runBinaryAsync("status", "--json").json() as? [String: Any])
        #expect(status["last_error"] as? String == printed, "\(status)")
        let text = try await device.ivy.runBinaryAsync("status")
        #expect(text.stdout.contains("start it again (with --state it listens"), "\(text.stdout)")
    }
}
