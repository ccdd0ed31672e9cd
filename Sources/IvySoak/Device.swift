import Foundation
import GRDB
import GoogleEmulator
import IvyProcesses
import IvySystem
import Synchronization

/// How one run of `ivy` ended.
struct Outcome: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
    /// SIGKILLed by the soak while it still ran.
    var killed = false
    /// Killed because it ran past the soak's time limit.
    var hung = false

    var json: JSON? { JSON.parse(Data(stdout.utf8)) }

    /// Exited 0 by itself: it did all it set out to.
    var clean: Bool { status == 0 && !killed && !hung }

    /// The books and clips (ids) a sync's report says it left alone (skipped, say while a file
    /// is missing on Drive within its grace, or held): a clean sync carried neither way what
    /// this device or Drive held of them.
    var leftAlone: Set<String> {
        var ids = Set<String>()
        for key in ["skipped", "held", "held_changes"] {
            for entry in json?[key]?.objects ?? [] {
                if let entity = entry["entity"]?.string, let id = entity.split(separator: " ").last {
                    ids.insert(String(id))
                }
            }
        }
        return ids
    }

    /// `exit 5 (failed: clip 1234…: why)`, for logs.
    var brief: String {
        if killed { return "killed" }
        if hung { return "HUNG, killed" }
        let error = stderr.split(separator: "\n").first.map { " (\($0))" } ?? ""
        return "exit \(status)\(error)"
    }
}

/// One `ivy` install: the real binary, run with a home of its own, signed in to the shared
/// emulator. Commands run as child processes (IvyProcesses) whose waits never block Swift's
/// cooperative threads, which the in-process emulator needs to answer them, and which die with
/// the soak however it ends.
final class Device: Sendable {
    let name: String
    let home: String
    let binary: URL
    let environment: [String: String]
    /// How far this device's wall clock runs ahead of the real one (ms). ivy records Google's
    /// time once it knows it, so the offset shows only in what it records while unsure.
    private let clock = Mutex<Int64>(0)

    /// Debian's `faketime` (libfaketime; `.ci/run` installs it). It forks ivy as its child
    /// (preloading the library by hand leaves a Swift program without its arguments), so the
    /// soak's signals go to the child's whole process group.
    static let faketime = "/usr/bin/faketime"

    /// The real time, ms since the epoch.
    static func realNow() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// How far this device's clock is ahead now (ms).
    var clockOffset: Int64 { clock.withLock { $0 } }

    /// What this device's wall clock reads now.
    var now: Int64 { Self.realNow() + clockOffset }

    /// Sets the wall clock `offset` ms ahead of the real one (0: right again, a step back when
    /// it was ahead). Its commands run under libfaketime while it is not 0.
    func setClock(ahead offset: Int64) { clock.withLock { $0 = offset } }

    var databasePath: String { home + "/library.db" }

    /// Forgets what this device learned of Google's time, as a reboot does (the range kept is
    /// valid for one boot only): until its next answer from Google, ivy dates what it records by
    /// this device's own clock and marks it unsure. Only while no `ivy` runs on it.
    func forgetGoogleTime() async throws {
        let path = databasePath
        try await BlockingExecutor.blocking {
            let queue = try DatabaseQueue(path: path)
            try queue.inDatabase { db in try db.execute(sql: "DELETE FROM settings WHERE key = 'google_time'") }
            try queue.close()
        }
    }

    /// Half the width of the range of Google's time this device keeps (`low high boot seen`,
    /// ms): how far from Google's clock a time it records can be. Nil while it knows none (then
    /// it records its own clock's time).
    func googleTimeUncertainty() async throws -> Int64? {
        let path = databasePath
        return try await BlockingExecutor.blocking {
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            let text = try queue.inDatabase { db in
                try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = 'google_time'")
            }
            let parts = text?.split(separator: " ").compactMap { Int64($0) } ?? []
            guard parts.count >= 2 else { return nil }
            return (parts[1] - parts[0] + 1) / 2
        }
    }

    /// The times ivy can have written as `created_at` for something made by a command that
    /// ran from `started` to `ended` (real ms): Google's time give or take `uncertainty` when the
    /// device knows it (the commands that make things ask nothing of Google, so it knew it
    /// before as after), else its own clock's.
    func stamps(from started: Int64, to ended: Int64, uncertainty: Int64?) -> ClosedRange<Int64> {
        guard let uncertainty else { return (started + clockOffset)...(ended + clockOffset) }
        return (started - uncertainty - 1_000)...(ended + uncertainty + 1_000)
    }

    init(name: String, root: String, binary: URL, emulator: URL, caFile: URL?) throws {
        self.name = name
        self.binary = binary
        home = root + "/" + name
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let url = emulator.absoluteString
        var environment = [
            "IVY_HOME": home, "HOME": home, "PATH": "/usr/bin:/bin", "NO_COLOR": "1",
            "IVY_OAUTH_URL": url, "IVY_DRIVE_URL": url,
            "IVY_CLIENT_ID": GoogleEmulator.defaultClient.id,
            "IVY_CLIENT_SECRET": GoogleEmulator.defaultClient.secret,
        ]
        // The emulator's certificate authority, recorded by the device's `ivy login`.
        if let caFile { environment["IVY_CA_FILE"] = caFile.path }
        self.environment = environment
    }

    private init(name: String, home: String, binary: URL, environment: [String: String]) {
        self.name = name
        self.home = home
        self.binary = binary
        self.environment = environment
    }

    /// A copy of this device's home, as `name` beside it: the same library, sign-in and
    /// audio, for what must not touch the device itself. Only while no `ivy` runs on it.
    func copy(as name: String) throws -> Device {
        let copy = (home as NSString).deletingLastPathComponent + "/" + name
        try FileManager.default.copyItem(atPath: home, toPath: copy)
        var environment = environment
        (environment["IVY_HOME"], environment["HOME"]) = (copy, copy)
        let device = Device(name: name, home: copy, binary: binary, environment: environment)
        device.setClock(ahead: clockOffset)
        return device
    }

    /// This device with `extra` added to its commands' environment (a crash point to arm, a
    /// trace to write): the same home.
    func with(_ extra: [String: String]) -> Device {
        let device = Device(
            name: name, home: home, binary: binary, environment: environment.merging(extra) { $1 })
        device.setClock(ahead: clockOffset)
        return device
    }

    func audioPath(_ clipID: String) -> String { home + "/audio/\(clipID).mp3" }

    /// Runs `ivy arguments` to the end. `killWhen` is polled while it runs: once it says so,
    /// the process gets SIGKILL. After `stopAfter` it gets SIGTERM, as a service manager
    /// stops `ivy sync --watch`, and is waited for. Past `limit` it is killed, and reported
    /// as hung.
    func run(
        _ arguments: [String], limit: Duration = .seconds(300),
        killWhen: (@Sendable () async -> Bool)? = nil, stopAfter: Duration? = nil
    ) async throws -> Outcome {
        return try await withChild(command(arguments)) { running in
            let started = ContinuousClock.now
            let deadline = started + limit
            var killRequested = false
            var stopped = false
            var hung = false
            while running.exit == nil {
                if !stopped, let stopAfter, ContinuousClock.now - started >= stopAfter {
                    running.send(SIGTERM, toGroup: true)
                    stopped = true
                }
                if !killRequested, let killWhen, await killWhen() {
                    running.send(SIGKILL, toGroup: true)
                    killRequested = true
                } else if !hung, ContinuousClock.now > deadline {
                    running.send(SIGKILL, toGroup: true)
                    hung = true
                }
                try? await Task.sleep(for: .milliseconds(2))
            }
            let result = try await running.finish()
            let signalled = result.exit == .signalled(SIGKILL)
            // SIGTERM (a watch stopped) ends `faketime` without its clean-up as SIGKILL does.
            if case .signalled = result.exit { Self.removeFaketimeLeftovers(of: running.pid) }
            return Outcome(
                status: result.status, stdout: result.stdout, stderr: result.stderr,
                killed: killRequested && signalled, hung: hung && signalled)
        }
    }

    /// The semaphore and shared memory `faketime` (process `pid`) makes and removes at its
    /// end, left behind when it is killed. On a machine whose process ids wrap (pid_max 32768)
    /// a later `faketime` with the same id then fails ("sem_open: File exists").
    private static func removeFaketimeLeftovers(of pid: pid_t) {
        unlink("/dev/shm/sem.faketime_sem_\(pid)")
        unlink("/dev/shm/faketime_shm_\(pid)")
    }

    /// Every `faketime` leftover whose process is gone, whoever killed it (a hung sync's
    /// SIGKILL to the group, a soak stopped midway): run before each `faketime`, so no new one
    /// can meet the semaphore of a dead one with its process id. A live one's is kept (two
    /// soaks may run at once).
    private static func removeDeadFaketimeLeftovers() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm")) ?? []
        for name in names {
            guard let prefix = ["sem.faketime_sem_", "faketime_shm_"].first(where: { name.hasPrefix($0) }),
                let pid = pid_t(name.dropFirst(prefix.count)), kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            unlink("/dev/shm/" + name)
        }
    }

    /// `ivy arguments` in this device's home.
    private func command(_ arguments: [String]) -> ChildCommand {
        let offset = clockOffset
        guard offset != 0 else {
            return ChildCommand(binary.path, arguments, environment: environment, workingDirectory: home)
        }
        let shift = (offset > 0 ? "+" : "-") + String(abs(offset) / 1000)
        // Only the wall clock moves, as when NTP steps it: a monotonic clock moved too would
        // make every timed wait (a retry's back-off, a request's timeout) last the offset more.
        var environment = environment
        environment["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        Self.removeDeadFaketimeLeftovers()
        return ChildCommand(
            Self.faketime, ["-m", "-f", shift, binary.path] + arguments, environment: environment,
            workingDirectory: home)
    }

    /// `ivy login` as a person would do it: the soak plays the browser and approves the code
    /// the login shows, for `email`, through the emulator's state.
    func login(_ state: EmulatorState, email: String) async throws {
        let outcome = try await signInAsAPerson(command(["login"]), at: state, as: email)
        guard outcome.status == 0 else {
            throw SoakError(
                "ivy login on device \(name) failed: \(outcome.exit)\n\(outcome.stdout)\(outcome.stderr)")
        }
    }
}

/// Why the soak itself could not run (as opposed to a problem it found in ivy).
struct SoakError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
