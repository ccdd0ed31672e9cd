import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 30: `ivy doctor` names each problem with its fix, and exits 1 when there is one.
@Suite("ivy doctor")
struct DoctorTests {
    private static func findings(_ result: RunResult) throws -> [String: [String: Any]] {
        let array = try #require(try result.json() as? [[String: Any]])
        return Dictionary(array.map { ($0["check"] as? String ?? "", $0) }) { first, _ in first }
    }

    @Test("a healthy setup: sign-in refreshes, Drive answers, the clock agrees; exit 0")
    func healthy() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("sync").status == 0)
            let doctor = try await device.ivy.run("doctor")
            #expect(doctor.status == 0, "\(doctor.stdout)\(doctor.stderr)")
            #expect(doctor.stdout.contains("ok      sign-in: alice@example.com refreshes"), "\(doctor.stdout)")
            #expect(doctor.stdout.contains("ok      drive: Google Drive answers"), "\(doctor.stdout)")
            #expect(doctor.stdout.contains("ok      clock: within"), "\(doctor.stdout)")
            #expect(doctor.stdout.contains("warning health url: none"), "\(doctor.stdout)")
        }
    }

    @Test("a revoked sign-in is a problem whose fix is ivy login")
    func revoked() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            await emulator.state.revoke(email: "alice@example.com")
            let doctor = try await device.ivy.runBinaryAsync("doctor", "--json")
            #expect(doctor.status == 1)
            let signIn = try #require(try Self.findings(doctor)["sign-in"])
            #expect(signIn["level"] as? String == "problem")
            #expect(signIn["fix"] as? String == "run `ivy login`", "\(signIn)")
        }
    }

    @Test("a missing OAuth client is a problem that says how to configure one; signed out is reported")
    func missingClient() async throws {
        let ivy = try IvyHome()
        let doctor = try await ivy.runBinaryAsync("doctor", "--json")
        #expect(doctor.status == 1)
        let findings = try Self.findings(doctor)
        #expect(findings["oauth client"]?["level"] as? String == "problem")
        #expect((findings["oauth client"]?["fix"] as? String)?.contains("ivy config set client_id") == true)
        #expect(findings["sign-in"]?["fix"] as? String == "run `ivy login`")
    }

    @Test("a crontab line whose program cron cannot find is a problem; none at all is a warning")
    func crontab() async throws {
        let ivy = try IvyHome()
        let bin = ivy.path + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let listing = ivy.path + "/crontab.txt"
        try "# m h dom mon dow command\n*/10 * * * * ivy sync --auto\n".write(
            toFile: listing, atomically: true, encoding: .utf8)
        try "#!/bin/sh\ncat \"\(listing)\"\n".write(toFile: bin + "/crontab", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin + "/crontab")
        let path = ["PATH": bin + ":/usr/bin:/bin"]
        let first = try await ivy.runBinaryAsync(["doctor", "--json"], environment: path)
        let broken = try Self.findings(first)["schedule"]
        #expect(broken?["level"] as? String == "problem", "\(String(describing: broken))")
        #expect((broken?["detail"] as? String)?.contains("cannot find or run") == true)
        #expect((broken?["fix"] as? String)?.contains("full path") == true)

        try "".write(toFile: listing, atomically: true, encoding: .utf8)
        let none = try Self.findings(try await ivy.runBinaryAsync(["doctor", "--json"], environment: path))["schedule"]
        #expect(none?["level"] as? String == "warning")
        #expect((none?["fix"] as? String)?.contains("crontab -e") == true)
    }

    @Test("a clock 10 minutes off Google's Date header is a problem")
    func clockOff() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            device.ivy.clockOffset = 10 * 60_000
            let doctor = try await device.ivy.run("doctor")
            #expect(doctor.status == 1)
            #expect(doctor.stdout.contains("problem clock: this clock is 10 minutes off Google's"), "\(doctor.stdout)")
            #expect(doctor.stdout.contains("timedatectl set-ntp true"))
        }
    }
}
