import Foundation
import IvyTestSupport
import Testing

@Suite("The ivy-emulator executable")
struct ExecutableTests {
    static let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("ivy-emulator")

    @Test("prints its loopback URL first, takes --seed, keeps the Drive in --state, and stops cleanly on SIGTERM")
    func lifecycle() async throws {
        let directory = try TemporaryHome(prefix: "emulator")
        defer { withExtendedLifetime(directory) {} }
        let stateFile = directory.file("state.json")

        let process = Process()
        process.executableURL = Self.binary
        process.arguments = ["--port", "0", "--state", stateFile, "--seed", "18446744073709551615"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // Blocking reads stay off Swift's cooperative threads, which in-process emulators need.
        let firstLine = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Data, any Error>) in
            DispatchQueue.global().async {
                var line = Data()
                while !line.contains(UInt8(ascii: "\n")) {
                    let chunk = output.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    line.append(chunk)
                }
                continuation.resume(returning: line)
            }
        }
        let url = String(decoding: firstLine.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        #expect(url.range(of: #"^http://127\.0\.0\.1:\d+$"#, options: .regularExpression) != nil, "first line: \(url)")

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
