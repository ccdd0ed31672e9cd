import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 50, item 1, for the durable steps that are this machine's own: a local edit's commit,
/// an export, the log's rotation, the copies the history and the trash keep, and the audio a
/// killed replacement left for the next opening to finish or undo.
@Suite("Crash points: ivy killed at a local durable step")
struct CrashPointLocalTests {
    /// A file system of its own, with room: `Disk`'s 16 MiB tmpfs, none of it filled. A hard
    /// link into it from the rest of the home fails (`EXDEV`), as into a directory that is a
    /// mount point, or onto a disk that has no hard links.
    static let apart = Disk.full(leaving: 16 << 20)

    /// Runs the built ivy with `directory` on `disk` (`Disk`), killed at `point`.
    static func crashed(
        _ ivy: IvyHome, on disk: Disk, over directory: String, at point: String, _ arguments: String...
    ) async throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let result = try await ivy.runBinaryAsync(
            arguments, environment: ["IVY_CRASH_AT": point], through: try disk.wrapper(over: directory))
        #expect(result.status == 128 + SIGKILL, "ivy \(arguments): \(result.status) \(result.stderr)")
        #expect(
            result.stderr.contains("ivy: crash point \(point) reached; killed (IVY_CRASH_AT)\n"), "\(result.stderr)")
    }

    static func contents(_ path: String) -> Data? {
        FileManager.default.contents(atPath: path)
    }

    static func names(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test("a book add killed after its commit: the book is there once, and the next sync sends it")
    func bookAddCrashed() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 1)
            #expect(try await laptop.ivy.run("sync").status == 0)
            try await CrashPointCLITests.crashed(
                laptop.ivy, at: "store.commit.book-add", "book", "add", "--title", "Dune")
            let titles = try laptop.ivy.sql("SELECT title FROM books").map { $0["title"] as String }
            #expect(titles.filter { $0 == "Dune" }.count == 1, "\(titles)")
            let synced = try await laptop.ivy.run("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            try await CrashPointCLITests.expectAgreement(laptop, emulator)
        }
    }

    @Test("config set and unset killed after their commit: the value is stored, then gone, and reads back so")
    func settingCrashed() async throws {
        let ivy = try IvyHome()
        let before = try await ivy.run("config", "get", "trash_days")
        try await CrashPointCLITests.crashed(ivy, at: "store.commit.setting", "config", "set", "trash_days", "5")
        #expect(try await ivy.run("config", "get", "trash_days").stdout == "5\n")
        try await CrashPointCLITests.crashed(ivy, at: "store.commit.setting-unset", "config", "unset", "trash_days")
        let after = try await ivy.run("config", "get", "trash_days")
        #expect(after.status == 0 && after.stdout == before.stdout, "the default again: \(after.stdout)")
        #expect(try await ivy.run("config", "set", "trash_days", "7").status == 0)
        #expect(try await ivy.run("config", "get", "trash_days").stdout == "7\n")
    }

    /// A killed export left its whole archive in a hidden directory beside FILE, a copy of
    /// every MP3 that nothing removed: the next export removes it.
    @Test(
        "an export killed before or after its archive is in place: FILE is whole or absent, the next leaves no copy",
        arguments: ["export.after-temp", "export.after-place"])
    func exportCrashed(_ point: String) async throws {
        let ivy = try IvyHome()
        _ = try await ArchiveTests.library(ivy)
        let directory = ivy.path + "/exports"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/library.zip"
        try await CrashPointCLITests.crashed(ivy, at: point, "export", file)
        if FileManager.default.fileExists(atPath: file) {
            let checked = try await ivy.runBinaryAsync("check", "--archive", file)
            #expect(checked.status == 0, "a whole archive: \(checked.stdout) \(checked.stderr)")
        } else {
            #expect(point == "export.after-temp", "the archive was in place at \(point)")
        }
        // The next export, a while later: one made in the last minute may be a running export's
        // not yet locked, and is left alone.
        for name in Self.names(in: directory) where name.hasPrefix(".ivy-archive-") {
            var past = [timeval(tv_sec: time(nil) - 120, tv_usec: 0), timeval(tv_sec: time(nil) - 120, tv_usec: 0)]
            #expect(utimes(directory + "/" + name, &past) == 0)
        }
        let again = try await ivy.runBinaryAsync("export", "--force", file)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(Self.names(in: directory) == ["library.zip"], "no copy left beside it")
        let checked = try await ivy.runBinaryAsync("check", "--archive", file)
        #expect(checked.status == 0, "\(checked.stdout) \(checked.stderr)")
    }

    @Test("a sync killed once its log was rotated: the next sync logs, and the rotated log is whole")
    func logRotationCrashed() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            // Whole lines past the 1 MiB the log is rotated at.
            let line = "2025-01-01T00:00:00Z info old line " + String(repeating: "x", count: 64) + "\n"
            let old = Data(String(repeating: line, count: (1 << 20) / line.utf8.count + 1).utf8)
            let log = laptop.ivy.home + "/ivy.log"
            try old.write(to: URL(fileURLWithPath: log))
            #expect(try await laptop.ivy.run("book", "add", "--title", "Later").status == 0)
            try await CrashPointCLITests.crashed(laptop.ivy, at: "log.rotate.after-rename", "sync")
            #expect(Self.contents(log + ".1") == old, "the old log, whole, under its rotated name")
            let synced = try await laptop.ivy.runBinaryAsync("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            let new = try String(contentsOfFile: log, encoding: .utf8)
            #expect(!new.isEmpty && new.hasSuffix("\n") && !new.contains("old line"), "\(new.prefix(200))")
            #expect(Self.contents(log + ".1") == old)
            try await CrashPointCLITests.expectAgreement(laptop, emulator)
        }
    }

    /// A hard link is how the history keeps an MP3 (instant); a copy only when the link fails,
    /// as it does when the history is on a file system of its own (`EXDEV`).
    @Test("history on a disk of its own, a retake killed once the old MP3 is copied: nothing changed, retaking works")
    func historyCopyCrashed() async throws {
        let ivy = try IvyHome()
        let (_, clip, first, second) = try await ivy.clipWithTwoTakes()
        let history = ivy.home + "/history"
        try await Self.crashed(
            ivy, on: Self.apart, over: history, at: "history.keep.after-copy",
            "clip", "update", clip, "--audio", second, "--note", "two")
        let audio = ivy.home + "/audio/\(clip).mp3"
        #expect(try ivy.sql("SELECT note FROM clips").first?["note"] as String? == "one")
        #expect(Self.contents(audio) == Self.contents(first), "the clip's audio, untouched")
        // The copy the kill left goes with the history's prune, an hour on, as an unnamed MP3.
        let left = Self.names(in: history)
        #expect(left.count == 1 && left.allSatisfy { $0.hasPrefix(".keeping-") }, "a copy, not a link: \(left)")
        let updated = try await ivy.run("clip", "update", clip, "--audio", second, "--note", "two")
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(Self.contents(audio) == Self.contents(second))
        let kept = Self.names(in: history).filter { !$0.hasPrefix(".") }
        #expect(kept.map { Self.contents(history + "/" + $0) } == [Self.contents(first)], "the old take, kept")
    }

    /// Likewise the trash: a link when it can, a copy when the trash is on a disk of its own.
    @Test("trash on a disk of its own, a sync killed once a deleted clip's MP3 is copied: the next sync keeps it")
    func trashCopyCrashed() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            let b = try await SignInHarness.signedIn(emulator)
            try await a.addLibrary(books: 1, clips: 1)
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try await b.ivy.run("sync").status == 0)
            let clip: String = try #require(try b.ivy.sql("SELECT id FROM clips").first?["id"])
            let audio = Self.contents(b.ivy.home + "/audio/\(clip).mp3")
            #expect(try await a.ivy.run("clip", "delete", clip).status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            let trash = b.ivy.home + "/trash"
            try await Self.crashed(b.ivy, on: Self.apart, over: trash, at: "trash.keep.after-copy", "sync")
            #expect(try b.ivy.count("SELECT count(*) FROM trash") == 0, "the deletion did not commit")
            // The purge removes the copy the kill left once it is an hour old.
            let left = Self.names(in: trash)
            #expect(left.count == 1 && left.allSatisfy { $0.hasPrefix(".keeping-") }, "a copy, not a link: \(left)")
            let synced = try await b.ivy.run("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            #expect(try b.ivy.count("SELECT count(*) FROM clips") == 0)
            let entry: String? = try b.ivy.sql("SELECT audio_file FROM trash").first?["audio_file"]
            #expect(Self.contents(trash + "/" + (entry ?? "none")) == audio, "the deleted clip's MP3, in the trash")
            let restored = try await b.ivy.run("trash", "restore", clip)
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(Self.contents(b.ivy.home + "/audio/\(clip).mp3") == audio)
            #expect(try await b.ivy.run("sync").status == 0)
            try await CrashPointCLITests.expectAgreement(b, emulator)
        }
    }

    /// A retake killed once its MP3 was renamed in (uncommitted: the next opening puts the old
    /// MP3 back) or once it committed (the next opening drops the journal's row), and that
    /// opening killed in turn.
    @Test(
        "a retake killed, then the opening that finishes or undoes it killed too: the clip's row and MP3 agree",
        arguments: [
            ("audio.replace.after-rename", "audio.recovery.after-rename"),
            ("store.commit.clip-update", "store.commit.audio-recovered"),
        ])
    func recoveryCrashed(_ first: String, _ second: String) async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            let (_, clip, one, two) = try await laptop.ivy.clipWithTwoTakes()
            #expect(try await laptop.ivy.run("sync").status == 0)
            try await CrashPointCLITests.crashed(
                laptop.ivy, at: first, "clip", "update", clip, "--audio", two, "--note", "two")
            try await CrashPointCLITests.crashed(laptop.ivy, at: second, "book", "add", "--title", "Later")
            #expect(try await laptop.ivy.run("book", "list").status == 0)
            let note: String = try #require(try laptop.ivy.sql("SELECT note FROM clips").first?["note"])
            let audio = Self.contents(laptop.ivy.home + "/audio/\(clip).mp3")
            #expect(audio == Self.contents(note == "one" ? one : two), "the MP3 of the row's take (\(note))")
            #expect(note == (first == "store.commit.clip-update" ? "two" : "one"))
            #expect(CrashPointCLITests.leftovers(laptop).filter { !$0.hasPrefix(".incoming-") }.isEmpty)
            #expect(try laptop.ivy.count("SELECT count(*) FROM audio_replacements") == 0)
            let synced = try await laptop.ivy.run("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            try await CrashPointCLITests.expectAgreement(laptop, emulator)
        }
    }

    /// The rollback runs when a replacement fails in the process itself: a restore of two
    /// clips finds the second's audio being replaced by another ivy (its copy aside locked), so
    /// it puts the first clip's audio back and stops.
    @Test("a restore that meets another ivy's retake, killed as it puts the audio back: nothing changed, then it works")
    func rollbackCrashed() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        var takes: [String: (old: String, new: String)] = [:]
        for name in ["a", "b"] {
            let old = try ivy.mp3("\(name)1.mp3", size: 3000, header: Array("ID3\u{4}\0\(name)1".utf8))
            let new = try ivy.mp3("\(name)2.mp3", size: 3000, header: Array("ID3\u{4}\0\(name)2".utf8))
            let clip = try await ivy.id(
                "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", old)
            takes[clip] = (old, new)
        }
        let before = try HistoryCommandTests().moment(ivy)
        for (clip, take) in takes {
            #expect(try await ivy.run("clip", "update", clip, "--audio", take.new).status == 0)
        }
        // The restore replaces the clips in the order of their ids: the other ivy holds the last.
        let busy = try #require(takes.keys.max())
        let audio = ivy.home + "/audio"
        let aside = audio + "/.replacing-\(busy).mp3"
        #expect(link(audio + "/\(busy).mp3", aside) == 0)
        let lock = open(aside, O_RDONLY)
        #expect(lock >= 0 && flock(lock, LOCK_EX) == 0)
        try await CrashPointCLITests.crashed(ivy, at: "audio.rollback.after-rename", "restore", "--at", before, "--yes")
        // The other ivy's retake committed (it changed nothing): its copy aside goes.
        unlink(aside)
        close(lock)
        #expect(try await ivy.run("clip", "list").status == 0)
        for (clip, take) in takes {
            #expect(Self.contents(audio + "/\(clip).mp3") == Self.contents(take.new), "the restore did not commit")
        }
        #expect(Self.names(in: audio).filter { $0.hasPrefix(".replacing-") }.isEmpty, "\(Self.names(in: audio))")
        let restored = try await ivy.run("restore", "--at", before, "--yes")
        #expect(restored.status == 0, "\(restored.stderr)")
        for (clip, take) in takes {
            #expect(Self.contents(audio + "/\(clip).mp3") == Self.contents(take.old), "restored")
        }
    }
}
