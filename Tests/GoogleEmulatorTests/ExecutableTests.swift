import Foundation
import IvyTestSupport
import Testing

@Suite("The ivy-emulator executable")
struct ExecutableTests {
    static let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("ivy-emulator")

    @Test("approve with no emulator running says so in one line, with how to start one, and exits 1")
    func approveWithoutAnEmulator() async throws {
        let directory = try TemporaryHome(prefix: "emulator")
        defer { withExtendedLifetime(directory) {} }
        let process = Process()
        process.executableURL = Self.binary
        // Port 9 (discard) has no listener here: the connection is refused at once.
        process.arguments = ["approve", "--url", "http://127.0.0.1:9"]
        process.environment = ["HOME": directory.path, "PATH": "/usr/bin:/bin"]
        let errors = directory.file("stderr")
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        process.standardError = handle
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                process.waitUntilExit()
                continuation.resume()
            }
        }
        try handle.close()
        let text = try String(contentsOfFile: errors, encoding: .utf8)
        #expect(process.terminationStatus == 1)
        #expect(text.hasPrefix("Error: no emulator answers at http://127.0.0.1:9; start one with"), "\(text)")
        #expect(!text.contains("NSURLErrorDomain"), "\(text)")
    }

    @Test(
        """
        prints its loopback URL first, then the export line it writes to --env-file; takes --seed, keeps the Drive \
        in --state, and stops cleanly on SIGTERM
        """)
    func lifecycle() async throws {
        let directory = try TemporaryHome(prefix: "emulator")
        defer { withExtendedLifetime(directory) {} }
        let stateFile = directory.file("state.json")
        let envFile = directory.file("env")

        let process = Process()
        process.executableURL = Self.binary
        process.arguments = [
            "--port", "0", "--state", stateFile, "--seed", "18446744073709551615", "--env-file", envFile,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // Blocking reads stay off Swift's cooperative threads, which in-process emulators need.
        let firstLines = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Data, any Error>) in
            DispatchQueue.global().async {
                var lines = Data()
                while lines.count(where: { $0 == UInt8(ascii: "\n") }) < 2 {
                    let chunk = output.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    lines.append(chunk)
                }
                continuation.resume(returning: lines)
            }
        }
        let lines = String(decoding: firstLines, as: UTF8.self).split(separator: "\n").map(String.init)
        let url = lines.first ?? ""
        #expect(url.range(of: #"^http://127\.0\.0\.1:\d+$"#, options: .regularExpression) != nil, "first line: \(url)")
        let exportLine = "export IVY_OAUTH_URL=\(url) IVY_DRIVE_URL=\(url)"
        #expect(lines.dropFirst().first == exportLine)
        // Written before the URL is printed: it is there by now.
        #expect(try String(contentsOfFile: envFile, encoding: .utf8) == exportLine + "\n")
        let mode = try FileManager.default.attributesOfItem(atPath: envFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let (data, _) = try await URLSession.shared.data(from: try #require(URL(string: url + "/_emulator/pending")))
        #expect(String(decoding: data, as: UTF8.self).contains("user_codes"))
        let (seed, _) = try await URLSession.shared.data(from: try #require(URL(string: url + "/_emulator/seed")))
        #expect(String(decoding: seed, as: UTF8.self) == #"{"seed":18446744073709551615}"#)

        process.terminate()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                process.waitUntilExit()
                continuation.resume()
            }
        }
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(FileManager.default.fileExists(atPath: stateFile))
    }
}

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
