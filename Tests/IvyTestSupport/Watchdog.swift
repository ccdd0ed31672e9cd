import Foundation
import Synchronization

/// Notices Swift's cooperative thread pool (or Dispatch's global queue) making no progress
/// and prints every thread's stack.
///
/// On two cores the pool has two threads; two blocking calls on them stop every task in the
/// process, in-process emulators included, until something gives (often a request's
/// 60-second timeout, and then dozens of tests fail with -1001). A stall like that ended one
/// CI run with no clue to its cause, so the test process watches for one: a task on the pool
/// bumps a heartbeat, and a thread of its own, outside the pool, checks it. When the pool has
/// been silent for `limit`, the thread asks gdb for every thread's stack (or, without gdb,
/// lists the threads and what the kernel says they wait in) and prints it to standard error,
/// so the stall explains itself in the CI log. It reports once per stall.
package enum PoolWatchdog {
    /// How long the pool may make no progress before the watchdog reports; a loaded machine
    /// delays a 250 ms heartbeat by far less. `IVY_WATCHDOG_SECONDS` overrides it (0: off).
    static let limit: Duration = {
        let seconds = ProcessInfo.processInfo.environment["IVY_WATCHDOG_SECONDS"].flatMap(Double.init) ?? 10
        return .milliseconds(Int64(seconds * 1000))
    }()

    /// Starts the watchdog, once per process; every later call does nothing.
    package static func start() { _ = started }

    private static let started: Void = {
        guard limit > .zero else { return }
        lastBeat.store(uptime(), ordering: .relaxed)
        lastDispatchBeat.store(uptime(), ordering: .relaxed)
        Task.detached(priority: .high) {
            while true {
                lastBeat.store(uptime(), ordering: .relaxed)
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        dispatchBeat()
        let thread = Thread { watch() }
        thread.name = "ivy-pool-watchdog"
        thread.start()
    }()

    /// Milliseconds of the monotonic clock at the heartbeat task's last run.
    private static let lastBeat = Atomic<Int64>(0)
    /// The same for a block on Dispatch's global queue, which URLSession's delegate queues
    /// and Foundation's process and timer machinery need, and whose Linux pool is small too.
    private static let lastDispatchBeat = Atomic<Int64>(0)

    private static func dispatchBeat() {
        lastDispatchBeat.store(uptime(), ordering: .relaxed)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(250)) { dispatchBeat() }
    }

    private static func watch() {
        var reported = false
        while true {
            let asleep = uptime()
            Thread.sleep(forTimeInterval: 1)
            let overslept = uptime() - asleep - 1000
            if overslept >= limit.milliseconds {
                // This thread, outside every pool, was not run either: the whole process was
                // stopped or starved from outside (a 35 s gap once came with no pool report,
                // on a machine at load 20). Said with what the kernel reports, since the
                // heartbeats, woken together with this thread, cannot tell it.
                say(
                    "ivy test watchdog: the whole process stood still for \(overslept / 1000) s "
                        + "(this thread slept 1 s and woke \((overslept + 1000) / 1000) s later); "
                        + "load average \(read("/proc/loadavg")); pressure: cpu \(read("/proc/pressure/cpu")); "
                        + "io \(read("/proc/pressure/io")); memory \(read("/proc/pressure/memory"))\n")
                // The heartbeats were stopped with it: judge the pools once they have had a turn.
                continue
            }
            let pool = uptime() - lastBeat.load(ordering: .relaxed)
            let dispatch = uptime() - lastDispatchBeat.load(ordering: .relaxed)
            let silent = max(pool, dispatch)
            guard silent >= limit.milliseconds else {
                if reported { say("ivy test watchdog: both run again after the stall\n") }
                reported = false
                continue
            }
            guard !reported else { continue }
            reported = true
            let stalled = pool >= dispatch ? "Swift's cooperative pool" : "Dispatch's global queue"
            say(
                "ivy test watchdog: \(stalled) made no progress for \(silent / 1000) s "
                    + "(the pool's last heartbeat \(pool / 1000) s ago, the global queue's \(dispatch / 1000) s); "
                    + "every thread's stack follows (process \(getpid()))\n")
            if !printStacksWithGDB() { printThreads() }
            say("ivy test watchdog: end of the stacks\n")
        }
    }

    /// Runs `gdb -batch -p <this process> -ex "thread apply all bt"`, its output going where
    /// this process's goes; false when there is no gdb.
    private static func printStacksWithGDB() -> Bool {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        let candidates: [String] = path.map { String($0) + "/gdb" }
        guard let gdb = candidates.first(where: { access($0, X_OK) == 0 }) else { return false }
        allowAnyTracer()
        let arguments = [gdb, "-batch", "-nx", "-p", "\(getpid())", "-ex", "thread apply all bt"]
        // Its standard output goes to standard error, with the rest of the report.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, gdb, &actions, nil, &argv, environ) == 0 else { return false }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return true
    }

    /// Where Yama restricts ptrace to a process's ancestors, lets the gdb started here attach
    /// to its parent: `prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)`, found at run time because
    /// Glibc's Swift module leaves out <sys/prctl.h>. Without Yama it fails, and changes nothing.
    private static func allowAnyTracer() {
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prctl") else { return }
        let setPtracer: Int32 = 0x5961_6d61  // PR_SET_PTRACER, "Yama"
        _ = unsafeBitCast(symbol, to: Prctl.self)(setPtracer, UInt.max, 0, 0, 0)
    }

    /// Without gdb: each thread's name, state and the kernel function it sleeps in.
    private static func printThreads() {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks.sorted(by: { (Int($0) ?? 0) < (Int($1) ?? 0) }) {
            func read(_ name: String) -> String {
                let text = (try? String(contentsOfFile: "/proc/self/task/\(task)/\(name)", encoding: .utf8)) ?? "?"
                return text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            // The state is the field after the parenthesized name in `stat`.
            let stat = read("stat")
            let state = stat.split(separator: ")").last?.split(separator: " ").first.map(String.init) ?? "?"
            say("thread \(task) \"\(read("comm"))\" state \(state) waiting in \(read("wchan"))\n")
        }
    }

    /// A kernel file's first line, or "?".
    private static func read(_ path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "?"
        return text.split(separator: "\n").first.map(String.init) ?? "?"
    }

    private static func say(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written <= 0 && errno != EINTR { return }
            bytes = bytes.dropFirst(max(written, 0))
        }
    }

    private static func uptime() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}

extension Duration {
    fileprivate var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
