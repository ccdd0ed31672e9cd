import Foundation
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
            environment: ["HOME": directory.path, "PATH": "/usr/bin:/bin"])
        let result = try await runChild(approve)
        let text = result.stderr
        #expect(result.exit == .exited(1))
        #expect(text.hasPrefix("Error: no emulator answers at http://127.0.0.1:9; start one with"), "\(text)")
        #expect(!text.contains("NSURLErrorDomain"), "\(text)")
    }

    @Test(
        """
        prints its loopback URL first, then the export line it writes to --env-file; takes --seed, keeps the Drive \
        in --state, dates its answers --date-offset seconds off, and stops cleanly on SIGTERM
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
                "--date-offset", "-600",
            ])
        try await withChild(emulator) { process in
            let firstLines = try await process.waitUntil("print two lines") { progress in
                progress.stdout.count(where: { $0 == "\n" }) >= 2 ? progress.stdout : nil
            }
            let lines = (firstLines ?? "").split(separator: "\n").map(String.init)
            let url = lines.first ?? ""
            #expect(
                url.range(of: #"^http://127\.0\.0\.1:\d+$"#, options: .regularExpression) != nil, "first line: \(url)")
            let exportLine = "export IVY_OAUTH_URL=\(url) IVY_DRIVE_URL=\(url)"
            #expect(lines.dropFirst().first == exportLine)
            // Written before the URL is printed: it is there by now.
            #expect(try String(contentsOfFile: envFile, encoding: .utf8) == exportLine + "\n")
            let mode = try FileManager.default.attributesOfItem(atPath: envFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            let (data, _) = try await URLSession.shared.data(
                from: try #require(URL(string: url + "/_emulator/pending")))
            #expect(String(decoding: data, as: UTF8.self).contains("user_codes"))
            try await DateHeaderTests.dated(offset: -600) {
                let (seed, answer) = try await URLSession.shared.data(
                    from: try #require(URL(string: url + "/_emulator/seed")))
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
}

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
