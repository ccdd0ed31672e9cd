import Foundation
import GoogleEmulator
import IvyGoogle
import IvyTestSupport
import Testing

extension SignInHarness {
    /// The Ivy phone app signed in as alice: a client of ivy's Cloud project with its own grant.
    func phoneSignsIn() async throws -> String {
        try await emulator.state.grant(email: "alice@example.com", clientID: GoogleEmulator.appClient.id).refresh
    }

    /// What the token endpoint answers when `client` refreshes `token`, over real HTTP.
    func refreshStatus(_ token: String, client: EmulatedClient = GoogleEmulator.appClient) async throws -> Int {
        let form = [
            "client_id": client.id, "client_secret": client.secret, "grant_type": "refresh_token",
            "refresh_token": token,
        ]
        let body = Data(
            form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
                .joined(separator: "&").utf8)
        let response = try await emulator.socketTransport.send(
            HTTPRequest(
                method: "POST", url: emulator.baseURL.appendingPathComponent("token"),
                headers: ["Content-Type": "application/x-www-form-urlencoded"], body: .data(body)))
        return response.status
    }

    var revocations: Int {
        get async { await emulator.state.requests.filter { $0.path == "/revoke" }.count }
    }
}

extension IvyHome {
    /// Runs the `ivy` binary with a pseudo-terminal as standard input and `input` typed into
    /// it: a person answering a question on a terminal. Its output goes to pipes.
    func runBinaryOnTerminal(_ arguments: [String], typing input: String) async throws -> RunResult {
        var command = command(arguments)
        command.terminal = [.input]
        command.input = .text(input)
        return RunResult(try await runChild(command))
    }
}

/// Google revokes a grant for every client of the Cloud project ("OAuth 2.0 for TV and
/// Limited-Input Device Applications", Token revocation), and ivy shares the Ivy app's project:
/// revoking from ivy would sign the phone out too.
@Suite("ivy logout leaves the Ivy app signed in; --revoke says what it does first")
struct LogoutTests {
    @Test("logout deletes the local sign-in only: nothing is revoked and the Ivy app stays signed in")
    func localOnly() async throws {
        try await withSignIn { harness in
            _ = try await harness.login()
            let phone = try await harness.phoneSignsIn()
            let result = try await harness.ivy.run("logout")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                result.stdout.contains("Signed out of alice@example.com on this computer")
                    && result.stdout.contains("stay signed in"))
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
            #expect(await harness.revocations == 0)
            #expect(try await harness.refreshStatus(phone) == 200, "the phone is still signed in")
            let status = try #require(try await harness.ivy.run("status", "--json").json() as? [String: Any])
            #expect(status["authenticated"] as? Bool == false)
        }
    }

    @Test("logout --revoke without a terminal refuses, naming --yes, and changes nothing")
    func revokeNeedsConfirmation() async throws {
        try await withSignIn { harness in
            _ = try await harness.login()
            let result = try await harness.ivy.run("logout", "--revoke")
            #expect(result.status == 64)
            #expect(result.stderr.contains("--yes") && result.stderr.contains("Ivy app"))
            #expect(FileManager.default.fileExists(atPath: harness.tokenFile))
            #expect(await harness.revocations == 0)
            #expect(try await harness.ivy.run("logout", "--yes").status == 64, "--yes alone means nothing")
        }
    }

    @Test("logout --revoke --yes revokes at Google, which signs the Ivy app out too, and says so")
    func revokeForScripts() async throws {
        try await withSignIn { harness in
            _ = try await harness.login()
            let phone = try await harness.phoneSignsIn()
            let result = try await harness.ivy.run("logout", "--revoke", "--yes")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("revoked its access at Google") && result.stdout.contains("Ivy app"))
            #expect(await harness.emulator.state.requests.contains { $0.path == "/revoke" && $0.status == 200 })
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
            #expect(try await harness.refreshStatus(phone) == 400, "Google's revocation covers the whole project")
        }
    }

    @Test(
        "logout --revoke on a terminal explains what revoking does and asks; only yes revokes",
        arguments: [("y\n", true), ("n\n", false), ("\n", false)])
    func revokeOnTerminal(answer: String, revokes: Bool) async throws {
        try await withSignIn { harness in
            _ = try await harness.login()
            let result = try await harness.ivy.runOnTerminal(["logout", "--revoke"], typing: answer)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("the Ivy app on your phones and tablets") && result.stdout.contains("[y/N]"))
            #expect(await harness.revocations == (revokes ? 1 : 0))
            #expect(FileManager.default.fileExists(atPath: harness.tokenFile) == !revokes)
            if !revokes { #expect(result.stdout.hasSuffix("Nothing changed.\n")) }
        }
    }

    @Test("logout --revoke on a terminal with a damaged token file asks nothing and removes it, like logout")
    func revokeDamaged() async throws {
        try await withSignIn { harness in
            _ = try await harness.login()
            try Data("garbage".utf8).write(to: URL(fileURLWithPath: harness.tokenFile))
            let result = try await harness.ivy.runBinaryOnTerminal(["logout", "--revoke"], typing: "\n")
            #expect(result.status == 0 && result.stdout == "Not signed in.\n", "\(result.stdout) \(result.stderr)")
            #expect(result.stderr.components(separatedBy: "damaged").count == 2, "one warning: \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
            #expect(await harness.revocations == 0)
        }
    }

    @Test("logout --revoke with Google unreachable still deletes the token, with a warning")
    func revokeOffline() async throws {
        try await withSignIn { harness in
            _ = try await harness.login()
            await harness.emulator.stop()
            let result = try await harness.ivy.run("logout", "--revoke", "--yes")
            #expect(result.status == 0)
            #expect(result.stderr.contains("warning: could not reach Google"))
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
        }
    }
}
