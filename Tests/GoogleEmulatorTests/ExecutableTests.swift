import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

@Suite("The ivy-emulator executable")
struct ExecutableTests {
    static let binary = BuiltProgram.emulator.path

    @Test("approve with no emulator running says so in one line, with how to start one, and exits 1")
    func approveWithoutAnEmulator() async throws {
        let directory = try TemporaryHome(prefix: "emulator")
        defer { withExtendedLifetime(directory) {} }
        // Port 9 (discard) has no listener here: the connection is refused at once.
        let approve = ChildCommand(
            Self.binary, ["approve", "--url", "http://127.0.0.1:9"],
            environment: ["HOME": directory.path, "PATH": "/usr/bin:/bin", "IVY_EMULATOR_SECRET": "any"])
        let result = try await runChild(approve)
        let text = result.stderr
        #expect(result.exit == .exited(1))
        #expect(text.hasPrefix("Error: no emulator answers at http://127.0.0.1:9; start one with"), "\(text)")
        #expect(!text.contains("NSURLErrorDomain"), "\(text)")
    }

    @Test(
        """
        --plain-http: prints its loopback URL first, then the export line it writes to --env-file, with the control \
        API's secret; takes --seed, keeps the Drive in --state, dates its answers --date-offset seconds off, and \
        stops cleanly on SIGTERM
        """)
    func lifecycle() async throws {
        let directory = try TemporaryHome(prefix: "emulator")
        defer { withExtendedLifetime(directory) {} }
        let stateFile = directory.file("state.json")
        let envFile = directory.file("env")

        let emulator = ChildCommand(
            Self.binary,
            [
                "--port", "0", "--state", stateFile, "--seed", "18446744073709551615", "--env-file", envFile,
                "--date-offset", "-600", "--plain-http",
            ])
        try await withChild(emulator) { process in
            let firstLines = try await process.waitUntil("print two lines") { progress in
                progress.stdout.count(where: { $0 == "\n" }) >= 2 ? progress.stdout : nil
            }
            let lines = (firstLines ?? "").split(separator: "\n").map(String.init)
            let url = lines.first ?? ""
            #expect(
                url.range(of: #"^http://127\.0\.0\.1:\d+$"#, options: .regularExpression) != nil, "first line: \(url)")
            let exportLine = try #require(lines.dropFirst().first)
            let secret = try #require(
                exportLine.wholeMatch(
                    of: /export IVY_OAUTH_URL=(\S+) IVY_DRIVE_URL=(\S+) IVY_EMULATOR_SECRET=([0-9a-f]{64})/),
                "\(exportLine)"
            ).3
            #expect(exportLine.hasPrefix("export IVY_OAUTH_URL=\(url) IVY_DRIVE_URL=\(url) "))
            // Written before the URL is printed: it is there by now.
            #expect(try String(contentsOfFile: envFile, encoding: .utf8) == exportLine + "\n")
            let mode = try FileManager.default.attributesOfItem(atPath: envFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            func control(_ path: String, secret: Substring?) async throws -> (Data, URLResponse) {
                var request = URLRequest(url: try #require(URL(string: url + path)))
                if let secret {
                    request.setValue(String(secret), forHTTPHeaderField: EmulatorState.controlSecretHeader)
                }
                return try await URLSession.shared.data(for: request)
            }
            let (refused, refusal) = try await control("/_emulator/pending", secret: nil)
            #expect((refusal as? HTTPURLResponse)?.statusCode == 401)
            #expect(!String(decoding: refused, as: UTF8.self).contains("user_codes"))
            let (data, _) = try await control("/_emulator/pending", secret: secret)
            #expect(String(decoding: data, as: UTF8.self).contains("user_codes"))
            try await DateHeaderTests.dated(offset: -600) {
                let (seed, answer) = try await control("/_emulator/seed", secret: secret)
                #expect(String(decoding: seed, as: UTF8.self) == #"{"seed":18446744073709551615}"#)
                // Dated ten minutes behind real time, as --date-offset -600 asks.
                return (answer as? HTTPURLResponse)?.value(forHTTPHeaderField: "Date")
            }

            process.send(SIGTERM)
            let exit = try await process.wait()
            #expect(exit == .exited(0))
        }
        #expect(FileManager.default.fileExists(atPath: stateFile))
    }

    @Test(
        """
        by default it serves https and names its certificate authority as IVY_CA_FILE in the export line; approve \
        reaches it trusting that file and refuses it without; the file goes when the emulator stops
        """)
    func tls() async throws {
        let directory = try TemporaryHome(prefix: "emulator")
        defer { withExtendedLifetime(directory) {} }
        try await withChild(ChildCommand(Self.binary)) { process in
            let firstLines = try await process.waitUntil("print two lines") { progress in
                progress.stdout.count(where: { $0 == "\n" }) >= 2 ? progress.stdout : nil
            }
            let lines = (firstLines ?? "").split(separator: "\n").map(String.init)
            let url = lines.first ?? ""
            #expect(
                url.range(of: #"^https://127\.0\.0\.1:\d+$"#, options: .regularExpression) != nil, "first line: \(url)")
            let exportLine = try #require(lines.dropFirst().first)
            let exported =
                #/
                export\ IVY_OAUTH_URL=(\S+)\ IVY_DRIVE_URL=(\S+)\ IVY_EMULATOR_SECRET=([0-9a-f]{64})
                \ IVY_CA_FILE=(\S+)
                /#
            let match = try #require(exportLine.wholeMatch(of: exported), "\(exportLine)")
            let caFile = String(match.4)
            #expect(try String(contentsOfFile: caFile, encoding: .utf8).hasPrefix("-----BEGIN CERTIFICATE-----"))

            var environment = [
                "HOME": directory.path, "PATH": "/usr/bin:/bin", "IVY_EMULATOR_SECRET": String(match.3),
                "IVY_OAUTH_URL": url,
            ]
            let untrusted = try await runChild(
                ChildCommand(Self.binary, ["approve", "--wait", "0"], environment: environment))
            #expect(untrusted.exit == .exited(1))
            #expect(untrusted.stderr.contains("is not vouched for by IVY_CA_FILE"), "\(untrusted.stderr)")
            environment["IVY_CA_FILE"] = caFile
            let trusted = try await runChild(
                ChildCommand(Self.binary, ["approve", "--wait", "0"], environment: environment))
            // Through TLS to the control API, which has no sign-in waiting.
            #expect(trusted.stderr.hasPrefix("Error: no sign-in is waiting at \(url)"), "\(trusted.stderr)")

            process.send(SIGTERM)
            #expect(try await process.wait() == .exited(0))
            #expect(!FileManager.default.fileExists(atPath: caFile))
        }
    }
}

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
