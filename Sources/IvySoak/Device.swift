import Foundation
import GoogleEmulator
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

    /// `exit 5 (failed: clip 1234…: why)`, for logs.
    var brief: String {
        if killed { return "killed" }
        if hung { return "HUNG, killed" }
        let error = stderr.split(separator: "\n").first.map { " (\($0))" } ?? ""
        return "exit \(status)\(error)"
    }
}

/// The `ivy` processes running now (more than one in a round whose syncs overlap), so that
/// Ctrl-C on the soak can take them down too, and whether the soak is stopping (then nothing
/// new starts). One lock for both: a process is either started before the stop, and killed
/// by it, or never started. (`Mutex` from Synchronization: the signal handler runs on
/// another thread.)
let children = Mutex<(running: Set<pid_t>, stopping: Bool)>(([], false))

/// One `ivy` install: the real binary, run with a home of its own, signed in to the shared
/// emulator. Commands run as subprocesses whose waits never block Swift's cooperative
/// threads, which the in-process emulator needs to answer them.
final class Device: Sendable {
    let name: String
    let home: String
    let binary: URL
    let environment: [String: String]

    init(name: String, root: String, binary: URL, emulator: URL) throws {
        self.name = name
        self.binary = binary
        home = root + "/" + name
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let url = emulator.absoluteString
        environment = [
            "IVY_HOME": home, "HOME": home, "PATH": "/usr/bin:/bin", "NO_COLOR": "1",
            "IVY_OAUTH_URL": url, "IVY_DRIVE_URL": url,
            "IVY_CLIENT_ID": GoogleEmulator.defaultClient.id,
            "IVY_CLIENT_SECRET": GoogleEmulator.defaultClient.secret,
        ]
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
        return Device(name: name, home: copy, binary: binary, environment: environment)
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
        let running = try RunningIvy(device: self, arguments: arguments)
        let started = ContinuousClock.now
        let deadline = started + limit
        var killRequested = false
        var stopped = false
        var hung = false
        while running.isRunning {
            if !stopped, let stopAfter, ContinuousClock.now - started >= stopAfter {
                running.signal(SIGTERM)
                stopped = true
            }
            if !killRequested, let killWhen, await killWhen() {
                running.signal(SIGKILL)
                killRequested = true
            } else if !hung, ContinuousClock.now > deadline {
                running.signal(SIGKILL)
                hung = true
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return try running.finish(killRequested: killRequested, hung: hung)
    }

    /// `ivy login` as a person would do it: the soak plays the browser and approves the one
    /// waiting sign-in for `email` through the emulator's state.
    func login(_ state: EmulatorState, email: String) async throws {
        let running = try RunningIvy(device: self, arguments: ["login"])
        let deadline = ContinuousClock.now + .seconds(60)
        var approved = false
        while running.isRunning {
            if !approved, let code = await state.pendingUserCodes().first {
                try await state.approve(userCode: code, email: email)
                approved = true
            }
            if ContinuousClock.now > deadline { running.signal(SIGKILL) }
            try? await Task.sleep(for: .milliseconds(5))
        }
        let outcome = try running.finish(killRequested: false, hung: false)
        guard outcome.status == 0 else {
            throw SoakError("ivy login on device \(name) failed: \(outcome.brief)\n\(outcome.stdout)\(outcome.stderr)")
        }
    }
}

/// A started `ivy` process whose output goes to files (large output cannot block it).
/// `@unchecked Sendable`: `Process` is not marked Sendable; this object only starts it,
/// reads its state and signals it, which Foundation allows from any thread.
private final class RunningIvy: @unchecked Sendable {
    let process = Process()
    let out: String
    let err: String
    private let outHandle: FileHandle
    private let errHandle: FileHandle

    init(device: Device, arguments: [String]) throws {
        let tag = UUID().uuidString
        out = device.home + "/.out-\(tag)"
        err = device.home + "/.err-\(tag)"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.executableURL = device.binary
        process.arguments = arguments
        process.environment = device.environment
        process.currentDirectoryURL = URL(fileURLWithPath: device.home)
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try children.withLock { state in
            guard !state.stopping else { throw SoakError("stopping") }
            try process.run()
            state.running.insert(process.processIdentifier)
        }
    }

    var isRunning: Bool { process.isRunning }

    func signal(_ number: Int32) {
        if process.isRunning { kill(process.processIdentifier, number) }
    }

    /// Collects the output of the process, which has exited: its callers poll `isRunning`
    /// (a sleep between polls) rather than block a cooperative thread in `waitUntilExit`.
    func finish(killRequested: Bool, hung: Bool) throws -> Outcome {
        let pid = process.processIdentifier
        children.withLock { _ = $0.running.remove(pid) }
        try outHandle.close()
        try errHandle.close()
        defer {
            try? FileManager.default.removeItem(atPath: out)
            try? FileManager.default.removeItem(atPath: err)
        }
        let signalled = process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
        return Outcome(
            status: process.terminationStatus,
            stdout: String(decoding: FileManager.default.contents(atPath: out) ?? Data(), as: UTF8.self),
            stderr: String(decoding: FileManager.default.contents(atPath: err) ?? Data(), as: UTF8.self),
            killed: killRequested && signalled, hung: hung && signalled)
    }
}

/// Why the soak itself could not run (as opposed to a problem it found in ivy).
struct SoakError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
