import Foundation
import GoogleEmulator
import Testing

@Suite("Google setup problems, as ivy login and sync report them")
struct GoogleSetupTests {
    @Test("the Drive API not enabled in the Cloud project: login and sync say to enable it, and login saves nothing")
    func driveAPIDisabled() async throws {
        try await withSignIn { harness in
            await harness.emulator.state.setDriveAPI(enabled: false)
            let login = try await harness.login()
            #expect(login.status == 1)
            #expect(
                login.stderr.contains("Google Drive API is not enabled")
                    && login.stderr.contains("drive.googleapis.com"))
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))

            await harness.emulator.state.setDriveAPI(enabled: true)
            #expect(try await harness.login().status == 0)
            await harness.emulator.state.setDriveAPI(enabled: false)
            let sync = try await harness.ivy.run("sync")
            #expect(sync.status == 1)
            #expect(sync.stderr.contains("Google Drive API is not enabled") && sync.stderr.contains("then try again"))
        }
    }

    @Test("a sign-in that left Drive unticked says to sign in again and saves nothing")
    func driveUnticked() async throws {
        try await withSignIn { harness in
            let login = try await harness.login { state, code in
                try await state.approve(userCode: code, email: "alice@example.com", scope: "openid")
            }
            #expect(login.status == 1)
            #expect(login.stderr.contains("insufficientPermissions") && login.stderr.contains("run `ivy login` again"))
            #expect(!FileManager.default.fileExists(atPath: harness.tokenFile))
        }
    }
}
