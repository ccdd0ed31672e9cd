package import Foundation
import IvySystem
import Synchronization

// Only the type this file names: with the whole module, `pid_t` would name Subprocess's alias
// of it, which a package declaration cannot use through an internal import.
import struct Subprocess.SubprocessOutputSequence

/// Runs `command` as a child process for as long as `body` runs, and then kills it: SIGKILL
/// to its process group (it and whatever it started), whether `body` returned or threw, then
/// waits until it is reaped. swift-subprocess starts it, reads and writes its pipes, signals
/// it and reaps it, in a child task on `BlockingExecutor`'s threads: nothing here blocks a
/// cooperative thread.
package func withChild<T>(
    _ command: ChildCommand, isolation: isolated (any Actor)? = #isolation, _ body: (Child) async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: Void.self, returning: T.self) { group in
        let child = try await withCheckedThrowingContinuation { started in
            group.addTask(executorPreference: BlockingExecutor.shared) {
                try await Child.run(command, handingOutTo: started)
            }
        }
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await body(child))
        } catch {
            outcome = .failure(error)
        }
        await child.kill()
        do {
            try await group.waitForAll()
        } catch {
            // The body's own error says more than one from reaping after it.
            if case .success = outcome { throw error }
        }
        return try outcome.get()
    }
}

/// Runs `command` to its end: what it printed and how it ended. Past `limit` it is killed,
/// and the error names it.
package func runChild(_ command: ChildCommand, within limit: Duration = .seconds(120)) async throws -> ChildResult {
    try await withChild(command) { child in try await child.finish(within: limit) }
}

/// A child process started by `withChild`: its output as it comes, its exit, signals to it.
package final class Child: Sendable {
    package let command: ChildCommand
    private let running: StartedChild
    /// The pseudo-terminal's primary side, when any stream is on it.
    private let terminalDescriptor: Int32?
    private let state = Mutex(State())

    fileprivate enum Sink { case output, error, terminal }

    fileprivate struct State {
        var output: [UInt8] = []
        var error: [UInt8] = []
        var terminal: [UInt8] = []
        /// Readers still reading.
        var reading = 0
        var exit: ChildExit?
        /// The terminal's reader stops at its next look even if a process still holds the
        /// terminal (one that left the group, like a daemon, may).
        var abandoned = false
        var inputClosed = false
        /// The terminal's primary side is closed.
        var closed = false
        /// Bumped on every change; a waiter that saw version n sleeps only while it is still n.
        var version = 0
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]

        subscript(sink: Sink) -> [UInt8] {
            get {
                switch sink {
                case .output: output
                case .error: error
                case .terminal: terminal
                }
            }
            set {
                switch sink {
                case .output: output = newValue
                case .error: error = newValue
                case .terminal: terminal = newValue
                }
            }
        }
    }

    private init(_ command: ChildCommand, _ running: StartedChild, terminal: Int32?) {
        self.command = command
        self.running = running
        terminalDescriptor = terminal
        let readers = [running.output != nil, running.error != nil, terminal != nil].filter { $0 }.count
        state.withLock { $0.reading = readers }
    }

    /// Starts `command`, hands the child to `started` (or the reason it could not start), and
    /// returns once the child has exited, what it wrote is read, and swift-subprocess has
    /// reaped it.
    fileprivate static func run(
        _ command: ChildCommand, handingOutTo started: CheckedContinuation<Child, any Error>
    ) async throws {
        var handedOut: pid_t?
        var terminal: (primary: Int32, secondary: Int32)?
        do {
            try await ChildRegistry.prepare(command)
            if !command.terminal.isEmpty {
                do {
                    terminal = try pseudoTerminal(columns: command.columns, raw: command.rawTerminal)
                } catch {
                    throw ChildError.cannotStart(command: command.description, reason: "no pseudo-terminal: \(error)")
                }
            }
            if let terminal, command.terminal.contains(.input), case .text(let text) = command.input {
                // Typed ahead: the terminal keeps the line until the child reads it.
                writeAll(terminal.primary, Array(text.utf8))
            }
            try await start(command, terminal: terminal?.secondary) { running in
                let child = Child(command, running, terminal: terminal?.primary)
                ChildRegistry.started(child.pid)
                handedOut = child.pid
                started.resume(returning: child)
                await child.watch()
            }
        } catch {
            if let handedOut {
                ChildRegistry.forget(handedOut)
                throw error
            }
            if let terminal { close(terminal.primary) }
            started.resume(
                throwing: error as? ChildError ?? .cannotStart(command: command.description, reason: "\(error)"))
            return
        }
        if let handedOut { ChildRegistry.forget(handedOut) }
    }

    // MARK: What it wrote, and whether it ended

    /// What it wrote to standard output so far (with `errorToOutput`, standard error too).
    package var stdout: String { state.withLock { String(decoding: $0.output, as: UTF8.self) } }
    package var stderr: String { state.withLock { String(decoding: $0.error, as: UTF8.self) } }
    /// What it wrote to its pseudo-terminal so far.
    package var terminal: String { state.withLock { String(decoding: $0.terminal, as: UTF8.self) } }
    package var pid: pid_t { running.pid }
    /// How it ended; nil while it runs.
    package var exit: ChildExit? { state.withLock { $0.exit } }

    /// Waits until `condition`, asked again whenever the child writes or ends, gives a value.
    /// Nil when the child ended (exited, its output all read) without it. Past `limit` the
    /// child is killed and the error names the command and `what` was awaited: a guard
    /// against a hang, not a synchronisation.
    package func waitUntil<T: Sendable>(
        _ what: String, within limit: Duration = .seconds(60), _ condition: (ChildProgress) -> T?
    ) async throws -> T? {
        let deadline = ContinuousClock.now + limit
        while true {
            let (value, version, ended) = state.withLock { state in
                (condition(ChildProgress(state, command)), state.version, state.exit != nil && state.reading == 0)
            }
            if let value { return value }
            if ended { return nil }
            try Task.checkCancellation()
            guard ContinuousClock.now < deadline else {
                await kill()
                throw ChildError.deadline(
                    command: command.description, waitingFor: what, after: limit, stdout: stdout,
                    stderr: stderr + terminal)
            }
            await change(since: version, until: deadline, cancellable: true)
        }
    }

    /// The first group of `pattern`'s first match in `stream` (the terminal's text if that
    /// stream is on it), once the child writes it; nil if it ended first.
    package func firstMatch(
        of pattern: Regex<(Substring, Substring)>, in stream: StandardStream = .output,
        within limit: Duration = .seconds(60), what: String = "print what was waited for"
    ) async throws -> String? {
        try await waitUntil(what, within: limit) { progress in
            progress.text(of: stream).firstMatch(of: pattern).map { String($0.1) }
        }
    }

    /// Waits for it to exit; past `limit` kills it and throws.
    package func wait(within limit: Duration = .seconds(60)) async throws -> ChildExit {
        try await waitUntil("exit", within: limit) { $0.exit } ?? .exited(-1)
    }

    /// Waits for it to exit and for its output to end; what it wrote and how it ended.
    package func finish(within limit: Duration = .seconds(120)) async throws -> ChildResult {
        let result = try await waitUntil("exit and close its output", within: limit) { progress in
            progress.exit.flatMap { exit in
                progress.ended
                    ? ChildResult(
                        exit: exit, stdout: progress.stdout, stderr: progress.stderr, terminal: progress.terminal)
                    : nil
            }
        }
        return result ?? ChildResult(exit: .exited(-1), stdout: stdout, stderr: stderr, terminal: terminal)
    }

    // MARK: Talking to it

    /// Sends `signal` to the child (or its whole process group), unless it has exited.
    package func send(_ signal: Int32, toGroup: Bool = false) {
        state.withLock { state in
            if state.exit == nil { running.signal(signal, toGroup) }
        }
    }

    /// Writes `text` to its standard input: the pipe of `.open` input, or the terminal.
    package func type(_ text: String) async {
        if command.terminal.contains(.input) {
            guard let primary = state.withLock({ $0.closed ? nil : terminalDescriptor }) else { return }
            // A terminal whose reader has stopped blocks a write once its buffer is full.
            _ = await BlockingExecutor.run { writeAll(primary, Array(text.utf8)) }
        } else if let input = running.input, !state.withLock({ $0.inputClosed }) {
            _ = try? await input.write(Array(text.utf8))
        }
    }

    /// Closes its standard input's pipe: it reads end-of-file.
    package func closeInput() async {
        let closing = state.withLock { state in
            defer { state.inputClosed = true }
            return !state.inputClosed
        }
        if closing { try? await running.input?.finish() }
    }

    /// SIGKILLs its process group unless it has exited, waits until it has, and stops reading
    /// once what it wrote is read. Waits through cancellation: it is the cleanup.
    package func kill() async {
        send(SIGKILL, toGroup: true)
        await until(nil) { $0.exit != nil }
        // Its group is dead: only a process that left the group can still hold its terminal open.
        await until(ContinuousClock.now + .seconds(2)) { $0.reading == 0 }
        changed { $0.abandoned = true }
        await until(nil) { $0.reading == 0 }
    }

    // MARK: While it runs

    /// Reads its pipes and its terminal into the state as they come, writes its input text,
    /// and waits for its exit; returns once it has exited and its output is read.
    private func watch() async {
        await withTaskGroup(of: Void.self) { group in
            for (pipe, sink) in [(running.output, Sink.output), (running.error, .error)] {
                if let pipe { group.addTask { await self.read(pipe, into: sink) } }
            }
            if let terminalDescriptor { group.addTask { self.pump(terminalDescriptor) } }
            if case .text(let text) = command.input, running.input != nil {
                group.addTask {
                    await self.type(text)
                    await self.closeInput()
                }
            }
            group.addTask { self.awaitExit() }
        }
        await closeInput()
        state.withLock { state in
            guard !state.closed, let terminalDescriptor else { return }
            state.closed = true
            close(terminalDescriptor)
        }
    }

    /// Reads a pipe to its end. swift-subprocess reads it on its own epoll thread, ends it at
    /// end-of-file, and, once the child has exited, with what the pipe still holds (a process
    /// that left the group, like a daemon, may hold it open for longer).
    private func read(_ pipe: SubprocessOutputSequence, into sink: Sink) async {
        do {
            for try await buffer in pipe {
                let bytes = buffer.withUnsafeBytes { Array($0) }
                changed { $0[sink].append(contentsOf: bytes) }
            }
        } catch {
            // A failed read ends the stream as its end would.
        }
        changed { $0.reading -= 1 }
    }

    /// Reads the terminal to its end (EIO once no process holds it), looking every 200 ms
    /// whether it is abandoned: swift-subprocess reads only the pipes it made.
    private func pump(_ descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, 200)
            if polled < 0 && errno == EINTR { continue }
            if polled < 0 { break }
            if polled == 0 {
                if state.withLock({ $0.abandoned }) { break }
                continue
            }
            let count = Glibc.read(descriptor, &buffer, buffer.count)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count <= 0 { break }
            changed { $0.terminal.append(contentsOf: buffer[..<count]) }
        }
        changed { $0.reading -= 1 }
    }

    /// Waits on this thread (one of `BlockingExecutor`'s) for the child to exit, without
    /// reaping it (WNOWAIT), and kills the rest of its group while the group's id is still its
    /// own. swift-subprocess waits on its own thread too (epoll on a pidfd), but tells the exit
    /// only in `run`'s result, after its body has returned and it has reaped the child; the
    /// body needs it while it runs (a test waits for the exit, then looks further).
    private func awaitExit() {
        var info = siginfo_t()
        var waited: Int32
        repeat { waited = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) } while waited < 0 && errno == EINTR
        let status = info._sifields._sigchld.si_status
        let exit: ChildExit =
            waited < 0 ? .exited(-1) : info.si_code == Int32(CLD_EXITED) ? .exited(status) : .signalled(status)
        changed { state in
            running.signal(SIGKILL, true)
            state.exit = exit
        }
    }

    // MARK: Waking waiters

    private func changed(_ change: (inout State) -> Void) {
        let waiters = state.withLock { state in
            change(&state)
            state.version += 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    private func wake(_ id: UUID) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }

    /// Returns after the next change, at `deadline`, or (if `cancellable`) on cancellation.
    private func change(since version: Int, until deadline: ContinuousClock.Instant?, cancellable: Bool) async {
        let id = UUID()
        let timer = deadline.map { deadline in
            Task { [self] in
                try? await Task.sleep(until: deadline, clock: .continuous)
                wake(id)
            }
        }
        defer { timer?.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state in
                    guard state.version == version, !(cancellable && Task.isCancelled) else { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            if cancellable { wake(id) }
        }
    }

    /// Waits, through cancellation, until `condition` holds or `deadline` passes.
    private func until(_ deadline: ContinuousClock.Instant?, _ condition: (State) -> Bool) async {
        while true {
            let (done, version) = state.withLock { (condition($0), $0.version) }
            if done { return }
            if let deadline, ContinuousClock.now >= deadline { return }
            await change(since: version, until: deadline, cancellable: false)
        }
    }
}

/// What a child has written so far and whether it ended, as `Child.waitUntil` shows it.
package struct ChildProgress {
    fileprivate let output: [UInt8]
    fileprivate let error: [UInt8]
    fileprivate let terminalBytes: [UInt8]
    private let command: ChildCommand
    package let exit: ChildExit?
    /// Exited, and all of its output read.
    package let ended: Bool

    fileprivate init(_ state: Child.State, _ command: ChildCommand) {
        output = state.output
        error = state.error
        terminalBytes = state.terminal
        self.command = command
        exit = state.exit
        ended = state.exit != nil && state.reading == 0
    }

    package var stdout: String { String(decoding: output, as: UTF8.self) }
    package var stderr: String { String(decoding: error, as: UTF8.self) }
    package var terminal: String { String(decoding: terminalBytes, as: UTF8.self) }

    /// The text of `stream`: the terminal's when it is on the terminal.
    package func text(of stream: StandardStream) -> String {
        if command.terminal.contains(stream) { return terminal }
        if stream == .error && command.errorToOutput { return stdout }
        return stream == .error ? stderr : stdout
    }
}
