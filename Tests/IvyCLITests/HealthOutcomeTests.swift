import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 40 items 2, 3 and 11, through the built ivy: each health ping's outcome is recorded
/// and shown by `status` and `doctor` (a ping the service did not take is a problem there); a
/// user name and password in `health_url` are never shown; a ping's body carries counts and
/// kinds, never a path of this machine.
// The emulator stands in for the health service here, and pings trust the system's certificate
// authorities alone (not a sign-in's IVY_CA_FILE): so it serves plain http in these tests.
@Suite("Health pings: the last outcome, credentials in the URL, what a ping tells")
struct HealthOutcomeTests {
    /// A signed-in device whose `health_url` is `url` (the emulator's `/health/check` when nil).
    private static func device(_ emulator: GoogleEmulator, url: String? = nil) async throws -> SignInHarness {
        let device = try await SignInHarness.signedIn(emulator)
        let set = try await device.ivy.runBinaryAsync(
            "config", "set", "health_url", url ?? emulator.baseURL.absoluteString + "/health/check")
        #expect(set.status == 0, "\(set.stderr)")
        return device
    }

    private static func statusJSON(_ ivy: IvyHome) async throws -> [String: Any] {
        let status = try await ivy.runBinaryAsync("status", "--json")
        #expect(status.status == 0, "\(status.stderr)")
        return try #require(try status.json() as? [String: Any])
    }

    /// doctor's `health url` line.
    private static func doctorLine(_ ivy: IvyHome) async throws -> (status: Int32, line: String) {
        let doctor = try await ivy.runBinaryAsync("doctor")
        let line = doctor.lines.first { $0.contains("health url:") } ?? "(no health url line)\n\(doctor.stdout)"
        return (doctor.status, line)
    }

    @Test("a ping the service took: status shows when and what it answered, doctor says ok")
    func answered() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.device(emulator)
            let before = try await device.ivy.runBinaryAsync("status")
            #expect(before.stdout.contains("last health ping  none yet: the next sync pings it"), "\(before.stdout)")
            #expect(try await Self.doctorLine(device.ivy).line.hasPrefix("warning health url:"))
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
            let status = try await device.ivy.runBinaryAsync("status")
            #expect(status.stdout.contains("health url        \(emulator.baseURL.absoluteString)/health/check"))
            #expect(status.stdout.contains("(just now): the success ping answered 200"), "\(status.stdout)")
            let ping = try #require(try await Self.statusJSON(device.ivy)["last_health_ping"] as? [String: Any])
            #expect(ping["signal"] as? String == "success" && ping["status"] as? Int == 200)
            #expect(ping["ok"] as? Bool == true && ping["problem"] is NSNull)
            let doctor = try await Self.doctorLine(device.ivy)
            #expect(doctor.line.hasPrefix("ok      health url:"), "\(doctor.line)")
            #expect(doctor.line.contains("the last ping (success, ") && doctor.line.contains("answered 200"))
        }
    }

    /// What a health URL can get wrong, and what status and doctor then say.
    enum Failure: String, CaseIterable, Sendable {
        case notFound, redirect, unreachable, refusedValue
    }

    @Test(
        "a ping not taken (404, a redirect, no server, a stored URL ivy refuses) is shown, and doctor's problem",
        arguments: Failure.allCases)
    func notTaken(_ failure: Failure) async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.device(emulator)
            let expected: String
            switch failure {
            case .notFound:
                await emulator.state.addFault(FaultRule(method: "POST", pathContains: "/health/", status: 404))
                expected = "answered 404 (not found)"
            case .redirect:
                await emulator.state.addFault(
                    FaultRule(
                        method: "POST", pathContains: "/health/", status: 307,
                        headers: ["Location": "https://hc-ping.example/elsewhere"]))
                expected = "answered 307 (a redirect, which ivy does not follow)"
            case .unreachable:
                let dead = try await GoogleEmulator.start()
                let url = dead.baseURL.absoluteString + "/health/check"
                await dead.stop()
                #expect(try await device.ivy.runBinaryAsync("config", "set", "health_url", url).status == 0)
                expected = "could not be sent: "
            case .refusedValue:
                // Another program wrote a value `ivy config set` refuses.
                try device.ivy.execute(
                    "UPDATE settings SET value = 'http://example.com/ping' WHERE key = 'health_url'")
                expected = "was not sent: health_url uses plain http:// to example.com"
            }
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            let sync = try await device.ivy.runBinaryAsync("sync")
            #expect(sync.status == 0, "a ping never changes how a sync ends: \(sync.stderr)")
            let status = try await device.ivy.runBinaryAsync("status")
            let line = status.lines.first { $0.hasPrefix("last health ping") } ?? status.stdout
            #expect(line.contains("the success ping " + expected), "\(line)")
            let ping = try #require(try await Self.statusJSON(device.ivy)["last_health_ping"] as? [String: Any])
            #expect(ping["ok"] as? Bool == false, "\(ping)")
            let doctor = try await Self.doctorLine(device.ivy)
            #expect(doctor.status == 1)
            #expect(doctor.line.hasPrefix("problem health url:"), "\(doctor.line)")
            switch failure {
            case .notFound, .redirect:
                #expect(doctor.line.contains(expected) && doctor.line.contains("check the URL"), "\(doctor.line)")
            case .unreachable:
                #expect(doctor.line.contains(expected) && doctor.line.contains("reachable from here"), "\(doctor.line)")
            case .refusedValue:
                #expect(doctor.line.contains("ivy does not ping it"), "\(doctor.line)")
                #expect(doctor.line.contains("ivy config set health_url"), "\(doctor.line)")
            }
        }
    }

    @Test("a user name and password in health_url are masked by config set, get and list, status, doctor and the log")
    func credentialsMasked() async throws {
        try await withEmulator(tls: false) { emulator in
            // https to the emulator's plain-http port: the ping fails, and its error is logged.
            let port = try #require(emulator.baseURL.port)
            let url = "https://alice:s3cr3t-pw@127.0.0.1:\(port)/health/check"
            let masked = "https://***@127.0.0.1:\(port)/health/check"
            let device = try await Self.device(emulator, url: url)
            let ivy = device.ivy
            let set = try await ivy.runBinaryAsync("config", "set", "health_url", url)
            #expect(set.stdout == "health_url = \(masked)\n", "\(set.stdout)")
            #expect(try await ivy.runBinaryAsync("config", "get", "health_url").stdout == masked + "\n")
            _ = try await ivy.id("book", "add", "--title", "Dune")
            #expect(try await ivy.runBinaryAsync("sync").status == 0)
            var seen = ""
            for arguments in [
                ["config", "list"], ["config", "list", "--json"], ["status"], ["status", "--json"], ["doctor"],
                ["doctor", "--json"],
            ] {
                let run = try await ivy.runBinaryAsync(arguments)
                #expect(run.stdout.contains(masked), "\(arguments): \(run.stdout)")
                seen += run.stdout + run.stderr
            }
            seen += try String(contentsOfFile: ivy.home + "/ivy.log", encoding: .utf8)
            #expect(seen.contains("health ping failed"))
            #expect(!seen.contains("s3cr3t-pw") && !seen.contains("alice:"), "\(seen)")
        }
    }

    @Test("http:// with a user name and password is refused for what it is, without echoing them")
    func plainHTTPCredentials() async throws {
        let ivy = try IvyHome()
        for url in ["http://alice:s3cr3t-pw@127.0.0.1:8080/ping", "http://alice:s3cr3t-pw@example.com/ping"] {
            let set = try await ivy.runBinaryAsync("config", "set", "health_url", url)
            #expect(set.status == 64, "\(url)")
            #expect(set.stderr.contains("puts a user name or password in a plain http:// URL"), "\(set.stderr)")
            #expect(set.stderr.contains("use https://, or leave the user:password@ part out"), "\(set.stderr)")
            #expect(!set.stderr.contains("only loopback may"), "\(set.stderr)")
            #expect(!set.stderr.contains("s3cr3t-pw"), "\(set.stderr)")
        }
        let odd = try await ivy.runBinaryAsync("config", "set", "health_url", "ftp://alice:s3cr3t-pw@example.com/x")
        #expect(odd.status == 64 && !odd.stderr.contains("s3cr3t-pw"), "\(odd.stderr)")
        #expect(odd.stderr.contains("ftp://***@example.com/x"), "\(odd.stderr)")
    }

    @Test("a ping's body names counts and kinds, never a path here: a clip whose audio went missing")
    func noPathInAPing() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.device(emulator)
            let ivy = device.ivy
            let book = try await ivy.id("book", "add", "--title", "Dune")
            let clip = try await ivy.id(
                "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", try ivy.mp3("a.mp3"))
            try FileManager.default.removeItem(atPath: ivy.home + "/audio/\(clip).mp3")
            let sync = try await ivy.runBinaryAsync("sync")
            #expect(sync.status == 5, "\(sync.stderr)")
            // The terminal is this machine: there the reason names the file.
            #expect((sync.stdout + sync.stderr).contains(ivy.home + "/audio/"), "\(sync.stdout)\(sync.stderr)")
            let last = try #require(await emulator.state.healthPings.last)
            #expect(last.path == "/health/check/fail")
            #expect(last.body.contains("1 change held back after failing 3 times (audio missing here)"), "\(last.body)")
            #expect(!last.body.contains("/"), "no path: \(last.body)")
        }
    }

    @Test("a watch that finds the sign-in file damaged pings /fail without the file's path")
    func watchSignedOutNoPath() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await Self.device(emulator)
            try Data("{".utf8).write(to: URL(fileURLWithPath: device.tokenFile))
            try await WatchProcess.with(device.ivy, interval: 2) { watch in
                try await watch.next("the wait for a sign-in") { $0.event == "waiting" }
                #expect(try await watch.stop().status == 0)
            }
            let last = try #require(await emulator.state.healthPings.last)
            #expect(last.path == "/health/check/fail")
            #expect(last.body.hasPrefix("signed out: run ivy login"), "\(last.body)")
            #expect(!last.body.contains("/"), "no path: \(last.body)")
        }
    }
}
