import Foundation
import GRDB
import GoogleEmulator
import IvySystem
import IvyTestSupport
import Testing

/// Issue 50, item 1: ivy killed at a named durable step (`IVY_CRASH_AT`), through the built
/// binary against the in-process emulator, and what a person would notice afterwards.
@Suite("Crash points: ivy killed at a named durable step")
struct CrashPointCLITests {
    /// Runs the built ivy in `device`'s home with `point` in `IVY_CRASH_AT`, and expects it killed
    /// there: status 137, and its last words naming the point.
    static func crashed(_ device: IvyHome, at point: String, _ arguments: String...) async throws {
        let result = try await device.runBinaryAsync(arguments, environment: ["IVY_CRASH_AT": point])
        #expect(result.status == 128 + SIGKILL, "ivy \(arguments): \(result.status) \(result.stderr)")
        let name = point.split(separator: ":").first.map(String.init) ?? point
        #expect(
            result.stderr.hasSuffix("ivy: crash point \(name) reached; killed (IVY_CRASH_AT)\n"), "\(result.stderr)")
    }

    /// The live files of the library on Drive, by name: each name must appear once.
    static func driveNames(_ emulator: GoogleEmulator) async -> [String: Int] {
        let files = await emulator.state.dump().filter {
            !$0.explicitlyTrashed && $0.mimeType != DriveFile.folderType
        }
        return files.reduce(into: [:]) { $0[$1.name, default: 0] += 1 }
    }

    /// Drive holds one JSON per book and clip of `device` and one MP3 per clip, no twin; a
    /// second device that syncs holds the same library, MP3s included.
    static func expectAgreement(
        _ device: SignInHarness, _ emulator: GoogleEmulator, other synced: SignInHarness? = nil
    ) async throws {
        let books = try device.ivy.sql("SELECT id FROM books").map { $0["id"] as String }
        let clips = try device.ivy.sql("SELECT id FROM clips").map { $0["id"] as String }
        var expected = Dictionary(uniqueKeysWithValues: books.map { ("book_\($0).json", 1) })
        for clip in clips {
            expected["clip_\(clip).json"] = 1
            expected["clip_\(clip).mp3"] = 1
        }
        #expect(await driveNames(emulator) == expected, "no duplicate and nothing missing on Drive")
        let other: SignInHarness
        if let synced {
            other = synced
        } else {
            other = try await SignInHarness.signedIn(emulator)
            let result = try await other.ivy.run("sync")
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(try other.library() == device.library())
        for clip in clips {
            let mine = FileManager.default.contents(atPath: device.ivy.home + "/audio/\(clip).mp3")
            #expect(mine != nil && mine == FileManager.default.contents(atPath: other.ivy.home + "/audio/\(clip).mp3"))
        }
    }

    /// The transfer files a run leaves beside the audio while it works.
    static func leftovers(_ device: SignInHarness) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: device.ivy.home + "/audio")) ?? []
        return names.filter { $0.hasPrefix(".") }
    }

    @Test(
        "a first sync killed at each step of its uploads: the next sync converges, no duplicate on Drive, nothing lost",
        arguments: [
            "drive.create.after-answer", "drive.create.before-send", "drive.create.after-answer:2",
            "drive.session.after-answer", "drive.upload.after-answer", "store.commit.synced",
            "drive.folder.before-send", "drive.folder.after-answer",
        ])
    func uploadCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 1)
            let before = try laptop.library()
            try await Self.crashed(laptop.ivy, at: point, "sync")
            #expect(try laptop.library() == before, "the kill changed no edit")
            let again = try await laptop.ivy.run("sync")
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try laptop.library() == before)
            #expect(try laptop.ivy.count("SELECT count(*) FROM sync_queue") == 0)
            try await Self.expectAgreement(laptop, emulator)
        }
    }

    @Test("a book's edit, its upload killed once Drive answered the create: the edit reaches Drive once")
    func editCrashedAfterCreate() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let id: String = try #require(try laptop.ivy.sql("SELECT id FROM books").first?["id"])
            #expect(try await laptop.ivy.run("book", "update", id, "--title", "Edited").status == 0)
            try await Self.crashed(laptop.ivy, at: "drive.delete.after-answer", "sync")
            #expect(await Self.driveNames(emulator)["book_\(id).json"] == nil, "killed between delete and create")
            #expect(try await laptop.ivy.run("sync").status == 0)
            try await Self.expectAgreement(laptop, emulator)
            #expect(try laptop.ivy.sql("SELECT title FROM books").first?["title"] as String? == "Edited")
        }
    }

    @Test("N counts the times a point is reached: :3 kills at a sync's third create, :4 of three never does")
    func countedPoint() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 1)
            // Two books' JSON and the clip's: three creates (the MP3 goes through a session).
            try await Self.crashed(laptop.ivy, at: "drive.create.after-answer:3", "sync")
            let names = await Self.driveNames(emulator)
            #expect(names.keys.filter { $0.hasSuffix(".json") }.count == 3, "\(names)")
            let never = try await laptop.ivy.runBinaryAsync(
                ["sync"], environment: ["IVY_CRASH_AT": "drive.create.after-answer:4"])
            #expect(never.status == 0, "\(never.stderr)")
            try await Self.expectAgreement(laptop, emulator)
        }
    }

    @Test(
        "a download killed after its MP3 is renamed into place, or after its commit: the next sync converges",
        arguments: [
            "sync.download.after-rename", "drive.download.after-rename", "drive.download.after-temp",
            "store.commit.remote-change",
        ])
    func downloadCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 1)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let desk = try await SignInHarness.signedIn(emulator)
            try await Self.crashed(desk.ivy, at: point, "sync")
            let again = try await desk.ivy.run("sync")
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try desk.library() == laptop.library())
            #expect(Self.leftovers(desk).isEmpty, "\(Self.leftovers(desk))")
            #expect(try await laptop.ivy.run("sync").status == 0)
            try await Self.expectAgreement(desk, emulator)
        }
    }

    @Test(
        "new audio from another device, its download killed after the rename and before the commit: converges",
        arguments: ["sync.download.after-rename", "history.keep.after-place"])
    func newAudioCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 1)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let desk = try await SignInHarness.signedIn(emulator)
            #expect(try await desk.ivy.run("sync").status == 0)
            let clip: String = try #require(try laptop.ivy.sql("SELECT id FROM clips").first?["id"])
            let audio = try laptop.ivy.mp3("new.mp3", size: 3000)
            #expect(try await laptop.ivy.run("clip", "update", clip, "--audio", audio).status == 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            try await Self.crashed(desk.ivy, at: point, "sync")
            #expect(try await desk.ivy.run("sync").status == 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            #expect(try desk.library() == laptop.library())
            let new = FileManager.default.contents(atPath: audio)
            #expect(FileManager.default.contents(atPath: desk.ivy.home + "/audio/\(clip).mp3") == new)
            #expect(FileManager.default.contents(atPath: laptop.ivy.home + "/audio/\(clip).mp3") == new)
            try await Self.expectAgreement(desk, emulator)
        }
    }

    /// `ivy login` as a process, killed at `point` once the person approved.
    static func loginCrashed(
        _ harness: SignInHarness, at point: String, as email: String = "alice@example.com"
    ) async throws {
        await harness.emulator.state.setDeviceCode(interval: 0)
        let command = harness.ivy.command(["login"], environment: ["IVY_CRASH_AT": point])
        let result = try await withChild(command) { login in
            if let code = try await login.firstMatch(of: /\b([A-Z]{4}-[A-Z]{4})\b/, what: "show its code") {
                try await harness.emulator.state.approve(userCode: code, email: email)
            }
            return try await login.finish()
        }
        #expect(result.status == 128 + SIGKILL, "\(result.status) \(result.stderr)")
        #expect(result.stderr.contains("ivy: crash point \(point) reached"), "\(result.stderr)")
    }

    /// The files in the home whose name says they are a token on its way in.
    static func tokenLeftovers(_ harness: SignInHarness) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: harness.ivy.home)) ?? []).filter {
            $0.hasPrefix(".token-")
        }
    }

    @Test(
        "a first login killed while it writes the token: no token or a whole one, and logging in again works",
        arguments: ["token.write.after-temp", "token.write.after-rename", "store.commit.account"])
    func firstLoginCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let harness = try SignInHarness(emulator: emulator)
            try await Self.loginCrashed(harness, at: point)
            if FileManager.default.fileExists(atPath: harness.tokenFile) {
                #expect(try harness.storedToken()["refresh_token"] is String, "a whole token")
            }
            let status = try await harness.ivy.run("status")
            #expect(status.status == 0, "\(status.stderr)")
            let again = try await harness.login()
            #expect(again.status == 0, "\(again.stderr)")
            #expect(Self.tokenLeftovers(harness).isEmpty, "no copy of a token left behind")
            try await harness.addLibrary(books: 1, clips: 0)
            let synced = try await harness.ivy.run("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            try await Self.expectAgreement(harness, emulator)
        }
    }

    @Test(
        "signed in, a login again killed while it writes the token: the old token or the new one, whole; sync works",
        arguments: ["token.write.after-temp", "token.write.after-rename"])
    func loginAgainCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let harness = try await SignInHarness.signedIn(emulator)
            try await harness.addLibrary(books: 1, clips: 0)
            #expect(try await harness.ivy.run("sync").status == 0)
            let old = try harness.storedToken()
            try await Self.loginCrashed(harness, at: point)
            let token = try harness.storedToken()
            #expect(token["refresh_token"] is String)
            if point == "token.write.after-temp" {
                #expect(NSDictionary(dictionary: token).isEqual(to: old), "the old token, untouched")
            }
            #expect(try await harness.ivy.run("book", "add", "--title", "After").status == 0)
            let synced = try await harness.ivy.run("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            #expect(Self.tokenLeftovers(harness).isEmpty, "no copy of a token left behind")
            try await Self.expectAgreement(harness, emulator)
        }
    }

    /// A save killed before its rename left a whole token under a temporary name that nothing
    /// read or removed: `ivy logout` said "Signed out" and left the refresh token on disk.
    @Test("a token copy a killed login left behind goes with `ivy logout`: no token stays on disk")
    func logoutAfterCrashedLogin() async throws {
        try await withEmulator { emulator in
            let harness = try await SignInHarness.signedIn(emulator)
            try await Self.loginCrashed(harness, at: "token.write.after-temp")
            #expect(Self.tokenLeftovers(harness).count == 1, "the kill left the new token's temporary file")
            let out = try await harness.ivy.run("logout")
            #expect(out.status == 0, "\(out.stderr)")
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
            #expect(Self.tokenLeftovers(harness).isEmpty, "\(Self.tokenLeftovers(harness))")
        }
    }

    /// A login as another account writes the new account's token, then binds the library to
    /// it (forgetting what it knew of the old account's Drive). Killed in between, the next
    /// sync ran with the new account's token and the old account's manifest: every book it
    /// had synced looked deleted on Drive.
    @Test("a login as another account killed between its token and its bind: the next sync keeps the library")
    func switchedAccountCrashed() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 1)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let before = try laptop.library()
            try await Self.loginCrashed(laptop, at: "token.write.after-rename", as: "bob@example.com")
            #expect(try laptop.storedToken()["email"] as? String == "bob@example.com")
            let synced = try await laptop.ivy.run("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            #expect(try laptop.library() == before, "nothing deleted here")
            let bobs = await emulator.state.dump(email: "bob@example.com").filter {
                !$0.explicitlyTrashed && $0.mimeType != DriveFile.folderType
            }
            #expect(bobs.count == 4, "the library uploaded to the new account: \(bobs.map(\.name))")
        }
    }

    /// Two devices with one synced clip, deleted on `a` and so moved into `b`'s trash.
    static func clipInTrash(_ emulator: GoogleEmulator) async throws -> (
        a: SignInHarness, b: SignInHarness, clip: String
    ) {
        let devices = try await TrashCommandTests.clipDeletedElsewhere(emulator)
        #expect(try devices.b.ivy.count("SELECT count(*) FROM trash") == 1)
        return devices
    }

    @Test(
        "a trash restore killed at each of its steps: the clip is back whole or not at all, and restoring it works",
        arguments: [
            "audio.stage.after-copy", "audio.journal.after-aside", "audio.replace.after-rename",
            "store.commit.trash-restore", "store.commit.audio-replaced",
        ])
    func trashRestoreCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let (a, b, clip) = try await Self.clipInTrash(emulator)
            try await Self.crashed(b.ivy, at: point, "trash", "restore", clip)
            let listed = try await b.ivy.run("clip", "list", "--json")
            #expect(listed.status == 0, "\(listed.stderr)")
            let clips = try #require(try listed.json() as? [[String: Any]])
            let path = b.ivy.home + "/audio/\(clip).mp3"
            if clips.isEmpty {
                // Not committed: no MP3 without its clip, and the entry is still there to restore.
                #expect(!FileManager.default.fileExists(atPath: path), "an MP3 with no clip: \(Self.leftovers(b))")
                #expect(try b.ivy.count("SELECT count(*) FROM trash") == 1)
                let restored = try await b.ivy.run("trash", "restore", clip)
                #expect(restored.status == 0, "\(restored.stderr)")
            } else {
                #expect(try b.ivy.count("SELECT count(*) FROM trash") == 0)
            }
            #expect(FileManager.default.fileExists(atPath: path), "the clip's MP3 is back")
            // A copy on its way in (`.incoming-`) stays an hour, as a running `clip add`'s may
            // be one; the next sync after that removes it (`removeTransferLeftovers`).
            let left = Self.leftovers(b).filter { !$0.hasPrefix(".incoming-") }
            #expect(left.isEmpty, "\(left)")
            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try a.library() == b.library())
            #expect(
                FileManager.default.contents(atPath: a.ivy.home + "/audio/\(clip).mp3")
                    == FileManager.default.contents(atPath: path))
            try await Self.expectAgreement(b, emulator)
        }
    }

    @Test("trash empty killed after its commit: the trash is empty, and its MP3s go with the next one")
    func trashEmptyCrashed() async throws {
        try await withEmulator { emulator in
            let (_, b, _) = try await Self.clipInTrash(emulator)
            try await Self.crashed(b.ivy, at: "store.commit.trash-empty", "trash", "empty", "--yes")
            #expect(try await b.ivy.run("trash", "list").stdout == "The trash is empty.\n")
            #expect(try await b.ivy.run("trash", "empty", "--yes").status == 0)
            let kept = (try? FileManager.default.contentsOfDirectory(atPath: b.ivy.home + "/trash")) ?? []
            #expect(kept.isEmpty, "\(kept)")
        }
    }

    @Test(
        "history turned off, its prune killed after its commit or its MP3s' removal: the audio stays, history goes",
        arguments: ["store.commit.prune", "prune.after-unlink"])
    func pruneCrashed(_ point: String) async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let clip = try await ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", try ivy.mp3("a.mp3"))
        let retake = try ivy.mp3("b.mp3", size: 3000)
        #expect(try await ivy.run("clip", "update", clip, "--audio", retake).status == 0)
        let history = ivy.home + "/history"
        #expect(!((try? FileManager.default.contentsOfDirectory(atPath: history)) ?? []).isEmpty)
        #expect(try await ivy.run("config", "set", "history_days", "0").status == 0)
        // The next command that opens the library to write prunes it: killed there.
        try await Self.crashed(ivy, at: point, "book", "add", "--title", "Later")
        #expect(try await ivy.run("book", "add", "--title", "Later").status == 0)
        #expect(try ivy.count("SELECT count(*) FROM history") == 0)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: history)) ?? []).isEmpty)
        let audio = FileManager.default.contents(atPath: ivy.home + "/audio/\(clip).mp3")
        #expect(audio != nil && audio == FileManager.default.contents(atPath: retake))
        #expect(try ivy.count("SELECT count(*) FROM books") == 2)
    }

    @Test(
        "a restore killed at each of its steps: the library as it was or as restored; restored, it reaches Drive",
        arguments: [
            "restore.stage.after-link", "audio.journal.after-aside", "audio.replace.after-rename",
            "restore.before-commit", "store.commit.restore", "store.commit.audio-replaced",
        ])
    func restoreCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            let (_, clip, first, second) = try await laptop.ivy.clipWithTwoTakes()
            #expect(try await laptop.ivy.run("sync").status == 0)
            let before = try HistoryCommandTests().moment(laptop.ivy)
            #expect(try await laptop.ivy.run("clip", "update", clip, "--audio", second, "--note", "two").status == 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let desk = try await SignInHarness.signedIn(emulator)
            #expect(try await desk.ivy.run("sync").status == 0)

            try await Self.crashed(laptop.ivy, at: point, "restore", "--at", before, "--yes")
            let note: String? = try laptop.ivy.sql("SELECT note FROM clips").first?["note"]
            let audio = laptop.ivy.home + "/audio/\(clip).mp3"
            if note == "two" {
                // Not committed: the next opening of the library puts the audio back with its row.
                #expect(try await laptop.ivy.run("book", "list").status == 0)
                #expect(FileManager.default.contents(atPath: audio) == FileManager.default.contents(atPath: second))
                let restored = try await laptop.ivy.run("restore", "--at", before, "--yes")
                #expect(restored.status == 0, "\(restored.stderr)")
            }
            #expect(try laptop.ivy.sql("SELECT note FROM clips").first?["note"] as String? == "one")
            #expect(FileManager.default.contents(atPath: audio) == FileManager.default.contents(atPath: first))
            for device in [laptop, desk] { #expect(try await device.ivy.run("sync").status == 0) }
            #expect(try desk.library() == laptop.library())
            let there = FileManager.default.contents(atPath: desk.ivy.home + "/audio/\(clip).mp3")
            #expect(there == FileManager.default.contents(atPath: first))
            #expect(Self.leftovers(laptop).filter { !$0.hasPrefix(".incoming-") }.isEmpty, "\(Self.leftovers(laptop))")
            try await Self.expectAgreement(laptop, emulator, other: desk)
        }
    }

    @Test("an import killed after its commit: the library is whole, and the next sync sends all of it")
    func importCrashed() async throws {
        try await withEmulator { emulator in
            let a = try IvyHome()
            let (_, clip, audio) = try await ArchiveTests.library(a)
            let file = a.path + "/library.zip"
            #expect(try await a.runBinaryAsync("export", file).status == 0)
            let laptop = try await SignInHarness.signedIn(emulator)
            try await Self.crashed(laptop.ivy, at: "store.commit.import", "import", file)
            #expect(FileManager.default.contents(atPath: laptop.ivy.home + "/audio/\(clip).mp3") == audio)
            #expect(try await laptop.ivy.run("sync").status == 0)
            #expect(Self.leftovers(laptop).isEmpty, "\(Self.leftovers(laptop))")
            try await Self.expectAgreement(laptop, emulator)
        }
    }

    /// The MP3 of an entry the purge removed stays as a stray: the purge keeps a stray a day at
    /// least (it may be the only copy of audio a killed sync replaced), then removes it.
    @Test("trash turned off, the sync's purge killed after its commit: the entries are gone, the next sync runs")
    func purgeCrashed() async throws {
        try await withEmulator { emulator in
            let (a, b, _) = try await Self.clipInTrash(emulator)
            #expect(try await b.ivy.run("config", "set", "trash_days", "0").status == 0)
            try await Self.crashed(b.ivy, at: "store.commit.trash-purge", "sync")
            #expect(try b.ivy.count("SELECT count(*) FROM trash") == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            let kept = (try? FileManager.default.contentsOfDirectory(atPath: b.ivy.home + "/trash")) ?? []
            #expect(kept.count <= 1 && kept.allSatisfy { $0.hasSuffix(".mp3") }, "\(kept)")
            #expect(try await b.ivy.run("trash", "list").stdout == "The trash is empty.\n")
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try a.library() == b.library())
        }
    }

    @Test("reset-manifest killed after its commit, with an edit waiting: the next sync compares afresh, no duplicate")
    func resetManifestCrashed() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 1)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let id: String = try #require(try laptop.ivy.sql("SELECT id FROM books").first?["id"])
            #expect(try await laptop.ivy.run("book", "update", id, "--title", "Waiting").status == 0)
            try await Self.crashed(laptop.ivy, at: "store.commit.reset-manifest", "reset-manifest", "--yes")
            #expect(try laptop.ivy.count("SELECT count(*) FROM sync_manifest") == 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            try await Self.expectAgreement(laptop, emulator)
            #expect(try laptop.ivy.sql("SELECT title FROM books WHERE id = '\(id)'").first?["title"] == "Waiting")
        }
    }

    @Test(
        "a clip add killed at each of its steps: the clip is there whole or not at all, and syncs",
        arguments: [
            "audio.stage.after-copy", "audio.journal.after-aside", "audio.replace.after-rename",
            "store.commit.clip-add", "store.commit.audio-replaced",
        ])
    func clipAddCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            let book = try await laptop.ivy.id("book", "add", "--title", "Dune")
            let audio = try laptop.ivy.mp3("a.mp3", size: 2200)
            try await Self.crashed(
                laptop.ivy, at: point, "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio",
                audio)
            #expect(try await laptop.ivy.run("book", "list").status == 0)
            let clips = try laptop.ivy.sql("SELECT id FROM clips").map { $0["id"] as String }
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: laptop.ivy.home + "/audio")) ?? [])
                .filter { !$0.hasPrefix(".") }
            #expect(files == clips.map { "\($0).mp3" }, "an MP3 for each clip and none other: \(files) \(clips)")
            #expect(try await laptop.ivy.run("sync").status == 0)
            try await Self.expectAgreement(laptop, emulator)
        }
    }

    @Test("IVY_CRASH_TRACE lists the points a run passed, in order: a first sync's three creates, each sent, answered")
    func traced() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 1)
            let file = laptop.ivy.path + "/trace"
            let synced = try await laptop.ivy.runBinaryAsync(["sync"], environment: ["IVY_CRASH_TRACE": file])
            #expect(synced.status == 0, "\(synced.stderr)")
            let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
            #expect(lines.allSatisfy { CrashPoint(rawValue: $0) != nil }, "\(lines)")
            #expect(lines.filter { $0 == "drive.create.before-send" }.count == 3, "\(lines)")
            #expect(lines.filter { $0 == "drive.create.after-answer" }.count == 3, "\(lines)")
            let sent = try #require(lines.firstIndex(of: "drive.create.before-send"))
            let answered = try #require(lines.firstIndex(of: "drive.create.after-answer"))
            #expect(sent < answered)
            #expect(lines.contains("store.commit.sync-outcome"))
        }
    }

    @Test("an unknown IVY_CRASH_AT is refused (exit 2), naming where the points are listed")
    func unknownPoint() async throws {
        let ivy = try IvyHome()
        let unknown = "drive.nothing"
        let result = try await ivy.runBinaryAsync(["book", "list"], environment: ["IVY_CRASH_AT": unknown])
        #expect(result.status == 2)
        #expect(result.stderr.contains("ivy-soak --list-crash-points"), "\(result.stderr)")
    }
}
