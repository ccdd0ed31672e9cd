import Foundation
import Testing

@Suite("A relative --audio path")
struct RelativeAudioPathTests {
    @Test("is the file in the command's working directory, for add and for update, whoever runs the command")
    func relativeToWorkingDirectory() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        // IvyHome runs every command in its own directory, never the test process's.
        _ = try ivy.mp3("first.mp3", size: 300)
        let id = try await ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", "first.mp3")
        #expect(FileManager.default.contents(atPath: ivy.home + "/audio/\(id).mp3")?.count == 300)

        _ = try ivy.mp3("second.mp3", size: 500)
        let updated = try await ivy.run("clip", "update", id, "--audio", "second.mp3")
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(FileManager.default.contents(atPath: ivy.home + "/audio/\(id).mp3")?.count == 500)

        let missing = try await ivy.run("clip", "update", id, "--audio", "absent.mp3")
        #expect(missing.status != 0 && missing.stderr.contains(ivy.path + "/absent.mp3"))
    }
}
