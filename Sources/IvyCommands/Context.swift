import Foundation
import IvyCore

/// Where one run's text goes, unbuffered: the real ones write to the process's standard
/// output and error, a test's into buffers.
package struct Streams: Sendable {
    package let output: @Sendable (String) -> Void
    package let error: @Sendable (String) -> Void

    package init(output: @escaping @Sendable (String) -> Void, error: @escaping @Sendable (String) -> Void) {
        self.output = output
        self.error = error
    }
}

/// What ivy knows of the terminal it runs on.
package struct Terminal: Sendable {
    /// Whether standard input, output and error are terminals.
    package var input: Bool
    package var output: Bool
    package var error: Bool
    /// How wide help text is wrapped.
    package var width: Int
    /// The user asked for no colour (`NO_COLOR` is set).
    package var noColor: Bool
    /// How wide the terminal on standard error is now, for the progress line: asked at each
    /// redraw, so a window resized during a sync still gets one line.
    package var errorWidth: @Sendable () -> Int

    package init(
        input: Bool, output: Bool, error: Bool, width: Int, noColor: Bool,
        errorWidth: @escaping @Sendable () -> Int = { 80 }
    ) {
        self.input = input
        self.output = output
        self.error = error
        self.width = width
        self.noColor = noColor
        self.errorWidth = errorWidth
    }

    /// No terminal at all, as under cron or in a test.
    package static func none(environment: [String: String]) -> Terminal {
        Terminal(input: false, output: false, error: false, width: 80, noColor: environment["NO_COLOR"] != nil)
    }

    /// Bold table headers only for a person at a terminal who has not asked for NO_COLOR.
    var styled: Bool { output && !noColor }
}

/// Every effect of one `ivy` run that does not go through a file: its output, its terminal,
/// its environment and working directory, its standard input, its clock and its ids.
/// `ivy`'s main builds it from the process; tests build one of their own and run commands
/// in-process. Nothing else in the CLI reads the process's environment or terminal.
package struct Context: Sendable {
    package var streams: Streams
    package var terminal: Terminal
    package var environment: [String: String]
    /// Where a relative path the user gives (`--home`, `--audio`) starts.
    package var workingDirectory: String
    /// One line of standard input without its newline; nil at its end.
    package var readLine: @Sendable () -> String?
    package var clock: WallClock
    package var ids: IDGenerator
    /// Hands SIGINT and SIGTERM to the handler given, for a command that ends cleanly
    /// (`ivy sync --watch`): from then on the first two no longer end the process; a third
    /// does, as it would have.
    package var interruptions: @Sendable (@escaping @Sendable (Int32) -> Void) -> Void
    /// How a sync waits between retries of Google's requests and while it paces them: a real
    /// sleep, or (in tests of what happens after the retries) none.
    package var sleep: @Sendable (Duration) async throws -> Void
    /// How long a health-check ping may take, all in: 10 s, or (in tests of a health server
    /// that never answers) less.
    package var healthDeadline: Duration
    /// What `scripts/package` stamped on the running binary: its commit and built-in OAuth
    /// client (`BuildStamp.none` for a plain `swift build`, and by default in tests).
    package var build: BuildStamp

    package init(
        streams: Streams, terminal: Terminal, environment: [String: String], workingDirectory: String,
        readLine: @escaping @Sendable () -> String?, clock: WallClock, ids: IDGenerator,
        interruptions: @escaping @Sendable (@escaping @Sendable (Int32) -> Void) -> Void = { _ in },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        healthDeadline: Duration = .seconds(10), build: BuildStamp = .none
    ) {
        self.build = build
        self.healthDeadline = healthDeadline
        self.interruptions = interruptions
        self.sleep = sleep
        self.streams = streams
        self.terminal = terminal
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.readLine = readLine
        self.clock = clock
        self.ids = ids
    }

    /// A path the user gave, made absolute against this run's working directory, so the
    /// store opens the file the user meant whoever runs the command.
    package func userPath(_ path: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        return (workingDirectory as NSString).appendingPathComponent(path)
    }
}
