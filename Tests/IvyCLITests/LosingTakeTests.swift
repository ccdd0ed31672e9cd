import Foundation
import GRDB
import GoogleEmulator
import IvySystem
import IvyTestSupport
import Testing

/// Issue 37, items 3 and 4: a clip's audio changed on Drive (by the phone app) and here: the
/// take here wins by its later `updated_at`, and Drive's take is read before the upload
/// replaces it, kept in the history, named by the conflict, and restorable by its version.
@Suite("the take that loses a merge of a clip's audio")
struct LosingTakeTests {
    /// A synced clip whose JSON and MP3 the app then changed on Drive, its JSON stamped just
    /// after the agreed one: older than any change made here from now on.
    struct AppTake {
        let device: SignInHarness
        let clip: String
        let bytes: Data
        let mp3ID: String
    }

    func appTake(_ emulator: GoogleEmulator) async throws -> AppTake {
        let device = try await SignInHarness.signedIn(emulator)
        let book = try await device.ivy.id("book", "add", "--title", "Dune")
        let first = try device.ivy.mp3("first.mp3", size: 3000)
        let clip = try await device.ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", first, "--note", "spice")
        #expect(try await device.ivy.run("sync").status == 0)
        let files = await emulator.state.dump().filter { !$0.explicitlyTrashed }
        let json = try #require(files.first { $0.name == "clip_\(clip).json" })
        let mp3 = try #require(files.first { $0.name == "clip_\(clip).mp3" })
        var object = try #require(try JSONSerialization.jsonObject(with: json.content) as? [String: Any])
        object["updated_at"] = ((object["updated_at"] as? NSNumber)?.int64Value ?? 0) + 1
        let bytes = Data("ID3".utf8) + Data(repeating: 7, count: 2500)
        try await emulator.state.corruptFile(
            id: json.id, content: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        try await emulator.state.corruptFile(id: mp3.id, content: bytes)
        return AppTake(device: device, clip: clip, bytes: bytes, mp3ID: mp3.id)
    }

    func md5(_ data: Data) -> String { MD5.hex(data) }

    @Test("both sides changed the audio and the take here wins: Drive's take is read and kept in the history first")
    func drivesTakeKept() async throws {
        try await withEmulator { emulator in
            let app = try await appTake(emulator)
            let ivy = app.device.ivy
            let mine = try ivy.mp3("mine.mp3", size: 4000)
            #expect(try await ivy.run("clip", "update", app.clip, "--audio", mine).status == 0)
            let mineBytes = try #require(FileManager.default.contents(atPath: mine))

            let synced = try await ivy.run("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            let live = await emulator.state.dump().filter { $0.name == "clip_\(app.clip).mp3" && !$0.explicitlyTrashed }
            #expect(live.map(\.content) == [mineBytes], "the newer take here is Drive's")
            let versions = try #require(try await ivy.run("history", app.clip, "--json").json() as? [[String: Any]])
            let kept = versions.first { $0["audio_md5"] as? String == md5(app.bytes) }
            #expect(kept != nil, "Drive's take is in no version: \(versions)")
            #expect(FileManager.default.contents(atPath: ivy.home + "/history/\(md5(app.bytes)).mp3") == app.bytes)
        }
    }

    @Test("Drive's take that cannot be read is never replaced: the merge waits for the next sync")
    func unreadTakeNotReplaced() async throws {
        try await withEmulator { emulator in
            let app = try await appTake(emulator)
            let ivy = app.device.ivy
            ivy.sleep = IvyHome.noWaits
            let mine = try ivy.mp3("mine.mp3", size: 4000)
            #expect(try await ivy.run("clip", "update", app.clip, "--audio", mine).status == 0)
            await emulator.state.addFault(FaultRule(method: "GET", pathContains: app.mp3ID, status: 500))

            let failed = try await ivy.run("sync")
            #expect(failed.status != 0, "\(failed.stdout)")
            let live = await emulator.state.dump().filter { $0.name == "clip_\(app.clip).mp3" && !$0.explicitlyTrashed }
            #expect(live.map(\.id) == [app.mp3ID] && live.map(\.content) == [app.bytes], "replaced unread")
            #expect(try ivy.count("SELECT count(*) FROM sync_queue") == 1, "the change here waits")

            await emulator.state.clearFaults()
            let again = try await ivy.run("sync")
            #expect(again.status == 0, "\(again.stderr)")
            #expect(FileManager.default.contents(atPath: ivy.home + "/history/\(md5(app.bytes)).mp3") == app.bytes)
        }
    }

    @Test("the audio conflict names both takes and the version keeping the lost one; restore --version brings it back")
    func conflictNamesBothTakes() async throws {
        try await withEmulator { emulator in
            let app = try await appTake(emulator)
            let ivy = app.device.ivy
            let mine = try ivy.mp3("mine.mp3", size: 4000)
            let mineBytes = try #require(FileManager.default.contents(atPath: mine))
            #expect(try await ivy.run("clip", "update", app.clip, "--audio", mine).status == 0)
            #expect(try await ivy.run("sync").status == 0)

            let listing = try await ivy.run("history", "--conflicts")
            let header = try #require(listing.lines.first)
            #expect(header.contains("LOST VERSION"), "\(listing.stdout)")
            let row = try #require(listing.lines.last)
            #expect(row.contains(md5(mineBytes)) && row.contains(md5(app.bytes)), "both md5s, whole: \(row)")
            let conflicts = try #require(
                try await ivy.run("history", "--conflicts", "--json").json() as? [[String: Any]])
            let audio = try #require(conflicts.first { $0["field"] as? String == "audio" }, "\(conflicts)")
            #expect(audio["kept"] as? String == md5(mineBytes) && audio["lost"] as? String == md5(app.bytes))
            #expect(audio["winner"] as? String == "here" && audio["rule"] as? String == "later_write")
            let lostVersion = try #require(audio["lost_version"] as? Int, "\(audio)")

            // The versions table shows the number; it is the version just before the winner's.
            let table = try await ivy.run("history", app.clip)
            #expect(table.lines.first?.hasPrefix("TIME") == true && table.lines.first?.contains("VERSION") == true)
            #expect(table.stdout.contains("  \(lostVersion)  "), "\(table.stdout)")
            let versions = try #require(try await ivy.run("history", app.clip, "--json").json() as? [[String: Any]])
            let lost = try #require(versions.first { $0["version"] as? Int == lostVersion })
            #expect(lost["audio_md5"] as? String == md5(app.bytes))

            let preview = try await ivy.run("restore", "--version", "\(lostVersion)", "--dry-run")
            #expect(preview.status == 0, "\(preview.stderr)")
            #expect(preview.stdout.contains("would restore clip \(app.clip)"), "\(preview.stdout)")
            let restored = try await ivy.run("restore", "--version", "\(lostVersion)")
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(restored.stdout.contains("audio"), "\(restored.stdout)")
            #expect(FileManager.default.contents(atPath: ivy.home + "/audio/\(app.clip).mp3") == app.bytes)
            #expect(try await ivy.run("sync").status == 0)
            let live = await emulator.state.dump().filter { $0.name == "clip_\(app.clip).mp3" && !$0.explicitlyTrashed }
            #expect(live.map(\.content) == [app.bytes], "the restored take goes to Drive")

            let none = try await ivy.run("restore", "--version", "999999")
            #expect(none.status != 0 && none.stderr.contains("no version 999999"), "\(none.stderr)")
            let both = try await ivy.run("restore", "--version", "\(lostVersion)", "--at", "1h")
            #expect(both.status == 64, "\(both.stderr)")
        }
    }
}
