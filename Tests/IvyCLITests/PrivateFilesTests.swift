import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

@Suite("ivy keeps its files to itself")
struct PrivateFilesTests {
    @Test("a sync removes the transfer files a killed run left, and nothing is written under ~/.cache")
    func leftoversAndCache() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 1)
            let audio = laptop.ivy.home + "/audio"
            let leftovers = [".download-0F8A2C1E", ".upload-5B7D9E3F"]
            for name in leftovers {
                #expect(FileManager.default.createFile(atPath: audio + "/" + name, contents: Data(count: 4096)))
            }
            let first = try await laptop.ivy.run("sync")
            #expect(first.status == 0, "\(first.stderr)")
            let remaining = try FileManager.default.contentsOfDirectory(atPath: audio)
            #expect(remaining.count == 1 && remaining.allSatisfy { $0.hasSuffix(".mp3") }, "\(remaining)")

            let desktop = try await SignInHarness.signedIn(emulator)
            let second = try await desktop.ivy.run("sync")
            #expect(
                second.status == 0 && second.stdout.hasPrefix("Synced: 2 downloaded"),
                "\(second.stdout) \(second.stderr)")
            for device in [laptop, desktop] {
                #expect(
                    !FileManager.default.fileExists(atPath: device.ivy.path + "/.cache"), "HOME is \(device.ivy.path)")
            }
        }
    }

    @Test("ivy given its own home creates nothing else in $HOME: no ~/.local/share/<binary dir>, no ~/.cache")
    func nothingOutsideTheHome() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 1)
            for arguments in [["sync"], ["status"], ["check"], ["sync", "--full"]] {
                let result = try await laptop.ivy.runBinaryAsync(arguments)
                #expect(result.status == 0, "ivy \(arguments): \(result.stderr)")
            }
            // The test's own clip audio is the one other thing there.
            let made = try FileManager.default.contentsOfDirectory(atPath: laptop.ivy.path).filter { $0 != "clip0.mp3" }
            #expect(made == ["home"], "HOME holds \(made)")
        }
    }
}
