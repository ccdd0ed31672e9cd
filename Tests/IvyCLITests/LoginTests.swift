import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// ivy runs in this test process (or as the binary, to be interrupted); the emulator runs
/// in this test process on a loopback port.
final class SignInHarness {
    let emulator: GoogleEmulator
    let ivy: IvyHome

    init(emulator: GoogleEmulator) throws {
        self.emulator = emulator
        ivy = try IvyHome()
        ivy.environment.merge(
            emulator.signInEnvironment.merging([
                "IVY_CLIENT_ID": GoogleEmulator.defaultClient.id,
                "IVY_CLIENT_SECRET": GoogleEmulator.defaultClient.secret,
            ]) { $1 }
        ) { $1 }
    }

    /// The person approves the code as alice. (A named function: as a closure in the default
    /// argument, the compiler wrongly warned that its `await` awaited nothing.)
    @Sendable static func approveAsAlice(_ state: EmulatorState, _ code: String) async throws {
        try await state.approve(userCode: code, email: "alice@example.com")
    }

    /// Runs `ivy login`, reads its output until the code shows, decides as `decide`, and
    /// waits for the end.
    func login(
        interrupt: Bool = false,
        decide: @escaping @Sendable (EmulatorState, String) async throws -> Void = approveAsAlice
    ) async throws -> RunResult {
        await emulator.state.setDeviceCode(interval: 0)
        if interrupt { return try await interruptedLogin() }
        let login = ivy.start(["login"])
        if let userCode = await login.output.first(/\b([A-Z]{4}-[A-Z]{4})\b/) {
            try await decide(emulator.state, userCode)
        }
        return await login.finish()
    }

    /// `ivy login` as a process, interrupted (SIGINT) once it shows the code.
    private func interruptedLogin() async throws -> RunResult {
        try await withChild(ivy.command(["login"])) { login in
            if try await login.firstMatch(of: /\b([A-Z]{4}-[A-Z]{4})\b/, what: "show its code") != nil {
                login.send(SIGINT)
            }
            return RunResult(try await login.finish())
        }
    }

    var tokenFile: String { ivy.home + "/token.json" }

    func storedToken() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: tokenFile))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }
}

func withSignIn(_ body: (SignInHarness) async throws -> Void) async throws {
    try await withEmulator { emulator in try await body(try SignInHarness(emulator: emulator)) }
}

@Suite("ivy login, logout and status against the emulator")
struct LoginTests {
    @Test("login prints the URL and code, waits for approval, saves a private token file and names the account")
    func login() async throws {
        try await withSignIn { harness in
            let result = try await harness.login()
            #expect(result.status == 0, "stderr: \(result.stderr) stdout: \(result.stdout)")
            #expect(result.stdout.contains(harness.emulator.baseURL.absoluteString + "/device"))
            #expect(result.stdout.contains("30 minutes"))
            #expect(result.stdout.hasSuffix("Signed in as alice@example.com\n"))
            let mode = try FileManager.default.attributesOfItem(atPath: harness.tokenFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let token = try harness.storedToken()
            #expect(token["email"] as? String == "alice@example.com")
            #expect(token["permission_id"] as? String == "04871234567890123456")
            #expect(token["refresh_token"] is String && token["expires_at"] is Int)
            let status = try #require(try await harness.ivy.run("status", "--json").json() as? [String: Any])
            #expect(status["authenticated"] as? Bool == true)
            #expect(status["account"] as? String == "alice@example.com")
            #expect(status["refresh_token_present"] as? Bool == true)
            #expect(status["access_token_expires"] is String)
        }
    }

    @Test("a denied sign-in exits nonzero, says so, and writes no token")
    func denied() async throws {
        try await withSignIn { harness in
            let result = try await harness.login { state, code in try await state.deny(userCode: code) }
            #expect(result.status == 1)
            #expect(result.stderr.contains("denied") && result.stderr.contains("ivy login"))
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
        }
    }

    @Test("Google refusing more sign-in codes: login says to wait and try later")
    func codeQuota() async throws {
        try await withSignIn { harness in
            // Frozen: on a loaded machine a minute could pass between the two logins, and the
            // second would get a code no one approves, polling until it expired.
            await harness.emulator.state.freezeClock()
            await harness.emulator.state.setDeviceCodeLimit(perMinute: 1)
            #expect(try await harness.login().status == 0)
            let second = try await harness.ivy.run("login")
            #expect(second.status == 1)
            #expect(second.stderr.contains("rate_limit_exceeded") && second.stderr.contains("wait a few minutes"))
        }
    }

    @Test("without an OAuth client, login explains how to create one")
    func missingClient() async throws {
        try await withSignIn { harness in
            harness.ivy.environment["IVY_CLIENT_ID"] = nil
            harness.ivy.environment["IVY_CLIENT_SECRET"] = nil
            let result = try await harness.ivy.run("login")
            #expect(result.status == 1)
            #expect(
                result.stderr.contains("TVs and Limited Input devices")
                    && result.stderr.contains("ivy config set client_id"))
        }
    }

    @Test("plain http to a non-loopback host is refused before any request")
    func insecureEndpoint() async throws {
        try await withSignIn { harness in
            let result = try await harness.ivy.run(
                ["login"], environment: ["IVY_OAUTH_URL": "http://oauth2.googleapis.com"])
            #expect(result.status == 1 && result.stderr.contains("https://"))
            #expect(await harness.emulator.state.requests.isEmpty)
        }
    }

    @Test("the client id and secret can come from ivy config")
    func configCredentials() async throws {
        try await withSignIn { harness in
            harness.ivy.environment["IVY_CLIENT_ID"] = nil
            harness.ivy.environment["IVY_CLIENT_SECRET"] = nil
            try await harness.ivy.run("config", "set", "client_id", GoogleEmulator.defaultClient.id)
            try await harness.ivy.run("config", "set", "client_secret", GoogleEmulator.defaultClient.secret)
            #expect(try await harness.login().status == 0)
        }
    }

    @Test("logout deletes the token file; a second logout says not signed in")
    func logout() async throws {
        try await withSignIn { harness in
            _ = try await harness.login()
            let result = try await harness.ivy.run("logout")
            #expect(result.status == 0 && result.stdout.hasPrefix("Signed out of alice@example.com"))
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
            #expect(try await harness.ivy.run("logout").stdout == "Not signed in.\n")
        }
    }

    @Test("signing in as a different account resets the manifest and folder ids but keeps the queue")
    func accountSwitch() async throws {
        try await withSignIn { harness in
            _ = try await harness.login()
            _ = try await harness.ivy.id("book", "add", "--title", "Dune")
            try harness.ivy.execute("INSERT INTO sync_manifest (entity_type, entity_id) VALUES ('book', 'abc')")
            try harness.ivy.execute("INSERT INTO settings (key, value) VALUES ('folder_ivy_id', 'F1')")
            let same = try await harness.login()
            #expect(!same.stdout.contains("different Google account"))
            #expect(try harness.ivy.count("SELECT count(*) FROM sync_manifest") == 1)
            let other = try await harness.login { state, code in
                try await state.approve(userCode: code, email: "bob@example.com")
            }
            #expect(other.stdout.contains("different Google account") && other.stdout.contains("bob@example.com"))
            #expect(try harness.ivy.count("SELECT count(*) FROM sync_manifest") == 0)
            #expect(try harness.ivy.count("SELECT count(*) FROM settings WHERE key = 'folder_ivy_id'") == 0)
            #expect(try harness.ivy.count("SELECT count(*) FROM sync_queue") == 1)
        }
    }

    @Test(
        """
        Ctrl-C while waiting for approval ends the sign-in saying so in one sentence (exit 130), and writes \
        nothing: no token, no account, no empty library.db where there was none
        """)
    func interrupted() async throws {
        try await withSignIn { harness in
            let fresh = try await harness.login(interrupt: true)
            #expect(fresh.status == 130, "\(fresh.stderr)")
            #expect(fresh.stderr == "Sign-in cancelled: nothing was saved.\n", "\(fresh.stderr)")
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
            #expect(!FileManager.default.fileExists(atPath: harness.ivy.home + "/library.db"), "no empty library")

            // A library that was there stays, as it was.
            _ = try await harness.ivy.id("book", "add", "--title", "Dune")
            let kept = try await harness.login(interrupt: true)
            #expect(kept.status == 130 && kept.stderr == "Sign-in cancelled: nothing was saved.\n", "\(kept.stderr)")
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
            #expect(try harness.ivy.count("SELECT count(*) FROM books") == 1)
            #expect(try harness.ivy.count("SELECT count(*) FROM settings WHERE key = 'account_permission_id'") == 0)
        }
    }

    @Test("a damaged token file means signed out, said by status, never a crash")
    func corruptToken() async throws {
        try await withSignIn { harness in
            _ = try await harness.login()
            try Data("garbage".utf8).write(to: URL(fileURLWithPath: harness.tokenFile))
            let status = try await harness.ivy.run("status", "--json")
            #expect(status.status == 0)
            let json = try #require(try status.json() as? [String: Any])
            #expect(json["authenticated"] as? Bool == false)
            #expect((json["signed_out_reason"] as? String)?.contains("damaged") == true)
        }
    }

    @Test("tokens and the client secret never appear in anything ivy prints")
    func noSecretsPrinted() async throws {
        try await withSignIn { harness in
            var printed = [try await harness.login()]
            let token = try harness.storedToken()
            printed.append(try await harness.ivy.run("status"))
            printed.append(try await harness.ivy.run("status", "--json"))
            printed.append(try await harness.ivy.run("config", "list"))
            printed.append(try await harness.ivy.run("sync"))
            printed.append(try await harness.ivy.run("logout", "--revoke", "--yes"))
            let log = (try? String(contentsOfFile: harness.ivy.home + "/ivy.log", encoding: .utf8)) ?? ""
            #expect(log.contains("sync finished"))
            let everything = printed.map { $0.stdout + $0.stderr }.joined() + log
            for secret in [
                token["access_token"] as? String, token["refresh_token"] as? String,
                GoogleEmulator.defaultClient.secret,
            ] {
                let secret = try #require(secret)
                #expect(!everything.contains(secret))
            }
        }
    }

    @Test("Drive not showing the account's email: login and status name it by its permission id")
    func accountWithoutEmail() async throws {
        try await withSignIn { harness in
            await harness.emulator.state.setAboutOmitsEmail(true)
            let login = try await harness.login()
            #expect(login.status == 0, "\(login.stderr)")
            #expect(login.stdout.contains("Signed in as Google account 04871234567890123456"))
            let status = try #require(try await harness.ivy.run("status", "--json").json() as? [String: Any])
            #expect(status["account"] as? String == "Google account 04871234567890123456")
        }
    }
}
