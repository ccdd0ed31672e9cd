import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 41, item 6: small answers that misled a newcomer, each said plainly now, through the
/// built binary.
@Suite("Answers that say what went wrong, through the binary")
struct PlainAnswersTests {
    @Test("an option before its command (ivy -v sync) is a usage error that says where it goes")
    func optionBeforeCommand() async throws {
        let ivy = try IvyHome()
        let verbose = try await ivy.runBinaryAsync("-v", "sync")
        #expect(verbose.status == 64)
        #expect(
            verbose.stderr.hasPrefix(
                "Error: -v is an option of `ivy sync`: put it after the command's name, as in `ivy sync -v` (only "
                    + "--home and --log-format go before it)\nUsage: ivy sync "), "\(verbose.stderr)")
        #expect(verbose.stdout.isEmpty)

        let two = try await ivy.runBinaryAsync("--home", ivy.home, "--dry-run", "--json", "sync")
        #expect(two.status == 64)
        #expect(
            two.stderr.hasPrefix(
                "Error: --dry-run --json are options of `ivy sync`: put them after the command's name, as in "
                    + "`ivy --home \(ivy.home) sync --dry-run --json`"), "\(two.stderr)")

        // An option the command does not take either is ArgumentParser's unknown option, as before.
        let unknown = try await ivy.runBinaryAsync("-v", "book", "list")
        #expect(unknown.status == 64)
        #expect(unknown.stderr.hasPrefix("Error: Unknown option '-v'"), "\(unknown.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ivy.home + "/library.db"), "nothing ran")
    }
}
