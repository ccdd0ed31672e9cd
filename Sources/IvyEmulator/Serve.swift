import ArgumentParser
import Foundation
import GoogleEmulator
import Subprocess
import SystemPackage

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the emulator; the first line printed is its URL.",
        discussion: """
            The second line, `export IVY_OAUTH_URL=URL IVY_DRIVE_URL=URL IVY_EMULATOR_SECRET=SECRET`, points \
            ivy at it when pasted into a shell, and gives `ivy-emulator approve` and `deny` the secret its \
            control API asks for (a new one each run: anyone with it can approve sign-ins and read every \
            file). Give ivy the client id and secret it prints. Accounts alice@example.com and \
            bob@example.com exist. Stops cleanly on SIGINT or SIGTERM, saving the Drive to --state when \
            given. One emulator per --state file: a second one refuses, naming the running one's process \
            id and URL (the lock is FILE.lock beside it, let go however the emulator ends).

            With --background it runs detached (its own session, no terminal), and once it listens prints \
            only `export IVY_OAUTH_URL=URL IVY_DRIVE_URL=URL IVY_EMULATOR_SECRET=SECRET IVY_EMULATOR_PID=PID` \
            and exits 0, so that \
            `eval "$(ivy-emulator --state FILE --background)"` starts it and points ivy at it; \
            `kill $IVY_EMULATOR_PID` stops it, saving --state.

            It serves HTTPS, HTTP/2 or HTTP/1.1 as the client offers, as Google does, with a certificate \
            for 127.0.0.1, ::1 and localhost signed by a certificate authority of its own (kept in --state, \
            so a restart is trusted as before). The export line ends in `IVY_CA_FILE=PATH`, that \
            authority's certificate, which ivy and `ivy-emulator approve` trust; the file is removed when \
            the emulator stops. With --plain-http it serves plain HTTP/1.1 instead, and names no file.
            """)

    @Option(help: "The port to listen on; 0 picks a free one.") var port = 0
    @Option(help: ArgumentHelp("Keep the emulated Drive and tokens in FILE across restarts.", valueName: "FILE"))
    var state: String?
    @Option(help: "Delay every Google request by this many milliseconds.") var latency = 0
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Put the Date header of every answer this many seconds off the real time (negative: behind), "
                + "as a Google whose clock disagrees with this machine's.", valueName: "SECONDS"))
    var dateOffset = 0
    @Option(help: "Seconds an access token lives.") var tokenLifetime = 3599
    @Option(help: ArgumentHelp("Add an account (repeatable).", valueName: "EMAIL")) var account: [String] = []
    @Option(help: "The seed of the emulator's random choices (ids, codes, tokens, faults); default: a new one.")
    var seed: UInt64?
    @Option(
        help: ArgumentHelp(
            "Once listening, write the export line to FILE (mode 0600, replaced atomically).", valueName: "FILE"))
    var envFile: String?
    @Flag(
        name: .customLong("plain-http"),
        help: "Serve plain HTTP/1.1 instead of HTTPS and HTTP/2 (the export line then names no IVY_CA_FILE).")
    var plainHTTP = false
    @Flag(help: "Run detached in the background; print the export line with IVY_EMULATOR_PID once it listens.")
    var background = false
    @Option(
        help: ArgumentHelp(
            "With --background, append the emulator's output to FILE instead of discarding it.", valueName: "FILE"))
    var log: String?
    /// The process --background starts: reports its export line on its standard output (a
    /// pipe to the starting process), then leaves it.
    @Flag(help: .hidden) var detached = false

    func validate() throws {
        if log != nil && !background && !detached {
            throw ValidationError("--log is for --background; in the foreground, redirect the output instead")
        }
    }

    func run() async throws {
        if background {
            try await startInBackground()
            return
        }
        // One emulator per state file: two would each save their own Drive over the other's.
        let lock = try state.map { try StateLock.acquire(for: $0) }
        defer { withExtendedLifetime(lock) {} }
        // A fresh seed unless given: a state file holds ids that a reused seed would make again.
        let seed = seed ?? UInt64.random(in: .min ... .max)
        let emulatorState = EmulatorState(
            accounts: GoogleEmulator.defaultAccounts, clients: GoogleEmulator.defaultClients, clock: .system,
            seed: seed)
        if let state, FileManager.default.fileExists(atPath: state) {
            do {
                try await emulatorState.restore(from: Data(contentsOf: URL(fileURLWithPath: state)))
            } catch {
                throw ValidationError(
                    "cannot read the state file \(state): \(error.localizedDescription); move it aside to start empty")
            }
        }
        for email in account { await emulatorState.addAccount(EmulatedAccount(email: email)) }
        await emulatorState.setLatency(milliseconds: latency)
        await emulatorState.setDateOffset(seconds: TimeInterval(dateOffset))
        await emulatorState.setTokenLifetime(seconds: tokenLifetime)

        let stop = SignalWaiter(signals: [SIGINT, SIGTERM])
        // The port of the state file's last run, when free: sign-ins made against it record its
        // URL, and go on working with no new `ivy login`.
        let emulator: GoogleEmulator
        if port == 0, let previous = await emulatorState.listeningPort,
            let again = try? await GoogleEmulator.start(port: previous, state: emulatorState, tls: !plainHTTP)
        {
            emulator = again
        } else {
            emulator = try await GoogleEmulator.start(port: port, state: emulatorState, tls: !plainHTTP)
        }
        await emulatorState.setListeningPort(emulator.baseURL.port ?? port)
        let url = emulator.baseURL.absoluteString
        lock?.record(url: url)
        var exportLine =
            "export IVY_OAUTH_URL=\(shellQuoted(url)) IVY_DRIVE_URL=\(shellQuoted(url)) "
            + "IVY_EMULATOR_SECRET=\(emulatorState.controlSecret)"
        if let caFile = emulator.caFile { exportLine += " IVY_CA_FILE=\(shellQuoted(caFile.path))" }
        if detached { exportLine += " IVY_EMULATOR_PID=\(getpid())" }
        var wroteEnvFile = false
        do {
            if let envFile {
                try writePrivately(Data((exportLine + "\n").utf8), to: envFile, as: "env file")
                wroteEnvFile = true
            }
            if detached { try leaveStarter(reporting: exportLine) }
        } catch {
            // An env file naming an emulator that is gone would send the next `ivy` nowhere.
            if wroteEnvFile, let envFile { unlink(envFile) }
            await emulator.stop()
            throw error
        }
        let accounts = await emulatorState.accounts.map(\.email).joined(separator: ", ")
        // Unbuffered: a script reading the first line must get it now, not at exit.
        write(
            """
            \(url)
            \(exportLine)
            client id:     \(GoogleEmulator.defaultClient.id)
            client secret: \(GoogleEmulator.defaultClient.secret)
            accounts:      \(accounts)
            seed:          \(seed)
            approve a sign-in with: ivy-emulator approve, in a shell that ran the export line above

            """, to: STDOUT_FILENO)

        await stop.wait()
        await emulator.stop()
        if let state {
            // It holds the emulated accounts' tokens: private, as ivy keeps its own.
            try writePrivately(try await emulatorState.snapshot(), to: state, as: "state file")
        }
    }

    /// In the detached process, once listening: the output and errors go to --log (or nowhere,
    /// so that nothing holds the terminal or the starter's pipes open), then the export line
    /// goes to the starter and the pipe is let go, which tells it the emulator is ready.
    private func leaveStarter(reporting exportLine: String) throws {
        let target = log ?? "/dev/null"
        let descriptor = open(target, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw EmulatorFailure("cannot open the log \(target): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        dup2(descriptor, STDERR_FILENO)
        write(exportLine + "\n", to: STDOUT_FILENO)
        dup2(descriptor, STDOUT_FILENO)
    }

    /// Starts this program again, detached in its own session with no terminal, and waits
    /// until it listens: it reports its export line through a pipe, or closes the pipe by
    /// exiting when it cannot start (its error reaches our standard error, which it shares
    /// until then).
    private func startInBackground() async throws {
        guard let executable = Bundle.main.executablePath else {
            throw EmulatorFailure("cannot find the ivy-emulator program to start in the background")
        }
        var arguments = ["serve", "--detached", "--port", String(port), "--latency", String(latency)]
        arguments += ["--token-lifetime", String(tokenLifetime), "--date-offset", String(dateOffset)]
        for email in account { arguments += ["--account", email] }
        if let seed { arguments += ["--seed", String(seed)] }
        // Relative paths are kept as given: the detached process starts in this directory.
        if let state { arguments += ["--state", state] }
        if let envFile { arguments += ["--env-file", envFile] }
        if let log { arguments += ["--log", log] }
        if plainHTTP { arguments.append("--plain-http") }

        // Its own session: closing the terminal (SIGHUP) or Ctrl-C in it does not reach it.
        // swift-subprocess starts it with signals unblocked and at their defaults, whatever
        // this process's threads had, and with none of our descriptors but the three it is
        // given (closefrom): held open for its life, a pipe or socket of whatever started us
        // would look unfinished to it (Foundation's Process, for one, waits for a socket it
        // hands its child to close), and a file could not be unmounted.
        var options = PlatformOptions()
        options.createSession = true
        let ended: ExecutionResult<Void, SequenceOutput, FileDescriptorOutput>
        do {
            ended = try await Subprocess.run(
                .path(FilePath(executable)), arguments: Arguments(arguments), environment: .inherit,
                platformOptions: options, input: .none, output: .sequence, error: .currentStandardError
            ) { execution in
                var report: [UInt8] = []
                for try await chunk in execution.standardOutput {
                    report += chunk.withUnsafeBytes { Array($0) }
                    if report.contains(UInt8(ascii: "\n")) { break }
                }
                let line = String(decoding: report.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
                // Without the line it could not start, said why on standard error, and exits.
                guard report.contains(UInt8(ascii: "\n")), line.hasPrefix("export ") else { return }
                write(line + "\n", to: STDOUT_FILENO)
                // It runs on, detached. `run` returns only once its child has ended (and tears
                // it down if the body throws), so this process leaves from here.
                Self.exit()
            }
        } catch {
            throw EmulatorFailure("cannot start \(executable): \(error)")
        }
        let code: Int32 =
            switch ended.terminationStatus {
            case .exited(let code): code
            case .signaled: 1
            }
        throw ExitCode(code == 0 ? 1 : code)
    }
}
