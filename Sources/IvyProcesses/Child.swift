package import Foundation
import IvySystem
import Synchronization

/// Runs `command` as a child process for as long as `body` runs, and then kills it: SIGKILL
/// to its process group (it and whatever it started), whether `body` returned or threw, then
/// waits until it is reaped. Nothing here blocks a cooperative thread: the child's output is
/// read, and its exit awaited, on `BlockingExecutor`'s threads.
package func withChild<T>(
    _ command: ChildCommand, isolation: isolated (any Actor)? = #isolation, _ body: (Child) async throws -> T
) async throws -> T {
    let child = try Child(command)
    do {
        let value = try await body(child)
        await child.kill()
        return value
    } catch {
        await child.kill()
        throw error
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
    package let pid: pid_t
    private let descriptors: SpawnedChild
    private let state = Mutex(State())

    fileprivate enum Sink { case output, error, terminal }

    fileprivate struct State {
        var output: [UInt8] = []
        var error: [UInt8] = []
        var terminal: [UInt8] = []
        /// Readers still reading.
        var reading = 0
        var exit: ChildExit?
        /// Readers stop at their next look even if the stream is still open (a process that
        /// left the group, like a daemon, may hold it).
        var abandoned = false
        var inputClosed = false
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

    init(_ command: ChildCommand) throws {
        self.command = command
        descriptors = try ChildRegistry.register(command) { try spawn(command) }
        pid = descriptors.pid
        let readers: [(Int32, Sink)] =
            [(descriptors.output, .output), (descriptors.error, .error), (descriptors.terminal, .terminal)]
            .compactMap { descriptor, sink in descriptor.map { ($0, sink) } }
        state.withLock { $0.reading = readers.count }
        for (descriptor, sink) in readers {
            Task(executorPreference: BlockingExecutor.shared) { [self] in pump(descriptor, into: sink) }
        }
        Task(executorPreference: BlockingExecutor.shared) { [self] in reap() }
        if case .text(let text) = command.input, let input = descriptors.input {
            Task(executorPreference: BlockingExecutor.shared) { [self] in
                writeAll(input, Array(text.utf8))
                closeInput()
            }
        }
    }

    // MARK: What it wrote, and whether it ended

    /// What it wrote to standard output so far (with `errorToOutput`, standard error too).
    package var stdout: String { state.withLock { String(decoding: $0.output, as: UTF8.self) } }
    package var stderr: String { state.withLock { String(decoding: $0.error, as: UTF8.self) } }
    /// What it wrote to its pseudo-terminal so far.
    package var terminal: String { state.withLock { String(decoding: $0.terminal, as: UTF8.self) } }
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

    /// Sends `signal` to the child (or its whole process group), unless it was reaped already.
    package func send(_ signal: Int32, toGroup: Bool = false) {
        state.withLock { state in
            if state.exit == nil { Glibc.kill(toGroup ? -pid : pid, signal) }
        }
    }

    /// Writes `text` to its standard input: the pipe of `.open` input, or the terminal.
    package func type(_ text: String) async {
        let target = state.withLock { state -> Int32? in
            if command.terminal.contains(.input) { return state.closed ? nil : descriptors.terminal }
            return state.inputClosed ? nil : descriptors.input
        }
        guard let target else { return }
        // A pipe the child does not read blocks a write past 64 KiB.
        _ = await Task(executorPreference: BlockingExecutor.shared) { writeAll(target, Array(text.utf8)) }.value
    }

    /// Closes its standard input's pipe: it reads end-of-file.
    package func closeInput() {
        state.withLock { state in
            guard !state.inputClosed, let input = descriptors.input else { return }
            state.inputClosed = true
            close(input)
        }
    }

    /// SIGKILLs its process group unless it was reaped already, waits until it is, and stops
    /// reading once what it wrote is read. Waits through cancellation: it is the cleanup.
    package func kill() async {
        send(SIGKILL, toGroup: true)
        await until(nil) { $0.exit != nil }
        // Its group is dead: only a process that left the group can still hold its output open.
        await until(ContinuousClock.now + .seconds(2)) { $0.reading == 0 }
        changed { $0.abandoned = true }
        await until(nil) { $0.reading == 0 }
        closeInput()
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            for descriptor in [descriptors.output, descriptors.error, descriptors.terminal].compactMap({ $0 }) {
                close(descriptor)
            }
        }
    }

    // MARK: The threads that read and reap

    /// Reads `descriptor` to its end (a pipe's end-of-file, a terminal's EIO once no process
    /// holds it), looking every 200 ms whether it is abandoned.
    private func pump(_ descriptor: Int32, into sink: Sink) {
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
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count <= 0 { break }
            changed { $0[sink].append(contentsOf: buffer[..<count]) }
        }
        changed { $0.reading -= 1 }
    }

    /// Waits for the child to exit without reaping it (WNOWAIT), so its process-group id stays
    /// its own while the rest of the group is killed; then reaps it.
    private func reap() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        changed { state in
            Glibc.kill(-pid, SIGKILL)
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
            if reaped != pid {
                state.exit = .exited(-1)
            } else if status & 0x7f == 0 {
                state.exit = .exited((status >> 8) & 0xff)
            } else {
                state.exit = .signalled(status & 0x7f)
            }
        }
        ChildRegistry.forget(pid)
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
