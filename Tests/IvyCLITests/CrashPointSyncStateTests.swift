import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 50: ivy killed once it committed a piece of sync state (the mirror, what is missing
/// on Drive, the queue, failures, what the person was told, unreadable Drive files), through
/// the built binary against the in-process emulator, and what a person notices afterwards.
@Suite("Crash points: ivy killed once it committed sync state")
struct CrashPointSyncStateTests {
    /// `CrashPointCLITests.crashed`, with what the killed run printed before it was killed.
    private static func killed(_ device: IvyHome, at point: String, _ arguments: String...) async throws -> RunResult {
        let result = try await device.runBinaryAsync(arguments, environment: ["IVY_CRASH_AT": point])
        #expect(result.status == 128 + SIGKILL, "ivy \(arguments): \(result.status) \(result.stderr)")
        #expect(
            result.stderr.hasSuffix("ivy: crash point \(point) reached; killed (IVY_CRASH_AT)\n"), "\(result.stderr)")
        return result
    }

    /// Brings `laptop` (two books and a clip, synced unless the point is the first sync's) to
    /// the sync that commits `point`.
    private static func lead(to point: String, _ laptop: SignInHarness, _ emulator: GoogleEmulator) async throws {
        let book: String = try #require(try laptop.ivy.sql("SELECT id FROM books ORDER BY id").first?["id"])
        switch point {
        case "store.commit.mirror-clear":
            // A full listing without Drive's change token builds no mirror: the old one goes.
            await emulator.state.addFault(
                FaultRule(method: "GET", pathContains: "changes/startPageToken", jsonFields: ["startPageToken": "null"])
            )
        case "store.commit.missing-on-drive":
            #expect(try await laptop.ivy.run("config", "set", "replace_grace", "0").status == 0)
            let file = try #require(
                await emulator.state.dump().first { $0.name == "book_\(book).json" && !$0.explicitlyTrashed })
            try await emulator.state.trash(id: file.id)
        case "store.commit.replace-withdrawn":
            #expect(try await laptop.ivy.run("book", "update", book, "--title", "Edited").status == 0)
            // The edit's first delete refused: nothing deleted, the replace's mark is taken back.
            await emulator.state.addFault(FaultRule(method: "DELETE", status: 400, reason: "badRequest"))
        case "store.commit.queue-drop":
            // Added and deleted again before any sync: its queue item has nothing to push.
            let clip = try await laptop.ivy.id(
                "clip", "add", "--book", book, "--start", "5", "--duration", "2", "--audio",
                try laptop.ivy.mp3("brief.mp3"))
            #expect(try await laptop.ivy.run("clip", "delete", clip).status == 0)
        default:
            Issue.record("no scenario for \(point)")
        }
    }

    @Test(
        "a sync killed as it commits a cleared mirror, absence, a withdrawn mark, a dropped item: the next converges",
        arguments: [
            "store.commit.mirror-clear", "store.commit.missing-on-drive", "store.commit.replace-withdrawn",
            "store.commit.queue-drop",
        ])
    func syncStateCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 1)
            if point != "store.commit.mirror-clear" { #expect(try await laptop.ivy.run("sync").status == 0) }
            try await Self.lead(to: point, laptop, emulator)
            let before = try laptop.library()
            try await CrashPointCLITests.crashed(laptop.ivy, at: point, "sync")
            await emulator.state.clearFaults()
            #expect(try laptop.library() == before, "the kill changed no edit")
            let again = try await laptop.ivy.run("sync")
            #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
            #expect(try laptop.library() == before, "nothing lost here")
            #expect(try laptop.ivy.count("SELECT count(*) FROM sync_queue") == 0, "nothing left to push")
            #expect(try laptop.ivy.count("SELECT count(*) FROM sync_manifest WHERE missing_since IS NOT NULL") == 0)
            #expect(try laptop.ivy.count("SELECT count(*) FROM drive_mirror_token") == 1, "a mirror again")
            #expect(CrashPointCLITests.leftovers(laptop).isEmpty, "\(CrashPointCLITests.leftovers(laptop))")
            try await CrashPointCLITests.expectAgreement(laptop, emulator)
            if point == "store.commit.replace-withdrawn" {
                #expect(try laptop.ivy.count("SELECT count(*) FROM books WHERE title = 'Edited'") == 1)
            }
        }
    }

    @Test(
        "a change Drive refused three times, killed as it is held, told or retried: named until retried, then on Drive",
        arguments: ["store.commit.failure", "store.commit.held-reported", "store.commit.retry-failed"])
    func heldChangeCrashed(_ point: String) async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            let book = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", status: 403, reason: "forbidden"))
            for _ in 1...2 { #expect(try await device.ivy.runBinaryAsync("sync", "--auto").status == 0) }
            // The third failure holds the change back, and cron is told of it.
            let third =
                point == "store.commit.retry-failed"
                ? try await device.ivy.runBinaryAsync("sync", "--auto")
                : try await Self.killed(device.ivy, at: point, "sync", "--auto")
            await emulator.state.clearFaults()
            let before = try device.library()
            // Cron hears of it once: in the run killed after telling it, or in the next one.
            let told = point == "store.commit.failure" ? try await device.ivy.runBinaryAsync("sync", "--auto") : third
            #expect(told.stderr.contains("held back after failing 3 times; first: book \(book): "), "\(told.stderr)")
            #expect(told.stderr.contains("run `ivy retry-failed`"))
            let quiet = try await device.ivy.runBinaryAsync("sync", "--auto")
            #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stderr)")

            let held = try await device.ivy.run("sync")
            #expect(held.status == 5, "held back, so not everything is on Drive: \(held.stdout)")
            #expect(held.stdout.contains("1 change held back after failing 3 times: book \(book) ("), "\(held.stdout)")
            #expect(held.stdout.contains("run `ivy retry-failed`"))
            let status = try await device.ivy.run("status")
            #expect(status.stdout.contains("held back         book \(book): "), "\(status.stdout)")
            #expect(await CrashPointCLITests.driveNames(emulator)["book_\(book).json"] == nil)

            if point == "store.commit.retry-failed" {
                try await CrashPointCLITests.crashed(device.ivy, at: point, "retry-failed")
                let queue = try #require(try await device.ivy.run("queue", "--json").json() as? [[String: Any]])
                #expect(queue.count == 1 && queue.first?["failed"] as? Bool == false, "pending again: \(queue)")
            } else {
                let retried = try await device.ivy.run("retry-failed")
                #expect(retried.stdout == "1 failed item will be tried again at the next sync.\n", "\(retried.stdout)")
            }
            let released = try await device.ivy.run("sync")
            #expect(released.status == 0 && !released.stdout.contains("held back"), "\(released.stdout)")
            #expect(try device.library() == before, "nothing lost here")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue") == 0)
            try await CrashPointCLITests.expectAgreement(device, emulator)
        }
    }

    @Test("--auto that cannot start, killed as it marks the error told: cron heard it in that run, then never again")
    func cronErrorToldCrashed() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            // No OAuth client: the sync cannot start, which cron hears once. The run's first setting
            // committed is `last_error`, for status; the second marks what cron was told.
            let noClient = ["IVY_CLIENT_ID": "", "IVY_CLIENT_SECRET": ""]
            let killed = try await device.ivy.runBinaryAsync(
                ["sync", "--auto"], environment: noClient.merging(["IVY_CRASH_AT": "store.commit.setting:2"]) { $1 })
            #expect(killed.status == 128 + SIGKILL, "\(killed.status) \(killed.stderr)")
            #expect(killed.stderr.hasPrefix("Error: ") || killed.stderr.hasPrefix("ivy sync: "), "\(killed.stderr)")
            #expect(killed.stderr.contains("OAuth client"), "told before it was marked told: \(killed.stderr)")
            for _ in 1...2 {
                let quiet = try await device.ivy.runBinaryAsync(["sync", "--auto"], environment: noClient)
                #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stderr)")
            }
        }
    }

    @Test("history --conflicts killed as it marks them seen: they were shown first, and stay listed")
    func conflictsSeenCrashed() async throws {
        try await withEmulator { emulator in
            let (a, b, _) = try await HistoryCommandTests.titleConflict(emulator, there: "Dune (phone)")
            #expect(try await b.ivy.run("status").stdout.contains("conflicts         1 new"))

            let shown = try await Self.killed(b.ivy, at: "store.commit.conflicts-seen", "history", "--conflicts")
            // Marked seen only once the person saw it: the kill came after the table.
            #expect(shown.lines.count == 2 && shown.stdout.contains("\"Dune (laptop)\""), "\(shown.stdout)")
            #expect(try await b.ivy.run("status").stdout.contains("conflicts         none new"))
            let again = try await b.ivy.runBinaryAsync("history", "--conflicts")
            #expect(again.status == 0 && again.lines.count == 2, "still listed: \(again.stdout)\(again.stderr)")

            #expect(try await b.ivy.run("sync").status == 0)
            #expect(try await a.ivy.run("sync").status == 0)
            #expect(try b.ivy.sql("SELECT title FROM books").first?["title"] as String? == "Dune (laptop)")
            try await CrashPointCLITests.expectAgreement(b, emulator, other: a)
        }
    }

    @Test("a malformed JSON on Drive, a sync killed as it remembers it and as it forgets it gone: said until gone")
    func unreadableCrashed() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 1)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let books = try #require(await emulator.state.dump().first { $0.isFolder && $0.name == "books" })
            let stranger = "5a5a5a5a-0000-4000-8000-000000000000"
            let file = await emulator.state.putFile(
                email: "alice@example.com", name: "book_\(stranger).json", parents: [books.id],
                content: Data("{\"id\": \"\(stranger)\", \"title\": ".utf8), mimeType: "application/json")
            let before = try laptop.library()

            try await CrashPointCLITests.crashed(laptop.ivy, at: "store.commit.unreadable-remember", "sync")
            #expect(try laptop.ivy.count("SELECT count(*) FROM unreadable_drive_files") == 1)
            let skipped = try await laptop.ivy.runBinaryAsync("sync", "-v")
            #expect(skipped.status == 0, "\(skipped.stderr)")
            #expect(
                skipped.lines.contains { $0.hasPrefix("skipped ") && $0.contains("book_\(stranger).json") },
                "\(skipped.stdout)")
            let check = try await laptop.ivy.runBinaryAsync("check")
            #expect(check.stdout.contains("unreadable_json: book \(stranger): "), "\(check.stdout)")
            #expect(check.stdout.contains("every sync skips it"), "\(check.stdout)")

            try await emulator.state.trash(id: file.id)
            try await CrashPointCLITests.crashed(laptop.ivy, at: "store.commit.unreadable-forget", "sync")
            #expect(try laptop.ivy.count("SELECT count(*) FROM unreadable_drive_files") == 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let clean = try await laptop.ivy.runBinaryAsync("check")
            #expect(!clean.stdout.contains(stranger), "\(clean.stdout)")
            #expect(try laptop.library() == before, "nothing lost here, nothing taken from the malformed file")
            try await CrashPointCLITests.expectAgreement(laptop, emulator)
        }
    }
}
