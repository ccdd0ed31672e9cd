import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyGoogle

@Suite("Cloud project setup errors name the fix")
struct SetupErrorTests {
    @Test("Drive API not enabled in the project: the error says to enable it, with Google's link")
    func driveAPIDisabled() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            await google.state.setDriveAPI(enabled: false)
            await #expect { try await drive.folders() } throws: { error in
                let message = (error as? DriveError)?.localizedDescription ?? ""
                return message.contains("Google Drive API is not enabled")
                    && message.contains(
                        "https://console.developers.google.com/apis/api/drive.googleapis.com/"
                            + "overview?project=ivy-project"
                    )
            }
        }
    }

    @Test("a sign-in without the drive.file scope: the error says to sign in again")
    func missingScope() async throws {
        try await withGoogle { google in
            await google.state.setDeviceCode(interval: 0)
            let sleeper = Sleeper { [state = google.state] index, _ in
                if index == 1 { try? await state.approve(userCode: nil, email: "alice@example.com", scope: "openid") }
            }
            let flow = google.flow(sleeper)
            let tokens = try await flow.waitForApproval(try await flow.start())
            await #expect(throws: GoogleError.missingDriveScope) {
                try await DriveAccount.fetch(
                    drive: google.endpoints.drive, accessToken: tokens.accessToken, transport: google.transport)
            }
            #expect(GoogleError.missingDriveScope.localizedDescription.contains("run `ivy login` again"))
        }
    }
}
