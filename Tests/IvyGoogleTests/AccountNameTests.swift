import Foundation
import GoogleEmulator
import IvyCore
import Testing

@testable import IvyGoogle

// Drive's User resource: emailAddress "may not be present in certain contexts if the user has
// not made their email address visible to the requester".
@Suite("An account Drive shows without its email address")
struct AccountNameTests {
    @Test("about without emailAddress names the account by its permission id")
    func accountWithoutEmail() async throws {
        try await withGoogle { google in
            await google.state.setAboutOmitsEmail(true)
            let provider = try await google.signedIn()
            let account = await provider.account
            #expect(
                account.email == "Google account 04871234567890123456" && account.permissionID == "04871234567890123456"
            )
        }
    }
}
