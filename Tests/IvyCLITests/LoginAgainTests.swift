import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// `ivy login` run as the binary, standard input on a pseudo-terminal (a person typing) or
/// on /dev/null (a script), while the emulator in this process answers.
extension SignInHarness {
    /// Starts `ivy login`, types `answer` (a line) when on a terminal, approves the code as
    /// `email` if one shows, and waits for the end. On a terminal, standard output is that
    /// terminal too unless `outputToPipe` (as `ivy login > file` is run from a terminal).
    func loginBinary(
        onTerminal: Bool, outputToPipe: Bool = false, answer: String? = nil, approveAs email: String
    ) async throws -> RunResult {
        await emulator.state.setDeviceCode(interval: 0)
        var login = ivy.command(["login"])
        if onTerminal {
            login.terminal = outputToPipe ? [.input] : [.input, .output]
            login.rawTerminal = true
            // Typed ahead: the line waits in the terminal until ivy reads it.
            if let answer { login.input = .text(answer + "\n") }
        }
        let result = try await signInAsAPerson(login, at: emulator.state, as: email)
        return RunResult(result, onTerminal: login.terminal.contains(.output) ? .output : nil)
    }

    var tokenBytes: Data? { FileManager.default.contents(atPath: tokenFile) }

    /// Device-code requests the emulator has had: each is a sign-in started.
    func signInsStarted() async -> Int {
        await emulator.state.requests.filter { $0.path.hasSuffix("/device/code") }.count
    }
}

@Suite("ivy login when already signed in")
struct LoginAgainTests {
    @Test("on a terminal it names the account and asks; no keeps the sign-in and token.json byte for byte, exit 0")
    func declined() async throws {
        try await withSignIn { harness in
            #expect(try await harness.login().status == 0)
            let before = try #require(harness.tokenBytes)
            let started = await harness.signInsStarted()
            for answer in ["n", ""] {
                let result = try await harness.loginBinary(
                    onTerminal: true, answer: answer, approveAs: "bob@example.com")
                #expect(result.status == 0, "stderr: \(result.stderr)")
                #expect(result.stdout.contains("Already signed in as alice@example.com."))
                #expect(result.stdout.contains("replacing the sign-in of alice@example.com? [y/N]"))
                #expect(result.stdout.hasSuffix("Nothing changed; still signed in as alice@example.com.\n"))
                #expect(harness.tokenBytes == before)
            }
            // No sign-in was started at Google.
            #expect(await harness.signInsStarted() == started)
        }
    }

    @Test("on a terminal, yes signs in again and replaces the sign-in")
    func accepted() async throws {
        try await withSignIn { harness in
            #expect(try await harness.login().status == 0)
            let result = try await harness.loginBinary(onTerminal: true, answer: "y", approveAs: "bob@example.com")
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(result.stdout.contains("Already signed in as alice@example.com."))
            #expect(result.stdout.hasSuffix("Signed in as bob@example.com\n"))
            #expect(try harness.storedToken()["email"] as? String == "bob@example.com")
        }
    }

    @Test("off a terminal it asks nothing, says whose sign-in it replaces, and signs in")
    func script() async throws {
        try await withSignIn { harness in
            #expect(try await harness.login().status == 0)
            let result = try await harness.loginBinary(onTerminal: false, approveAs: "bob@example.com")
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(
                result.stdout.hasPrefix(
                    "Already signed in as alice@example.com; signing in again replaces that sign-in.\n"))
            #expect(!result.stdout.contains("[y/N]"))
            #expect(result.stdout.hasSuffix("Signed in as bob@example.com\n"))
            #expect(try harness.storedToken()["email"] as? String == "bob@example.com")
        }
    }

    @Test("typed at a terminal with output to a file or pipe, it asks nothing (an n typed is never read) and signs in")
    func outputRedirected() async throws {
        try await withSignIn { harness in
            #expect(try await harness.login().status == 0)
            let result = try await harness.loginBinary(
                onTerminal: true, outputToPipe: true, answer: "n", approveAs: "bob@example.com")
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(
                result.stdout.hasPrefix(
                    "Already signed in as alice@example.com; signing in again replaces that sign-in.\n"))
            #expect(!result.stdout.contains("[y/N]"))
            #expect(result.stdout.hasSuffix("Signed in as bob@example.com\n"))
            #expect(try harness.storedToken()["email"] as? String == "bob@example.com")
        }
    }

    @Test("declined at a terminal, a home whose library was never made is left without one")
    func declinedBeforeLibrary() async throws {
        try await withSignIn { harness in
            #expect(try await harness.login().status == 0)
            let library = harness.ivy.home + "/library.db"
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: library + suffix) }
            let result = try await harness.loginBinary(onTerminal: true, answer: "n", approveAs: "bob@example.com")
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(result.stdout.hasSuffix("Nothing changed; still signed in as alice@example.com.\n"))
            #expect(!FileManager.default.fileExists(atPath: library))
        }
    }

    @Test("not signed in, a terminal is asked nothing")
    func firstSignIn() async throws {
        try await withSignIn { harness in
            let result = try await harness.loginBinary(onTerminal: true, approveAs: "alice@example.com")
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(!result.stdout.contains("Already signed in") && !result.stdout.contains("[y/N]"))
            #expect(result.stdout.hasSuffix("Signed in as alice@example.com\n"))
        }
    }
}
