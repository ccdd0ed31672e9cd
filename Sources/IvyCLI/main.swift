import Foundation
import IvyCommands
import IvyCore

// The one place ivy reads its process: environment, terminal, descriptors, clock.

/// Writes all of `text` to `descriptor`, unbuffered, so that output and error interleave
/// as they were written and nothing is lost when ivy is killed.
@Sendable func write(_ text: String, to descriptor: Int32) {
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

/// The width ArgumentParser would find: COLUMNS, else the terminal's, else 80.
func terminalWidth(_ environment: [String: String]) -> Int {
    if let columns = environment["COLUMNS"].flatMap({ Int($0) }) { return columns }
    var size = winsize()
    if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
    return 80
}

/// The signal sources reporting SIGINT and SIGTERM, kept for the life of the process.
nonisolated(unsafe) var signalSources: [any DispatchSourceSignal] = []

/// SIGINT and SIGTERM as a stream, their default action (ending the process) turned off.
@Sendable func interruptions() -> AsyncStream<Int32> {
    let (stream, continuation) = AsyncStream<Int32>.makeStream()
    for number in [SIGINT, SIGTERM] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number)
        source.setEventHandler { continuation.yield(number) }
        source.resume()
        signalSources.append(source)
    }
    return stream
}

let environment = ProcessInfo.processInfo.environment
let context = Context(
    streams: Streams(output: { write($0, to: STDOUT_FILENO) }, error: { write($0, to: STDERR_FILENO) }),
    terminal: Terminal(
        input: isatty(STDIN_FILENO) == 1, output: isatty(STDOUT_FILENO) == 1, error: isatty(STDERR_FILENO) == 1,
        width: terminalWidth(environment), noColor: environment["NO_COLOR"] != nil),
    environment: environment,
    workingDirectory: FileManager.default.currentDirectoryPath,
    readLine: { Swift.readLine() },
    clock: WallClock { Milliseconds((Date().timeIntervalSince1970 * 1000).rounded()) },
    ids: .uuid,
    interruptions: interruptions)
exit(await IvyCommand.main(Array(CommandLine.arguments.dropFirst()), context: context))
