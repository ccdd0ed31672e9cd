import ArgumentParser
import Foundation
import GoogleEmulator

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
            try startInBackground()
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
            let again = try? await GoogleEmulator.start(port: previous, state: emulatorState)
        {
            emulator = again
        } else {
            emulator = try await GoogleEmulator.start(port: port, state: emulatorState)
        }
        await emulatorState.setListeningPort(emulator.baseURL.port ?? port)
        let url = emulator.baseURL.absoluteString
        lock?.record(url: url)
        var exportLine =
            "export IVY_OAUTH_URL=\(shellQuoted(url)) IVY_DRIVE_URL=\(shellQuoted(url)) "
            + "IVY_EMULATOR_SECRET=\(emulatorState.controlSecret)"
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
    private func startInBackground() throws {
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

        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw EmulatorFailure("cannot make a pipe: \(String(cString: strerror(errno)))") }
        let (reading, writing) = (ends[0], ends[1])
        // It keeps none of our other descriptors: held open for its life, a pipe or socket of
        // whatever started us would look unfinished to it (Foundation's Process, for one,
        // waits for a socket it hands its child to close), and a file could not be unmounted.
        for descriptor in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            if let number = Int32(descriptor), number > STDERR_FILENO {
                _ = fcntl(number, F_SETFD, fcntl(number, F_GETFD) | FD_CLOEXEC)
            }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        // dup2 makes a descriptor that survives exec, as the pipe's own ones now do not.
        posix_spawn_file_actions_adddup2(&actions, writing, STDOUT_FILENO)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own session: closing the terminal (SIGHUP) or Ctrl-C in it does not reach it.
        // Signals unblocked and at their defaults, whatever this process's threads had.
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // glibc's POSIX_SPAWN_SETSID (0x80), which Swift's Glibc module leaves out (it is a GNU
        // extension there).
        let setSession: Int32 = 0x80
        posix_spawnattr_setflags(
            &attributes, Int16(setSession | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        close(writing)
        defer { close(reading) }
        guard spawned == 0 else {
            throw EmulatorFailure("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }

        var report = Data()
        var buffer = [UInt8](repeating: 0, count: 512)
        while !report.contains(UInt8(ascii: "\n")) {
            let count = read(reading, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            report.append(contentsOf: buffer[0..<count])
        }
        let line = String(decoding: report.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        guard report.contains(UInt8(ascii: "\n")), line.hasPrefix("export ") else {
            // It could not start, and said why on standard error.
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 1
            throw ExitCode(code == 0 ? 1 : code)
        }
        write(line + "\n", to: STDOUT_FILENO)
    }
}
