import Foundation
import GRDB
import IvyTestSupport
import Testing

/// Issue 48, item 6: five small findings, each through the built `ivy`.
@Suite("ivy's lows: whole restore lines, a killed import's copies, twice-named entries, full disks, shared ids")
struct LowFindingsTests {
    /// Every file under `directory` whose name says it is an MP3 on its way in.
    static func incoming(under directory: String) -> [String] {
        let all = FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []
        return all.filter { $0.contains(".incoming-") || $0.contains(".importing") }
    }

    @Test(
        "what a killed import copied in is gone after the next command, even one that only reads",
        arguments: ["import-after-copy", "import-before-commit"])
    func killedImportLeavesNothing(_ point: String) async throws {
        let a = try IvyHome()
        let (_, clip, audio) = try await ArchiveTests.library(a)
        let file = a.path + "/library.zip"
        #expect(try await a.runBinaryAsync("export", file).status == 0)
        let b = try IvyHome()
        let killed = try await b.runBinaryAsync("import", file, environment: ["IVY_TEST_KILL": point])
        #expect(killed.status == 128 + 9 || killed.status == -9 || killed.status == 9, "\(killed.status)")
        if point == "import-after-copy" {
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
}
