import Foundation
import GoogleEmulator
import IvyProcesses
import IvyTestSupport
import Testing

/// Google's budget (issue 38): rate limits in Google's newer error shape, the quota every
/// user of the app's OAuth client shares, and the units ivy spends.
@Suite("Google's quota: error shapes, the shared quota, units spent")
struct QuotaTests {
    /// What a spent per-project quota is called on a release's built-in client, everyone's.
    static let sharedNotice = "quota shared by everyone who uses ivy's OAuth client"
    /// What it is called on one's own client (the test devices' is given in the environment).
    static let ownNotice = "quota of your OAuth client's Cloud project, shared by every device signed in with it"
    /// What to do about one's own client's spent quota.
    static let ownFix = "`ivy config set quota_units_per_minute N`"

    private static func occurrences(of text: String, in output: String) -> Int {
        output.components(separatedBy: text).count - 1
    }

    @Test(
        """
        through the binary: a 403 whose reason is only in an ErrorInfo detail (a user's rate limit) is \
        retried, and every change arrives in the same sync; the units spent are reported and kept for status
        """
    )
    func newerShapeRetried() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 3, clips: 0)
            await emulator.state.setWriteLimit(RateLimit(perSecond: 4, burst: 1, quota: .user))
            let result = try await device.ivy.runBinaryAsync("sync", "--json")
            #expect(result.status == 0, "\(result.stderr)")
            let report = try #require(try result.json() as? [String: Any])
            #expect((report["uploaded"] as? [String: Int])?["books"] == 3, "\(report)")
            let refused = await emulator.state.requests.filter { $0.status == 403 }
            #expect(!refused.isEmpty, "the emulator never answered the newer shape")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue") == 0)
            #expect(!result.stderr.contains(Self.sharedNotice))

            let units = try #require(report["quota_units"] as? Int)
            #expect(units >= 3 * 50, "3 creates at 50 units each at least: \(units)")
            let status = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            #expect(status["quota_units_24h"] as? Int == units, "\(status)")
            // Google's day began at midnight Pacific time: this sync is in it (GoogleDayTests has the edges).
            #expect((status["quota_units_today"] as? Int ?? -1) <= units, "\(status)")
            let shown = try await device.ivy.run("status")
            #expect(shown.stdout.contains("google quota"), "\(shown.stdout)")
        }
    }

    @Test(
        """
        through the binary: the whole project's quota running short (defaultPerMinutePerProject) is waited out, \
        every change arrives, and the person is told once that the shared quota ran out and how to avoid it
        """
    )
    func projectLimitSaidOnce() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 3, clips: 0)
            // Slow enough that a loaded machine's requests still come faster than it refills.
            await emulator.state.setWriteLimit(RateLimit(perSecond: 0.5, burst: 1, quota: .project))
            let result = try await device.ivy.runBinaryAsync("sync")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("3 uploaded"), "\(result.stdout)")
            let refused = await emulator.state.requests.filter { $0.status == 403 }.count
            #expect(refused > 1, "the emulator refused only \(refused) requests")
            // Signed in with a client of one's own: no advice to get one, and no secret on the command line.
            #expect(Self.occurrences(of: Self.ownNotice, in: result.stderr) == 1, "\(result.stderr)")
            #expect(result.stderr.contains(Self.ownFix), "\(result.stderr)")
            #expect(!result.stderr.contains("ivy login --client-id"), "\(result.stderr)")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue") == 0)
        }
    }

    @Test(
        """
        a shared quota that stays spent stops the sync with one plain message, never counts against a change \
        (no attempt, nothing held back however many syncs), and the change goes out once the quota is back
        """
    )
    func projectLimitNeverBuriesAChange() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("sync").status == 0)
            let id = try await device.ivy.id("book", "add", "--title", "Waits for the quota")
            // Every retry is spent at once: the test is about what comes after them.
            device.ivy.sleep = IvyHome.noWaits
            await emulator.state.setWriteLimit(RateLimit(perSecond: 0.0001, burst: 0, quota: .project))
            for _ in 0..<4 {
                let stopped = try await device.ivy.run("sync")
                #expect(stopped.status != 0)
                #expect(Self.occurrences(of: Self.ownNotice, in: stopped.stderr) == 1, "\(stopped.stderr)")
                #expect(stopped.stderr.contains(Self.ownFix), "\(stopped.stderr)")
                #expect(!stopped.stderr.contains("--client-secret"), "\(stopped.stderr)")
                #expect(try device.ivy.count("SELECT count(*) FROM sync_queue WHERE attempts > 0") == 0)
            }
            let status = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            #expect((status["held_changes"] as? [Any])?.isEmpty == true, "\(status)")

            await emulator.state.setWriteLimit(nil)
            let sent = try await device.ivy.run("sync")
            #expect(sent.status == 0, "\(sent.stderr)")
            let names = await emulator.state.dump().map(\.name)
            #expect(names.contains("book_\(id).json"), "\(names)")
        }
    }

    @Test(
        """
        through the binary, a release with a client built in: status says so in words, and a per-project quota \
        running short is said to be everyone's, with the fix: one's own client, its secret given in a file
        """
    )
    func projectLimitOnTheBuiltInClient() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("sync").status == 0)
            for title in ["Waits for the quota", "And so does this"] {
                _ = try await device.ivy.id("book", "add", "--title", title)
            }
            let release = device.ivy.path + "/release-ivy"
            try await ClientSourceTests.release(at: release, directory: device.ivy.path)
            // The release's own client, which the sign-in was made with: nothing else is configured.
            var environment = device.ivy.environment
            environment["IVY_CLIENT_ID"] = nil
            environment["IVY_CLIENT_SECRET"] = nil
            func run(_ arguments: String...) async throws -> RunResult {
                RunResult(
                    try await runChild(
                        ChildCommand(release, arguments, environment: environment, workingDirectory: device.ivy.path)))
            }
            let status = try await run("status")
            #expect(
                status.stdout.contains("\(GoogleEmulator.defaultClient.id) (built into this release)"),
                "\(status.stdout)")
            await emulator.state.setWriteLimit(RateLimit(perSecond: 0.5, burst: 1, quota: .project))
            let waited = try await run("sync")
            #expect(waited.status == 0, "\(waited.stderr)")
            #expect(waited.stdout.contains("2 uploaded"), "\(waited.stdout)")
            #expect(Self.occurrences(of: Self.sharedNotice, in: waited.stderr) == 1, "\(waited.stderr)")
            #expect(
                waited.stderr.contains("`ivy login --client-id ID --client-secret-file FILE`"), "\(waited.stderr)")
            #expect(!waited.stderr.contains("--client-secret SECRET"), "\(waited.stderr)")
        }
    }

    @Test("sync -v ends its summary with the Google quota units the sync spent")
    func verboseUnits() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            let result = try await device.ivy.runBinaryAsync("sync", "-v")
            #expect(result.status == 0, "\(result.stderr)")
            let summary = result.lines.last ?? ""
            let units = summary.firstMatch(of: /; (\d+) Google quota units$/).flatMap { Int($0.1) } ?? 0
            #expect(units > 0, "\(result.stdout)")
        }
    }

    @Test("through the binary: a full Drive stops the sync's uploads with one message, not one per file")
    func fullDriveSaidOnce() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("sync").status == 0)
            try await device.addLibrary(books: 4, clips: 0)
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", status: 403, reason: "storageQuotaExceeded"))
            let result = try await device.ivy.runBinaryAsync("sync")
            #expect(result.status != 0)
            #expect(Self.occurrences(of: "Drive is full", in: result.stderr) == 1, "\(result.stderr)")
            #expect(!result.stderr.contains("failed:"), "\(result.stderr)")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue WHERE attempts > 0") == 0)
        }
    }

    @Test("ivy doctor shows the Drive's used and free space, and warns when the library would not fit")
    func doctorStorage() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 1, audioBytes: 3_000_000)
            let roomy = try await device.ivy.run("doctor")
            let line = roomy.stdout.split(separator: "\n").first { $0.contains("drive storage:") } ?? ""
            #expect(line.hasPrefix("ok") && line.contains("MB free"), "\(roomy.stdout)")
            await emulator.state.setStorageLimit(2_000_000)
            let full = try await device.ivy.run("doctor")
            let warned = full.stdout.split(separator: "\n").first { $0.contains("drive storage:") } ?? ""
            #expect(warned.hasPrefix("warning") && warned.contains("would not fit"), "\(full.stdout)")
        }
    }

    @Test(
        """
        through the binary: an idle watch's polls thin out up to watch_max_interval, and a change here, then one \
        on Drive, brings it back to --interval
        """
    )
    func idleWatchThinsOut() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            let phone = try await SignInHarness.signedIn(emulator)
            #expect(try await laptop.ivy.run("config", "set", "watch_max_interval", "8").status == 0)
            try await WatchProcess.with(laptop.ivy, interval: 2) { watch in
                try await watch.next("the first sync") { $0.event == "sync" }
                // Idle: the wait between looks grows 2, ..., 4, 8 and stays at 8.
                let idle = try await watch.next("a poll 8 s from the next") { $0.nextPoll == 8 }
                // The looks between may be read late on a loaded machine; the waits seen never shrink.
                let waits = (idle.passed + [idle.match]).compactMap(\.nextPoll)
                #expect(waits == waits.sorted() && waits.last == 8, "\(waits)")
                // Drive's change feed is read once a look: the emulator counts them.
                await emulator.state.clearRequests()
                try await watch.next("the next idle poll") { $0.event == "sync" && $0.trigger == "poll" }
                let looks = await emulator.state.requests.filter { $0.path.hasSuffix("/changes") }.count
                #expect(looks == 1, "\(looks) change-feed reads in one idle interval")

                _ = try await laptop.ivy.id("book", "add", "--title", "Typed after an idle spell")
                // Usually the change's own sync; on a loaded machine the idle poll may fall due first
                // and carry it. Either way the change ends the idle spell.
                let local = try await watch.next("the local change's sync") { $0.books("uploaded") == 1 }.match
                #expect(["local change", "poll"].contains(local.trigger) && local.nextPoll == 2, "\(local)")

                try await watch.next("idle again") { $0.nextPoll == 8 }
                _ = try await phone.ivy.id("book", "add", "--title", "Made on the phone")
                #expect(try await phone.ivy.run("sync").status == 0)
                let remote = try await watch.next("the phone's book") { $0.books("downloaded") > 0 }.match
                #expect(remote.nextPoll == 2, "\(remote)")
                _ = try await watch.stop()
            }
        }
    }
}

extension [String: Any] {
    /// `next_poll_s` of a watch's sync event.
    var nextPoll: Int? { self["next_poll_s"] as? Int }
}
