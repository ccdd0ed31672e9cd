import Foundation
import IvySystem
import Subprocess
import SystemPackage

/// How `command` is started: its program, arguments, whole environment and working directory,
/// in a process group of its own (so the whole of what it starts can be killed at once).
///
/// swift-subprocess does the rest the way this helper needs it (`Subprocess+Spawn.swift`,
/// 1.0.2): posix_spawn with every signal unblocked and at its default whatever this process's
/// threads had set (`POSIX_SPAWN_SETSIGMASK | SETSIGDEF`), the child's three streams dup2'ed
/// from close-on-exec pipes, and no other descriptor of this process
/// (`posix_spawn_file_actions_addclosefrom_np(3)`, or its own fork and exec where the C
/// library lacks that), so no child holds another's pipe open.
func configuration(of command: ChildCommand) -> Configuration {
    var options = PlatformOptions()
    options.processGroupID = 0
    // A child whose task is cancelled loses its whole group, as one whose scope ends does.
    options.teardownSequence = [.send(signal: .kill, toProcessGroup: true, allowedDurationToNextStep: .zero)]
    var environment: [Environment.Key: String] = [:]
    for (key, value) in command.environment { environment[Environment.Key(stringLiteral: key)] = value }
    return Configuration(
        executable: .path(FilePath(command.executable)),
        arguments: Arguments(command.arguments),
        environment: .custom(environment),
        workingDirectory: command.workingDirectory.map { FilePath($0) },
        platformOptions: options)
}

/// A started child as the code that watches it sees it, whatever its streams' kinds: its
/// signals, and this side of its standard streams (each nil where the stream is not a pipe
/// read or written here: the pseudo-terminal, /dev/null, standard output's pipe for error).
struct StartedChild: Sendable {
    let pid: pid_t
    /// Sends a signal to the child (through its pidfd) or to its process group.
    let signal: @Sendable (_ number: Int32, _ toGroup: Bool) -> Void
    var input: StandardInputWriter?
    var output: SubprocessOutputSequence?
    var error: SubprocessOutputSequence?
}

/// Starts `command` through swift-subprocess with its streams on pipes, /dev/null or
/// `terminal` (the pseudo-terminal's secondary side, closed here once the child has it), runs
/// `body` while it runs, and returns once `body` has returned and the child is reaped.
func start(
    _ command: ChildCommand, terminal: Int32?, _ body: (StartedChild) async -> Void
) async throws {
    let secondary = terminal.map { FileDescriptor(rawValue: $0) }
    func onTerminal(_ stream: StandardStream) -> FileDescriptor? {
        command.terminal.contains(stream) ? secondary : nil
    }
    // swift-subprocess closes a descriptor given for several streams once.
    let input: any InputProtocol =
        if let secondary = onTerminal(.input) {
            FileDescriptorInput.fileDescriptor(secondary, closeAfterSpawningProcess: true)
        } else if case .none = command.input {
            NoInput.none
        } else {
            CustomWriteInput.inputWriter
        }
    let output: any OutputProtocol =
        if let secondary = onTerminal(.output) {
            FileDescriptorOutput.fileDescriptor(secondary, closeAfterSpawningProcess: true)
        } else {
            SequenceOutput.sequence
        }
    let error: any ErrorOutputProtocol =
        if let secondary = onTerminal(.error) {
            FileDescriptorOutput.fileDescriptor(secondary, closeAfterSpawningProcess: true)
        } else if command.errorToOutput {
            CombinedErrorOutput.combinedWithOutput
        } else {
            SequenceOutput.sequence
        }
    try await start(configuration(of: command), input: input, output: output, error: error, body)
}

/// `Subprocess.run` with streams of any kind: the writer and sequences `Execution` offers for
/// some kinds only are looked up by the kind they turned out to be.
private func start<Input: InputProtocol, Output: OutputProtocol, Error: ErrorOutputProtocol>(
    _ configuration: Configuration, input: Input, output: Output, error: Error, _ body: (StartedChild) async -> Void
) async throws {
    _ = try await Subprocess.run(configuration, input: input, output: output, error: error) { execution in
        await body(
            StartedChild(
                pid: execution.processIdentifier.value,
                signal: { number, toGroup in
                    try? execution.send(signal: Signal(rawValue: number), toProcessGroup: toGroup)
                },
                input: (execution as Any as? Execution<CustomWriteInput, Output, Error>)?.standardInputWriter,
                output: (execution as Any as? Execution<Input, SequenceOutput, Error>)?.standardOutput,
                error: (execution as Any as? Execution<Input, Output, SequenceOutput>)?.standardError))
    }
}

/// Starts `ChildRegistry`'s sentinel, `script`, in a process group of its own (Ctrl-C on this
/// process's group does not reach it), reading one end of a socket pair; returns the other
/// end, or -1 if it could not start. swift-subprocess runs a child only within `run`'s body,
/// and this one must run as long as this process does: the body never returns, in a task
/// nothing awaits.
func startSentinel(_ script: String) async -> Int32 {
    var ends: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
        return -1
    }
    var options = PlatformOptions()
    options.processGroupID = 0
    let configuration = Configuration(
        executable: .path("/bin/sh"), arguments: ["-c", script], environment: .custom(["PATH": "/usr/bin:/bin"]),
        platformOptions: options)
    let (kept, given) = (ends[0], FileDescriptor(rawValue: ends[1]))
    return await withCheckedContinuation { started in
        Task(executorPreference: BlockingExecutor.shared) {
            do {
                _ = try await Subprocess.run(
                    configuration, input: .fileDescriptor(given, closeAfterSpawningProcess: true),
                    output: .discarded, error: .discarded
                ) { _ in
                    started.resume(returning: kept)
                    while true { try? await Task.sleep(for: .seconds(3600)) }
                }
            } catch {
                close(kept)
                started.resume(returning: -1)
            }
        }
    }
}

/// A new pseudo-terminal `columns` wide; swift-subprocess has none to offer. posix_openpt and
/// friends are not in Swift's Glibc module; this is what they do: unlock it (TIOCSPTLCK), ask
/// its number (TIOCGPTN), and set its size (TIOCSWINSZ), which a program reads back with
/// TIOCGWINSZ.
func pseudoTerminal(columns: UInt16, raw: Bool) throws -> (primary: Int32, secondary: Int32) {
    let primary = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard primary >= 0 else { throw Errno(rawValue: errno) }
    var unlock: CInt = 0
    var number: CUnsignedInt = 0
    var size = winsize(ws_row: 24, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
    let secondary =
        ioctl(primary, UInt(0x4004_5431), &unlock) == 0 && ioctl(primary, UInt(0x8004_5430), &number) == 0
        ? open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC) : -1
    guard secondary >= 0, ioctl(primary, UInt(TIOCSWINSZ), &size) == 0 else {
        let error = errno
        close(primary)
        if secondary >= 0 { close(secondary) }
        throw Errno(rawValue: error)
    }
    if raw {
        var settings = termios()
        tcgetattr(secondary, &settings)
        cfmakeraw(&settings)
        tcsetattr(secondary, TCSANOW, &settings)
    }
    return (primary, secondary)
}

/// Writes every byte, however many writes it takes (a terminal's buffer takes a few KiB before
/// it blocks).
@discardableResult
func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
    var rest = bytes[...]
    while !rest.isEmpty {
        let written = rest.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        rest = rest.dropFirst(written)
    }
    return true
}
