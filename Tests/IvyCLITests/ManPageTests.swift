import Foundation
import IvyTestSupport
import Testing

@Suite("The man page")
struct ManPageTests {
    static let page: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("man/ivy.1"), encoding: .utf8)) ?? ""
    }()

    /// The page as words: roff's escaped hyphen `\-` read as a plain hyphen.
    static var text: String { page.replacingOccurrences(of: "\\-", with: "-") }

    @Test("documents every command and every option that --help shows", arguments: HelpTests.commands)
    func coverage(command: [String]) async throws {
        let help = try await IvyHome().run(command + ["--help"]).stdout
        let options = Set(help.matches(of: /--[a-z][a-z-]+/).map { String($0.output) })
        let text = Self.text
        let missing = options.filter { !text.contains($0) }.sorted()
        #expect(
            missing.isEmpty, "options of `ivy \(command.joined(separator: " "))` missing from man/ivy.1: \(missing)")
        let named = command.isEmpty || text.contains("ivy \(command.joined(separator: " "))")
        #expect(named, "`ivy \(command.joined(separator: " "))` is not in man/ivy.1")
    }

    @Test("renders without groff warnings")
    func groff() async throws {
        var groff = ChildCommand(
            "/usr/bin/env", ["groff", "-mandoc", "-ww", "-z", "-"],
            environment: ProcessInfo.processInfo.environment)
        groff.input = .text(Self.page)
        let result = try await runChild(groff)
        #expect(!Self.page.isEmpty)
        #expect(result.exit == .exited(0))
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }
}
