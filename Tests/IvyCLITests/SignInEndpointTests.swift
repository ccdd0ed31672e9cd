import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// `ivy login --client-id --client-secret`, and a sign-in that remembers where it was made:
/// what cron needs to sync with no IVY_* variable at all (#20 item 2).
@Suite("login stores the client and remembers its servers")
struct SignInEndpointTests {
    /// A home with nothing in its environment but HOME and PATH, as cron runs ivy: the
    /// library and the sign-in are under HOME's XDG directories.
    static func cronHome() throws -> IvyHome {
        let ivy = try IvyHome()
        ivy.environment = ["HOME": ivy.path, "PATH": "/usr/bin:/bin"]
        return ivy
    }

    /// The emulator's URL for both servers, as `ivy-emulator`'s export line gives them.
    static func servers(_ emulator: GoogleEmulator) -> [String: String] { emulator.signInEnvironment }

    static let clientOptions = [
        "--client-id", GoogleEmulator.defaultClient.id, "--client-secret", GoogleEmulator.defaultClient.secret,
    ]

    /// `ivy login ARGUMENTS` in this process against `emulator`, approved as `email`.
    static func login(
        _ ivy: IvyHome, _ emulator: GoogleEmulator, _ arguments: [String] = clientOptions,
        as email: String = "alice@example.com"
    ) async throws -> RunResult {
        await emulator.state.setDeviceCode(interval: 0)
        let login = ivy.start(["login"] + arguments, environment: servers(emulator))
        if let code = await login.output.first(/\b([A-Z]{4}-[A-Z]{4})\b/) {
            try await emulator.state.approve(userCode: code, email: email)
        }
        return await login.finish()
    }

    func storedToken(_ ivy: IvyHome) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: ivy.path + "/.config/ivy/token.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("login --client-id --client-secret stores the client as config set does, never prints the secret")
    func storesTheClient() async throws {
        try await withEmulator { emulator in
            let ivy = try Self.cronHome()
            let login = try await Self.login(ivy, emulator)
            #expect(login.status == 0, "\(login.stderr)")
            #expect(login.stdout.contains("client_id = \(GoogleEmulator.defaultClient.id)"), "\(login.stdout)")
            #expect(login.stdout.contains("client_secret = (set)"), "\(login.stdout)")
            #expect(login.stdout.contains("Signed in as alice@example.com"), "\(login.stdout)")
            let everything = login.stdout + login.stderr
            #expect(!everything.contains(GoogleEmulator.defaultClient.secret))
            let listed = try await ivy.run("config", "list")
            #expect(listed.stdout.contains(GoogleEmulator.defaultClient.id))
            #expect(!listed.stdout.contains(GoogleEmulator.defaultClient.secret))
            #expect(try await ivy.run("config", "get", "client_secret").stdout == "(set)\n")
        }
    }

    @Test("login --client-secret with a space is refused as config set refuses it, before anything is stored")
    func badClientRefused() async throws {
        let ivy = try Self.cronHome()
        let login = try await ivy.run("login", "--client-id", "ivy.apps", "--client-secret", "two words")
        #expect(login.status == 64, "\(login.stderr)")
        #expect(login.stderr.contains("client_secret") && !login.stderr.contains("two words"), "\(login.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ivy.path + "/.local/share/ivy/library.db"))
    }

    @Test("the sign-in records its servers; with no IVY_* variable, sync --auto as cron runs it syncs with them")
    func cronUsesTheSignInsServers() async throws {
        try await withEmulator { emulator in
            let ivy = try Self.cronHome()
            #expect(try await Self.login(ivy, emulator).status == 0)
            let token = try storedToken(ivy)
            #expect(token["oauth_url"] as? String == emulator.baseURL.absoluteString)
            #expect(token["drive_url"] as? String == emulator.baseURL.absoluteString)
            let book = try await ivy.id("book", "add", "--title", "Dune")

            // The built binary, as cron starts it: HOME and PATH, nothing else.
            let auto = try await ivy.runBinaryAsync("sync", "--auto")
            #expect(auto.status == 0 && auto.stdout.isEmpty && auto.stderr.isEmpty, "\(auto.stderr)")
            let names = await emulator.state.dump(email: "alice@example.com").map(\.name)
            #expect(names.contains("book_\(book).json"), "\(names)")
            let status = try await ivy.runBinaryAsync("status")
            #expect(status.stdout.contains("google            not Google: \(emulator.baseURL.absoluteString)"))
            #expect(status.stdout.contains("pending           0"), "\(status.stdout)")
        }
    }

    @Test("IVY_OAUTH_URL naming another server than the sign-in's: refused, exit 3, no request reaches it")
    func otherServerRefused() async throws {
        try await withEmulator { emulator in
            try await withEmulator { other in
                let ivy = try Self.cronHome()
                #expect(try await Self.login(ivy, emulator).status == 0)
                _ = try await ivy.id("book", "add", "--title", "Dune")
                let before = try storedToken(ivy)

                let sync = try await ivy.runBinaryAsync("sync", environment: Self.servers(other))
                #expect(sync.status == 3, "\(sync.stderr)")
                #expect(
                    sync.stderr.contains("IVY_OAUTH_URL=\(other.baseURL.absoluteString)")
                        && sync.stderr.contains("unset IVY_OAUTH_URL") && sync.stderr.contains("ivy login"),
                    "\(sync.stderr)")
                let auto = try await ivy.runBinaryAsync("sync", "--auto", environment: Self.servers(other))
                #expect(auto.status == 3, "\(auto.stderr)")
                let check = try await ivy.run("check", environment: Self.servers(other))
                #expect(check.status == 3, "\(check.stderr)")
                let logout = try await ivy.run("logout", "--revoke", "--yes", environment: Self.servers(other))
                #expect(logout.status == 3, "\(logout.stderr)")
                #expect(await other.state.requests.isEmpty)
                #expect(NSDictionary(dictionary: try storedToken(ivy)) == NSDictionary(dictionary: before))

                let status = try await ivy.run("status", environment: Self.servers(other))
                #expect(status.stdout.contains("google            refused: IVY_OAUTH_URL="), "\(status.stdout)")
                // Naming the sign-in's own server is no change.
                let same = try await ivy.run("sync", environment: Self.servers(emulator))
                #expect(same.status == 0, "\(same.stderr)")
            }
        }
    }

    @Test("a sign-in made at Google is never sent to an emulator named later")
    func googleSignInStaysWithGoogle() async throws {
        try await withEmulator { emulator in
            let ivy = try Self.cronHome()
            let config = ivy.path + "/.config/ivy"
            try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
            for directory in [ivy.path + "/.config", config] { chmod(directory, 0o700) }
            let token: [String: Any] = [
                "access_token": "access", "refresh_token": "refresh", "expires_at": 4_000_000_000_000,
                "client_id": "client", "email": "alice@example.com", "permission_id": "p1",
                "oauth_url": "https://oauth2.googleapis.com", "drive_url": "https://www.googleapis.com",
            ]
            let file = config + "/token.json"
            try JSONSerialization.data(withJSONObject: token).write(to: URL(fileURLWithPath: file))
            chmod(file, 0o600)
            let sync = try await ivy.run(
                ["sync"],
                environment: Self.servers(emulator).merging(["IVY_CLIENT_ID": "c", "IVY_CLIENT_SECRET": "s"]) {
                    $1
                })
            #expect(sync.status == 3 && sync.stderr.contains("https://oauth2.googleapis.com"), "\(sync.stderr)")
            #expect(await emulator.state.requests.isEmpty)
        }
    }

    @Test("ivy login --client-id --client-secret through the binary, approved while it waits")
    func binaryLogin() async throws {
        try await withEmulator { emulator in
            let ivy = try Self.cronHome()
            await emulator.state.setDeviceCode(interval: 0)
            let login = ivy.command(["login"] + Self.clientOptions, environment: Self.servers(emulator))
            let result = try await signInAsAPerson(login, at: emulator.state, as: "bob@example.com")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("Signed in as bob@example.com"), "\(result.stdout)")
            #expect(!result.stdout.contains(GoogleEmulator.defaultClient.secret))
            #expect(try await ivy.run("config", "get", "client_id").stdout.contains(GoogleEmulator.defaultClient.id))
        }
    }
}
