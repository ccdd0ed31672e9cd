import Foundation
package import GoogleEmulator

/// Signs in as a person does: runs `ivy login` (`login`: the binary, its arguments, its
/// environment, whose IVY_OAUTH_URL names `emulator`'s server), waits for the code it shows,
/// and approves that code at the emulator for `email`, as the person would in a browser; then
/// waits for the login to end. Shared by the tests and `ivy-soak`.
package func signInAsAPerson(
    _ login: ChildCommand, at emulator: EmulatorState, as email: String, within limit: Duration = .seconds(60)
) async throws -> ChildResult {
    try await withChild(login) { child in
        let code = try await child.firstMatch(
            of: /\b([A-Z]{4}-[A-Z]{4})\b/, within: limit, what: "show a sign-in code")
        if let code { try await emulator.approve(userCode: code, email: email) }
        return try await child.finish(within: limit)
    }
}
