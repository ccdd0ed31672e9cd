import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

@Suite("Ctrl-C on ivy sync, through the binary")
struct SyncInterruptCLITests {
    @Test(
        """
        SIGINT mid-sync: what is in flight finishes, the progress line is cleared, `Stopped: N of M done; the \
        rest is queued for the next sync` is said and logged, exit 5; the next sync uploads the rest and merges nothing
        """)
    func interrupt() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            // More books than a sync starts at once, so that some are still to start when it stops.
            try await laptop.addLibrary(books: 24, clips: 0)
            #expect(try await laptop.ivy.run("config", "set", "concurrency", "1").status == 0)
            // One request at a time, and the third held: the sync is mid-way when the signal comes.
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload/drive/v3/files", nth: 3, hold: true))

            var command = laptop.ivy.command(["sync"])
            command.terminal = [.error]
            command.columns = 80
            let (exit, stdout, stderr) = try await withChild(command) { child in
                await emulator.state.waitForHeld(count: 1)
                child.send(SIGINT)
                await emulator.state.releaseHeld()
                let result = try await child.finish()
                return (result.exit, result.stdout, result.terminal)
            }
            await emulator.state.clearFaults()

            #expect(exit == .exited(5), "\(stderr)")
            // The terminal turns "\n" into "\r\n".
            let stopped = try #require(
                stderr.firstMatch(
                    of: /\r\u{1B}\[KStopped: (\d+) of 24 done; the rest is queued for the next sync\r\n$/),
                "\(stderr.debugDescription)")
            let done = try #require(Int(stopped.1))
            #expect(done >= 3 && done < 24, "\(done)")
            #expect(stdout.hasPrefix("Synced: \(done) uploaded; "), "\(stdout)")
            #expect(stdout.contains("stopped early, \(24 - done) left for the next sync"), "\(stdout)")
            let log = try String(contentsOfFile: laptop.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains("sync stopped by a signal") && log.contains("left=\(24 - done)"), "\(log)")
            #expect(try laptop.ivy.count("SELECT count(*) FROM sync_queue") == 24 - done)

            let again = try await laptop.ivy.run("sync", "--json")
            #expect(again.status == 0, "\(again.stderr)")
            let report = try #require(try again.json() as? [String: Any])
            #expect((report["uploaded"] as? [String: Int])?["books"] == 24 - done, "\(report)")
            #expect((report["merged"] as? [String: Int])?["books"] == 0, "nobody edited them elsewhere: \(report)")
            let names = await emulator.state.dump().map(\.name).filter { $0.hasPrefix("book_") }
            #expect(names.count == 24 && Set(names).count == 24)
        }
    }

    @Test(
        """
        a second SIGINT stops at once: one sentence, exit 5, what finished recorded, and no clip's JSON left on \
        Drive without its MP3 (those in flight rolled back); the next sync uploads the rest
        """)
    func secondInterrupt() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 6)
            // One operation at a time, and every MP3's bytes held: when the first SIGINT comes, the
            // one operation in flight is a clip whose JSON is on Drive and whose MP3 is on its way.
            // (A JSON create in flight when the stop is forced may still have happened at Drive,
            // as it may for a kill: such a lone JSON reads as incomplete, and the next sync here
            // completes it.)
            #expect(try await laptop.ivy.run("config", "set", "concurrency", "1").status == 0)
            await emulator.state.addFault(FaultRule(method: "PUT", pathContains: "upload_id", hold: true))

            var command = laptop.ivy.command(["sync"])
            command.terminal = [.error]
            command.columns = 200
            let (exit, stdout, stderr) = try await withChild(command) { child in
                await emulator.state.waitForHeld(count: 1)
                child.send(SIGINT)
                // The kernel keeps one pending SIGINT: the second is sent once the first is taken.
                let told = try await child.waitUntil("the first SIGINT said") { progress in
                    progress.text(of: .error).contains("interrupt again to stop at once") ? true : nil
                }
                #expect(told == true)
                child.send(SIGINT)
                let result = try await child.finish()
                return (result.exit, result.stdout, result.terminal)
            }
            await emulator.state.clearFaults()
            await emulator.state.releaseHeld()

            #expect(exit == .exited(5), "\(stderr)")
            // The first SIGINT's line names what it waits for: the operations already started
            // (the one whose MP3 is held, and those queued behind it for the one connection).
            let waiting = try #require(
                stderr.firstMatch(
                    of:
                        #/
                        stopping:\ waiting\ for\ the\ (\d+)\ operations\ in\ flight\ \(([0-9.]+\ KiB)\ to\ move\),
                        \ none\ started\ after\ them;\ interrupt\ again\ to\ stop\ at\ once
                        /#), "\(stderr.debugDescription)")
            #expect((Int(waiting.1) ?? 0) >= 2, "\(waiting.0)")
            // The terminal turns "\n" into "\r\n".
            #expect(
                stderr.hasSuffix(
                    "\r\u{1B}[KStopped at once: what finished is recorded, and the rest is queued for the next sync\r\n"
                ),
                "\(stderr.debugDescription)")
            #expect(!stderr.contains("Error"), "\(stderr)")
            #expect(stdout.isEmpty, "\(stdout)")
            let log = try String(contentsOfFile: laptop.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(!log.contains("rolling back a clip JSON failed"), "\(log)")
            let names = Set(await emulator.state.dump().map(\.name))
            let lone = names.filter { $0.hasPrefix("clip_") && $0.hasSuffix(".json") }
                .filter { !names.contains($0.replacingOccurrences(of: ".json", with: ".mp3")) }
            #expect(lone.isEmpty, "clip JSONs without their MP3: \(lone)")
            // What finished is recorded: the book, if it went, is no longer queued.
            let books = names.filter { $0.hasPrefix("book_") }.count
            #expect(try laptop.ivy.count("SELECT count(*) FROM sync_queue") == 7 - books)

            let again = try await laptop.ivy.run("sync")
            #expect(again.status == 0, "\(again.stderr)")
            let after = await emulator.state.dump().map(\.name)
            #expect(after.filter { $0.hasPrefix("clip_") }.count == 12, "\(after)")
            #expect(try laptop.ivy.count("SELECT count(*) FROM sync_queue") == 0)
        }
    }
}
