import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 30: health-check pings, in healthchecks.io's convention, against the emulator's
/// `/health/…` service (real HTTP on loopback), and `last success` in `ivy status`.
// The emulator stands in for the health service here, and pings trust the system's certificate
// authorities alone (not a sign-in's IVY_CA_FILE): so it serves plain http in these tests.
@Suite("Health-check pings and the last success")
struct HealthCheckTests {
    /// A signed-in device whose `health_url` is the emulator's `/health/check`.
    /// A query (healthchecks.io's `?create=1`) stays after the signal's suffix.
    private static func pinging(_ emulator: GoogleEmulator, query: String = "") async throws -> SignInHarness {
        let device = try await SignInHarness.signedIn(emulator)
        let set = try await device.ivy.run(
            "config", "set", "health_url", emulator.baseURL.absoluteString + "/health/check" + query)
        #expect(set.status == 0, "\(set.stderr)")
        return device
    }

    private static func pings(_ emulator: GoogleEmulator) async -> [HealthPing] {
        await emulator.state.healthPings
    }

    @Test(
        """
        a sync drills the history every history_check_days, the first sync starting the count; a drill that finds \
        a version that does not restore says so, is no success and pings /fail
        """)
    func syncDrillsHistory() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator)
            let (_, clip, _, second) = try await device.ivy.clipWithTwoTakes()
            #expect(try await device.ivy.run("clip", "update", clip, "--audio", second).status == 0)
            let first = try await device.ivy.runBinaryAsync("sync", "--json")
            #expect(first.status == 0, "\(first.stderr)")
            #expect((try first.json() as? [String: Any])?["history_drill"] is NSNull)
            let started = try device.ivy.sql("SELECT value FROM settings WHERE key = 'history_checked_at'")
            #expect(started.count == 1, "the first sync starts the count, drilling nothing")
            let success = try await device.ivy.runBinaryAsync("status", "--json").json() as? [String: Any]

            // Eight days on, as the record has it, and the first take the history kept changed since.
            let week = Int64(Date().timeIntervalSince1970 * 1000) - 8 * 86_400_000
            try device.ivy.execute("UPDATE settings SET value = '\(week)' WHERE key = 'history_checked_at'")
            let kept = try #require(
                try device.ivy.sql("SELECT audio_md5 FROM history WHERE audio_md5 IS NOT NULL").first?["audio_md5"]
                    as String?)
            let path = device.ivy.home + "/history/\(kept).mp3"
            var bytes = try #require(FileManager.default.contents(atPath: path))
            bytes[bytes.count - 1] ^= 0xFF
            try bytes.write(to: URL(fileURLWithPath: path))
            let drilled = try await device.ivy.runBinaryAsync("sync")
            #expect(drilled.status == 0, "everything is on Drive: \(drilled.stderr)")
            #expect(
                drilled.stderr.hasPrefix(
                    "History drill: 1 problem in the 3 versions restored into a scratch copy; first: "),
                "\(drilled.stderr)")
            #expect(drilled.stderr.hasSuffix("; `ivy check --history` runs the whole drill\n"), "\(drilled.stderr)")
            let pinged = await Self.pings(emulator).last
            #expect(pinged?.path == "/health/check/fail", "\(String(describing: pinged))")
            #expect(pinged?.body.contains("the restore drill found versions that do not come back as recorded") == true)
            let after = try await device.ivy.runBinaryAsync("status", "--json").json() as? [String: Any]
            #expect(after?["last_success"] as? String == success?["last_success"] as? String, "no success")
            let checked = try device.ivy.sql("SELECT value FROM settings WHERE key = 'history_checked_at'")
            #expect(checked.first?["value"] as String? != String(week), "the drill is recorded: the next is a week on")
        }
    }

    @Test("a clean sync pings /start, then success with the summary; status shows the last success")
    func cleanSync() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator, query: "?create=1")
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            #expect(try await device.ivy.run("status").stdout.contains("last success      never"))
            let sync = try await device.ivy.run("sync")
            #expect(sync.status == 0, "\(sync.stderr)")
            let pings = await Self.pings(emulator)
            #expect(pings.map(\.path) == ["/health/check/start", "/health/check"])
            #expect(pings.last?.body.hasPrefix("Synced: 1 uploaded;") == true, "\(pings)")

            let status = try await device.ivy.run("status")
            #expect(status.stdout.contains("last success      20"), "\(status.stdout)")
            #expect(status.stdout.contains("(just now)"), "\(status.stdout)")
            let json = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            let success = try #require(json["last_success"] as? String)
            #expect(success.hasSuffix("Z") && success.count == 20, "\(success)")
        }
    }

    @Test("a held change pings /fail with the summary, and is no success")
    func heldChange() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", status: 403, reason: "forbidden"))
            for _ in 1...3 { #expect(try await device.ivy.run("sync").status == 5) }
            let held = try await device.ivy.run("sync")
            #expect(held.status == 5)
            let last = try #require(await Self.pings(emulator).last)
            #expect(last.path == "/health/check/fail")
            #expect(last.body.contains("1 change held back after failing 3 times"), "\(last.body)")
            #expect(await Self.pings(emulator).allSatisfy { $0.path != "/health/check" })
            let json = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            #expect(json["last_success"] is NSNull)
        }
    }

    @Test("--auto with a revoked sign-in stays silent, exits 0 and pings /fail with the reason")
    func revokedAuto() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator)
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.revoke(email: "alice@example.com")
            var token = try device.storedToken()
            token["expires_at"] = 0
            try JSONSerialization.data(withJSONObject: token).write(to: URL(fileURLWithPath: device.tokenFile))
            for run in 1...2 {
                let auto = try await device.ivy.run("sync", "--auto")
                #expect(auto.status == 0 && auto.stdout.isEmpty && auto.stderr.isEmpty, "run \(run): \(auto.stderr)")
                let last = try #require(await Self.pings(emulator).last)
                #expect(last.path == "/health/check/fail", "run \(run)")
                #expect(last.body.hasPrefix("signed out: run ivy login"), "run \(run): \(last.body)")
            }
        }
    }

    @Test("an --auto skipped for the cooldown pings nothing")
    func cooldownSkip() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator)
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
            let before = await Self.pings(emulator).count
            let auto = try await device.ivy.runBinaryAsync("sync", "--auto")
            #expect(auto.status == 0 && auto.stdout.isEmpty && auto.stderr.isEmpty)
            #expect(await Self.pings(emulator).count == before)
        }
    }

    @Test("a dead health service changes nothing: same exit status, silent --auto, logged")
    func deadService() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            // A port nothing listens on: the emulator's own, once a second emulator is stopped.
            let dead = try await GoogleEmulator.start()
            let url = dead.baseURL.absoluteString + "/health/check"
            await dead.stop()
            #expect(try await device.ivy.run("config", "set", "health_url", url).status == 0)
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
            _ = try await device.ivy.id("book", "add", "--title", "Emma")
            let auto = try await device.ivy.runBinaryAsync("sync", "--auto")
            #expect(auto.status == 0 && auto.stdout.isEmpty && auto.stderr.isEmpty, "\(auto.stderr)")
            let log = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains("health ping failed"), "\(log)")
        }
    }

    @Test("a health service that never answers is given up at the deadline, and the exit status stays")
    func silentService() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator)
            device.ivy.healthDeadline = .milliseconds(300)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(FaultRule(method: "POST", pathContains: "/health/", hold: true))
            let sync = try await device.ivy.run("sync")
            #expect(sync.status == 0, "\(sync.stderr)")
            // The sync ended while the service still held its ping: the deadline, not an
            // answer, let it go; the end's ping was not sent, the deadline being spent.
            #expect(await emulator.state.requestsHeldNow == 1)
            let log = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains("health ping given up"), "\(log)")
            #expect(log.contains("health ping not sent"), "\(log)")
            // Said as a sentence: the ping got no answer (second review of issue 40, low 6).
            let status = try await device.ivy.run("status")
            let line = status.lines.first { $0.hasPrefix("last health ping") } ?? status.stdout
            #expect(line.hasSuffix("the start ping got no answer within 0.3 s"), "\(line)")
        }
    }

    /// Issue 40 #1: a ping needs the status only. The built ivy takes it from the status line
    /// and hangs up, so a service that sends its status and then stalls holds no sync: the old
    /// ivy waited for the body until its 10 s were spent, and sent no end ping.
    @Test("a health service that sends its status and stalls is taken at its status: the sync is not held")
    func statusThenStall() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(FaultRule(method: "POST", pathContains: "/health/", holdBody: true))
            let sync = try await device.ivy.runBinaryAsync("sync")
            #expect(sync.status == 0 && sync.stdout.hasPrefix("Synced: 1 uploaded"), "\(sync.stdout)\(sync.stderr)")
            #expect(await Self.pings(emulator).map(\.path) == ["/health/check/start", "/health/check"])
            // Both answers still stall at their first byte: ivy never waited for them.
            #expect(await emulator.state.requestsHeldNow == 2)
            let log = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(!log.contains("health ping given up") && !log.contains("health ping not sent"), "\(log)")
        }
    }

    /// Issue 40 #1: a service that answers with a body that never ends (the emulator would
    /// send 8 GiB). ivy takes the status and hangs up: the answer's body is dropped unread,
    /// which cancels the request, never queued in memory or ahead of Drive's transfers. What
    /// the server hands over before the cancel (loopback's socket buffers grow to MBs) is
    /// outside ivy's reach; the stream itself is not read.
    @Test("a health service streaming an endless answer is hung up on at its status, and memory stays a sync's")
    func endlessAnswer() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(FaultRule(method: "POST", pathContains: "/health/", endless: true))
            let sync = try await device.ivy.runBinaryAsync(
                ["sync"], through: ["/usr/bin/time", "-f", "peak_rss_kb=%M"])
            #expect(sync.status == 0 && sync.stdout.hasPrefix("Synced: 1 uploaded"), "\(sync.stdout)\(sync.stderr)")
            #expect(await Self.pings(emulator).map(\.path) == ["/health/check/start", "/health/check"])
            let sent = await emulator.state.endlessBytesSent
            #expect(sent < 256 << 20, "\(sent) bytes of filler handed over")
            let peak = try #require(sync.stderr.firstMatch(of: /peak_rss_kb=(\d+)/).flatMap { Int($0.1) })
            #expect(peak < 150_000, "peak RSS \(peak) kB")
            let log = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(!log.contains("health ping failed") && !log.contains("health ping refused"), "\(log)")
        }
    }

    /// The one test that takes the real 10 s: the built ivy, with no deadline but its own.
    @Test("the built ivy gives a health service that never answers 10 s in all: the sync ends, its status unchanged")
    func silentServiceBinary() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            // The same sync's own time, the service answering at once.
            var began = ContinuousClock.now
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
            let own = ContinuousClock.now - began

            _ = try await device.ivy.id("book", "add", "--title", "Emma")
            // The service takes the connection and the request, and never answers.
            await emulator.state.addFault(FaultRule(method: "POST", pathContains: "/health/", hold: true))
            began = ContinuousClock.now
            let sync = try await device.ivy.runBinaryAsync("sync")
            let took = ContinuousClock.now - began
            #expect(sync.status == 0 && sync.stdout.hasPrefix("Synced: 1 uploaded"), "\(sync.stdout)\(sync.stderr)")
            #expect(took >= .seconds(10), "\(took)")
            // Held forever, so any bound shows the deadline ended it; a generous one, since a
            // loaded machine runs the same sync at very different speeds.
            #expect(took < .seconds(40) + own * 2, "took \(took); the sync alone \(own)")
            #expect(await emulator.state.requestsHeldNow == 1, "the /start ping, still held")
            let log = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(log.contains("health ping given up") && log.contains("after_s=10"), "\(log)")
            #expect(log.contains("health ping not sent"), "\(log)")
        }
    }

    @Test("a watch pings a success at most once a minute, and /fail once when it starts waiting signed out")
    func watchPings() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.pinging(emulator)
            let began = ContinuousClock.now
            try await WatchProcess.with(device.ivy, interval: 2) { watch in
                try await watch.next("the first sync") { $0.event == "sync" }
                _ = try await device.ivy.id("book", "add", "--title", "Dune")
                try await watch.next("the local change's sync") { $0.event == "sync" && $0.books("uploaded") == 1 }
                let synced = await Self.pings(emulator).map(\.path)
                // A watch's syncs send no /start; a minute between successes (unless this machine
                // took longer than that for both syncs).
                if ContinuousClock.now - began < .seconds(60) { #expect(synced == ["/health/check"], "\(synced)") }
                #expect(synced.allSatisfy { $0 == "/health/check" }, "\(synced)")

                await emulator.state.revoke(email: "alice@example.com")
                try await watch.next("the sign-out") { $0.event == "waiting" }
                _ = try await device.ivy.id("book", "add", "--title", "Emma")
                #expect(try await device.login().status == 0)
                try await watch.next("the sync after login") { $0.event == "sync" && $0.books("uploaded") == 1 }
                let after = await Self.pings(emulator).dropFirst(synced.count)
                // The polls while it waited pinged nothing more; the success after a fail is at once.
                #expect(after.map(\.path) == ["/health/check/fail", "/health/check"], "\(after)")
                #expect(after.first?.body.hasPrefix("signed out: run ivy login") == true, "\(after)")
                #expect(try await watch.stop().status == 0)
            }
        }
    }

    /// Second review of issue 40, low 1: `HTTPS://host/x` passed `config set`, and then every
    /// ping failed: URLSession took a scheme in lower case only.
    @Test("a scheme in capitals is the same scheme: config set stores it lower case, and a stored one is pinged")
    func schemeInCapitals() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            let url = emulator.baseURL.absoluteString + "/health/check"
            let shouted = "HTTP" + url.dropFirst("http".count)
            let set = try await device.ivy.run("config", "set", "health_url", shouted)
            #expect(set.status == 0 && set.stdout == "health_url = \(url)\n", "\(set.stdout)\(set.stderr)")
            #expect(
                try await device.ivy.run("config", "set", "health_url", "HTTPS://hc-ping.com/abc").stdout
                    == "health_url = https://hc-ping.com/abc\n")
            // Written so by another program, it is pinged all the same.
            try device.ivy.execute("UPDATE settings SET value = '\(shouted)' WHERE key = 'health_url'")
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            #expect(try await device.ivy.run("sync").status == 0)
            #expect(await Self.pings(emulator).map(\.path) == ["/health/check/start", "/health/check"])
            let status = try await device.ivy.run("status")
            #expect(status.stdout.contains("the success ping answered 200"), "\(status.stdout)")
        }
    }

    @Test("health_url takes https, or http to loopback only; unset stops the pings")
    func settingRules() async throws {
        let ivy = try IvyHome()
        #expect(
            try await ivy.run("config", "set", "health_url", "https://hc-ping.com/abc/").stdout
                == "health_url = https://hc-ping.com/abc\n")
        let plain = try await ivy.run("config", "set", "health_url", "http://example.com/ping")
        #expect(plain.status == 64 && plain.stderr.contains("only loopback may"), "\(plain.stderr)")
        #expect(try await ivy.run("config", "set", "health_url", "ftp://x/y").status == 64)
        #expect(try await ivy.run("config", "unset", "health_url").stdout == "health_url unset\n")
        #expect(try await ivy.run("config", "set", "last_success", "1").status == 64)
    }
}
