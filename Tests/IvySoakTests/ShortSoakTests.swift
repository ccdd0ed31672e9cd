import Foundation
import IvySystem
import IvyTestSupport
import Testing

@Suite("ivy-soak, the convergence soak")
struct ShortSoakTests {
    /// The built `ivy-soak`; it finds `ivy` beside itself.
    static let binary = BuiltProgram.soak.path

    @Test(
        "20 rounds by four devices (one late, three clocks ahead) and the app lose nothing, restore, keep the past",
        .timeLimit(.minutes(10)))
    func shortSoak() async throws {
        let (status, output) = try await run(["--seed", "1", "--rounds", "20"])
        let summary = output.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.hasPrefix("soak: 20 rounds, "), "\(output)")
        #expect(
            summary.hasSuffix(
                ", lost=0, dupes=0, diverged=0, lost_edits=0, restore_mismatches=0, restore_deleted_existing=0, "
                    + "invented=0, untouched_written=0, pruned_past=0"), "\(output)")
        #expect(status == 0, "\(output)")
        // Some rounds' syncs overlap (the third always does): `…, 4 overlaps, lost=…`.
        let overlaps = summary.split(separator: ", ").first { $0.hasSuffix(" overlaps") }
        #expect(overlaps.flatMap { Int($0.split(separator: " ")[0]) }.map { $0 > 0 } == true, "\(summary)")
    }

    @Test("a bad option is a usage error")
    func usage() async throws {
        let (status, output) = try await run(["--rounds", "0"])
        #expect(status == 64, "\(output)")
    }

    @Test("--list-crash-points prints every crash point, one a line with what it marks, sorted, and exits 0")
    func crashPoints() async throws {
        let (status, output) = try await run(["--list-crash-points"])
        #expect(status == 0, "\(output)")
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines == CrashPoints.listing)
        #expect(lines.count == CrashPoint.allCases.count)
        #expect(
            lines.contains {
                $0.hasPrefix("drive.create.after-answer ")
                    && $0.hasSuffix("Drive answered a JSON file's create; nothing recorded yet")
            })
    }

    private func run(_ arguments: [String]) async throws -> (Int32, String) {
        var soak = ChildCommand(Self.binary, arguments, environment: ProcessInfo.processInfo.environment)
        soak.errorToOutput = true
        let result = try await runChild(soak, within: .seconds(540))
        return (result.status, result.stdout)
    }
}
