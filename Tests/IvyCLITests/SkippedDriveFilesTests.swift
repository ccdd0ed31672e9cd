import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 40 #12: what ivy says of Drive files a sync cannot use leads somewhere. Through the
/// built ivy: `ivy check` gives advice a person can act on for a JSON that every sync skips,
/// and `sync -v` lists every skipped file with why, where it used to print a bare count.
@Suite("Drive files a sync skips: said with what to do")
struct SkippedDriveFilesTests {
    static let named = "5a5a5a5a-0000-4000-8000-000000000000"
    static let holds = "6b6b6b6b-0000-4000-8000-000000000000"

    /// A signed-in device that synced once (the folders exist), and Drive's books folder.
    private static func device(_ emulator: GoogleEmulator) async throws -> (SignInHarness, DriveFile) {
        let device = try await SignInHarness.signedIn(emulator)
        _ = try await device.ivy.id("book", "add", "--title", "Dune")
        #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
        let books = try #require(await emulator.state.dump().first { $0.isFolder && $0.name == "books" })
        return (device, books)
    }

    /// `book_<named>.json` holding the book `holds`: the name and the id disagree.
    private static func misnamed(_ emulator: GoogleEmulator, in books: DriveFile) async throws {
        let object: [String: Any] = [
            "id": holds, "title": "Emma", "position": 0, "hidden": false, "created_at": 1, "updated_at": 1,
        ]
        await emulator.state.putFile(
            email: "alice@example.com", name: "book_\(named).json", parents: [books.id],
            content: try JSONSerialization.data(withJSONObject: object), mimeType: "application/json")
    }

    @Test("check: a JSON whose id is not its name's is one every sync skips, with what to do in Drive")
    func checkAdvice() async throws {
        try await withEmulator { emulator in
            let (device, books) = try await Self.device(emulator)
            try await Self.misnamed(emulator, in: books)
            let sync = try await device.ivy.runBinaryAsync("sync")
            #expect(sync.status == 0, "\(sync.stderr)")
            let check = try await device.ivy.runBinaryAsync("check")
            #expect(check.status == 6, "\(check.stdout)\(check.stderr)")
            let line = check.lines.first { $0.contains("book \(Self.named)") } ?? check.stdout
            #expect(!line.contains("run `ivy sync` to download it"), "\(line)")
            #expect(line.contains("unreadable_json: book \(Self.named): "), "\(line)")
            #expect(line.contains("every sync skips it"), "\(line)")
            #expect(line.contains("it holds book \(Self.holds), not the book its name says"), "\(line)")
            #expect(line.contains("rename it book_\(Self.holds).json") && line.contains("or delete it"), "\(line)")
            #expect(line.contains("My Drive › Ivy › books"), "\(line)")
            // Renamed as advised, the next sync takes it.
            let file = try #require(
                await emulator.state.dump().first { $0.name == "book_\(Self.named).json" && !$0.explicitlyTrashed })
            try await emulator.state.trash(id: file.id)
            await emulator.state.putFile(
                email: "alice@example.com", name: "book_\(Self.holds).json", parents: [books.id],
                content: file.content, mimeType: "application/json")
            let after = try await device.ivy.runBinaryAsync("sync", "-v")
            #expect(after.stdout.contains("downloaded book \(Self.holds) \"Emma\""), "\(after.stdout)")
        }
    }

    @Test("sync -v lists every skipped Drive file with why; a plain sync says where to look")
    func verboseLists() async throws {
        try await withEmulator { emulator in
            let (device, books) = try await Self.device(emulator)
            try await Self.misnamed(emulator, in: books)
            await emulator.state.putFile(
                email: "alice@example.com", name: "notes.txt", parents: [books.id], content: Data("hi".utf8))
            let clips = try #require(await emulator.state.dump().first { $0.isFolder && $0.name == "clips" })
            let clip = "7c7c7c7c-0000-4000-8000-000000000000"
            await emulator.state.putFile(
                email: "alice@example.com", name: "clip_\(clip).json", parents: [clips.id], content: Data("{}".utf8),
                mimeType: "application/json")

            let verbose = try await device.ivy.runBinaryAsync("sync", "-v")
            #expect(verbose.status == 0, "\(verbose.stderr)")
            let skipped = verbose.lines.filter { $0.hasPrefix("skipped ") }
            #expect(skipped.count == 3, "\(verbose.stdout)")
            #expect(skipped.contains { $0.contains("book_\(Self.named).json") && $0.contains("ivy check") })
            #expect(skipped.contains { $0.contains("notes.txt") && $0.contains("not an ivy file name") })
            #expect(skipped.contains { $0.contains("clip \(clip)") && $0.contains("incomplete on Drive") })
            #expect(verbose.stdout.contains("; 3 Drive files skipped (above)"), "\(verbose.stdout)")

            let plain = try await device.ivy.runBinaryAsync("sync")
            #expect(plain.stdout.contains("; 3 skipped on Drive: "), "\(plain.stdout)")
            #expect(plain.stdout.contains(" and 2 more (`ivy sync -v` lists them, and why)\n"), "\(plain.stdout)")
        }
    }
}
