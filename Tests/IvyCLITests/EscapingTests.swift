import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// Whether `text` holds a control character other than the newlines that end its lines.
func hasControlCharacters(_ text: String) -> Bool {
    text.unicodeScalars.contains { $0 != "\n" && ($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) }
}

@Suite("Control characters in what ivy prints and logs")
struct EscapingTests {
    let ivy: IvyHome
    init() throws { ivy = try IvyHome() }

    /// A title that clears the screen, sets the terminal title, and starts a second line.
    static let title = "Evil\u{1B}[2J\u{1B}]0;pwned\u{7} title\nsecond\u{9B}31m line\u{7F}"

    @Test("titles, artists, notes and settings written by another program are escaped in tables and show")
    func tablesAndShow() async throws {
        let book = try await ivy.id("book", "add", "--title", "Plain")
        let clip = try await ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", try ivy.mp3("a.mp3"))
        let library = try DatabaseQueue(path: ivy.home + "/library.db")
        try await library.write { db in
            try db.execute(
                sql: "UPDATE books SET title = ?, artist = ?, artwork = ?",
                arguments: [Self.title, "A\tB", "\u{1B}[5m"])
            try db.execute(
                sql: "UPDATE clips SET note = ?, transcription = ?", arguments: ["\u{1B}[31mred\nnext", "\r\u{1B}[K"])
            try db.execute(
                sql: "INSERT INTO settings (key, value) VALUES ('client_id', ?), ('last_error', ?)",
                arguments: ["id\u{1B}[8m", "failed\n\u{1B}[2Jforged"])
            try db.execute(sql: "UPDATE sync_queue SET last_error = ?", arguments: ["Drive said \u{1B}[41mno"])
        }
        try library.close()

        let runs: [([String], [String])] = [
            (["book", "list"], [#"Evil\u{1B}[2J\u{1B}]0;pwned\u{7} title …"#, #"A\tB"#]),
            (["book", "list", "--all"], [#"Evil\u{1B}[2J"#]),
            (
                ["book", "show", book],
                [#"Evil\u{1B}[2J\u{1B}]0;pwned\u{7} title\nsecond\u{9B}31m line\u{7F}"#, #"\u{1B}[5m"#]
            ),
            (["clip", "list"], [#"\u{1B}[31mred …"#]),
            (["clip", "show", clip], [#"\u{1B}[31mred\nnext"#, #"\r\u{1B}[K"#]),
            (["config", "list"], [#"id\u{1B}[8m"#]), (["config", "get", "client_id"], [#"id\u{1B}[8m"#]),
            (["status"], [#"failed\n\u{1B}[2Jforged"#]), (["queue"], [#"Drive said \u{1B}[41mno"#]),
        ]
        for (arguments, expected) in runs {
            let result = try await ivy.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(!hasControlCharacters(result.stdout), "\(arguments): \(result.stdout.debugDescription)")
            for text in expected {
                #expect(result.stdout.contains(text), "\(arguments): \(result.stdout)")
            }
        }
        #expect(try await ivy.run("book", "list").lines.count == 2, "one line per book")
        // JSON keeps the text exactly, escaped by the encoder.
        let json = try #require(try await ivy.run("book", "show", book, "--json").json() as? [String: Any])
        #expect(json["title"] as? String == Self.title)
    }

    @Test("an error message that echoes such text escapes it")
    func errors() async throws {
        let book = try await ivy.id("book", "add", "--title", "Plain")
        let audio = ivy.path + "/no\u{1B}[2Jsuch\nfile.mp3"
        let result = try await ivy.run(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", audio)
        #expect(result.status == 1)
        #expect(result.stderr.contains(#"no\u{1B}[2Jsuch\nfile.mp3"#), "\(result.stderr)")
        #expect(!hasControlCharacters(result.stderr), "\(result.stderr.debugDescription)")
    }

    @Test("a Drive file name with a newline cannot forge a line of ivy.log")
    func driveNamesInTheLog() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            #expect(try await device.ivy.run("sync").status == 0)
            let books = try #require(await emulator.state.dump().first { $0.isFolder && $0.name == "books" })
            await emulator.state.putFile(
                email: "alice@example.com", name: "x\n2026-01-01T00:00:00Z error forged\u{1B}[2J", parents: [books.id],
                content: Data("{}".utf8))
            let sync = try await device.ivy.run("sync")
            #expect(sync.status == 0, "\(sync.stderr)")
            let log = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains(#"x\n2026-01-01T00:00:00Z error forged\u{1B}[2J"#), "\(log)")
            #expect(!log.split(separator: "\n").contains { $0.hasPrefix("2026-01-01T00:00:00Z") })
            #expect(!hasControlCharacters(log))
            let dryRun = try await device.ivy.run("sync", "--dry-run")
            #expect(!hasControlCharacters(dryRun.stdout + dryRun.stderr))
        }
    }
}
