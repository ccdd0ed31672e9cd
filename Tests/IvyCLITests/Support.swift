import Foundation
import GRDB
import IvyCommands
import IvyCore
import IvyTestSupport
import Synchronization
import Testing

/// What one run of ivy printed and how it ended, in-process or through the binary.
struct RunResult {
    let status: Int32
    let stdout: String
    let stderr: String

    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }

    /// A child's result, with what it wrote on its terminal (if any) taken as `onTerminal`'s text.
    init(_ result: ChildResult, onTerminal: StandardStream? = nil) {
        self.init(
            status: result.status, stdout: result.stdout + (onTerminal == .output ? result.terminal : ""),
            stderr: result.stderr + (onTerminal == .error ? result.terminal : ""))
    }

    func json() throws -> Any {
        try JSONSerialization.jsonObject(with: Data(stdout.utf8), options: [.fragmentsAllowed])
    }
}

/// A fresh home to run ivy in: in-process on a test context (`run`), or as the built
/// binary (`runBinaryAsync`) for what only a process shows.
/// (`@unchecked`: its environment is set up before any concurrent use.)
final class IvyHome: @unchecked Sendable {
    private let directory: TemporaryHome
    var environment: [String: String]
    /// How in-process runs wait between Google's retries; `noWaits` for a test of what
    /// happens once they are spent, which then takes no real backoff's time.
    var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    static let noWaits: @Sendable (Duration) async throws -> Void = { _ in await Task.yield() }
    /// How long in-process runs give a health-check ping, all in: ten minutes, so the emulator's
    /// answer on a loaded machine always comes in time, unless a test shortens it to see the
    /// deadline (the built ivy's own 10 s has a test of its own).
    var healthDeadline = Duration.seconds(600)
    /// How long in-process `ivy doctor` runs give the network, all in: ten minutes, for the
    /// same reason, unless a test shortens it to see the deadline.
    var doctorDeadline = Duration.seconds(600)
    /// What in-process runs take the binary's stamp to be (a release's commit and client).
    var build = BuildStamp.none
    /// The clock in-process runs read: the real one, unless a test moves time on.
    var clock = RunningCommand.realClock

    init() throws {
        directory = try TemporaryHome(prefix: "ivy-cli")
        environment = ["IVY_HOME": directory.path + "/home", "HOME": directory.path, "PATH": "/usr/bin:/bin"]
        environment["NO_COLOR"] = "1"
    }

    /// The directory `HOME` points at; ivy's own home is `home`, inside it.
    var path: String { directory.path }

    var home: String { path + "/home" }

    /// Runs ivy's command in this process, on a context with this home's environment
    /// (merged with `extra`), no terminal, and `input` as standard input; the status and
    /// error text are the binary's (`IvyCommand.main`).
    @discardableResult
    func run(_ arguments: String..., environment extra: [String: String] = [:]) async throws -> RunResult {
        try await run(arguments, environment: extra)
    }

    @discardableResult
    func run(
        _ arguments: [String], environment extra: [String: String] = [:], input: [String] = []
    ) async throws -> RunResult {
        await start(arguments, environment: extra, input: input).finish()
    }

    /// Starts ivy's command in this process; its output can be read while it runs.
    /// `errorOnTerminal` puts standard error on a terminal, where ivy says what it waits for.
    func start(
        _ arguments: [String], environment extra: [String: String] = [:], input: [String] = [],
        onTerminal: Bool = false,
        errorOnTerminal: Bool = false, outputOnTerminal: Bool = false
    ) -> RunningCommand {
        RunningCommand(
            arguments, environment: environment.merging(extra) { $1 }, workingDirectory: path, input: input,
            onTerminal: onTerminal, errorOnTerminal: errorOnTerminal, outputOnTerminal: outputOnTerminal,
            sleep: sleep, healthDeadline: healthDeadline, doctorDeadline: doctorDeadline, build: build, clock: clock)
    }

    /// Runs ivy's command in this process with standard input on a terminal, `input`
    /// typed into it: a person answering a question.
    func runOnTerminal(_ arguments: [String], typing input: String) async throws -> RunResult {
        let lines = input.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        return await start(arguments, input: lines, onTerminal: true).finish()
    }

    /// `ivy arguments` as a child process in this home, started through `wrapper` when given
    /// (`["/bin/sh", "-c", "umask 002; exec \"$0\" \"$@\""]`, `setpriv …`): the wrapper's
    /// arguments, then the binary, then `arguments`.
    func command(
        _ arguments: [String], environment extra: [String: String] = [:], through wrapper: [String] = []
    ) -> ChildCommand {
        let program = wrapper + [BuiltProgram.ivy.path]
        return ChildCommand(
            program[0], Array(program.dropFirst()) + arguments, environment: environment.merging(extra) { $1 },
            workingDirectory: path)
    }

    /// Runs the `ivy` binary to its end (its output read as it comes, so large output cannot
    /// block it; its wait on no cooperative thread, which an in-process emulator needs).
    @discardableResult
    func runBinaryAsync(_ arguments: String..., environment extra: [String: String] = [:]) async throws -> RunResult {
        try await runBinaryAsync(arguments, environment: extra)
    }

    @discardableResult
    func runBinaryAsync(
        _ arguments: [String], environment extra: [String: String] = [:], through wrapper: [String] = []
    ) async throws -> RunResult {
        RunResult(try await runChild(command(arguments, environment: extra, through: wrapper)))
    }

    /// Runs a command that must succeed and returns its output's first line.
    func id(_ arguments: String...) async throws -> String {
        let result = try await run(arguments)
        #expect(result.status == 0, "ivy \(arguments.joined(separator: " ")): \(result.stderr)")
        return result.lines.first ?? ""
    }

    /// An MP3-looking file (ID3 header) of `size` bytes, sparse beyond the header.
    func mp3(_ name: String, size: Int = 64, header: [UInt8] = mp3Header) throws -> String {
        try directory.mp3(name, size: size, header: header)
    }

    /// Book "Dune" with one clip, its audio the first of two takes that differ in size and
    /// header and its note "one": what a retake (`clip update --audio second --note two`),
    /// its history and its restore are tried on.
    func clipWithTwoTakes() async throws -> (book: String, clip: String, first: String, second: String) {
        let book = try await id("book", "add", "--title", "Dune")
        let first = try mp3("first.mp3", size: 3000, header: Array("ID3\u{4}\0one".utf8))
        let second = try mp3("second.mp3", size: 4000, header: Array("ID3\u{4}\0two".utf8))
        let clip = try await id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", first, "--note", "one")
        return (book, clip, first, second)
    }

    /// Reads the library with plain SQL through a connection of its own.
    func sql(_ query: String) throws -> [Row] {
        try DatabaseQueue(path: home + "/library.db").read { db in try Row.fetchAll(db, sql: query) }
    }

    /// Writes with plain SQL, as another program would.
    func execute(_ statement: String) throws {
        try DatabaseQueue(path: home + "/library.db").write { db in try db.execute(sql: statement) }
    }

    func count(_ query: String) throws -> Int {
        try DatabaseQueue(path: home + "/library.db").read { db in try Int.fetchOne(db, sql: query) ?? -1 }
    }
}

/// One in-process run of ivy's command on a test context, started as a task.
final class RunningCommand: Sendable {
    let output = Captured()
    let error = Captured()
    private let task: Task<Int32, Never>
    private let signals = Signals()

    init(
        _ arguments: [String], environment: [String: String], workingDirectory: String, input: [String],
        onTerminal: Bool, errorOnTerminal: Bool = false, outputOnTerminal: Bool = false,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        healthDeadline: Duration = .seconds(10), doctorDeadline: Duration = .seconds(25), build: BuildStamp = .none,
        clock: WallClock = realClock
    ) {
        let lines = Mutex(input[...])
        var terminal = Terminal.none(environment: environment)
        terminal.input = onTerminal
        terminal.error = errorOnTerminal
        terminal.output = outputOnTerminal
        var context = Context(
            streams: Streams(output: { [output] in output.append($0) }, error: { [error] in error.append($0) }),
            terminal: terminal,
            environment: environment,
            workingDirectory: workingDirectory,
            readLine: { lines.withLock { $0.popFirst() } },
            clock: clock,
            ids: .uuid,
            interruptions: { [signals] given in signals.handler.withLock { $0 = given } }, sleep: sleep,
            healthDeadline: healthDeadline, build: build)
        context.doctorDeadline = doctorDeadline
        task = Task { [output, error, context] in
            let status = await IvyCommand.main(arguments, context: context)
            output.close()
            error.close()
            return status
        }
    }

    static let realClock = WallClock { Milliseconds((Date().timeIntervalSince1970 * 1000).rounded()) }

    /// Sends the command SIGTERM, as the process would get it (only a command that asked for
    /// interruptions hears it).
    func interrupt() {
        signals.handler.withLock { $0 }?(SIGTERM)
    }

    func finish() async -> RunResult {
        let status = await task.value
        return RunResult(status: status, stdout: output.text, stderr: error.text)
    }
}

/// Where a command that asked for SIGINT and SIGTERM (`ivy sync --watch`) gets them.
final class Signals: Sendable {
    let handler = Mutex<(@Sendable (Int32) -> Void)?>(nil)
}

/// Text a command writes, kept whole and also handed out as it comes.
final class Captured: Sendable {
    private let kept = Mutex("")
    let chunks: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation

    init() {
        (chunks, continuation) = AsyncStream.makeStream()
    }

    func append(_ text: String) {
        kept.withLock { $0 += text }
        continuation.yield(text)
    }

    func close() { continuation.finish() }

    var text: String { kept.withLock { $0 } }

    /// Waits until the text so far matches `pattern`, and returns the match's first group;
    /// nil when the command ended first.
    func first(_ pattern: Regex<(Substring, Substring)>) async -> String? {
        var seen = ""
        for await chunk in chunks {
            seen += chunk
            if let match = seen.firstMatch(of: pattern) { return String(match.1) }
        }
        return nil
    }
}
