import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

extension Child {
    /// Waits until this process has `lockFile` open, or until it exits. ivy opens the lock
    /// file only to take the lock, so while the test holds it an open lock file means ivy
    /// waits for it. (It waits by polling, which `/proc/locks` does not show as waiting.) A
    /// condition, polled, with no deadline: a loaded machine once took over a minute to get
    /// there, and the suite's time limit ends a hang.
    func waitUntilWaiting(for lockFile: String) async throws -> Bool {
        let descriptors = "/proc/\(pid)/fd"
        let target = URL(fileURLWithPath: lockFile).resolvingSymlinksInPath().path
        while exit == nil {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: descriptors)) ?? []
            let open = names.contains { name in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: descriptors + "/" + name)) == target
            }
            if open { return true }
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
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
            try await withChild(harness.ivy.command(["logout"])) { logout in
                let blocked = try await logout.waitUntilWaiting(for: lockFile)
                #expect(blocked, "logout did not wait for the lock")
                #expect(FileManager.default.fileExists(atPath: harness.tokenFile))
                #expect(await !harness.emulator.state.requests.contains { $0.path == "/revoke" })
                lock.release()
                let result = try await logout.finish(within: .seconds(300))
                #expect(
                    result.status == 0 && result.stdout.hasPrefix("Signed out of alice@example.com"),
                    "\(result.stderr)")
                #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
            }
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
            try await withChild(harness.ivy.command(["login"])) { login in
                let code = try await login.firstMatch(of: /\b([A-Z]{4}-[A-Z]{4})\b/, what: "show its code")
                let userCode = try #require(code)
                try await harness.emulator.state.approve(userCode: userCode, email: "alice@example.com")
                let blocked = try await login.waitUntilWaiting(for: lockFile)
                #expect(blocked, "login did not wait for the lock")
                #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
                lock.release()
                let result = try await login.finish(within: .seconds(300))
                #expect(
                    result.status == 0 && result.stdout.contains("Signed in as alice@example.com"),
                    "\(result.stderr)")
                #expect(try harness.storedToken()["email"] as? String == "alice@example.com")
            }
        }
    }
}
