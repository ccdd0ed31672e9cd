import Foundation
import GRDB
import GoogleEmulator
import IvyGoogle
import IvySystem
import IvyTestSupport
import Testing

/// Issue 48, item 4: an MP3 whose bytes are replaced on Drive under the same file id (Drive's
/// "Manage versions → Upload new version", or any program's `files.update` with media) is read
/// by every device's next sync, kept in the history, and never uploaded over unread.
@Suite("an MP3 replaced in place on Drive")
struct InPlaceAudioCLITests {
    /// Two devices signed in to one Drive, both holding one synced clip.
    struct TwoDevices {
        let a: IvyHome
        let b: IvyHome
        let clip: String
        let first: Data
        let mp3ID: String
    }

    func twoDevices(_ emulator: GoogleEmulator) async throws -> TwoDevices {
        let a = try await SignInHarness.signedIn(emulator).ivy
        let b = try await SignInHarness.signedIn(emulator).ivy
        let book = try await a.id("book", "add", "--title", "Dune")
        let audio = try a.mp3("first.mp3", size: 3000)
        let clip = try await a.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", audio, "--note", "spice")
        let first = try #require(FileManager.default.contents(atPath: audio))
        for device in [a, b] {
            let synced = try await device.runBinaryAsync("sync")
            #expect(synced.status == 0, "\(synced.stdout)\(synced.stderr)")
        }
        let mp3 = try #require(await live(emulator, "clip_\(clip).mp3").first)
        return TwoDevices(a: a, b: b, clip: clip, first: first, mp3ID: mp3.id)
    }

    /// The files of `name` on Drive, not in the trash.
    func live(_ emulator: GoogleEmulator, _ name: String) async -> [DriveFile] {
        await emulator.state.dump().filter { $0.name == name && !$0.explicitlyTrashed }
    }

    /// "Upload new version": `PATCH /upload/drive/v3/files/ID?uploadType=media` with the new
    /// bytes, as another program signed in to the same account sends it (Drive keeps the id).
    func uploadNewVersion(_ emulator: GoogleEmulator, id: String, _ bytes: Data) async throws {
        let token = try await emulator.state.grant(
            email: "alice@example.com", clientID: GoogleEmulator.defaultClient.id)
        let url = emulator.baseURL.appendingPathComponent("upload/drive/v3/files/\(id)")
        var components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        components.queryItems = [
            URLQueryItem(name: "uploadType", value: "media"), URLQueryItem(name: "fields", value: "id,md5Checksum"),
        ]
        let response = try await emulator.socketTransport.send(
            HTTPRequest(
                method: "PATCH", url: try #require(components.url),
                headers: ["Authorization": "Bearer \(token.access)", "Content-Type": "audio/mpeg"],
                body: .data(bytes)))
        let data = response.body
        let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(response.status == 200, "\(String(decoding: data, as: UTF8.self))")
        #expect(answer?["id"] as? String == id && answer?["md5Checksum"] as? String == MD5.hex(bytes))
    }

    func audio(_ device: IvyHome, _ clip: String) -> Data? {
        FileManager.default.contents(atPath: device.home + "/audio/\(clip).mp3")
    }

    func versions(_ device: IvyHome, _ clip: String) async throws -> [[String: Any]] {
        try #require(try await device.runBinaryAsync("history", clip, "--json").json() as? [[String: Any]])
    }

    @Test("both devices download it, keep the old MP3 in the history, and the next edit leaves it on Drive")
    func readEverywhere() async throws {
        try await withEmulator { emulator in
            let devices = try await twoDevices(emulator)
            let clip = devices.clip
            let second = Data("ID3".utf8) + Data(repeating: 9, count: 4000)
            try await uploadNewVersion(emulator, id: devices.mp3ID, second)

            for device in [devices.b, devices.a] {
                // Each follows Drive's change feed (both listed Drive in full once already), and
                // its mirror of the listing takes the MP3's new md5 from it.
                await emulator.state.clearRequests()
                let synced = try await device.runBinaryAsync("sync")
                #expect(synced.status == 0, "\(synced.stdout)\(synced.stderr)")
                #expect(synced.stdout.contains("1 downloaded"), "\(synced.stdout)")
                let listed = await emulator.state.requests.filter { $0.path == "/drive/v3/files" }
                #expect(listed.isEmpty, "the change feed, not a full listing: \(listed)")
                let mirrored = try device.sql("SELECT md5 FROM drive_mirror WHERE file_id = '\(devices.mp3ID)'")
                #expect(mirrored.map { $0["md5"] as String? } == [MD5.hex(second)])
                #expect(audio(device, clip) == second, "the new bytes are the clip's audio here")
                // The newest version is the new audio (the audio now: no md5 until it is replaced);
                // the one before it names the old MP3, kept in the history.
                let versions = try await versions(device, clip)
                #expect((versions.first?["changed"] as? [String]) == ["audio"], "\(versions)")
                #expect(versions.first?["source"] as? String == "drive")
                #expect(versions.dropFirst().first?["audio_md5"] as? String == MD5.hex(devices.first), "\(versions)")
                #expect(
                    FileManager.default.contents(atPath: device.home + "/history/\(MD5.hex(devices.first)).mp3")
                        == devices.first, "the old MP3 is kept in the history")
                let again = try await device.runBinaryAsync("sync")
                #expect(again.status == 0 && !again.stdout.contains("downloaded"), "once: \(again.stdout)")
            }

            #expect(try await devices.a.runBinaryAsync("clip", "update", clip, "--note", "spice, again").status == 0)
            let edited = try await devices.a.runBinaryAsync("sync")
            #expect(edited.status == 0, "\(edited.stdout)\(edited.stderr)")
            let mp3s = await live(emulator, "clip_\(clip).mp3")
            #expect(mp3s.map(\.content) == [second], "Drive keeps the new MP3, not the old one")
            #expect(try await devices.b.runBinaryAsync("sync").status == 0)
            #expect(audio(devices.b, clip) == second)
            #expect(try devices.b.sql("SELECT note FROM clips").first?["note"] as String? == "spice, again")
        }
    }

    @Test("the audio changed here too: a merge whose losing take stays in the history and restores by its version")
    func bothSides() async throws {
        try await withEmulator { emulator in
            let devices = try await twoDevices(emulator)
            let (b, clip) = (devices.b, devices.clip)
            let mine = try b.mp3("mine.mp3", size: 5000)
            let mineBytes = try #require(FileManager.default.contents(atPath: mine))
            #expect(try await b.runBinaryAsync("clip", "update", clip, "--audio", mine).status == 0)
            let theirs = Data("ID3".utf8) + Data(repeating: 5, count: 3500)
            try await uploadNewVersion(emulator, id: devices.mp3ID, theirs)

            let synced = try await b.runBinaryAsync("sync")
            #expect(synced.status == 0, "\(synced.stdout)\(synced.stderr)")
            #expect(synced.stdout.contains("merged"), "\(synced.stdout)")
            // The take here is the later write (Drive's JSON kept its `updated_at`): it wins.
            #expect(await live(emulator, "clip_\(clip).mp3").map(\.content) == [mineBytes])
            #expect(audio(b, clip) == mineBytes)
            let conflicts = try #require(
                try await b.runBinaryAsync("history", "--conflicts", "--json").json() as? [[String: Any]])
            let conflict = try #require(conflicts.first { $0["field"] as? String == "audio" }, "\(conflicts)")
            #expect(conflict["kept"] as? String == MD5.hex(mineBytes) && conflict["lost"] as? String == MD5.hex(theirs))
            let lost = try #require(conflict["lost_version"] as? Int, "\(conflict)")
            #expect(FileManager.default.contents(atPath: b.home + "/history/\(MD5.hex(theirs)).mp3") == theirs)

            let restored = try await b.runBinaryAsync("restore", "--version", "\(lost)")
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(audio(b, clip) == theirs, "Drive's take comes back from its version")
            #expect(try await b.runBinaryAsync("sync").status == 0)
            #expect(await live(emulator, "clip_\(clip).mp3").map(\.content) == [theirs])
            #expect(try await devices.a.runBinaryAsync("sync").status == 0)
            #expect(audio(devices.a, clip) == theirs)
        }
    }

    @Test("replaced after the sync listed Drive: the upload reads Drive's md5 first and leaves that MP3 alone")
    func afterTheListing() async throws {
        try await withEmulator { emulator in
            let devices = try await twoDevices(emulator)
            let (b, clip) = (devices.b, devices.clip)
            let mine = try b.mp3("mine.mp3", size: 5000)
            let mineBytes = try #require(FileManager.default.contents(atPath: mine))
            #expect(try await b.run("clip", "update", clip, "--audio", mine).status == 0)
            // The feed's answer is made, then stalls after its first byte: the sync plans from a
            // listing taken before the new version lands.
            await emulator.state.addFault(
                FaultRule(method: "GET", pathContains: "/drive/v3/changes?", times: 1, holdBody: true))
            let sync = b.start(["sync"])
            await emulator.state.waitForHeld(count: 1)
            let theirs = Data("ID3".utf8) + Data(repeating: 3, count: 3500)
            try await uploadNewVersion(emulator, id: devices.mp3ID, theirs)
            await emulator.state.releaseHeld()
            let raced = await sync.finish()
            #expect(raced.status == 0, "\(raced.stdout)\(raced.stderr)")
            let kept = await live(emulator, "clip_\(clip).mp3")
            #expect(kept.map(\.id) == [devices.mp3ID] && kept.map(\.content) == [theirs], "replaced unread")
            #expect(try b.count("SELECT count(*) FROM sync_queue") == 1, "the change here waits")

            let next = try await b.run("sync")
            #expect(next.status == 0, "\(next.stdout)\(next.stderr)")
            #expect(await live(emulator, "clip_\(clip).mp3").map(\.content) == [mineBytes])
            #expect(FileManager.default.contents(atPath: b.home + "/history/\(MD5.hex(theirs)).mp3") == theirs)
        }
    }
}
