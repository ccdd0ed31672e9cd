import Foundation
import Testing

@Suite("ivy-soak, the convergence soak")
struct ShortSoakTests {
    /// The built `ivy-soak` beside this test bundle; it finds `ivy` beside itself.
    static let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("ivy-soak")

    @Test(
        "20 rounds of edits by three devices and the app, with faults, kills and overlaps, lose nothing, not an edit",
        .timeLimit(.minutes(10)))
    func shortSoak() async throws {
        let (status, output) = try await run(["--seed", "1", "--rounds", "20"])
        #expect(status == 0, "\(output)")
        let summary = output.split(separator: "\n").last.map(String.init) ?? ""
        #expect(
            summary.hasPrefix("soak: 20 rounds, ")
                && summary.hasSuffix("lost=0, dupes=0, diverged=0, lost_edits=0, restore_mismatches=0"),
            "\(output)")
        // Some rounds' syncs overlap (the third always does): `…, 4 overlaps, lost=…`.
        let overlaps = summary.split(separator: ", ").first { $0.hasSuffix(" overlaps") }
        #expect(overlaps.flatMap { Int($0.split(separator: " ")[0]) }.map { $0 > 0 } == true, "\(summary)")
    }

    @Test("a bad option is a usage error")
    func usage() async throws {
        let (status, output) = try await run(["--rounds", "0"])
        #expect(status == 64, "\(output)")
    }

    private func run(_ arguments: [String]) async throws -> (Int32, String) {
        try await withCheckedThrowingContinuation { continuation in
            // A GCD thread: the wait blocks.
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        let process = Process()
                        process.executableURL = Self.binary
                        process.arguments = arguments
                        let out = Pipe()
                        process.standardOutput = out
                        process.standardError = out
                        try process.run()
                        let data = out.fileHandleForReading.readDataToEndOfFile()
                        process.waitUntilExit()
                        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
                    })
            }
        }
    }
}
