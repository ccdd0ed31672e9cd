import Foundation
import GoogleEmulator
import IvyGoogle
import IvySystem
import IvyTestSupport
import Testing

/// The `ivy-emulator` binary as the README's walkthrough uses it: started in the background
/// (over HTTPS, its default), approving the sign-in of an `ivy login` binary.
// approve's and deny's choices are tested against an in-process emulator over plain http: what
// they pick is the point (`ExecutableTests` covers approve refusing an untrusted certificate).
@Suite("ivy-emulator --background, approve and deny, through the binaries")
struct EmulatorCommandTests {
    static let emulator = BuiltProgram.emulator.path
    /// approve's and deny's `--wait` where a test waits for the sign-in itself: ten minutes, so
    /// a loaded machine makes the test slower, never red (the default 30 s once ran out).
    static let patient = "600"
    /// The code `ivy login` shows.
    static var code: Regex<(Substring, Substring)> { /\b([A-Z]{4}-[A-Z]{4})\b/ }

    /// `ivy login` as a person starts it, in `environment`.
    static func login(_ environment: [String: String]) -> ChildCommand {
        ChildCommand(BuiltProgram.ivy.path, ["login"], environment: environment)
    }

    @Test(
        """
        eval of --background's line points ivy at a detached emulator; approve takes the newest sign-in over two \
        left by killed logins, from $IVY_OAUTH_URL, creating nothing in HOME; kill saves --state
        """)
    func backgroundWalkthrough() async throws {
        let directory = try TemporaryHome(prefix: "emulator-walk")
        let stateFile = directory.file("drive.json")
        let envFile = directory.file("emulator.env")
        let logFile = directory.file("emulator.log")
        let started = try await Background.start(
            ["--state", stateFile, "--background", "--env-file", envFile, "--log", logFile], in: directory)
        defer { started.stop() }
        #expect(started.status == 0, "\(started.errors)")
        let line = started.output.trimmingCharacters(in: .newlines)
        let exportLine =
            #/
            export\ IVY_OAUTH_URL=(https://127\.0\.0\.1:\d+)\ IVY_DRIVE_URL=(\S+)
            \ IVY_EMULATOR_SECRET=(\w+)\ IVY_CA_FILE=(\S+)\ IVY_EMULATOR_PID=(\d+)
            /#
        let match = try #require(line.wholeMatch(of: exportLine), "\(started.output)")
        let url = String(match.1)
        #expect(String(match.2) == url)
        let secret = String(match.3)
        let caFile = String(match.4)
        #expect(started.output == line + "\n")
        let pid = try #require(pid_t(match.5))
        #expect(started.pid == pid)
        // Detached: its own session, so a closed terminal's SIGHUP never reaches it.
        #expect(getsid(pid) == pid)
        // Made by the detached emulator itself: in no program's arguments, which every user can read.
        let arguments = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))
        #expect(!String(decoding: arguments, as: UTF8.self).contains(secret))

        #expect(try String(contentsOfFile: envFile, encoding: .utf8) == line + "\n")
        let mode = try FileManager.default.attributesOfItem(atPath: envFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let evaluated = try await shell(
            #"eval "$(cat "$0")"; printf '%s %s %s %s' "$IVY_DRIVE_URL" "$IVY_EMULATOR_PID" "$IVY_EMULATOR_SECRET" "#
                + #""$IVY_CA_FILE""#,
            envFile)
        #expect(evaluated == "\(url) \(pid) \(secret) \(caFile)")

        // ivy waits a second between polls instead of five.
        try await control(url, "/_emulator/config", secret: secret, caFile: caFile, ["poll_interval": 1])
        var environment = [
            "IVY_HOME": directory.file("home"), "HOME": directory.path, "PATH": "/usr/bin:/bin",
            "IVY_OAUTH_URL": url, "IVY_DRIVE_URL": url, "IVY_CA_FILE": caFile, "NO_COLOR": "1",
            "IVY_CLIENT_ID": GoogleEmulator.defaultClient.id, "IVY_CLIENT_SECRET": GoogleEmulator.defaultClient.secret,
        ]
        var stale: [String] = []
        for _ in 0..<2 {
            try await withChild(Self.login(environment)) { login in
                stale.append(try #require(try await login.firstMatch(of: Self.code, what: "show its code")))
                login.send(SIGKILL)
                _ = try await login.finish()
            }
        }
        try await withChild(Self.login(environment)) { login in
            let code = try #require(try await login.firstMatch(of: Self.code, what: "show its code"))

            // approve as a person would run it: no --url, from an empty home of its own.
            let approveHome = directory.file("approve-home")
            try FileManager.default.createDirectory(atPath: approveHome, withIntermediateDirectories: false)
            environment = [
                "HOME": approveHome, "PATH": "/usr/bin:/bin", "IVY_OAUTH_URL": url, "IVY_EMULATOR_SECRET": secret,
                "IVY_CA_FILE": caFile,
            ]
            let approved = try await run(Self.emulator, ["approve", "--wait", Self.patient], environment: environment)
            #expect(approved.status == 0, "\(approved.stderr)")
            #expect(
                approved.stdout == """
                    approved \(code) for alice@example.com
                    left pending: \(stale[0]), \(stale[1]) (older sign-ins; pick one with --code)

                    """)
            let signedIn = try await login.finish()
            #expect(signedIn.status == 0, "\(signedIn.stderr)")
            #expect(signedIn.stdout.hasSuffix("Signed in as alice@example.com\n"), "\(signedIn.stdout)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: approveHome) == [])

            let pending = try await control(url, "/_emulator/pending", secret: secret, caFile: caFile)
            #expect(pending["user_codes"] as? [String] == stale.sorted())

            try await started.stopAndWait(log: logFile)
            // It holds the emulated accounts' tokens.
            let stateMode = try FileManager.default.attributesOfItem(atPath: stateFile)[.posixPermissions] as? Int
            #expect(stateMode == 0o600)
            let log = try String(contentsOfFile: logFile, encoding: .utf8)
            #expect(log.hasPrefix(url + "\n" + line + "\n"), "\(log)")
            // The authority's certificate goes with the emulator; --state keeps its key.
            #expect(!FileManager.default.fileExists(atPath: caFile))
        }
    }

    @Test("restarted with the same --state, the emulator listens on its old port again, so sign-ins keep working")
    func portKept() async throws {
        let directory = try TemporaryHome(prefix: "emulator-port")
        let stateFile = directory.file("drive.json")
        let logFile = directory.file("emulator.log")
        var urls: [String] = []
        // A port let go can be taken by anything before the restart: on a machine busy with
        // tests, the local end of some other connection on 127.0.0.1. The emulator then starts
        // on another (and records it), so a restart that found its port taken is tried again;
        // the same port every time is the rule, not a move each time.
        for _ in 0..<4 {
            let started = try await Background.start(
                ["--state", stateFile, "--background", "--log", logFile], in: directory)
            defer { started.stop() }
            #expect(started.status == 0, "\(started.errors)")
            let url = try #require(started.output.firstMatch(of: /IVY_OAUTH_URL=(\S+)/).map { String($0.1) })
            urls.append(url)
            // Killed, it saves its state (the port with it) and closes its log.
            try await started.stopAndWait(log: logFile)
            if urls.count >= 2, urls[urls.count - 2] == url { break }
        }
        #expect(urls.count < 4 && urls[urls.count - 2] == urls[urls.count - 1], "\(urls)")
    }

    @Test(
        """
        a second emulator on the same --state refuses, naming the running one's PID and URL, and starts nothing; \
        once the first is killed outright (SIGKILL) the state file is free again
        """)
    func stateFileHeld() async throws {
        let directory = try TemporaryHome(prefix: "emulator-held")
        let stateFile = directory.file("drive.json")
        let logFile = directory.file("emulator.log")
        let first = try await Background.start(["--state", stateFile, "--background", "--log", logFile], in: directory)
        defer { first.stop() }
        #expect(first.status == 0, "\(first.errors)")
        let url = try #require(first.output.firstMatch(of: /IVY_OAUTH_URL=(\S+)/).map { String($0.1) })
        let pid = try #require(first.pid)

        let envFile = directory.file("second.env")
        let second = try await Background.start(
            ["--state", stateFile, "--background", "--env-file", envFile], in: directory)
        defer { second.stop() }
        #expect(second.status == 1, "\(second.output)")
        #expect(second.output == "")
        #expect(
            second.errors.contains(
                "the state file \(stateFile) is in use by another ivy-emulator (process \(pid), at \(url)); use it "
                    + "(`export IVY_OAUTH_URL=\(url) IVY_DRIVE_URL=\(url)`), stop it first (`kill \(pid)`"),
            "\(second.errors)")
        #expect(!FileManager.default.fileExists(atPath: envFile))

        // Killed with no chance to clean up, it holds nothing: the system let go of its lock.
        first.stop(signal: SIGKILL)
        await BlockingExecutor.run { () -> Void in
            // Waits on this thread, not a cooperative one, for the killed process's lock to go.
            let descriptor = open(stateFile + ".lock", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            flock(descriptor, LOCK_SH)
            close(descriptor)
        }
        let thirdLog = directory.file("third.log")
        let third = try await Background.start(
            ["--state", stateFile, "--background", "--log", thirdLog], in: directory)
        defer { third.stop() }
        #expect(third.status == 0, "\(third.errors)")
        try await third.stopAndWait(log: thirdLog)
    }

    @Test("a --background emulator that cannot start says why, prints no export line and exits nonzero")
    func backgroundFailure() async throws {
        let directory = try TemporaryHome(prefix: "emulator-fail")
        let stateFile = directory.file("drive.json")
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: stateFile))
        let envFile = directory.file("emulator.env")
        let started = try await Background.start(
            ["--state", stateFile, "--background", "--env-file", envFile], in: directory)
        defer { started.stop() }
        #expect(started.status != 0)
        #expect(started.output == "")
        #expect(started.errors.contains("cannot read the state file \(stateFile)"), "\(started.errors)")
        #expect(!FileManager.default.fileExists(atPath: envFile))
    }

    @Test("a --background emulator whose --log cannot be opened says so and leaves no --env-file behind")
    func unopenableLog() async throws {
        let directory = try TemporaryHome(prefix: "emulator-badlog")
        let envFile = directory.file("emulator.env")
        let logFile = directory.file("missing/emulator.log")
        let started = try await Background.start(
            ["--background", "--env-file", envFile, "--log", logFile], in: directory)
        defer { started.stop() }
        #expect(started.status != 0)
        #expect(started.output == "")
        #expect(started.errors.contains("cannot open the log \(logFile)"), "\(started.errors)")
        #expect(!FileManager.default.fileExists(atPath: envFile))
    }

    @Test("approve waits for a sign-in asked for after it started, and approves it for --account")
    func approveWaits() async throws {
        try await withEmulator(tls: false) { emulator in
            let url = emulator.baseURL.absoluteString
            let directory = try TemporaryHome(prefix: "emulator-wait")
            let approving = Task {
                try await run(
                    Self.emulator, ["approve", "--url", url, "--account", "bob@example.com", "--wait", Self.patient],
                    environment: [
                        "HOME": directory.path, "PATH": "/usr/bin:/bin",
                        "IVY_EMULATOR_SECRET": emulator.state.controlSecret,
                    ])
            }
            // Asked for once approve has looked, so it is surely a sign-in approve never saw.
            await emulator.state.waitForPendingListings(count: 1)
            let code = try await askForCode(url)
            let approved = try await approving.value
            #expect(approved.status == 0, "\(approved.stderr)")
            #expect(approved.stdout == "approved \(code) for bob@example.com\n")
            #expect(await emulator.state.pendingUserCodes() == [])
        }
    }

    @Test("approve --account naming no account of the emulator says which accounts it has, and approves nothing")
    func approveUnknownAccount() async throws {
        try await withEmulator(tls: false) { emulator in
            let url = emulator.baseURL.absoluteString
            let directory = try TemporaryHome(prefix: "emulator-carol")
            let code = try await askForCode(url)
            let refused = try await run(
                Self.emulator, ["approve", "--url", url, "--code", code, "--account", "carol@example.com"],
                environment: [
                    "HOME": directory.path, "PATH": "/usr/bin:/bin",
                    "IVY_EMULATOR_SECRET": emulator.state.controlSecret,
                ])
            #expect(refused.status == 1)
            #expect(
                refused.stderr
                    == "Error: no account carol@example.com in the emulator; it has alice@example.com, bob@example.com "
                    + "(approve --account takes one of them; an emulator started with `--account carol@example.com` "
                    + "has that one too)\n", "\(refused.stderr)")
            #expect(await emulator.state.pendingUserCodes() == [code])
        }
    }

    @Test(
        """
        a login killed after asking for its code, then a new one started after approve: approve waits for the \
        new one's sign-in instead of approving the dead one, and the new login signs in
        """)
    func approveSkipsKilledLogin() async throws {
        try await withEmulator(tls: false) { emulator in
            let url = emulator.baseURL.absoluteString
            await emulator.state.setDeviceCode(interval: 1)
            let directory = try TemporaryHome(prefix: "emulator-killed")
            let environment = [
                "IVY_HOME": directory.file("home"), "HOME": directory.path, "PATH": "/usr/bin:/bin",
                "IVY_OAUTH_URL": url, "IVY_DRIVE_URL": url, "IVY_CA_FILE": emulator.caFile?.path ?? "", "NO_COLOR": "1",
                "IVY_CLIENT_ID": GoogleEmulator.defaultClient.id,
                "IVY_CLIENT_SECRET": GoogleEmulator.defaultClient.secret,
            ]
            let stale = try await withChild(Self.login(environment)) { killed in
                let stale = try #require(try await killed.firstMatch(of: Self.code, what: "show its code"))
                killed.send(SIGKILL)
                _ = try await killed.finish()
                return stale
            }

            // A minute has not passed: the dead sign-in still looks fresh. approve looks first,
            // and only then does the new login ask for its code.
            let approving = Task {
                try await run(
                    Self.emulator, ["approve", "--wait", Self.patient],
                    environment: [
                        "HOME": directory.path, "PATH": "/usr/bin:/bin", "IVY_OAUTH_URL": url,
                        "IVY_EMULATOR_SECRET": emulator.state.controlSecret,
                    ])
            }
            await emulator.state.waitForPendingListings(count: 1)
            try await withChild(Self.login(environment)) { login in
                let code = try #require(try await login.firstMatch(of: Self.code, what: "show its code"))
                let approved = try await approving.value
                #expect(approved.status == 0, "\(approved.stderr)")
                #expect(
                    approved.stdout == """
                        approved \(code) for alice@example.com
                        left pending: \(stale) (older sign-in; pick one with --code)

                        """)
                // Had the dead one been approved, the new login would wait out its code's lifetime.
                if !approved.stdout.hasPrefix("approved \(code) ") { login.send(SIGKILL) }
                let signedIn = try await login.finish()
                #expect(signedIn.status == 0, "\(signedIn.stderr)")
                #expect(await emulator.state.pendingUserCodes() == [stale])
            }
        }
    }

    @Test("approve leaves a sign-in nobody polls any more alone and names it; --code approves it anyway")
    func abandonedSignIn() async throws {
        try await withEmulator(clock: .manual(), tls: false) { emulator in
            let url = emulator.baseURL.absoluteString
            let directory = try TemporaryHome(prefix: "emulator-abandoned")
            let environment = [
                "HOME": directory.path, "PATH": "/usr/bin:/bin", "IVY_OAUTH_URL": url,
                "IVY_EMULATOR_SECRET": emulator.state.controlSecret,
            ]
            let code = try await askForCode(url)
            await emulator.state.advanceClock(by: 61)
            let refused = try await run(Self.emulator, ["approve", "--wait", "0"], environment: environment)
            #expect(refused.status == 1)
            #expect(
                refused.stderr.hasPrefix(
                    "Error: no sign-in is waiting at \(url); start `ivy login` first (\(code) was left by a login"),
                "\(refused.stderr)")
            #expect(refused.stderr.contains("--code"))
            let approved = try await run(Self.emulator, ["approve", "--code", code], environment: environment)
            #expect(approved.status == 0, "\(approved.stderr)")
            #expect(approved.stdout == "approved \(code) for alice@example.com\n")
        }
    }

    @Test("deny takes the newest waiting sign-in and says which")
    func denyNewest() async throws {
        try await withEmulator(tls: false) { emulator in
            let url = emulator.baseURL.absoluteString
            let directory = try TemporaryHome(prefix: "emulator-deny")
            let older = try await askForCode(url)
            let denying = Task {
                try await run(
                    Self.emulator, ["deny", "--wait", Self.patient],
                    environment: [
                        "HOME": directory.path, "IVY_OAUTH_URL": url,
                        "IVY_EMULATOR_SECRET": emulator.state.controlSecret,
                    ])
            }
            await emulator.state.waitForPendingListings(count: 1)
            let newer = try await askForCode(url)
            let denied = try await denying.value
            #expect(denied.status == 0, "\(denied.stderr)")
            #expect(denied.stdout == "denied \(newer)\nleft pending: \(older) (older sign-in; pick one with --code)\n")
            #expect(await emulator.state.pendingUserCodes() == [older])
        }
    }

    @Test(
        """
        approve without IVY_EMULATOR_SECRET says how to set it and exits 64; with a wrong one it says the emulator \
        refused it and exits 1; neither approves the sign-in
        """)
    func approveWithoutTheSecret() async throws {
        try await withEmulator(tls: false) { emulator in
            let url = emulator.baseURL.absoluteString
            let directory = try TemporaryHome(prefix: "emulator-secret")
            let code = try await askForCode(url)
            var environment = ["HOME": directory.path, "PATH": "/usr/bin:/bin", "IVY_OAUTH_URL": url]
            let missing = try await run(Self.emulator, ["approve", "--code", code], environment: environment)
            #expect(missing.status == 64)
            #expect(
                missing.stderr.hasPrefix(
                    "Error: the emulator's control API needs its secret: set IVY_EMULATOR_SECRET, as "
                        + "`eval \"$(ivy-emulator --background)\"` or the export line ivy-emulator prints does"),
                "\(missing.stderr)")
            environment["IVY_EMULATOR_SECRET"] = String(emulator.state.controlSecret.reversed())
            let wrong = try await run(Self.emulator, ["approve", "--code", code], environment: environment)
            #expect(wrong.status == 1)
            #expect(
                wrong.stderr.hasPrefix(
                    "Error: the emulator at \(url) refused IVY_EMULATOR_SECRET: it is not the secret that emulator "
                        + "printed; take it from its export line"), "\(wrong.stderr)")
            #expect(!wrong.stderr.contains(emulator.state.controlSecret))
            #expect(await emulator.state.pendingUserCodes() == [code])
        }
    }

    @Test("approve with neither --url nor IVY_OAUTH_URL says how to name the emulator and exits 64")
    func approveWithoutURL() async throws {
        let directory = try TemporaryHome(prefix: "emulator-nourl")
        let result = try await run(Self.emulator, ["approve"], environment: ["HOME": directory.path])
        #expect(result.status == 64)
        #expect(
            result.stderr.hasPrefix("Error: which emulator? Give --url URL, or set IVY_OAUTH_URL"), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    }
}

/// `ivy-emulator … --background` run to the point where it exits, leaving the emulator it
/// started running detached (no longer our child to wait for).
private final class Background: @unchecked Sendable {
    let status: Int32
    let output: String
    let errors: String
    var pid: pid_t?

    private init(status: Int32, output: String, errors: String) {
        self.status = status
        self.output = output
        self.errors = errors
    }

    static func start(_ arguments: [String], in directory: TemporaryHome) async throws -> Background {
        let command = ChildCommand(
            EmulatorCommandTests.emulator, arguments, environment: ["HOME": directory.path, "PATH": "/usr/bin:/bin"],
            workingDirectory: directory.path)
        // Both pipes end when it exits: the emulator it started holds neither by then.
        let result = try await runChild(command)
        let started = Background(status: result.status, output: result.stdout, errors: result.stderr)
        // Known before any check of the output, so `stop` ends the emulator whatever fails next.
        if let match = started.output.firstMatch(of: /IVY_EMULATOR_PID=(\d+)/), let pid = pid_t(match.1) {
            started.pid = pid
            // Detached, so no longer our child; it must not outlive this process all the same.
            await ChildRegistry.adopt(pid)
        }
        return started
    }

    /// Stops the emulator, if it runs, without waiting (for a test that failed early).
    func stop(signal: Int32 = SIGTERM) {
        if let pid {
            kill(pid, signal)
            ChildRegistry.forget(pid)
        }
        pid = nil
    }

    /// Stops the emulator with SIGTERM and returns once it has exited: when the log it writes
    /// to is closed (inotify's IN_CLOSE_WRITE), which the kernel does as the process ends.
    func stopAndWait(log: String) async throws {
        let watcher = inotify_init1(Int32(IN_CLOEXEC))
        #expect(watcher >= 0)
        defer { close(watcher) }
        #expect(inotify_add_watch(watcher, log, UInt32(IN_CLOSE_WRITE)) >= 0)
        stop()
        pid = nil
        _ = await Task(executorPreference: BlockingExecutor.shared) {
            var event = [UInt8](repeating: 0, count: 4096)
            return Glibc.read(watcher, &event, event.count)
        }.value
    }
}

/// Runs `executable` to its end.
private func run(_ executable: String, _ arguments: [String], environment: [String: String]) async throws -> RunResult {
    RunResult(try await runChild(ChildCommand(executable, arguments, environment: environment)))
}

/// Runs a /bin/sh script; answers its output.
private func shell(_ script: String, _ arguments: String...) async throws -> String {
    let result = try await run("/bin/sh", ["-c", script] + arguments, environment: [:])
    return result.stdout
}

/// Asks the emulator for a device code as `ivy login` does; answers the user code.
private func askForCode(_ url: String) async throws -> String {
    let data = try await HTTPClientTransport().send(
        HTTPRequest(
            method: "POST", url: try #require(URL(string: url + "/device/code")),
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: .data(Data("client_id=\(GoogleEmulator.defaultClient.id)&scope=email".utf8)))
    ).body
    let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    return try #require(answer?["user_code"] as? String, "\(String(decoding: data, as: UTF8.self))")
}

/// Calls the emulator's control API with its secret; answers its JSON object.
@discardableResult
private func control(
    _ url: String, _ path: String, secret: String, caFile: String? = nil, _ body: [String: Any]? = nil
) async throws -> [String: Any] {
    var request = HTTPRequest(
        method: "GET", url: try #require(URL(string: url + path)),
        headers: [EmulatorState.controlSecretHeader: secret])
    if let body {
        request.method = "POST"
        request.body = .data(try JSONSerialization.data(withJSONObject: body))
        request.headers["Content-Type"] = "application/json"
    }
    let data = try await HTTPClientTransport(WireSettings(caFile: caFile)).send(request).body
    return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
}
