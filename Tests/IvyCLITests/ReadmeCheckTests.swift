import Foundation
import IvyTestSupport
import Testing

/// scripts/readme-check on a copy of README.md broken on purpose: an edit that breaks a
/// step must fail the check, naming the line (#20 item 1). Each break sits before the
/// walkthrough, and the check installs the ivy these tests run (IVY_BINARY), so no release
/// build is needed; CI runs the check on the real README. One at a time: each makes the
/// example MP3 in the repository and removes it afterwards.
@Suite("scripts/readme-check fails on a broken README", .serialized)
struct ReadmeCheckTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static var readme: String {
        get throws { try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8) }
    }

    /// The 1-based number of the first line that is exactly `line`.
    static func number(of line: String, in text: String) throws -> Int {
        let lines = text.components(separatedBy: "\n")
        return try #require(lines.firstIndex(of: line), "no line \(line)") + 1
    }

    /// Which file of the repository a text is checked as.
    enum Kind {
        case readme, contributing
        /// A page of docs/, run with the built ivy on its PATH.
        case docs(String)
    }

    /// Runs the check on `text`, written to a file of a temporary directory, as `kind`.
    static func check(_ text: String, as kind: Kind = .readme) async throws -> (
        status: Int32, stderr: String, file: String
    ) {
        let directory = try TemporaryHome(prefix: "readme-check-test")
        let arguments: [String]
        let file: String
        switch kind {
        case .readme:
            file = directory.file("README.md")
            arguments = ["--readme", file]
        case .contributing:
            file = directory.file("CONTRIBUTING.md")
            arguments = ["--contributing", file]
        case .docs(let name):
            file = directory.file(name)
            let bin = URL(fileURLWithPath: BuiltProgram.ivy.path).deletingLastPathComponent().path
            arguments = ["--docs", file, "--bin", bin]
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        var environment = ProcessInfo.processInfo.environment
        environment["IVY_BINARY"] = BuiltProgram.ivy.path
        environment.removeValue(forKey: "IVY_BUILD_PATH")
        let check = ChildCommand(
            root.appendingPathComponent("scripts/readme-check").path, arguments, environment: environment)
        let result = try await runChild(check, within: .seconds(600))
        return (result.status, result.stderr, withExtendedLifetime(directory) { file })
    }

    @Test("a Usage example whose output ivy no longer prints fails, naming the command's line and both outputs")
    func wrongOutput() async throws {
        let readme = try Self.readme
        let command = "    $ ivy book update 2b48dd91-f8fd-438f-9e41-47c6fa4663b1 --position 1:02:03"
        let line = try Self.number(of: command, in: readme)
        let broken = readme.replacingOccurrences(
            of: command + "\n    updated 2b48dd91", with: command + "\n    changed 2b48dd91")
        #expect(broken != readme)
        let result = try await Self.check(broken)
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(result.file):\(line): `ivy book update"), "\(result.stderr)")
        #expect(result.stderr.contains("changed 2b48dd91") && result.stderr.contains("updated "), "\(result.stderr)")
    }

    @Test("a command that fails stops the check at its line")
    func failingCommand() async throws {
        let readme = try Self.readme
        let command = "    $ ivy book list"
        let line = try Self.number(of: command, in: readme)
        let broken = readme.replacingOccurrences(of: command + "\n", with: "    $ ivy book lsit\n")
        let result = try await Self.check(broken)
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(result.file):\(line): `ivy book lsit` exited 64"), "\(result.stderr)")
    }

    @Test("without its cron point, or with an unknown directive, the check refuses to pass")
    func directives() async throws {
        let readme = try Self.readme
        let withoutCron = readme.replacingOccurrences(of: "<!-- readme-check: cron -->\n", with: "")
        #expect(withoutCron != readme)
        let noCron = try await Self.check(withoutCron)
        #expect(noCron.status == 1 && noCron.stderr.contains("readme-check: cron"), "\(noCron.stderr)")

        let misspelt = readme.replacingOccurrences(of: "<!-- readme-check: skip:", with: "<!-- readme-check: skipp:")
        // The first directive of the README is the one the check meets first.
        let first = misspelt.components(separatedBy: "\n").first { $0.hasPrefix("<!-- readme-check: skipp:") }
        let line = try Self.number(of: try #require(first), in: misspelt)
        let unknown = try await Self.check(misspelt)
        #expect(unknown.status == 1 && unknown.stderr.contains("\(unknown.file):\(line): unknown"), "\(unknown.stderr)")
    }

    @Test("CONTRIBUTING.md's commands run too: one that fails stops the check at its line there")
    func contributing() async throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("CONTRIBUTING.md"), encoding: .utf8)
        let command = "    scripts/google-client-check"
        let line = try Self.number(of: command, in: text)
        let broken = text.replacingOccurrences(of: command + "\n", with: "    scripts/google-client-chek\n")
        let result = try await Self.check(broken, as: .contributing)
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("\(result.file):\(line): `scripts/google-client-chek` exited 127"),
            "\(result.stderr)")
    }

    @Test("a page of docs/ runs too: a walkthrough whose output ivy no longer prints fails at its line there")
    func docsPage() async throws {
        let name = "history.md"
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/" + name), encoding: .utf8)
        let command = "    $ ivy book update $book --position 0"
        let line = try Self.number(of: command, in: text)
        let broken = text.replacingOccurrences(
            of: command + "\n    updated 2b48dd91", with: command + "\n    rewound 2b48dd91")
        #expect(broken != text)
        let result = try await Self.check(broken, as: .docs(name))
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(result.file):\(line): `ivy book update $book"), "\(result.stderr)")
        #expect(result.stderr.contains("rewound 2b48dd91") && result.stderr.contains("updated "), "\(result.stderr)")
    }

    @Test("a command in a fenced block, which would never run, is refused at its line")
    func fencedCommand() async throws {
        let text = "# A page\n\nSome text.\n\n```sh\nivy book lsit\n```\n"
        let result = try await Self.check(text, as: .docs("page.md"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(result.file):5: a fenced block never runs"), "\(result.stderr)")
    }
}
