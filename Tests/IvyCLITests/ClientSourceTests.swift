import Foundation
import GoogleEmulator
import IvyCore
import IvyGoogle
import IvyProcesses
import IvyTestSupport
import Testing

/// Which OAuth client ivy uses and says it uses (issue 31): login's options, then
/// IVY_CLIENT_ID/IVY_CLIENT_SECRET, then the settings, then the client built into a release.
@Suite("OAuth client sources: option, environment, settings, built-in")
struct ClientSourceTests {
    typealias Setup = SignInEndpointTests

    /// A third client of the Ivy app's project, for the settings.
    static let settingsClient = EmulatedClient(id: "settings.apps.googleusercontent.com", secret: "settings-secret")
    static let builtIn = BuildStamp(
        commit: "abc1234", clientID: GoogleEmulator.defaultClient.id, clientSecret: GoogleEmulator.defaultClient.secret)

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The built ivy copied to `path` and stamped there by `scripts/package --stamp`, as a release
    /// is, with the emulator's client (its secret from a 0600 file, as a release's comes).
    static func release(at path: String, directory: String) async throws {
        try FileManager.default.copyItem(atPath: BuiltProgram.ivy.path, toPath: path)
        let secretFile = directory + "/client-secret"
        #expect(
            FileManager.default.createFile(
                atPath: secretFile, contents: Data(GoogleEmulator.defaultClient.secret.utf8),
                attributes: [.posixPermissions: 0o600]))
        let stamp = try await runChild(
            ChildCommand(
                root.appendingPathComponent("scripts/package").path,
                [
                    "--stamp", path, "--client-id", GoogleEmulator.defaultClient.id, "--client-secret-file",
                    secretFile,
                ],
                environment: ["PATH": "/usr/bin:/bin"]))
        #expect(stamp.status == 0, "\(stamp.stderr)")
    }

    private func status(_ ivy: IvyHome, environment: [String: String] = [:]) async throws -> [String: Any] {
        let result = try await ivy.run(["status", "--json"], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test("status --json says client_source, and status and doctor name it, never the secret")
    func statusNamesTheSource() async throws {
        let ivy = try Setup.cronHome()
        #expect(try await status(ivy)["client_source"] as? String == "none")
        #expect(try await ivy.run("status").stdout.contains("none: this build has none built in"))
        ivy.build = Self.builtIn
        #expect(try await status(ivy)["client_source"] as? String == "built-in")
        let plain = try await ivy.run("status")
        #expect(
            plain.stdout.contains("\(GoogleEmulator.defaultClient.id) (built into this release)"),
            "\(plain.stdout)")
        let doctor = try await ivy.run("doctor")
        #expect(doctor.stdout.contains("(built into this release)"), "\(doctor.stdout)")
        #expect(!(plain.stdout + doctor.stdout).contains("from built"), "\(plain.stdout)\(doctor.stdout)")
        #expect(try await ivy.run("config", "set", "client_id", Self.settingsClient.id).status == 0)
        #expect(try await ivy.run("config", "set", "client_secret", Self.settingsClient.secret).status == 0)
        #expect(try await status(ivy)["client_source"] as? String == "settings")
        let environment = [
            "IVY_CLIENT_ID": GoogleEmulator.appClient.id, "IVY_CLIENT_SECRET": GoogleEmulator.appClient.secret,
        ]
        #expect(try await status(ivy, environment: environment)["client_source"] as? String == "environment")
        for run in [try await ivy.run("status"), try await ivy.run("status", "--json"), try await ivy.run("doctor")] {
            #expect(!(run.stdout + run.stderr).contains("secret-"))
            #expect(!(run.stdout + run.stderr).contains(Self.settingsClient.secret))
            #expect(!(run.stdout + run.stderr).contains(GoogleEmulator.defaultClient.secret))
        }
    }

    /// Issue 40 #7: a release (the built ivy, stamped as `scripts/package` stamps it, with a
    /// client) where only `client_id` was set. Its built-in client is not used (its secret never
    /// goes with another id), so nothing can sign in: status, doctor and login say so alike.
    @Test("half a client on a release: status, doctor and login give the one same answer, with the fix")
    func halfAClientOnARelease() async throws {
        let ivy = try Setup.cronHome()
        let release = ivy.path + "/release-ivy"
        try await Self.release(at: release, directory: ivy.path)
        func run(_ arguments: String...) async throws -> RunResult {
            RunResult(
                try await runChild(
                    ChildCommand(release, arguments, environment: ivy.environment, workingDirectory: ivy.path)))
        }
        #expect(try await run("--version").stdout.contains("(commit "))
        #expect(try await run("config", "set", "client_id", "mine.apps.googleusercontent.com").status == 0)

        let half = "a client id is given (the setting client_id) but no client secret"
        let answer = half + ": " + ClientResolution.halfClientFix
        let status = try await run("status")
        let line = status.lines.first { $0.hasPrefix("oauth client") } ?? status.stdout
        #expect(line.hasSuffix("none: " + answer), "\(line)")
        #expect(!status.stdout.contains("has none built in"), "\(status.stdout)")
        let json = try #require(try await run("status", "--json").json() as? [String: Any])
        #expect(json["client_problem"] as? String == answer && json["client_source"] as? String == "none")
        let doctor = try await run("doctor")
        #expect(doctor.status == 1)
        #expect(doctor.stdout.contains("problem oauth client: " + half + "; fix: " + ClientResolution.halfClientFix))
        let login = try await run("login")
        #expect(login.status != 0 && login.stderr.contains(answer), "\(login.stderr)")
        for run in [status, doctor, login] {
            #expect(!(run.stdout + run.stderr).contains(GoogleEmulator.defaultClient.secret))
        }
    }

    /// Issue 40 #6: the stamp is in the program's read-only data, which it reads from memory, so
    /// what drops a file's tail (strip), forbids reading the file (execute-only) or makes
    /// /proc/self/exe another program (the loader) leaves it alone.
    @Test("a release's stamp survives strip, an execute-only install and a run through ld.so")
    func stampSurvivesRepackaging() async throws {
        let ivy = try Setup.cronHome()
        let release = ivy.path + "/release-ivy"
        try await Self.release(at: release, directory: ivy.path)
        let stripped = ivy.path + "/stripped-ivy"
        let strip = try await runChild(ChildCommand("/usr/bin/strip", ["-o", stripped, release]))
        #expect(strip.status == 0, "\(strip.stderr)")
        func run(_ executable: String, _ arguments: [String]) async throws -> RunResult {
            RunResult(
                try await runChild(
                    ChildCommand(executable, arguments, environment: ivy.environment, workingDirectory: ivy.path)))
        }
        let loader = try #require(
            ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        for (executable, arguments) in [(stripped, [String]()), (loader, [stripped])] {
            let version = try await run(executable, arguments + ["--version"])
            #expect(version.stdout.contains("(commit ") && !version.stdout.contains("unknown"), "\(version.stdout)")
            let status = try await run(executable, arguments + ["status", "--json"]).json() as? [String: Any]
            #expect(status?["client_source"] as? String == "built-in", "\(String(describing: status))")
        }

        // Execute-only, for its owner too; root reads every file, so there it runs as nobody.
        #expect(chmod(stripped, 0o111) == 0)
        let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", stripped, "--version"]
        let executeOnly =
            getuid() == 0
            ? try await run("/usr/bin/setpriv", asNobody) : try await run(stripped, ["--version"])
        #expect(executeOnly.status == 0, "\(executeOnly.stderr)")
        #expect(executeOnly.stdout.contains("(commit ") && !executeOnly.stdout.contains("unknown"))
    }

    @Test("with nothing configured, login signs in with the built-in client and stores nothing in the settings")
    func builtInSignsIn() async throws {
        try await withEmulator { emulator in
            let ivy = try Setup.cronHome()
            ivy.build = Self.builtIn
            let login = try await Setup.login(ivy, emulator, [])
            #expect(login.status == 0, "\(login.stderr)")
            #expect(try Setup().storedToken(ivy)["client_id"] as? String == GoogleEmulator.defaultClient.id)
            #expect(try await ivy.run("config", "get", "client_id").stdout != GoogleEmulator.defaultClient.id + "\n")
            _ = try await ivy.id("book", "add", "--title", "Dune")
            let sync = try await ivy.run("sync")
            #expect(sync.status == 0, "\(sync.stderr)")
        }
    }

    @Test("the binary: login's option beats the environment, which beats the settings")
    func binaryOrder() async throws {
        try await withEmulator { emulator in
            await emulator.state.addClient(Self.settingsClient)
            await emulator.state.setDeviceCode(interval: 0)
            let ivy = try Setup.cronHome()
            #expect(try await ivy.run("config", "set", "client_id", Self.settingsClient.id).status == 0)
            #expect(try await ivy.run("config", "set", "client_secret", Self.settingsClient.secret).status == 0)
            let servers = Setup.servers(emulator)
            let environment = [
                "IVY_CLIENT_ID": GoogleEmulator.appClient.id, "IVY_CLIENT_SECRET": GoogleEmulator.appClient.secret,
            ]
            let secretFile = ivy.path + "/secret"
            try GoogleEmulator.defaultClient.secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
            func signIn(_ arguments: [String], _ extra: [String: String]) async throws -> String? {
                let login = ivy.command(["login"] + arguments, environment: servers.merging(extra) { $1 })
                let result = RunResult(try await signInAsAPerson(login, at: emulator.state, as: "alice@example.com"))
                #expect(result.status == 0, "\(result.stderr)")
                return try Setup().storedToken(ivy)["client_id"] as? String
            }
            #expect(try await signIn([], [:]) == Self.settingsClient.id)
            #expect(try await signIn([], environment) == GoogleEmulator.appClient.id)
            let option = ["--client-id", GoogleEmulator.defaultClient.id, "--client-secret-file", secretFile]
            #expect(try await signIn(option, environment) == GoogleEmulator.defaultClient.id)
            let json = try await ivy.runBinaryAsync(["status", "--json"], environment: environment)
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            #expect(object?["client_source"] as? String == "environment", "\(json.stdout)")
        }
    }
}
