import Foundation
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["groff", "-mandoc", "-ww", "-z", "-"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardError = output
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data(Self.page.utf8))
        try input.fileHandleForWriting.close()
        let warnings = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(!Self.page.isEmpty)
        #expect(process.terminationStatus == 0)
        #expect(warnings.isEmpty, "\(warnings)")
    }
}
