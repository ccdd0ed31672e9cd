import ArgumentParser
import Foundation
import GoogleEmulator
import IvyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@main
struct EmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ivy-emulator",
        abstract: "A fake Google (OAuth device sign-in and Drive v3) on 127.0.0.1, for trying and testing ivy.",
        discussion: """
            Try ivy with it:
              eval "$(ivy-emulator --state ~/emulated-drive.json --background)"
              ivy login --client-id ivy-emulator.apps.googleusercontent.com \\
                --client-secret emulator-secret &
              ivy-emulator approve
              wait
              kill $IVY_EMULATOR_PID
            `ivy-emulator serve --help` lists the options of the server.
            """,
        subcommands: [Serve.self, Approve.self, Deny.self],
        defaultSubcommand: Serve.self
    )
}

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

/// The lock an emulator holds on its --state file while it runs: `flock` on `FILE.lock` beside
/// it (the state file itself is replaced by a rename when saved, which a lock on it would not
/// outlive). The system lets it go however the emulator ends, a kill included, so it is never
/// stale; inside are the holder's process id and, once it listens, its URL, for a second
/// emulator on the same file to name.
final class StateLock {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Takes the lock of `state`, or says which emulator holds it.
    static func acquire(for state: String) throws -> StateLock {
        let path = state + ".lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw EmulatorFailure("cannot open the lock file \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = pread(descriptor, &buffer, buffer.count, 0)
            close(descriptor)
            let words = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).split(
                whereSeparator: \.isWhitespace)
            let pid = words.first.flatMap { Int32($0) }
            let url = words.dropFirst().first.map(String.init)
            let holder =
                switch (pid, url) {
                case (let pid?, let url?): " (process \(pid), at \(url))"
                case (let pid?, nil): " (process \(pid), still starting)"
                default: ""
                }
            let use = url.map { "use it (`export IVY_OAUTH_URL=\($0) IVY_DRIVE_URL=\($0)`), " } ?? ""
            throw EmulatorFailure(
                "the state file \(state) is in use by another ivy-emulator\(holder); \(use)stop it first"
                    + (pid.map { " (`kill \($0)`: it saves the Drive as it stops)" } ?? "")
                    + ", or give another --state")
        }
        let lock = StateLock(descriptor: descriptor)
        lock.write("\(getpid())\n")
        return lock
    }

    /// Adds the URL the emulator listens at.
    func record(url: String) {
        write("\(getpid()) \(url)\n")
    }

    private func write(_ text: String) {
        ftruncate(descriptor, 0)
        _ = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

/// A failure that is not the user's input: ArgumentParser prints it as one line, exit 1.
struct EmulatorFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `text` as one shell word: as it is when it has nothing a shell would read specially, else
/// single-quoted.
func shellQuoted(_ text: String) -> String {
    let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-")
    if !text.isEmpty && text.allSatisfy(plain.contains) { return text }
    return "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
}

/// Writes `data` to `path` as a new 0600 file put in place by rename: a reader sees the old
/// file or the whole new one, never a part, and never with wider permissions.
func writePrivately(_ data: Data, to path: String, as what: String) throws {
    let temporary = path + ".\(getpid()).tmp"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else {
        throw EmulatorFailure("cannot write the \(what) \(path): \(String(cString: strerror(errno)))")
    }
    var failure: Int32 = 0
    var rest = data[...]
    while !rest.isEmpty && failure == 0 {
        let written = rest.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno != EINTR { failure = errno }
        } else {
            rest = rest.dropFirst(written)
        }
    }
    if failure == 0 && fsync(descriptor) != 0 { failure = errno }
    close(descriptor)
    if failure == 0 && rename(temporary, path) != 0 { failure = errno }
    if failure != 0 {
        unlink(temporary)
        throw EmulatorFailure("cannot write the \(what) \(path): \(String(cString: strerror(failure)))")
    }
}

/// Writes all of `text` to `descriptor`, unbuffered.
func write(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return
        }
        bytes = bytes.dropFirst(written)
    }
}

/// Waits for one of `signals`, which are otherwise ignored so the process can shut down in order.
final class SignalWaiter {
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<Void>

    init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        self.stream = stream
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield() }
            source.resume()
            return source
        }
    }

    func wait() async {
        for await _ in stream { return }
    }
}

/// Options shared by the commands that talk to a running emulator.
struct Target: ParsableArguments {
    @Option(help: ArgumentHelp("The emulator's URL, as it printed it (default: $IVY_OAUTH_URL).", valueName: "URL"))
    var url: String?

    /// A session that keeps nothing on disk. URLSessionConfiguration.default alone would
    /// create ~/.cache/org.swift.foundation.URLCache/ivy-emulator and, for cookies,
    /// ~/.local/share/<this program's directory>: a command that only asks the emulator
    /// something must leave no trace in the user's home.
    private static let session: URLSession = {
        // Foundation's cookie store finds its directory under the XDG data home, which
        // nothing else here reads.
        setenv("XDG_DATA_HOME", "/dev/null", 1)
        // The emulator is on this machine: its control requests never go through a proxy.
        let noProxy = ProcessInfo.processInfo.environment["no_proxy"] ?? ProcessInfo.processInfo.environment["NO_PROXY"]
        setenv("no_proxy", LoopbackProxy.noProxy(noProxy), 1)
        URLCache.shared = URLCache(memoryCapacity: 0, diskCapacity: 0, diskPath: "/dev/null")
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        // Generous: an emulator in a busy test process can take a while to answer; one that is
        // not running at all is refused at once.
        configuration.timeoutIntervalForRequest = 60
        return URLSession(configuration: configuration)
    }()

    func resolvedURL() throws -> String {
        guard let url = url ?? ProcessInfo.processInfo.environment["IVY_OAUTH_URL"], !url.isEmpty else {
            throw ValidationError(
                "which emulator? Give --url URL, or set IVY_OAUTH_URL, as `eval \"$(ivy-emulator --background)\"` "
                    + "or the export line ivy-emulator prints does")
        }
        return url
    }

    /// The control API's secret, from the environment: never an option, which every user of
    /// the machine could read in the process list.
    func controlSecret() throws -> String {
        guard let secret = ProcessInfo.processInfo.environment["IVY_EMULATOR_SECRET"], !secret.isEmpty else {
            throw ValidationError(
                "the emulator's control API needs its secret: set IVY_EMULATOR_SECRET, as "
                    + "`eval \"$(ivy-emulator --background)\"` or the export line ivy-emulator prints does")
        }
        return secret
    }

    /// The answer of the control API at `path`, as a JSON object.
    func call(_ method: String, _ path: String, _ body: [String: String]? = nil) async throws -> [String: Any] {
        let url = try resolvedURL()
        let secret = try controlSecret()
        guard let endpoint = URL(string: url + path) else { throw ValidationError("not a URL: \(url)") }
        var request = URLRequest(url: endpoint)
        request.httpMethod = method
        request.setValue(secret, forHTTPHeaderField: EmulatorState.controlSecretHeader)
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await Self.session.data(for: request)
        } catch let error as URLError where error.code == .timedOut {
            throw EmulatorFailure("the emulator at \(url) did not answer within a minute")
        } catch {
            throw NoEmulator(url: url)
        }
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        let status = (response as? HTTPURLResponse)?.statusCode
        if status == 401 || status == 403 {
            throw EmulatorFailure(
                "the emulator at \(url) refused IVY_EMULATOR_SECRET: it is not the secret that emulator printed; "
                    + "take it from its export line (an emulator makes a new one each time it starts)")
        }
        guard status == 200, let object else {
            throw EmulatorFailure(object?["error"] as? String ?? "the emulator refused the request")
        }
        return object
    }

    /// The sign-in to act on: `code` when given; else the newest one asked for or polled since
    /// this command first looked, waiting up to `wait` seconds for one. Also answers the other
    /// sign-ins left waiting.
    func chooseSignIn(code: String?, wait: Int) async throws -> (code: String, others: [String], allOlder: Bool) {
        if let code { return (code, [], true) }
        let deadline = Date().addingTimeInterval(TimeInterval(max(0, wait)))
        var told = false
        var mark: Int?
        while true {
            let answer = try await call("GET", "/_emulator/pending")
            let signIns = (answer["sign_ins"] as? [[String: Any]] ?? []).compactMap(SignIn.init)
            // A live `ivy login` polls every few seconds; a stopped one never again, yet its
            // sign-in looks fresh for a minute. Only a sign-in asked for or polled after the
            // first look is surely someone's, so a login killed just before this one started
            // is never approved in its place.
            let first = mark ?? (answer["events"] as? Int ?? 0)
            mark = first
            if let newest = signIns.filter({ $0.lastEvent > first }).max(by: { $0.order < $1.order }) {
                let others = signIns.filter { $0.order != newest.order }
                return (newest.code, others.map(\.code), others.allSatisfy { $0.order < newest.order })
            }
            guard Date() < deadline else {
                var message = "no sign-in is waiting at \(try resolvedURL()); start `ivy login` first"
                if !signIns.isEmpty {
                    let codes = signIns.map(\.code).joined(separator: ", ")
                    message +=
                        " (\(codes) \(signIns.count == 1 ? "was" : "were") left by a login that stopped "
                        + "polling; name one with --code to act on it anyway)"
                }
                throw EmulatorFailure(message)
            }
            if !told && isatty(STDERR_FILENO) == 1 {
                write("waiting up to \(wait) s for a sign-in (start `ivy login`)…\n", to: STDERR_FILENO)
                told = true
            }
            // A person waiting on a server, not a test: a short poll interval is responsive
            // and costs the loopback emulator nothing.
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Tells what else is still waiting, so the right code can be picked next time.
    func reportOthers(_ others: [String], allOlder: Bool) {
        guard !others.isEmpty else { return }
        print(
            "left pending: \(others.joined(separator: ", ")) (\(allOlder ? "older" : "other") "
                + "sign-in\(others.count == 1 ? "" : "s"); pick one with --code)")
    }
}

/// A pending sign-in as the control API lists it.
struct SignIn {
    var code: String
    var order: Int
    /// The emulator's sign-in event count when it was asked for or last polled.
    var lastEvent: Int

    init?(_ object: [String: Any]) {
        guard let code = object["user_code"] as? String, let order = object["order"] as? Int else { return nil }
        self.code = code
        self.order = order
        lastEvent = object["last_event"] as? Int ?? 0
    }
}

/// Nothing answered at the emulator's address: one line that says so, and how to start one.
struct NoEmulator: Error, CustomStringConvertible {
    let url: String
    var description: String {
        "no emulator answers at \(url); start one with `ivy-emulator --state FILE` (or "
            + "`eval \"$(ivy-emulator --state FILE --background)\"`) and pass the URL it prints (--url)"
    }
}

struct Approve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Approve a waiting sign-in, as the person at the browser would.",
        discussion: """
            Without --code, approves the newest sign-in whose `ivy login` is still waiting: one asked for \
            or polled after approve started (a waiting login polls every few seconds), waiting for one \
            when none is yet. Sign-ins nobody polls any more (their `ivy login` was stopped) are left alone. \
            The emulator's control API takes only its secret, read from $IVY_EMULATOR_SECRET, which the export \
            line it prints sets.
            """)

    @OptionGroup var target: Target
    @Option(help: ArgumentHelp("The user code ivy printed (default: the newest waiting sign-in).", valueName: "CODE"))
    var code: String?
    @Option(help: ArgumentHelp("The account to sign in as (default: the first).", valueName: "EMAIL")) var account:
        String?
    @Option(help: ArgumentHelp("How long to wait for a sign-in to be asked for.", valueName: "SECONDS"))
    var wait = 30

    func run() async throws {
        let chosen = try await target.chooseSignIn(code: code, wait: wait)
        var body = ["user_code": chosen.code]
        body["email"] = account
        let answer = try await target.call("POST", "/_emulator/approve", body)
        print("approved \(chosen.code) for \(answer["email"] as? String ?? account ?? "the first account")")
        target.reportOthers(chosen.others, allOlder: chosen.allOlder)
    }
}

struct Deny: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Deny a waiting sign-in, as the person at the browser would.",
        discussion: """
            Without --code, denies the newest sign-in whose `ivy login` is still waiting, as approve does; \
            like approve, it sends the emulator the secret in $IVY_EMULATOR_SECRET.
            """)

    @OptionGroup var target: Target
    @Option(help: ArgumentHelp("The user code ivy printed (default: the newest waiting sign-in).", valueName: "CODE"))
    var code: String?
    @Option(help: ArgumentHelp("How long to wait for a sign-in to be asked for.", valueName: "SECONDS"))
    var wait = 30

    func run() async throws {
        let chosen = try await target.chooseSignIn(code: code, wait: wait)
        _ = try await target.call("POST", "/_emulator/deny", ["user_code": chosen.code])
        print("denied \(chosen.code)")
        target.reportOthers(chosen.others, allOlder: chosen.allOlder)
    }
}
