import Foundation
import GRDB
import GoogleEmulator
import IvySystem
import IvyTestSupport
import Testing

/// One short story crashed at each point a sync passes: every kind of change a sync carries,
/// both ways, in one sync killed at the point, then every device synced. `scripts/crashcheck`
/// runs it (`IVY_CRASH_SWEEP=1`); the suite's own run leaves it to `CrashCheckTests`' stories,
/// which crash a sync at the points it passes too, to keep CI within its 20 minutes.
@Suite(
    "Crash points: one sync of every kind of change, killed at each point it passes",
    .enabled(if: ProcessInfo.processInfo.environment["IVY_CRASH_SWEEP"] == "1", "scripts/crashcheck runs it"))
struct CrashPointSweepTests {
    /// The points the laptop's sync below passes, each checked to kill it.
    static let syncPoints = [
        "drive.create.after-answer", "drive.create.before-send", "drive.delete.after-answer",
        "drive.delete.before-send", "drive.download.after-rename", "drive.download.after-temp",
        "drive.session.after-answer", "drive.session.before-send", "drive.upload.after-answer",
        "drive.upload.before-send", "store.commit.forget-synced",
        "store.commit.manifest-clean-up", "store.commit.mirror-page", "store.commit.quota",
        "store.commit.remote-change", "store.commit.replace-cut-short", "store.commit.sync-outcome",
        "store.commit.synced", "store.migrate.after-commit", "sync.download.after-rename",
        "trash.keep.after-place", "store.commit.upload-session", "store.commit.upload-session-forget",
    ]

    @Test("killed at the point, then synced on every device: each edit survives, no duplicate", arguments: syncPoints)
    func sweep(_ point: String) async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 4)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let desk = try await SignInHarness.signedIn(emulator)
            #expect(try await desk.ivy.run("sync").status == 0)
            let books = try laptop.ivy.sql("SELECT id FROM books ORDER BY position").map { $0["id"] as String }
            let clips = try laptop.ivy.sql("SELECT id FROM clips ORDER BY start").map { $0["id"] as String }
            // The desk moves the second book, re-records the third clip and deletes the fourth;
            // the laptop edits, records, deletes and re-records.
            #expect(try await desk.ivy.run("book", "update", books[1], "--position", "777").status == 0)
            let deskTake = try desk.ivy.mp3("desk.mp3", size: 2700)
            #expect(try await desk.ivy.run("clip", "update", clips[2], "--audio", deskTake).status == 0)
            #expect(try await desk.ivy.run("clip", "delete", clips[3]).status == 0)
            #expect(try await desk.ivy.run("sync").status == 0)
            #expect(try await laptop.ivy.run("book", "update", books[0], "--title", "Edited here").status == 0)
            let fresh = try laptop.ivy.mp3("fresh.mp3", size: 2500)
            let added = try await laptop.ivy.id(
                "clip", "add", "--book", books[0], "--start", "9", "--duration", "3", "--audio", fresh)
            #expect(try await laptop.ivy.run("clip", "delete", clips[0]).status == 0)
            let retake = try laptop.ivy.mp3("retake.mp3", size: 3100)
            #expect(try await laptop.ivy.run("clip", "update", clips[1], "--audio", retake).status == 0)

            let crashed = try await laptop.ivy.runBinaryAsync(["sync"], environment: ["IVY_CRASH_AT": point])
            #expect(crashed.status == 128 + SIGKILL, "\(crashed.status): \(crashed.stderr)")
            for device in [laptop, desk, laptop] {
                let synced = try await device.ivy.run("sync")
                #expect(synced.status == 0, "\(synced.stderr)")
            }
            #expect(try laptop.library() == desk.library())
            let title: String? = try desk.ivy.sql("SELECT title FROM books WHERE id = '\(books[0])'").first?["title"]
            #expect(title == "Edited here")
            let position: Double? = try laptop.ivy.sql("SELECT position FROM books WHERE id = '\(books[1])'").first?[
                "position"]
            #expect(position == 777)
            for gone in [clips[0], clips[3]] {
                #expect(try desk.ivy.count("SELECT count(*) FROM clips WHERE id = '\(gone)'") == 0)
                #expect(try laptop.ivy.count("SELECT count(*) FROM clips WHERE id = '\(gone)'") == 0)
            }
            for (clip, audio) in [(added, fresh), (clips[1], retake), (clips[2], deskTake)] {
                let bytes = FileManager.default.contents(atPath: audio)
                #expect(FileManager.default.contents(atPath: desk.ivy.home + "/audio/\(clip).mp3") == bytes)
                #expect(FileManager.default.contents(atPath: laptop.ivy.home + "/audio/\(clip).mp3") == bytes)
            }
            try await CrashPointCLITests.expectAgreement(laptop, emulator, other: desk)
        }
    }
}

extension CrashPointSweepTests {
    /// The points the desk's merging sync below passes, each checked to kill it.
    static let mergePoints = [
        "drive.create.after-answer", "drive.create.before-send", "drive.delete.after-answer",
        "drive.delete.before-send", "drive.download.after-rename", "drive.download.after-temp",
        "history.keep.after-place", "store.commit.manifest-clean-up", "store.commit.mirror-page",
        "store.commit.quota", "store.commit.remote-change", "store.commit.replace-cut-short",
        "store.commit.sync-outcome", "store.commit.synced", "store.migrate.after-commit",
        "sync.download.after-rename", "trash.keep.after-place",
    ]

    @Test("both devices edit one book and clip, the merging sync is killed: both edits survive", arguments: mergePoints)
    func mergeSweep(_ point: String) async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 2)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let desk = try await SignInHarness.signedIn(emulator)
            #expect(try await desk.ivy.run("sync").status == 0)
            let books = try laptop.ivy.sql("SELECT id FROM books ORDER BY position").map { $0["id"] as String }
            let clips = try laptop.ivy.sql("SELECT id FROM clips ORDER BY start").map { $0["id"] as String }
            #expect(try await laptop.ivy.run("book", "update", books[0], "--title", "Laptop title").status == 0)
            #expect(try await laptop.ivy.run("clip", "update", clips[0], "--note", "laptop note").status == 0)
            let take = try laptop.ivy.mp3("take.mp3", size: 2600)
            #expect(try await laptop.ivy.run("clip", "update", clips[1], "--audio", take).status == 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            #expect(try await desk.ivy.run("book", "update", books[0], "--position", "555").status == 0)
            #expect(try await desk.ivy.run("clip", "update", clips[0], "--duration", "7").status == 0)
            let added = try await desk.ivy.id("book", "add", "--title", "Desk book")

            let crashed = try await desk.ivy.runBinaryAsync(["sync"], environment: ["IVY_CRASH_AT": point])
            #expect(crashed.status == 128 + SIGKILL, "\(crashed.status): \(crashed.stderr)")
            for device in [desk, laptop, desk] {
                let synced = try await device.ivy.run("sync")
                #expect(synced.status == 0, "\(synced.stderr)")
            }
            #expect(try laptop.library() == desk.library())
            for device in [laptop, desk] {
                let book = try #require(try device.ivy.sql("SELECT * FROM books WHERE id = '\(books[0])'").first)
                #expect(book["title"] as String == "Laptop title")
                #expect(book["position"] as Double == 555)
                let clip = try #require(try device.ivy.sql("SELECT * FROM clips WHERE id = '\(clips[0])'").first)
                #expect(clip["note"] as String? == "laptop note")
                #expect(clip["duration"] as Double == 7)
                #expect(try device.ivy.count("SELECT count(*) FROM books WHERE id = '\(added)'") == 1)
                let audio = FileManager.default.contents(atPath: device.ivy.home + "/audio/\(clips[1]).mp3")
                #expect(audio == FileManager.default.contents(atPath: take))
            }
            try await CrashPointCLITests.expectAgreement(laptop, emulator, other: desk)
        }
    }
}
