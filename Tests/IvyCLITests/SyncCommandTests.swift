import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

extension SignInHarness {
    /// Signed in as `email`, through the real `ivy login`.
    static func signedIn(_ emulator: GoogleEmulator, as email: String = "alice@example.com") async throws
        -> SignInHarness
    {
        let harness = try SignInHarness(emulator: emulator)
        let result = try await harness.login { state, code in try await state.approve(userCode: code, email: email) }
        #expect(result.status == 0, "login: \(result.stderr)")
        return harness
    }

    func addLibrary(books: Int, clips: Int, audioBytes: Int = 2000) async throws {
        var bookIDs: [String] = []
        for index in 0..<books {
            bookIDs.append(try await ivy.id("book", "add", "--title", "Book \(index)", "--position", "\(index)"))
        }
        for index in 0..<clips {
            let audio = try ivy.mp3("clip\(index).mp3", size: audioBytes)
            _ = try await ivy.id(
                "clip", "add", "--book", bookIDs[index % max(1, bookIDs.count)], "--start", "\(index)", "--duration",
                "5", "--audio", audio, "--note", "note \(index)")
        }
    }

    func library() throws -> String {
        let rows =
            try ivy.sql("SELECT id, title, position, hidden, updated_at FROM books ORDER BY id")
            + ivy.sql("SELECT id, book_id, start, duration, note, updated_at FROM clips ORDER BY id")
        return rows.map { $0.description }.joined(separator: "\n")
    }
}

@Suite("ivy sync through the binary")
struct SyncCommandTests {
    @Test("first sync uploads, a second device downloads the same library, a quiet re-sync costs one request")
    func twoDevices() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 3, clips: 2)
            let first = try await laptop.ivy.run("sync", "--json")
            #expect(first.status == 0, "\(first.stderr)")
            let report = try #require(try first.json() as? [String: Any])
            #expect((report["uploaded"] as? [String: Int]) == ["books": 3, "clips": 2])
            let server = try await SignInHarness.signedIn(emulator)
            let second = try await server.ivy.run("sync")
            #expect(second.status == 0 && second.stdout.hasPrefix("Synced: 5 downloaded"))
            #expect(try server.library() == laptop.library())
            for clip in try laptop.ivy.sql("SELECT id FROM clips").map({ $0["id"] as String }) {
                #expect(
                    FileManager.default.contents(atPath: server.ivy.home + "/audio/\(clip).mp3")
                        == FileManager.default.contents(atPath: laptop.ivy.home + "/audio/\(clip).mp3"))
            }
            await emulator.state.clearRequests()
            let quiet = try await laptop.ivy.run("sync", "--json")
            #expect((try quiet.json() as? [String: Any])?["requests"] as? Int == 1, "one page of Drive's changes")
            #expect(await emulator.state.requests.map(\.path) == ["/drive/v3/changes"])
        }
    }

    @Test("a sync's time is the monotonic clock's: Google's time learned afresh mid-sync, an hour on, is not in it")
    func durationByMonotonicClock() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 1)
            // The sign-in measured Google's clock; now its answers are dated an hour later, which
            // fits nothing measured, so the sync's first answer starts the measure afresh.
            await emulator.state.setDateOffset(seconds: 3600)
            await emulator.state.setLatency(milliseconds: 20)
            let synced = try await laptop.ivy.runBinaryAsync("sync", "--json")
            #expect(synced.status == 0, "\(synced.stderr)")
            let report = try #require(try synced.json() as? [String: Any])
            let duration = try #require(report["duration_ms"] as? Int)
            let requests = try #require(report["requests"] as? Int)
            #expect(duration >= 20 && duration < 600_000, "\(duration) ms for \(requests) requests")
        }
    }

    @Test("--dry-run prints the plan with reasons and changes nothing, here or on Drive")
    func dryRun() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            let result = try await device.ivy.run("sync", "--dry-run")
            #expect(result.status == 0)
            #expect(result.stdout.contains("upload: new here") && result.stdout.contains("Would sync: 1 uploaded"))
            #expect(await emulator.state.dump().isEmpty)
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue") == 1)
            #expect(try device.ivy.count("SELECT count(*) FROM sync_manifest") == 0)
        }
    }

    @Test("sync --auto skips silently, with no request, when signed out, disabled, in the cooldown or locked")
    func autoSkips() async throws {
        try await withEmulator { emulator in
            let signedOut = try SignInHarness(emulator: emulator)
            try await signedOut.addLibrary(books: 1, clips: 0)
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            await emulator.state.clearRequests()
            var results = [try await signedOut.ivy.run("sync", "--auto")]
            try await device.ivy.run("config", "set", "sync_enabled", "false")
            results.append(try await device.ivy.run("sync", "--auto"))
            try await device.ivy.run("config", "set", "sync_enabled", "true")
            try device.ivy.execute(
                "INSERT INTO settings (key, value) VALUES "
                    + "('last_sync_time', '\(Int64(Date().timeIntervalSince1970 * 1000))')"
            )
            results.append(try await device.ivy.run("sync", "--auto"))
            try device.ivy.execute("DELETE FROM settings WHERE key = 'last_sync_time'")
            let lock = try HeldLock(path: device.ivy.home + "/ivy.lock")
            results.append(try await device.ivy.run("sync", "--auto"))
            for result in results {
                #expect(result.status == 0 && result.stdout.isEmpty && result.stderr.isEmpty, "\(result.stderr)")
            }
            #expect(await emulator.state.requests.isEmpty)
            // Interactive: the held lock is an error naming the other process.
            let busy = try await device.ivy.run("sync")
            #expect(busy.status == 4 && busy.stderr.contains("another sync is running (process \(getpid()))"))
            lock.release()
            #expect(try await device.ivy.run("sync", "--auto").status == 0)
            #expect(await emulator.state.dump().count == 4)
        }
    }

    @Test("two syncs in one process exclude each other as two processes do: the lock is flock, held per open file")
    func twoSyncsInOneProcess() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            await emulator.state.addFault(FaultRule(method: "GET", pathContains: "/drive/v3/files", hold: true))
            let first = device.ivy.start(["sync"])
            await emulator.state.waitForHeld(count: 1)
            let second = try await device.ivy.run("sync")
            #expect(second.status == 4 && second.stderr.contains("another sync is running (process \(getpid()))"))
            await emulator.state.clearFaults()
            await emulator.state.releaseHeld()
            let finished = await first.finish()
            #expect(finished.status == 0, "\(finished.stderr)")
            #expect(try await device.ivy.run("sync").status == 0, "the lock was freed")
        }
    }

    @Test("reset-manifest waits for a running sync, so what it forgets stays forgotten: the next sync lists in full")
    func resetWaitsForSync() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            #expect(try await device.ivy.run("sync").status == 0)
            await emulator.state.addFault(FaultRule(method: "GET", pathContains: "/drive/v3/changes", hold: true))
            let sync = device.ivy.start(["sync"])
            await emulator.state.waitForHeld(count: 1)
            // Standard error on a terminal, where ivy says it waits; the stream ends when the command does.
            let reset = device.ivy.start(["reset-manifest", "--yes"], errorOnTerminal: true)
            for await chunk in reset.error.chunks where chunk.contains("waiting for the running sync") { break }
            #expect(reset.error.text.contains("waiting for the running sync"), "it did not wait: \(reset.error.text)")
            await emulator.state.clearFaults()
            await emulator.state.releaseHeld()
            let synced = await sync.finish()
            #expect(synced.status == 0, "\(synced.stderr)")
            let forgot = await reset.finish()
            #expect(forgot.status == 0 && forgot.stdout.hasPrefix("Forgot 1 synced entry"), "\(forgot.stderr)")
            let next = try #require(try await device.ivy.run("sync", "--json").json() as? [String: Any])
            #expect(next["full_listing"] is String, "the reset was not undone by the sync it waited for")
        }
    }

    @Test(
        """
        signed out: interactive sync without a terminal names ivy login (exit 3); \
        a revoked sign-in under --auto is silent
        """
    )
    func signedOut() async throws {
        try await withEmulator { emulator in
            let stranger = try SignInHarness(emulator: emulator)
            let refused = try await stranger.ivy.run("sync")
            #expect(refused.status == 3 && refused.stderr.contains("ivy login"))
            let device = try await SignInHarness.signedIn(emulator)
            await emulator.state.revoke(email: "alice@example.com")
            await emulator.state.advanceClock(by: 7200)
            var token = try device.storedToken()
            token["expires_at"] = 0
            try JSONSerialization.data(withJSONObject: token).write(to: URL(fileURLWithPath: device.tokenFile))
            let auto = try await device.ivy.run("sync", "--auto")
            #expect(auto.status == 0 && auto.stdout.isEmpty && auto.stderr.isEmpty)
            let interactive = try await device.ivy.run("sync")
            #expect(interactive.status == 3 && interactive.stderr.contains("ivy login"))
            let status = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            #expect(status["authenticated"] as? Bool == false && status["signed_out_reason"] is String)
        }
    }

    @Test("--auto with the network unreachable exits 0 and logs it; the queue keeps everything")
    func unreachable() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 2, clips: 0)
            // Gone from where the sign-in was made: a network with nothing listening there.
            // What the test is about comes once every retry is spent, so they wait no real time.
            await emulator.stop()
            device.ivy.sleep = IvyHome.noWaits
            let auto = try await device.ivy.run("sync", "--auto")
            #expect(auto.status == 0 && auto.stderr.isEmpty)
            let log = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains("sync failed"))
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue") == 2)
            let interactive = try await device.ivy.run("sync")
            #expect(interactive.status == 1 && interactive.stderr.contains("Error:"))
            // The sign-in was made at the emulator, which is named (at Google: the network is).
            #expect(interactive.stderr.contains("the server this sign-in was made at"), "\(interactive.stderr)")
            #expect(interactive.stderr.contains("every change here stays queued"))
        }
    }

    @Test(
        "reset-manifest on a terminal asks first; only yes forgets",
        arguments: [("y\n", true), ("no\n", false), ("", false)])
    func resetManifestAsks(answer: String, forgets: Bool) async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let result = try await ivy.runOnTerminal(["reset-manifest"], typing: answer)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Forget what this library last synced?"))
        #expect(result.stdout.hasSuffix(forgets ? "the next `ivy sync` is a full re-sync.\n" : "Nothing changed.\n"))
    }

    @Test("queue, retry-failed and reset-manifest")
    func repairTools() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            try device.ivy.execute("UPDATE sync_queue SET attempts = 3, last_error = 'Drive is full'")
            let queue = try #require(try await device.ivy.run("queue", "--json").json() as? [[String: Any]])
            #expect(
                queue.count == 1 && queue[0]["failed"] as? Bool == true
                    && queue[0]["last_error"] as? String == "Drive is full")
            #expect(try await device.ivy.run("queue").stdout.contains("failed"))
            let held = try await device.ivy.run("sync", "--json")
            #expect((try held.json() as? [String: Any])?["held"] as? [Any] != nil)
            #expect(await emulator.state.dump().filter { $0.name.hasPrefix("book_") }.isEmpty)
            #expect(
                try await device.ivy.run("retry-failed").stdout
                    == "1 failed item will be tried again at the next sync.\n")
            #expect(try await device.ivy.run("sync").status == 0)
            #expect(try await device.ivy.run("queue").stdout.contains("empty"))
            let refused = try await device.ivy.run("reset-manifest")
            #expect(refused.status == 64 && refused.stderr.contains("--yes"))
            #expect(try await device.ivy.run("reset-manifest", "--yes").stdout.contains("Forgot 1 synced entry"))
            let resync = try await device.ivy.run("sync", "--json")
            #expect(((try resync.json() as? [String: Any])?["conflicts"] as? [Any])?.isEmpty == true)
            let names = await emulator.state.dump().map(\.name)
            #expect(names.count == Set(names).count, "no duplicate files on Drive")
        }
    }

    @Test("kill -9 in the middle of a large sync, then a re-sync converges with no duplicates and nothing lost")
    func killNine() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 40, clips: 10, audioBytes: 20_000)
            await emulator.state.setLatency(milliseconds: 5)
            await emulator.state.clearRequests()
            try await withChild(device.ivy.command(["sync"])) { sync in
                await emulator.state.waitForRequests(count: 30)
                sync.send(SIGKILL)
                let exit = try await sync.wait()
                #expect(exit == .signalled(SIGKILL))
            }
            await emulator.state.setLatency(milliseconds: 0)
            let again = try await device.ivy.run("sync", "--json")
            #expect(again.status == 0, "\(again.stderr)")
            // A book whose upload reached Drive unrecorded is the same on both sides: not a merge.
            let report = try #require(try again.json() as? [String: Any])
            #expect((report["merged"] as? [String: Int])?["books"] == 0, "\(report)")
            let names = await emulator.state.dump().map(\.name).filter {
                $0.hasPrefix("book_") || $0.hasPrefix("clip_")
            }
            #expect(names.count == 60 && Set(names).count == 60, "one file per name: \(names.count) files")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue") == 0)
            let other = try await SignInHarness.signedIn(emulator)
            #expect(try await other.ivy.run("sync").status == 0)
            #expect(try other.library() == device.library())
        }
    }
}

/// The sync lock held by this test process, as another sync would hold it.
final class HeldLock {
    private var descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_RDWR | O_CREAT, 0o600)
        guard descriptor >= 0, flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { throw CocoaError(.fileLocking) }
        ftruncate(descriptor, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(descriptor, $0, strlen($0)) }
    }

    func release() {
        guard descriptor >= 0 else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
