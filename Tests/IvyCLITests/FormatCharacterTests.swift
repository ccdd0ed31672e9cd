import Foundation
import GoogleEmulator
import IvyProcesses
import IvyTestSupport
import Testing

/// Whether `text` holds a character a terminal would not show as itself: a control character
/// other than the newlines that end lines, a line or paragraph separator, or a format
/// character (bidi overrides, isolates and marks among them) other than the two joiners.
func hasFormatCharacters(_ text: String) -> Bool {
    text.unicodeScalars.contains { scalar in
        switch scalar.value {
        case 0x0A, 0x200C, 0x200D: false
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029: true
        default: scalar.properties.generalCategory == .format
        }
    }
}

/// Issue 40 #5: bidi and line-separator characters in text from Drive are escaped as control
/// characters are, so a row cannot display reversed and spoof an id or a path. One test per
/// view, each through the built ivy.
@Suite("Bidi and line-separator characters from Drive, escaped")
struct FormatCharacterTests {
    /// A title another device wrote: right-to-left override, an isolate, a right-to-left mark,
    /// the Arabic letter mark, a zero-width space and a line separator.
    static let title = "Inv\u{202E}fdp.exe\u{2066}x\u{2069}\u{200F}\u{61C}\u{200B}\u{2028}forged"
    static let escaped = #"Inv\u{202E}fdp.exe\u{2066}x\u{2069}\u{200F}\u{61C}\u{200B}\u{2028}forged"#
    static let id = "0badb1d1-0000-4000-8000-000000000000"

    /// A signed-in device whose Drive got a book with that title from another device; the
    /// first sync (folders made) has run, the book's is left to the caller.
    private static func device(_ emulator: GoogleEmulator) async throws -> SignInHarness {
        let device = try await SignInHarness.signedIn(emulator)
        #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
        let books = try #require(await emulator.state.dump().first { $0.isFolder && $0.name == "books" })
        let object: [String: Any] = [
            "id": id, "title": title, "artist": "A\u{202E}B", "position": 0, "hidden": false, "created_at": 1,
            "updated_at": 1,
        ]
        await emulator.state.putFile(
            email: "alice@example.com", name: "book_\(id).json", parents: [books.id],
            content: try JSONSerialization.data(withJSONObject: object), mimeType: "application/json")
        return device
    }

    @Test("sync -v: the downloaded book's title")
    func syncVerbose() async throws {
        try await withEmulator { emulator in
            let device = try await Self.device(emulator)
            let sync = try await device.ivy.runBinaryAsync("sync", "-v")
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(sync.stdout.contains("downloaded book \(Self.id) \"\(Self.escaped)\""), "\(sync.stdout)")
            #expect(!hasFormatCharacters(sync.stdout + sync.stderr), "\(sync.stdout.debugDescription)")
        }
    }

    @Test("book show, and show --json, which keeps the title exactly")
    func show() async throws {
        try await withEmulator { emulator in
            let device = try await Self.device(emulator)
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
            let show = try await device.ivy.runBinaryAsync("book", "show", Self.id)
            #expect(show.status == 0, "\(show.stderr)")
            #expect(show.stdout.contains(Self.escaped) && show.stdout.contains(#"A\u{202E}B"#), "\(show.stdout)")
            #expect(!hasFormatCharacters(show.stdout), "\(show.stdout.debugDescription)")
            let json = try await device.ivy.runBinaryAsync("book", "show", Self.id, "--json")
            #expect(!hasFormatCharacters(json.stdout), "\(json.stdout.debugDescription)")
            #expect((try json.json() as? [String: Any])?["title"] as? String == Self.title)
        }
    }

    @Test("history: the version the download made")
    func history() async throws {
        try await withEmulator { emulator in
            let device = try await Self.device(emulator)
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
            let history = try await device.ivy.runBinaryAsync("history")
            #expect(history.status == 0, "\(history.stderr)")
            #expect(history.stdout.contains(#"title="Inv\u{202E}fdp.exe"#), "\(history.stdout)")
            #expect(!hasFormatCharacters(history.stdout), "\(history.stdout.debugDescription)")
        }
    }

    @Test("the log, as text and as JSON: a Drive file name")
    func log() async throws {
        try await withEmulator { emulator in
            let device = try await Self.device(emulator)
            let books = try #require(await emulator.state.dump().first { $0.isFolder && $0.name == "books" })
            let name = "notes\u{202E}txt.exe\u{2028}x"
            await emulator.state.putFile(
                email: "alice@example.com", name: name, parents: [books.id], content: Data("{}".utf8))
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
            let path = device.ivy.home + "/ivy.log"
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.contains(#"notes\u{202E}txt.exe\u{2028}x"#), "\(text)")
            #expect(!hasFormatCharacters(text), "\(text.debugDescription)")

            try FileManager.default.removeItem(atPath: path)
            #expect(try await device.ivy.runBinaryAsync("config", "set", "log_format", "json").status == 0)
            #expect(try await device.ivy.runBinaryAsync("sync", "--full").status == 0)
            let json = try String(contentsOfFile: path, encoding: .utf8)
            #expect(!hasFormatCharacters(json), "\(json.debugDescription)")
            let entities = try json.split(separator: "\n").compactMap {
                (try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["entity"] as? String
            }
            #expect(entities.contains(name), "the JSON still says exactly what Drive has: \(entities)")
        }
    }

    @Test("login: the verification URL Google sends")
    func loginCode() async throws {
        try await withEmulator { emulator in
            let ivy = try SignInHarness(emulator: emulator).ivy
            await emulator.state.addFault(
                FaultRule(
                    method: "POST", pathContains: "/device/code",
                    jsonFields: ["verification_url": #""https://example.com/\u202Edevice\u2028x""#]))
            await emulator.state.setDeviceCode(interval: 0)
            let login = RunResult(
                try await signInAsAPerson(ivy.command(["login"]), at: emulator.state, as: "alice@example.com"))
            #expect(login.status == 0, "\(login.stderr)")
            #expect(login.stdout.contains(#"https://example.com/\u{202E}device\u{2028}x"#), "\(login.stdout)")
            #expect(!hasFormatCharacters(login.stdout + login.stderr), "\(login.stdout.debugDescription)")
        }
    }
}
