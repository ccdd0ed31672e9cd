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

@Suite("The MP3 of a clip deleted by a killed ivy")
struct DeletedAudioSweepTests {
    @Test("a deleted clip's MP3 a kill left goes (looked for once an hour); a live or uncommitted new clip's stays")
    func sweep() async throws {
        let home = try TemporaryHome()
        let clock = TestClock.ticking()
        let library = try await LibraryDatabase(paths: home.paths, clock: clock.clock)
        let (book, deleted, live, adding): (BookID, ClipID, ClipID, ClipID) = (
            testID(1), testID(2), testID(3), testID(4)
        )
        try await library.addBook(id: book, title: "Dune", artist: nil, artwork: nil, position: 0)
        let bytes = Data("ID3".utf8) + Data(repeating: 5, count: 500)
        let take = home.path + "/take.mp3"
        try bytes.write(to: URL(fileURLWithPath: take))
        for clip in [deleted, live] {
            try await library.addClip(
                id: clip, bookID: book, start: 1, duration: 2, note: nil, transcription: nil, audio: take)
        }
        let md5 = try #require(try await library.audioMD5(clipID: deleted))
        try await library.deleteClip(id: deleted)
        // What a kill at `store.commit.clip-delete` leaves: the row gone, the MP3 still in place,
        // the very file the history keeps.
        let kept = home.paths.historyDirectory + "/" + md5 + ".mp3"
        #expect(link(kept, library.audioPath(clipID: deleted)) == 0)
        // A `clip add` of the same bytes between its MP3's rename into place and its commit.
        try bytes.write(to: URL(fileURLWithPath: library.audioPath(clipID: adding)))

        #expect(await library.removeDeletedClipsAudio() == 1)
        #expect(!FileManager.default.fileExists(atPath: library.audioPath(clipID: deleted)))
        #expect(FileManager.default.fileExists(atPath: kept))
        #expect(library.hasAudio(clipID: live))
        #expect(library.hasAudio(clipID: adding))
        // Hours on, a file of no clip whose bytes the history holds is a leftover too (the test
        // clock started before the file was written, seconds earlier on a loaded machine).
        clock.advance(seconds: 7_200)
        #expect(await library.removeDeletedClipsAudio() == 1)
        #expect(!library.hasAudio(clipID: adding))
        #expect(library.hasAudio(clipID: live))

        // An open library (a watch polling every few seconds) looks once an hour, not at every
        // poll: another kill's leftover waits for the next look.
        #expect(link(kept, library.audioPath(clipID: deleted)) == 0)
        clock.advance(seconds: 3_000)
        #expect(await library.removeDeletedClipsAudio() == 0)
        #expect(library.hasAudio(clipID: deleted))
        clock.advance(seconds: 600)
        #expect(await library.removeDeletedClipsAudio() == 1)
        #expect(!library.hasAudio(clipID: deleted))
    }
}
