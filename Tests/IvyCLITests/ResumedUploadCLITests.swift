import Foundation
import GRDB
import GoogleEmulator
import IvyGoogle
import IvySystem
import IvyTestSupport
import Testing

/// `ivy sync` SIGKILLed while a large MP3 is on its way up, then run again (issue 50, item 6):
/// the next run resumes the session the library kept and sends again at most one chunk plus
/// 256 KiB, unless the session may not be resumed (the audio changed, it is 6 days old, Drive
/// has ended it), when a new one carries the whole file.
@Suite("A killed upload resumes on the next sync, through the binary")
struct ResumedUploadCLITests {
    static let audioBytes = 40_000_000
    /// What a resumed upload may send again: the chunk in flight, and what Drive had not kept
    /// of the one before.
    static let allowance = Int(ResumableUpload.defaultChunk + ResumableUpload.chunkUnit)

    /// A signed-in device with one book on Drive and a clip of `audioBytes` queued.
    struct Setup {
        let laptop: SignInHarness
        let clip: String
        let audio: String
    }

    static func setUp(_ emulator: GoogleEmulator) async throws -> Setup {
        let laptop = try await SignInHarness.signedIn(emulator)
        let book = try await laptop.ivy.id("book", "add", "--title", "Long Book")
        // The book goes first, so the next sync is the clip's alone.
        #expect(try await laptop.ivy.run("sync").status == 0)
        let source = try laptop.ivy.mp3("long.mp3", size: audioBytes)
        let clip = try await laptop.ivy.id(
            "clip", "add", "--book", book, "--start", "0", "--duration", "5", "--audio", source)
        return Setup(laptop: laptop, clip: clip, audio: laptop.ivy.home + "/audio/\(clip).mp3")
    }

    /// Runs `ivy sync` and SIGKILLs it once the emulator has received `bytes` more of the
    /// upload than it had; true when the kill came before ivy ended on its own.
    static func syncKilled(_ setup: Setup, _ emulator: GoogleEmulator, after bytes: Int) async throws -> Bool {
        let target = await emulator.state.uploadBytesReceived + bytes
        return try await withChild(setup.laptop.ivy.command(["sync"])) { child in
            let killed = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    await emulator.state.waitForUploadBytes(atLeast: target)
                    return true
                }
                group.addTask {
                    _ = try await child.wait(within: .seconds(120))
                    return false
                }
                let first = try await group.next() ?? false
                if first { child.send(SIGKILL) }
                await emulator.state.endUploadWaits()
                try await group.waitForAll()
                return first
            }
            // The emulator has done with what the killed run sent before the next run starts.
            await emulator.state.waitForUploadsSettled()
            return killed
        }
    }

    /// The MP3s of the clip on Drive, and whether the one there is the local audio.
    static func onDrive(_ setup: Setup, _ emulator: GoogleEmulator) async throws -> (count: Int, same: Bool) {
        let mp3s = await emulator.state.dump().filter { $0.name == "clip_\(setup.clip).mp3" }
        let md5 = try MD5.hex(Data(contentsOf: URL(fileURLWithPath: setup.audio)))
        return (mp3s.count, mp3s.first.map { MD5.hex($0.content) } == md5)
    }

    /// The next `ivy sync` after a kill, on a cleared request log: what the emulator received
    /// of the upload meanwhile.
    static func syncAgain(_ setup: Setup, _ emulator: GoogleEmulator) async throws -> Int {
        await emulator.state.clearRequests()
        let before = await emulator.state.uploadBytesReceived
        let again = try await setup.laptop.ivy.runBinaryAsync("sync")
        #expect(again.status == 0, "\(again.stderr)")
        return await emulator.state.uploadBytesReceived - before
    }

    /// After `syncAgain` sent `received` bytes, what a session that could not be resumed
    /// leaves: the whole MP3 sent again under one new session, alone on Drive and the same.
    static func expectSentAfresh(_ setup: Setup, _ emulator: GoogleEmulator, received: Int) async throws {
        #expect(received == audioBytes)
        #expect(await sessionsOpened(emulator) == 1)
        let drive = try await onDrive(setup, emulator)
        #expect(drive.count == 1 && drive.same, "\(drive)")
    }

    static func sessionsOpened(_ emulator: GoogleEmulator) async -> Int {
        await emulator.state.requests.filter { $0.method == "POST" && $0.query.contains("uploadType=resumable") }.count
    }

    @Test(
        """
        killed at 10 %, 50 % and 90 % of a 40 MB MP3, the next sync resumes the kept session: at most one chunk \
        plus 256 KiB sent again, the file on Drive whole and alone, the session forgotten
        """,
        .timeLimit(.minutes(5)), arguments: [10, 50, 90])
    func resumes(percent: Int) async throws {
        try await withEmulator { emulator in
            let setup = try await Self.setUp(emulator)
            let before = await emulator.state.uploadBytesReceived
            #expect(try await Self.syncKilled(setup, emulator, after: Self.audioBytes * percent / 100))
            let kept = try setup.laptop.ivy.sql("SELECT committed, size FROM upload_sessions")
            #expect(kept.count == 1 && kept.first?["size"] == Int64(Self.audioBytes), "\(kept)")

            await emulator.state.clearRequests()
            let again = try await setup.laptop.ivy.runBinaryAsync("sync")
            #expect(again.status == 0, "\(again.stderr)")
            let received = await emulator.state.uploadBytesReceived - before
            let resent = received - Self.audioBytes
            print("upload killed at \(percent) %: \(resent) bytes sent again (allowance \(Self.allowance))")
            #expect(resent >= 0 && resent <= Self.allowance, "\(resent) bytes sent again")
            let asked = await emulator.state.requests.map { "\($0.method) \($0.status) \($0.bytes)" }
            #expect(await Self.sessionsOpened(emulator) == 0, "the kept session carried on: \(asked)")
            let drive = try await Self.onDrive(setup, emulator)
            #expect(drive.count == 1 && drive.same, "\(drive)")
            #expect(try setup.laptop.ivy.count("SELECT count(*) FROM upload_sessions") == 0)
            #expect(try setup.laptop.ivy.count("SELECT count(*) FROM sync_queue") == 0)
        }
    }

    @Test(
        "a clip whose audio changed since the kill abandons the kept session: a new one carries the new audio whole",
        .timeLimit(.minutes(5)))
    func changedAudio() async throws {
        try await withEmulator { emulator in
            let setup = try await Self.setUp(emulator)
            #expect(try await Self.syncKilled(setup, emulator, after: Self.audioBytes / 2))
            let old = try #require(try setup.laptop.ivy.sql("SELECT uri FROM upload_sessions").first)
            let oldURI: String = old["uri"]
            // The same size, other bytes.
            let other = try setup.laptop.ivy.mp3(
                "other.mp3", size: Self.audioBytes, header: Array("ID3\u{4}\0other".utf8))
            #expect(try await setup.laptop.ivy.run("clip", "update", setup.clip, "--audio", other).status == 0)

            let received = try await Self.syncAgain(setup, emulator)
            try await Self.expectSentAfresh(setup, emulator, received: received)
            let oldID = try #require(URLComponents(string: oldURI)?.queryItems?.first { $0.name == "upload_id" }?.value)
            #expect(await emulator.state.requests.allSatisfy { !$0.query.contains(oldID) }, "the old session was left")
            let log = try String(contentsOfFile: setup.laptop.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains("the clip's audio changed since the upload began"), "\(log)")
            #expect(try setup.laptop.ivy.count("SELECT count(*) FROM upload_sessions") == 0)
        }
    }

    @Test(
        "a kept session 6 days old by Google's clock is dropped though Drive would still take it: a new one starts",
        .timeLimit(.minutes(5)))
    func oldSession() async throws {
        try await withEmulator { emulator in
            let setup = try await Self.setUp(emulator)
            #expect(try await Self.syncKilled(setup, emulator, after: Self.audioBytes / 2))
            let old: String = try #require(try setup.laptop.ivy.sql("SELECT uri FROM upload_sessions").first)["uri"]
            let oldID = try #require(URLComponents(string: old)?.queryItems?.first { $0.name == "upload_id" }?.value)
            // Google's week is not over: the emulator would still resume it.
            await emulator.state.advanceClock(by: 6 * 86_400 + 3_600)

            let received = try await Self.syncAgain(setup, emulator)
            try await Self.expectSentAfresh(setup, emulator, received: received)
            #expect(await emulator.state.requests.allSatisfy { !$0.query.contains(oldID) }, "the old session was left")
            let log = try String(contentsOfFile: setup.laptop.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains("the upload session is 6 days old or more"), "\(log)")
        }
    }

    @Test(
        "a kept session Drive answers 404 for when asked its status is replaced by a new one, with no duplicate",
        .timeLimit(.minutes(5)))
    func goneSession() async throws {
        try await withEmulator { emulator in
            let setup = try await Self.setUp(emulator)
            #expect(try await Self.syncKilled(setup, emulator, after: Self.audioBytes / 2))
            await emulator.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", times: 1, status: 404))

            let received = try await Self.syncAgain(setup, emulator)
            let puts = await emulator.state.requests.filter { $0.method == "PUT" }
            #expect(puts.first?.status == 404 && puts.first?.bytes == 0, "the status query first: \(puts)")
            try await Self.expectSentAfresh(setup, emulator, received: received)
            #expect(try setup.laptop.ivy.count("SELECT count(*) FROM upload_sessions") == 0)
        }
    }
}
