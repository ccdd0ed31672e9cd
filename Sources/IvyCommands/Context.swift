import Foundation
package import IvyCore
import IvySync

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
    /// How long `ivy doctor`'s network checks may take, all in: 25 s, so the whole doctor
    /// ends within 30 s against a server that never answers (in tests, less).
    package var doctorDeadline: Duration = .seconds(25)
    /// How long the server may keep a sync's requests waiting without a word before the sync
    /// stops, every change kept (`SyncEngine.silenceBudget`, 45 s; in tests, less).
    package var silenceBudget: Duration = SyncEngine.silenceBudget
    /// What `scripts/package` stamped on the running binary: its commit and built-in OAuth
    /// client (`BuildStamp.none` for a plain `swift build`, and by default in tests).
    package var build: BuildStamp
    /// The time zone a local `WHEN` (`2026-03-29 02:30`) is read in, given `TZ` (nil when it is
    /// unset): the binary's is the C library's reading of it, which takes every form glibc
    /// does; by default (commands run in-process by tests) Foundation's, which knows names.
    package var localZone: @Sendable (_ tz: String?) throws -> LocalZone

    package init(
        streams: Streams, terminal: Terminal, environment: [String: String], workingDirectory: String,
        readLine: @escaping @Sendable () -> String?, clock: WallClock, ids: IDGenerator,
        interruptions: @escaping @Sendable (@escaping @Sendable (Int32) -> Void) -> Void = { _ in },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        healthDeadline: Duration = .seconds(10), build: BuildStamp = .none,
        localZone: @escaping @Sendable (_ tz: String?) throws -> LocalZone = LocalZone.named
    ) {
        self.localZone = localZone
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

/// A `TZ` that names no time zone: refused rather than read as UTC, as the C library would.
package struct UnknownTimeZone: LocalizedError {
    package let value: String

    package init(_ value: String) { self.value = value }

    package var errorDescription: String? {
        "TZ '\(value)' names no time zone: set it to a zone name such as Europe/Berlin (one of "
            + "/usr/share/zoneinfo), a zone file's path, or a POSIX rule such as CET-1CEST,M3.5.0,M10.5.0/3 — or "
            + "give WHEN with its offset (2026-03-01 10:30 +01:00, or 2026-03-01T09:30:00Z)"
    }
}

extension LocalZone {
    /// `TZ` as Foundation reads it: a zone name, with or without the leading colon; the
    /// system's zone when it is unset, UTC when it is empty.
    package static func named(_ tz: String?) throws -> LocalZone {
        guard let tz else { return LocalZone(.current, name: "the system's time zone") }
        let name = tz.hasPrefix(":") ? String(tz.dropFirst()) : tz
        if name.isEmpty, let utc = TimeZone(secondsFromGMT: 0) { return LocalZone(utc, name: "UTC") }
        guard let zone = TimeZone(identifier: name) else { throw UnknownTimeZone(tz) }
        return LocalZone(zone, name: tz)
    }
}
