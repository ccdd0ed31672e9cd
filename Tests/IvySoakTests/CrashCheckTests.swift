import Foundation
import IvySystem
import IvyTestSupport
import Testing

@Suite("ivy-soak --crash-check, every crash point crashed in a short story")
struct CrashCheckTests {
    @Test(
        "each one-operation story, crashed once at each crash point the stories pass, ends with nothing lost",
        .timeLimit(.minutes(10)))
    func everyPointOnce() async throws {
        let (status, output) = try await run(["--crash-check"])
        let summary = output.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.hasSuffix(" crashes, violations=0"), "\(output)")
        #expect(status == 0, "\(output)")
        // `crashcheck: P points, 8 stories, C crashes, …`: every point the stories pass, each
        // crashed at least once (a crash per point, none twice).
        let figures = summary.dropFirst("crashcheck: ".count).split(separator: ", ").compactMap {
            Int($0.split(separator: " ")[0])
        }
        #expect(figures.count == 3, "\(summary)")
        if figures.count == 3 {
            #expect(figures[1] == 8, "\(summary)")
            #expect(figures[0] >= 30, "\(summary)")
            #expect(figures[0] == figures[2], "\(summary)")
        }
        // Every crash point is crashed in CI: by these stories, or by a test of the built binary
        // that kills it there and checks what a person would notice (Tests/IvyCLITests).
        let prefix = "crashcheck: crashed at: "
        let line = output.split(separator: "\n").first { $0.hasPrefix(prefix) } ?? ""
        let crashedHere = Set(line.dropFirst(prefix.count).split(separator: " ").map(String.init))
        #expect(!crashedHere.isEmpty, "\(output)")
        let named = try Self.pointsNamedByBinaryTests()
        let missed = CrashPoint.allCases.map(\.rawValue).filter { !crashedHere.contains($0) && !named.contains($0) }
        #expect(missed.isEmpty, "crash points no test in CI crashes: \(missed)")
    }

    /// The crash points the built binary's tests name (a string literal that is a point's name,
    /// or a name and a count): those the suite crashes. The sweep `scripts/crashcheck` runs is
    /// not CI's, so its file is left out.
    static func pointsNamedByBinaryTests() throws -> Set<String> {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("IvyCLITests")
        let names = Set(CrashPoint.allCases.map(\.rawValue))
        var named: Set<String> = []
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path)
        where file.hasSuffix(".swift") && file != "CrashPointSweepTests.swift" {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: try Regex(#""([a-z][a-z0-9.-]+)(?::[0-9]+)?""#)) {
                if let name = match.output[1].substring.map(String.init), names.contains(name) { named.insert(name) }
            }
        }
        return named
    }

    @Test(
        "a planted defect (a killed download's staging file never swept) is reported, replayed and shrunk",
        .timeLimit(.minutes(5)))
    func plantedDefect() async throws {
        let crash = ["--crash-at", "drive.download.after-rename:1"]
        let (status, output) = try await run(
            ["--crash-check", "--story", "edit-here,new-audio"] + crash,
            environment: ["IVY_TEST_DEFECT": "keep-transfer-leftovers"])
        #expect(status == 1, "\(output)")
        #expect(output.contains("violation: orphan at home: b"), "\(output)")
        #expect(
            output.contains(
                "replay: ivy-soak --crash-check --story 'edit-here,new-audio' "
                    + "--crash-at drive.download.after-rename:1"),
            "\(output)")
        #expect(
            output.contains(
                "shortest: ivy-soak --crash-check --story 'new-audio' --crash-at drive.download.after-rename:1"),
            "\(output)")
        #expect(output.hasSuffix("1 crashes, violations=1\n"), "\(output)")

        // Without the defect the same crash is harmless: the next sync sweeps the file.
        let (cleanStatus, cleanOutput) = try await run(["--crash-check", "--story", "new-audio"] + crash)
        #expect(cleanStatus == 0, "\(cleanOutput)")
        #expect(cleanOutput.hasSuffix("1 points, 1 stories, 1 crashes, violations=0\n"), "\(cleanOutput)")
    }

    @Test("the fixture is the same in every run: a replay meets the same books and clips (IVY_TEST_IDS)")
    func sameFixture() async throws {
        var fixtures: [String] = []
        for _ in 0..<2 {
            let (status, output) = try await run([
                "--crash-check", "--verbose", "--story", "delete", "--crash-at", "store.commit.clip-delete:1",
            ])
            #expect(status == 0, "\(output)")
            // Books and clips by id as the fixture made them (the line's rest is a dictionary's order).
            let line = output.split(separator: "\n").first { $0.contains("fixture: books") }.map(String.init) ?? ""
            fixtures.append(String(line.drop { $0 != "[" }.prefix { $0 != "t" }))
        }
        #expect(fixtures[0].count > 250 && fixtures[0] == fixtures[1], "\(fixtures)")
    }

    @Test("a story names known operations, and --crash-at a known point")
    func usage() async throws {
        let (status, output) = try await run(["--crash-check", "--story", "edit-here,fly"])
        #expect(status == 64, "\(output)")
        #expect(output.contains("no operation fly"), "\(output)")
        let (pointStatus, pointOutput) = try await run([
            "--crash-check", "--story", "delete", "--crash-at", "nowhere:1",
        ])
        #expect(pointStatus == 64, "\(pointOutput)")
        let (aloneStatus, aloneOutput) = try await run(["--all"])
        #expect(aloneStatus == 64, "\(aloneOutput)")
        let (fromStatus, fromOutput) = try await run(["--crash-check", "--all", "--from", "0"])
        #expect(fromStatus == 64 && fromOutput.contains("--from takes 1 to 400"), "\(fromOutput)")
    }

    private func run(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> (Int32, String) {
        let environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        var soak = ChildCommand(BuiltProgram.soak.path, arguments, environment: environment)
        soak.errorToOutput = true
        let result = try await runChild(soak, within: .seconds(590))
        return (result.status, result.stdout)
    }
}
