import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Testing

@Suite("files a killed command left beside the audio")
struct StagingLeftoverTests {
    @Test("an MP3 a killed command was copying in (.incoming-*) is removed by a sync once an hour old, not before")
    func incomingLeftovers() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 1)
            let audio = device.ivy.home + "/audio"
            let before = Set(try FileManager.default.contentsOfDirectory(atPath: audio))
            // What `clip add --audio` leaves when it is killed mid-copy.
            let leftover = audio + "/.incoming-0b7e3c2a-5d1f-4e8a-9c6b-2f4d8e1a7c35.mp3"
            #expect(FileManager.default.createFile(atPath: leftover, contents: Data("ID3 half a copy".utf8)))

            let fresh = try await device.ivy.run("sync")
            #expect(fresh.status == 0, "\(fresh.stderr)")
            #expect(FileManager.default.fileExists(atPath: leftover), "a running `clip add` may still be writing it")

            let hourLater = RunningCommand.realClock.now() + 3_700_000
            device.ivy.clock = WallClock { hourLater }
            let later = try await device.ivy.run("sync")
            #expect(later.status == 0, "\(later.stderr)")
            #expect(!FileManager.default.fileExists(atPath: leftover), "the killed command's copy stayed for good")
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: audio)) == before, "the clips' audio stays")
        }
    }
}
