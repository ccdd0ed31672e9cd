import Foundation
import IvyCore
import IvySystem
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("Audio on its way in from Drive")
struct AudioStagingTests {
    @Test("a download is staged as a .download- file in the private audio directory; leftovers go, audio stays")
    func staging() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        let staged = try library.downloadStagingPath()
        let directory = home.paths.audioDirectory
        #expect((staged as NSString).deletingLastPathComponent == directory)
        #expect((staged as NSString).lastPathComponent.hasPrefix(TransferFiles.downloadPrefix))
        var info = stat()
        #expect(stat(directory, &info) == 0 && info.st_mode & 0o7777 == 0o700)

        for name in [(staged as NSString).lastPathComponent, ".upload-1", "c1.mp3"] {
            _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data("ID3".utf8))
        }
        #expect(library.hasAudio(clipID: "c1"))
        #expect(try await library.audioMD5(clipID: "c1") == MD5.hex(Data("ID3".utf8)))
        library.removeTransferLeftovers()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["c1.mp3"])
        library.removeAudio(clipID: "c1")
        #expect(!library.hasAudio(clipID: "c1"))
        #expect(try await library.audioMD5(clipID: "c1") == nil)
    }
}
