import Foundation
import GoogleEmulator
import Testing

/// A started `ivy` process whose output is read through pipes.
final class RunningIvy: @unchecked Sendable {
    let process = Process()
    let out = Pipe()
    let err = Pipe()

    init(_ arguments: [String], environment: [String: String]) throws {
        process.executableURL = IvyHome.binary
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    /// Reads standard output until the sign-in code shows, and returns it.
    func readUserCode() async throws -> String? {
        try await offCooperativePool { [out] in
            var seen = Data()
            while true {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { return nil }
                seen.append(chunk)
                let text = String(decoding: seen, as: UTF8.self)
                if let match = text.firstMatch(of: /\b([A-Z]{4}-[A-Z]{4})\b/) { return String(match.1) }
            }
        }
    }

    /// Waits until this process has `lockFile` open, or until it exits. ivy opens the lock
    /// file only to take the lock, so while the test holds it an open lock file means ivy
    /// waits for it. (It waits by polling, which `/proc/locks` does not show as waiting.) A
    /// condition, polled, with no deadline: a loaded machine once took over a minute to get
    /// there, and the suite's time limit ends a hang.
    func waitUntilWaiting(for lockFile: String) async throws -> Bool {
        let descriptors = "/proc/\(process.processIdentifier)/fd"
        let target = URL(fileURLWithPath: lockFile).resolvingSymlinksInPath().path
        while process.isRunning {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: descriptors)) ?? []
            let open = names.contains { name in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: descriptors + "/" + name)) == target
            }
            if open { return true }
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    func finish() async throws -> RunResult {
        try await offCooperativePool { [self] in
            let rest = out.fileHandleForReading.readDataToEndOfFile()
            let errors = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return RunResult(
                status: process.terminationStatus, stdout: String(decoding: rest, as: UTF8.self),
                stderr: String(decoding: errors, as: UTF8.self))
        }
    }
}

@Suite("Signing in and out while a sync runs", .timeLimit(.minutes(10)))
struct SignInLockTests {
    @Test("logout waits for the running sync: token.json stays while the lock is held, then goes")
    func logoutWaits() async throws {
        try await withSignIn { harness in
            #expect(try await harness.login().status == 0)
            let lockFile = harness.ivy.home + "/ivy.lock"
            let lock = try HeldLock(path: lockFile)
            let logout = try RunningIvy(["logout"], environment: harness.ivy.environment)
            let blocked = try await logout.waitUntilWaiting(for: lockFile)
            #expect(blocked, "logout did not wait for the lock")
            #expect(FileManager.default.fileExists(atPath: harness.tokenFile))
            #expect(await !harness.emulator.state.requests.contains { $0.path == "/revoke" })
            lock.release()
            let result = try await logout.finish()
            #expect(
                result.status == 0 && result.stdout.hasPrefix("Signed out of alice@example.com"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
        }
    }

    @Test("login waits for the running sync before it saves the new account's token")
    func loginWaits() async throws {
        try await withSignIn { harness in
            await harness.emulator.state.setDeviceCode(interval: 0)
            try FileManager.default.createDirectory(atPath: harness.ivy.home, withIntermediateDirectories: true)
            chmod(harness.ivy.home, 0o700)
            let lockFile = harness.ivy.home + "/ivy.lock"
            let lock = try HeldLock(path: lockFile)
            let login = try RunningIvy(["login"], environment: harness.ivy.environment)
            let code = try await login.readUserCode()
            let userCode = try #require(code)
            try await harness.emulator.state.approve(userCode: userCode, email: "alice@example.com")
            let blocked = try await login.waitUntilWaiting(for: lockFile)
            #expect(blocked, "login did not wait for the lock")
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
            lock.release()
            let result = try await login.finish()
            #expect(result.status == 0 && result.stdout.contains("Signed in as alice@example.com"), "\(result.stderr)")
            #expect(try harness.storedToken()["email"] as? String == "alice@example.com")
        }
    }
}
