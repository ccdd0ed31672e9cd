import Foundation
import IvyCommands
import IvyCore
import IvyMemory
import IvyStamp
import IvySystem
import Synchronization

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

/// The width ArgumentParser would find: COLUMNS, else the terminal's on `descriptor`, else 80.
@Sendable func terminalWidth(_ environment: [String: String], of descriptor: Int32 = STDOUT_FILENO) -> Int {
    if let columns = environment["COLUMNS"].flatMap({ Int($0) }), columns > 0 { return columns }
    var size = winsize()
    if ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
    return 80
}

/// The signal sources reporting SIGINT and SIGTERM, kept for the life of the process.
nonisolated(unsafe) var signalSources: [any DispatchSourceSignal] = []

/// Hands SIGINT and SIGTERM to `handler` on a dispatch queue (not Swift's few task threads,
/// which a blocked sync may hold). After the second, they end the process again: a third
/// Ctrl-C always works, and a sync killed outright loses nothing.
@Sendable func interruptions(_ handler: @escaping @Sendable (Int32) -> Void) {
    let count = Mutex(0)
    for number in [SIGINT, SIGTERM] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number)
        source.setEventHandler {
            // Signals that came while the last was handled arrive as one event, counted in
            // `data`: a quick second Ctrl-C is a second request all the same.
            for _ in 0..<max(1, Int(source.data)) {
                let seen = count.withLock { count in
                    count += 1
                    return count
                }
                if seen >= 2 {
                    signal(SIGINT, SIG_DFL)
                    signal(SIGTERM, SIG_DFL)
                }
                handler(number)
            }
        }
        source.resume()
        signalSources.append(source)
    }
}

/// What `scripts/package` wrote into this binary's stamp slot (see `BuildStamp`), read from
/// the program's own memory; none for a plain `swift build`.
func buildStamp() -> BuildStamp {
    var slot = [UInt8](repeating: 0, count: Int(IVY_STAMP_SLOT_SIZE))
    let count = slot.withUnsafeMutableBufferPointer { ivy_build_stamp($0.baseAddress, $0.count) }
    return BuildStamp(slot: Array(slot.prefix(count)))
}

// glibc gives every thread that allocates while another does an arena of its own, up to 8 a
// core, and keeps what each arena freed for that arena: a watch polling over TLS (NIO's event
// loop, ivy's own threads, Swift's pool) wandered by 3 MB between them over 600 polls where
// one arena stayed within 0.4 MB (BENCHMARKS.md, issue 49). Two, unless the person running ivy
// chose otherwise with glibc's own MALLOC_ARENA_MAX; set before ivy starts a thread.
if getenv("MALLOC_ARENA_MAX") == nil { _ = ivy_cap_malloc_arenas(2) }

let environment = ProcessInfo.processInfo.environment
var context = Context(
    streams: Streams(output: { write($0, to: STDOUT_FILENO) }, error: { write($0, to: STDERR_FILENO) }),
    terminal: Terminal(
        input: isatty(STDIN_FILENO) == 1, output: isatty(STDOUT_FILENO) == 1, error: isatty(STDERR_FILENO) == 1,
        width: terminalWidth(environment), noColor: environment["NO_COLOR"] != nil,
        errorWidth: { terminalWidth(environment, of: STDERR_FILENO) }),
    environment: environment,
    workingDirectory: FileManager.default.currentDirectoryPath,
    readLine: { Swift.readLine() },
    clock: WallClock(
        google: GoogleTime(
            wall: { Milliseconds((Date().timeIntervalSince1970 * 1000).rounded()) }, bootClock: BootClock.milliseconds,
            boot: BootClock.bootID())),
    ids: .uuid,
    interruptions: interruptions,
    build: buildStamp(),
    localZone: ProcessTimeZone.zone)
#if DEBUG
    // Test-only settings (CONTRIBUTING.md), compiled into debug builds alone: a release,
    // which `scripts/package` builds with `-c release`, never reads them.
    if let wait = TestSettings.waitOnSilence(environment) {
        context.silenceBudget = wait
        context.doctorDeadline = wait
    }
    if let ids = TestSettings.ids(environment) { context.ids = ids }
    // A misspelt crash point would make a crash test pass without crashing: refused.
    if let crash = environment["IVY_CRASH_AT"] {
        guard let (point, count) = CrashPoints.parse(crash) else {
            write(
                "Error: IVY_CRASH_AT=\(crash) names no crash point; `ivy-soak --list-crash-points` lists them "
                    + "(NAME or NAME:N)\n", to: STDERR_FILENO)
            exit(2)
        }
        CrashPoints.arm(point, count: count)
    }
    if let name = environment["IVY_TEST_DEFECT"] {
        guard let defect = PlantedDefect(rawValue: name) else {
            write(
                "Error: IVY_TEST_DEFECT=\(name) names no defect; the defects are "
                    + PlantedDefect.allCases.map(\.rawValue).joined(separator: ", ") + "\n", to: STDERR_FILENO)
            exit(2)
        }
        PlantedDefect.plant(defect)
    }
    if let trace = environment["IVY_CRASH_TRACE"], !CrashPoints.trace(to: trace) {
        write(
            "Error: IVY_CRASH_TRACE=\(trace) cannot be opened to append; name a file in a writable directory\n",
            to: STDERR_FILENO)
        exit(2)
    }
#endif
let status = await IvyCommand.main(Array(CommandLine.arguments.dropFirst()), context: context)
// Open connections are closed as a server expects (TLS's close_notify, HTTP/2's GOAWAY), for a
// moment at most: the exit does not wait on a server that no longer answers.
await IvyCommand.closeConnections(within: .milliseconds(500))
exit(status)
