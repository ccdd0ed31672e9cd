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
}
