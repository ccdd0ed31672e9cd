import Foundation

/// A program to run as a child process, and where its standard streams go.
package struct ChildCommand: Sendable, CustomStringConvertible {
    package var executable: String
    package var arguments: [String]
    /// The child's whole environment: nothing of this process's is passed on unless given here.
    package var environment: [String: String]
    package var workingDirectory: String?
    /// What the child reads on standard input.
    package var input: ChildInput = .none
    /// The streams that go to one pseudo-terminal (`columns` wide) instead of a pipe (or, for
    /// standard input, instead of `input`'s pipe or /dev/null). Its output is `Child.terminal`.
    package var terminal: Set<StandardStream> = []
    package var columns: UInt16 = 80
    /// The terminal in raw mode: no echo of what is typed and no carriage return added to the
    /// child's lines, so the text read back is what the child wrote.
    package var rawTerminal = false
    /// Standard error into standard output's pipe, interleaved as written (`2>&1`).
    package var errorToOutput = false

    package init(
        _ executable: String, _ arguments: [String] = [], environment: [String: String] = [:],
        workingDirectory: String? = nil
    ) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
    }

    /// The command line as a person would type it, for messages: the program's name and its
    /// arguments, a client secret masked.
    package var description: String {
        var words = [URL(fileURLWithPath: executable).lastPathComponent]
        var masked = false
        for argument in arguments {
            words.append(masked ? "***" : argument.contains(" ") ? "'\(argument)'" : argument)
            masked = argument == "--client-secret"
        }
        return words.joined(separator: " ")
    }
}

/// One of a process's three standard streams.
package enum StandardStream: Sendable, Hashable, CustomStringConvertible {
    case input, output, error

    package var description: String {
        switch self {
        case .input: "standard input"
        case .output: "standard output"
        case .error: "standard error"
        }
    }
}

/// What a child reads on standard input when it is not a terminal.
package enum ChildInput: Sendable {
    /// /dev/null: the child reads end-of-file at once.
    case none
    /// A pipe holding this text, closed after it.
    case text(String)
    /// A pipe kept open for `Child.type(_:)` until `Child.closeInput()`.
    case open
}

/// How a child ended.
package enum ChildExit: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)

    /// The exit status, or 128 plus the signal's number as a shell reports it.
    package var status: Int32 {
        switch self {
        case .exited(let code): code
        case .signalled(let number): 128 + number
        }
    }

    package var description: String {
        switch self {
        case .exited(let code): "exit \(code)"
        case .signalled(let number): "signal \(number)"
        }
    }
}

/// What a finished child printed and how it ended.
package struct ChildResult: Sendable {
    package var exit: ChildExit
    package var stdout: String
    package var stderr: String
    /// What it wrote to its pseudo-terminal, control codes included (and, with standard input on
    /// it, the terminal's echo of what was typed).
    package var terminal: String

    /// The exit status, or 128 plus the signal's number.
    package var status: Int32 { exit.status }
}

/// Why waiting for a child failed: it names the command and what it printed, so a failed test
/// says what hung.
package enum ChildError: Error, CustomStringConvertible {
    case cannotStart(command: String, reason: String)
    case deadline(command: String, waitingFor: String, after: Duration, stdout: String, stderr: String)
    /// The process is stopping (`ChildRegistry.stopAll()`): no child starts any more.
    case stopping(command: String)

    package var description: String {
        switch self {
        case .cannotStart(let command, let reason):
            return "cannot start `\(command)`: \(reason)"
        case .deadline(let command, let waitingFor, let after, let stdout, let stderr):
            return "`\(command)` did not \(waitingFor) within \(after), and was killed; "
                + "standard output so far: \(stdout.debugDescription), standard error: \(stderr.debugDescription)"
        case .stopping(let command):
            return "not starting `\(command)`: stopping"
        }
    }
}
