package import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging

/// `ivy`: the root command. `IvyCommand.main(_:context:)` runs it on a home.
package struct IvyCommand: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "ivy",
        abstract: "Keep an audiobook library of books and clips, backed up to Google Drive.",
        discussion: """
            The library lives in a local SQLite database (library.db) with clip audio beside it. \
            Set IVY_HOME or pass --home DIR to keep everything in one directory; otherwise ivy \
            follows the XDG base directories.
            """,
        version: IvyVersion.current,
        subcommands: [
            BookCommand.self, ClipCommand.self, SyncCommand.self, CheckCommand.self, LoginCommand.self,
            LogoutCommand.self,
            StatusCommand.self,
            QueueCommand.self, RetryFailedCommand.self, ResetManifestCommand.self, ConfigCommand.self,
            TrashCommand.self, DoctorCommand.self, HistoryCommand.self, RestoreCommand.self, ExportCommand.self,
            ImportCommand.self, CompletionCommand.self,
        ]
    )

    @OptionGroup var global: GlobalOptions

    package init() {}

    /// Parses `arguments` (without the program name), runs the command on `context` and
    /// returns the exit status. The binary and the in-process tests both run ivy through
    /// here, so they see the same statuses and the same error text.
    ///
    /// Commands run on `BlockingExecutor`'s threads: they call the library's synchronous
    /// methods, which wait in SQLite's busy handler while another process writes, and that
    /// wait must not hold one of Swift's few cooperative threads (ARCHITECTURE.md, "What runs where").
    /// Closes the process's HTTP connections at its end (`WireClients.shutdown`), waiting at
    /// most `limit`: for the `ivy` binary only, after its command (the tests run many commands
    /// in one process, which share the connections).
    package static func closeConnections(within limit: Duration) async {
        await WireClients.shared.shutdown(within: limit)
    }

    package static func main(_ arguments: [String], context: Context) async -> Int32 {
        let arguments = negativeLastValue(arguments)
        // ArgumentParser's --version prints a fixed string; this one names the build's commit,
        // which only the running binary's stamp knows.
        if arguments == ["--version"] {
            context.streams.output(context.build.versionLine(IvyVersion.current) + "\n")
            return 0
        }
        if let (error, group) = CommandNames.unknown(in: arguments) {
            return status(for: error, context: context, in: group)
        }
        var command: any ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            if let (misplaced, command) = CommandNames.misplacedOptions(in: arguments) {
                return status(for: misplaced, context: context, in: command)
            }
            return status(for: error, context: context)
        }
        do {
            if let runnable = command as? any ContextCommand {
                try await BlockingExecutor.run { try await runnable.run(context) }
            } else {
                // A command group: ArgumentParser's own run shows its help.
                try command.run()
            }
            return 0
        } catch {
            return status(for: error, context: context, in: type(of: command))
        }
    }

    /// A negative number given last (`ivy trash restore -5`, `ivy config set trash_days -1`)
    /// reads to ArgumentParser as an unknown option, and the command then says only that a value
    /// is missing. ivy has no option named by a digit, so such a last argument is a value: it is
    /// passed after `--`, and the command's own check names it and says what it accepts.
    static func negativeLastValue(_ arguments: [String]) -> [String] {
        // After an option (`--position -5`) it is that option's value, which ArgumentParser reads.
        guard let last = arguments.last, !arguments.contains("--"),
            last.count > 1, last.first == "-", last.dropFirst().first?.isNumber == true,
            arguments.dropLast().last?.hasPrefix("-") != true
        else { return arguments }
        return arguments.dropLast() + ["--", last]
    }

    /// ArgumentParser's ending for `error` (help on standard output, a message and perhaps
    /// the usage on standard error, 64 for a usage error), except that an error's message is
    /// escaped before it is printed: it may echo a title, a Drive file name or a Google
    /// answer (see `Display`).
    ///
    /// `command` is the command that was running: a usage error it finds once it runs (an id
    /// that names no single book) shows its usage, not the top level's.
    package static func status(
        for error: any Error, context: Context, in command: (any ParsableCommand.Type)? = nil
    ) -> Int32 {
        // A sign-in that cannot be used here is as good as none: the status of "not signed in".
        let unusableSignIn = if case .endpointMismatch = error as? GoogleError { true } else { false }
        if let error = error as? IDPrefixError {
            // Its lines are escaped already, and it has several.
            context.streams.error("Error: \(error.errorDescription ?? "")\n")
            return error.isUsage ? ExitCode.validationFailure.rawValue : ExitCode.failure.rawValue
        }
        let error = terminalSafe(error)
        if let validation = error as? ValidationError, let command,
            ObjectIdentifier(command) != ObjectIdentifier(IvyCommand.self)
        {
            context.streams.error("Error: \(validation.message)\n\(CommandNames.usage(of: command))\n")
            return ExitCode.validationFailure.rawValue
        }
        let status = unusableSignIn ? IvyExit.notSignedIn : exitCode(for: error).rawValue
        let text = fullMessage(for: error, columns: context.terminal.width)
        if !text.isEmpty {
            (status == 0 ? context.streams.output : context.streams.error)(text + "\n")
        }
        return status
    }

    private static func terminalSafe(_ error: any Error) -> any Error {
        switch error {
        case let error as ValidationError:
            return ValidationError(TerminalText.escaped(error.message))
        case is ExitCode, is CleanExit:
            return error
        // ArgumentParser's own parse errors echo only what the user typed; they keep their usage text.
        case _ where String(reflecting: type(of: error)).hasPrefix("ArgumentParser."):
            return error
        default:
            let message = (error as? any LocalizedError)?.errorDescription ?? error.localizedDescription
            return EscapedError(errorDescription: TerminalText.escaped(message))
        }
    }
}

/// A command that runs on an injected context rather than on the process.
protocol ContextCommand: ParsableCommand {
    func run(_ context: Context) async throws
}

/// An error whose message has been made safe to print.
private struct EscapedError: LocalizedError {
    let errorDescription: String?
}

enum IvyVersion {
    static let current = "0.1.0"
}

/// Options every command accepts, before or after the command name.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Keep every ivy file in DIR (overrides IVY_HOME).", valueName: "DIR"))
    var home: String?
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write ivy.log as text (a line per event) or json (an object per line) for this run; overrides the "
                + "setting log_format.", valueName: "FORMAT"))
    var logFormat: LogFormat?

    /// The home this run works in, checked unless `checked` is false (`ivy doctor`, which
    /// reports an unsafe home as one of its findings).
    func home(_ context: Context, checked: Bool = true) throws -> Home {
        let paths: IvyPaths
        do {
            paths = try IvyPaths.resolve(
                home: home, environment: context.environment, workingDirectory: context.workingDirectory)
        } catch {
            throw ValidationError(error.message)
        }
        // Checked up front, so even a command that only reads refuses a home others could
        // tamper with, and one that signs in refuses before it asks anything of Google;
        // missing directories are created private when first needed.
        if checked, let refusal = Self.refusals(paths).first { throw refusal }
        return Home(paths: paths, context: context, logFormat: logFormat)
    }

    /// Why ivy refuses the home `paths` names (`PrivateDirectory.refusals`): its data, config
    /// and state directories, existing or not. Every command's refusal, and `ivy doctor`'s
    /// findings, come from this one answer.
    static func refusals(_ paths: IvyPaths) -> [UnsafeDirectoryError] {
        PrivateDirectory.refusals(of: [paths.dataDirectory, paths.configDirectory, paths.stateDirectory])
    }
}

extension LogFormat: ExpressibleByArgument {}

/// One run in one ivy home: the context and the home's paths, and what is built from them.
struct Home {
    let paths: IvyPaths
    let context: Context
    /// `--log-format`, when given: it wins over the setting.
    var logFormat: LogFormat?

    var environment: [String: String] { context.environment }
    var clock: WallClock { context.clock }
    /// The time zone `TZ` (nil when unset) names (`Context.localZone`).
    func localZone(_ tz: String?) throws -> LocalZone { try context.localZone(tz) }
    /// The zone local times are shown in: `TZ`'s, or nil (UTC, said) when it cannot be read.
    var displayZone: LocalZone? { try? localZone(environment["TZ"]) }
    var ids: IDGenerator { context.ids }
    var terminal: Terminal { context.terminal }
    var output: Output { Output(context) }

    /// The library; `readOnly` for commands that only read: they change nothing on disk, work
    /// on a read-only file or directory, and never wait for another program's write.
    func library(readOnly: Bool = false) async throws -> LibraryDatabase {
        let library = try await LibraryDatabase(paths: paths, clock: clock, access: readOnly ? .readOnly : .readWrite)
        if !readOnly { await pruneHistoryWhenDue(library) }
        return library
    }

    /// Prunes the history at most once a day when a command opens the library to write (and
    /// purges it at once when `history_days` is 0), so a device that no longer syncs, signed
    /// out for months, still keeps only what `history_days` says. Only when no sync runs: the
    /// lock is tried, never waited for. A failure only delays it.
    private func pruneHistoryWhenDue(_ library: LibraryDatabase) async {
        guard case .acquired(let lock)? = try? SyncLock.acquire(path: paths.lockFile) else { return }
        await withSyncLock(lock) {
            let days = (try? await library.number(.historyDays)) ?? History.defaultDays
            _ = try? await library.pruneHistoryIfDue(days: days, every: 86_400_000)
        }
    }

    /// What ivy's Google clients use for the saved sign-in (trusting the certificate
    /// authorities it was made with), or, with none saved, for a new one; every answer's
    /// `Date` teaches the clock Google's time.
    var google: GoogleEffects {
        google(for: try? signInSetup.endpoints(for: tokenStore(warn: { _ in }).quietLoad()))
    }

    /// What ivy's Google clients use for `endpoints`: HTTP through the process's
    /// AsyncHTTPClient, by the proxies the environment names, trusting `endpoints.caFile`
    /// besides the system's certificate authorities.
    func google(for endpoints: GoogleEndpoints?) -> GoogleEffects {
        let wire = HTTPClientTransport(WireSettings(environment: environment, caFile: endpoints?.caFile))
        let transport: any HTTPTransport = clock.google.map { DatedTransport(wire, time: $0) } ?? wire
        return GoogleEffects(transport: transport, clock: clock, sleep: context.sleep)
    }

    /// The door every sync of this home goes through (`ivy sync`, and each of its watch's),
    /// with this run's effects; `tokens` says where the token file's warnings go.
    func syncDoor(_ library: LibraryDatabase, tokens: TokenStore, logger: Logger) -> SyncDoor {
        let home = self
        return SyncDoor(
            library: library, tokens: tokens, lockFile: paths.lockFile, clock: clock, logger: logger,
            setup: signInSetup, effects: { home.google }, healthDeadline: context.healthDeadline,
            silenceBudget: context.silenceBudget)
    }

    /// The token file; what is wrong with it is a warning on standard error.
    var tokenStore: TokenStore {
        let output = output
        return tokenStore(warn: { output.error("warning: \($0)") })
    }

    /// The token file, with its warnings sent to `warn`. (The one place the CLI makes one.)
    func tokenStore(warn: @escaping @Sendable (String) -> Void) -> TokenStore {
        TokenStore(path: paths.tokenFile, warn: warn)
    }

    /// Asks a question on the terminal: true only when the person answers y or yes.
    func agrees(_ question: String) -> Bool {
        answer(question) ?? false
    }

    /// Asks a question on the terminal: whether the person answered y or yes, or nil when no
    /// answer could be read at all (end of input, or a terminal that cannot be read).
    func answer(_ question: String) -> Bool? {
        output.line(question + " [y/N] ")
        guard let answer = context.readLine() else { return nil }
        return ["y", "yes"].contains(answer.lowercased())
    }

    /// The sync lock, waiting for a running sync to finish (and saying so on a terminal).
    func waitForSyncLock() async throws -> SyncLock {
        let output = output
        let terminal = terminal
        return try await SyncLock.acquireWaiting(path: paths.lockFile) { pid in
            guard terminal.error else { return }
            output.error("waiting for the running sync\(pid.map { " (process \($0))" } ?? "") to finish…")
        }
    }

    /// swift-log into the state directory's ivy.log, which must be writable (and not a link),
    /// in the format `--log-format` asks for, else the setting `log_format`.
    func logger(_ library: LibraryDatabase) async throws -> Logger {
        let path = paths.logFile
        try FileLogHandler.prepare(path: path)
        // The setting is checked when set; a value written by another program reads as text.
        let setting = try await library.setting(.logFormat).flatMap { LogFormat(rawValue: $0) }
        let format = logFormat ?? setting ?? .text
        return Logger(label: "ivy", factory: { _ in FileLogHandler(path: path, format: format) })
    }

    /// Where sign-ins' requests go and the OAuth client that makes them, from this run's
    /// environment, the library's settings and the client built into this release.
    var signInSetup: SignInSetup {
        let builtIn = context.build.clientID.flatMap { id in
            context.build.clientSecret.map { ClientCredentials(id: id, secret: $0) }
        }
        return SignInSetup(environment: environment, builtIn: builtIn)
    }

    /// Where a new sign-in goes: `IVY_OAUTH_URL` and `IVY_DRIVE_URL`, else Google.
    func endpoints() throws -> GoogleEndpoints {
        try signInSetup.endpoints(for: nil)
    }

    /// Where `token`'s requests go: where it was signed in, which the environment may not change.
    func endpoints(for token: StoredToken) throws -> GoogleEndpoints {
        try signInSetup.endpoints(for: token)
    }

    /// The OAuth client and its source (see `SignInSetup.client`).
    func client(_ library: LibraryDatabase, option: PartialClient = PartialClient()) async throws -> ClientResolution {
        try await signInSetup.client(library, option: option)
    }

    /// The OAuth client to sign in and refresh with (see `client`), or the error naming how to give one.
    func credentials(_ library: LibraryDatabase) async throws -> ClientCredentials {
        try await signInSetup.credentials(library)
    }
}
