import Foundation
import GRDB
import GoogleEmulator
import IvySystem
import IvyTestSupport
import Testing

/// Issue 48, item 5: a merge of twins (several files of one name on Drive) records in the
/// history only versions that existed on some device, records every rule it applied as a
/// conflict, and `ivy restore --version` of the take that lost gives back what its device had,
/// or (`--audio-only`) the take alone.
@Suite("the history of a merge of twins: only what existed")
struct TwinHistoryTests {
    /// Three devices share a clip; A and B each record a new take with a new note, B a little
    /// later. B's sync lists Drive before A's upload and replaces the clip after it (its delete
    /// of the JSON it knew is held until A's sync is done), so Drive holds two JSON files and
    /// two MP3s of the clip's name: twins. C, which changed nothing, then syncs and merges them.
    struct Twins {
        let c: SignInHarness
        let clip: String
        let original: Data
        let takeA: Data
        let takeB: Data
        /// The JSON A uploaded with its take, as Drive held it.
        let jsonA: [String: Any]
    }

    func twins(_ emulator: GoogleEmulator) async throws -> Twins {
        let a = try await SignInHarness.signedIn(emulator)
        let b = try await SignInHarness.signedIn(emulator)
        let c = try await SignInHarness.signedIn(emulator)
        let book = try await a.ivy.id("book", "add", "--title", "Dune")
        let first = try a.ivy.mp3("first.mp3", size: 2000)
        let clip = try await a.ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", first, "--note", "spice")
        for device in [a, b, c] { #expect(try await device.ivy.run("sync").status == 0) }
        let json = try #require(await emulator.state.dump().first { $0.name == "clip_\(clip).json" })

        let mineA = try a.ivy.mp3("a.mp3", size: 3000)
        #expect(try await a.ivy.run("clip", "update", clip, "--audio", mineA, "--note", "A's take").status == 0)
        let mineB = try b.ivy.mp3("b.mp3", size: 4000)
        #expect(try await b.ivy.run("clip", "update", clip, "--audio", mineB, "--note", "B's take").status == 0)

        await emulator.state.addFault(FaultRule(method: "DELETE", pathContains: json.id, nth: 1, hold: true))
        let synced = try await withChild(b.ivy.command(["sync"])) { child in
            await emulator.state.waitForHeld(count: 1)
            let byA = try await a.ivy.run("sync")
            #expect(byA.status == 0, "\(byA.stderr)")
            await emulator.state.releaseHeld()
            return RunResult(try await child.finish())
        }
        await emulator.state.clearFaults()
        #expect(synced.status == 0, "\(synced.stderr)")
        let files = await emulator.state.dump().filter { !$0.explicitlyTrashed }
        #expect(files.filter { $0.name == "clip_\(clip).json" }.count == 2, "no twins: \(files.map(\.name))")
        #expect(files.filter { $0.name == "clip_\(clip).mp3" }.count == 2, "no twins: \(files.map(\.name))")
        let takeA = try #require(FileManager.default.contents(atPath: mineA))
        // A's JSON is the one made just before A's MP3.
        let mp3A = try #require(files.first { $0.name == "clip_\(clip).mp3" && $0.content == takeA })
        let jsonA = try #require(
            files.filter { $0.name == "clip_\(clip).json" && $0.createdTime <= mp3A.createdTime }
                .max { $0.createdTime < $1.createdTime })
        return Twins(
            c: c, clip: clip, original: try #require(FileManager.default.contents(atPath: first)), takeA: takeA,
            takeB: try #require(FileManager.default.contents(atPath: mineB)),
            jsonA: try #require(try JSONSerialization.jsonObject(with: jsonA.content) as? [String: Any]))
    }

    func md5(_ data: Data) -> String { MD5.hex(data) }

    @Test(
        "the lost take is kept as A had it, no version pairs a take with another's note, the joined note is a conflict")
    func onlyWhatExisted() async throws {
        try await withEmulator { emulator in
            let twins = try await twins(emulator)
            let ivy = twins.c.ivy
            let synced = try await ivy.runBinaryAsync("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            let note = try #require(try ivy.sql("SELECT note FROM clips").first?["note"] as String?)
            #expect(note.contains("A's take") && note.contains("B's take") && note.contains("--- Conflict"), "\(note)")
            #expect(FileManager.default.contents(atPath: ivy.home + "/audio/\(twins.clip).mp3") == twins.takeB)

            let listed = try await ivy.runBinaryAsync("history", twins.clip, "--json")
            let versions = try #require(try listed.json() as? [[String: Any]])
            func fields(_ version: [String: Any]) -> (note: String?, audio: String?) {
                ((version["entity"] as? [String: Any])?["note"] as? String, version["audio_md5"] as? String)
            }
            // Every version is one a device had: the first, A's take as A made it, and the merge now.
            let lost = versions.filter { fields($0).audio == md5(twins.takeA) }
            #expect(lost.count == 1, "\(versions)")
            let lostEntity = try #require(lost.first?["entity"] as? [String: Any])
            #expect(NSDictionary(dictionary: lostEntity) == NSDictionary(dictionary: twins.jsonA), "\(lostEntity)")
            let now = versions.filter { fields($0).audio == nil }
            #expect(now.count == 1 && fields(now[0]).note == note, "\(versions)")
            #expect(versions.first.map { fields($0).note } == note, "the newest version is the merge")
            for version in versions {
                let (text, audio) = fields(version)
                let real = [("spice", md5(twins.original)), ("A's take", md5(twins.takeA))]
                #expect(
                    audio == nil || real.contains { $0 == (text ?? "", audio ?? "") },
                    "a version that never existed: \(version)")
            }

            let conflicts = try #require(
                try await ivy.runBinaryAsync("history", "--conflicts", "--json").json() as? [[String: Any]])
            let joined = conflicts.first { $0["field"] as? String == "note" }
            #expect(joined?["rule"] as? String == "notes_joined", "\(conflicts)")
            #expect(joined?["winner"] as? String == "both", "\(conflicts)")
            #expect(joined?["kept"] as? String == note, "\(conflicts)")
            let audio = try #require(conflicts.first { $0["field"] as? String == "audio" }, "\(conflicts)")
            #expect(audio["kept"] as? String == md5(twins.takeB) && audio["lost"] as? String == md5(twins.takeA))
            #expect(audio["lost_version"] as? Int == lost.first?["version"] as? Int, "\(audio)")
        }
    }

    @Test("restore --version of the lost take: --audio-only gives back the take alone, without it what A had")
    func restoreLostTake() async throws {
        try await withEmulator { emulator in
            let twins = try await twins(emulator)
            let ivy = twins.c.ivy
            #expect(try await ivy.runBinaryAsync("sync").status == 0)
            let joined = try #require(try ivy.sql("SELECT note FROM clips").first?["note"] as String?)
            let conflicts = try #require(
                try await ivy.runBinaryAsync("history", "--conflicts", "--json").json() as? [[String: Any]])
            let audio = try #require(conflicts.first { $0["field"] as? String == "audio" }, "\(conflicts)")
            let version = try #require(audio["lost_version"] as? Int, "\(audio)")
            let audioPath = ivy.home + "/audio/\(twins.clip).mp3"

            let preview = try await ivy.runBinaryAsync("restore", "--version", "\(version)", "--dry-run")
            #expect(preview.status == 0, "\(preview.stderr)")
            #expect(preview.stdout.contains("would restore clip \(twins.clip)"), "\(preview.stdout)")
            #expect(preview.stdout.contains(": audio, note"), "\(preview.stdout)")
            #expect(preview.stdout.contains("--audio-only puts back the MP3 alone"), "\(preview.stdout)")

            let alone = try await ivy.runBinaryAsync("restore", "--version", "\(version)", "--audio-only")
            #expect(alone.status == 0, "\(alone.stderr)")
            #expect(alone.stdout.contains(": audio\n"), "\(alone.stdout)")
            #expect(
                alone.stdout.contains("its MP3 alone: its note and other fields stay as they are"), "\(alone.stdout)")
            #expect(FileManager.default.contents(atPath: audioPath) == twins.takeA)
            #expect(try ivy.sql("SELECT note FROM clips").first?["note"] as String? == joined)

            let whole = try await ivy.runBinaryAsync("restore", "--version", "\(version)")
            #expect(whole.status == 0, "\(whole.stderr)")
            #expect(try ivy.sql("SELECT note FROM clips").first?["note"] as String? == "A's take")
            #expect(FileManager.default.contents(atPath: audioPath) == twins.takeA)

            let book = try #require(try ivy.sql("SELECT id FROM books").first?["id"] as String?)
            let bookVersion = try #require(
                try ivy.sql("SELECT max(id) AS id FROM history WHERE entity_id = '\(book)'").first?["id"] as Int64?)
            let refused = try await ivy.runBinaryAsync("restore", "--version", "\(bookVersion)", "--audio-only")
            #expect(refused.status == 1 && refused.stderr.contains("a book has no audio"), "\(refused.stderr)")
            let alone2 = try await ivy.runBinaryAsync("restore", "--at", "1h", "--audio-only", twins.clip)
            #expect(alone2.status == 64, "\(alone2.stderr)")
            #expect(alone2.stderr.contains("--audio-only goes with --version"), "\(alone2.stderr)")
        }
    }
}
