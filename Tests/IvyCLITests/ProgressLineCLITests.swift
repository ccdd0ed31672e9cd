import Foundation
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
    /// Runs the `ivy` binary with standard error on `stream` (standard output to a file,
    /// standard input empty), and returns all it wrote there, control codes included.
    func runBinary(_ arguments: [String], error stream: ErrorStream) async throws -> RunResult {
        try await offCooperativePool { [self] in
            let out = path + "/.stdout-\(UUID().uuidString)"
            _ = FileManager.default.createFile(atPath: out, contents: nil)
            defer { try? FileManager.default.removeItem(atPath: out) }
            let process = Process()
            process.executableURL = Self.binary
            process.arguments = arguments
            process.environment = environment
            process.currentDirectoryURL = URL(fileURLWithPath: path)
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
            let errorText: Data
            switch stream {
            case .pipe:
                let pipe = Pipe()
                process.standardError = pipe
                try process.run()
                errorText = pipe.fileHandleForReading.readDataToEndOfFile()
            case .terminal(let columns):
                let (primary, secondary) = try Self.pseudoTerminal(columns: columns)
                defer { close(primary) }
                process.standardError = FileHandle(fileDescriptor: secondary, closeOnDealloc: false)
                try process.run()
                // Only ivy holds the terminal now: once it exits, reading ends (EIO).
                close(secondary)
                errorText = Self.readAll(primary)
            }
            process.waitUntilExit()
            return RunResult(
                status: process.terminationStatus,
                stdout: String(decoding: FileManager.default.contents(atPath: out) ?? Data(), as: UTF8.self),
                stderr: String(decoding: errorText, as: UTF8.self))
        }
    }

    /// A new pseudo-terminal `columns` wide. posix_openpt and friends are not in Swift's Glibc
    /// module; this is what they do: unlock it (TIOCSPTLCK), ask its number (TIOCGPTN), and
    /// set its size (TIOCSWINSZ), which ivy reads back with TIOCGWINSZ.
    static func pseudoTerminal(columns: UInt16) throws -> (primary: Int32, secondary: Int32) {
        let primary = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        guard primary >= 0 else { throw CocoaError(.fileReadUnknown) }
        var unlock: CInt = 0
        var number: CUnsignedInt = 0
        var size = winsize(ws_row: 24, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        let secondary =
            ioctl(primary, UInt(0x4004_5431), &unlock) == 0 && ioctl(primary, UInt(0x8004_5430), &number) == 0
            ? open("/dev/pts/\(number)", O_RDWR | O_NOCTTY) : -1
        guard secondary >= 0, ioctl(primary, UInt(TIOCSWINSZ), &size) == 0 else {
            close(primary)
            if secondary >= 0 { close(secondary) }
            throw CocoaError(.fileReadUnknown)
        }
        return (primary, secondary)
    }

    /// Everything written to the terminal, until its last writer closed it.
    static func readAll(_ primary: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(primary, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return data }
            data.append(contentsOf: buffer[..<count])
        }
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
