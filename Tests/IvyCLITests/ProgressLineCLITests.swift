import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// Where the `ivy` binary's standard error goes.
enum ErrorStream {
    /// A pseudo-terminal `columns` wide, as a person's terminal window.
    case terminal(columns: UInt16)
    case pipe
}

extension IvyHome {
    /// Runs the `ivy` binary with standard error on `stream` (standard output to a pipe,
    /// standard input empty), and returns all it wrote there, control codes included.
    func runBinary(_ arguments: [String], error stream: ErrorStream) async throws -> RunResult {
        var command = command(arguments)
        if case .terminal(let columns) = stream {
            command.terminal = [.error]
            command.columns = columns
        }
        return RunResult(try await runChild(command), onTerminal: .error)
    }
}

@Suite("ivy sync's progress line through the binary")
struct ProgressLineCLITests {
    @Test(
        """
        on a terminal, a sync of 20 clips rewrites one line (items, bytes, under the terminal's width) \
        and clears it before the summary; through a pipe standard error stays empty
        """)
    func terminalAndPipe() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            _ = try await laptop.ivy.id("book", "add", "--title", "Dune")
            let piped = try await laptop.ivy.runBinary(["sync"], error: .pipe)
            #expect(piped.status == 0 && piped.stdout.hasPrefix("Synced: 1 uploaded"), "\(piped.stdout)")
            #expect(piped.stderr.isEmpty, "off a terminal, no progress: \(piped.stderr.debugDescription)")

            let book = try #require(try laptop.ivy.sql("SELECT id FROM books").first.map { $0["id"] as String })
            for index in 0..<20 {
                let audio = try laptop.ivy.mp3("clip\(index).mp3", size: 100_000)
                _ = try await laptop.ivy.id(
                    "clip", "add", "--book", book, "--start", "\(index)", "--duration", "5", "--audio", audio)
            }
            // Slow enough to draw the line more than once; what is asserted does not depend on it.
            await emulator.state.setLatency(milliseconds: 100)
            let shown = try await laptop.ivy.runBinary(["sync"], error: .terminal(columns: 50))
            #expect(shown.status == 0 && shown.stdout.hasPrefix("Synced: 20 uploaded"), "\(shown.stdout)")
            let clear = "\r\u{1B}[K"
            #expect(shown.stderr.hasSuffix(clear), "the line is cleared: \(shown.stderr.debugDescription)")
            #expect(!shown.stderr.contains("\n"), "one line, rewritten: \(shown.stderr.debugDescription)")
            let lines = shown.stderr.split(separator: "\r").map { $0.replacingOccurrences(of: "\u{1B}[K", with: "") }
                .filter { !$0.isEmpty }
            #expect(lines.first == "listing Drive")
            #expect(lines.allSatisfy { $0.count < 50 }, "under 50 columns: \(lines)")
            // 20 × 100,000 bytes = 1.91 MiB; at 50 columns the rate and ETA do not fit.
            #expect(lines.last == "syncing 20 / 20 items, 1.91 MiB / 1.91 MiB, 100%", "\(lines)")

            for arguments in [["sync", "--json"], ["sync", "--quiet"], ["sync", "--verbose"]] {
                let other = try await laptop.ivy.runBinary(arguments, error: .terminal(columns: 80))
                #expect(other.status == 0 && other.stderr.isEmpty, "\(arguments): \(other.stderr.debugDescription)")
            }
        }
    }
}
