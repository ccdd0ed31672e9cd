import IvyCore
package import IvyGoogle
package import IvyStore

/// Where a sign-in's requests go and the OAuth client that makes them, decided from this
/// run's environment (`IVY_OAUTH_URL`, `IVY_DRIVE_URL`, `IVY_CLIENT_ID`, `IVY_CLIENT_SECRET`),
/// the library's settings and the client built into this release. Given to the door whole,
/// so nothing in a sync calls back into the command that started it; read afresh for each
/// sync, so a watch picks up a new sign-in or a client set with `ivy config`.
package struct SignInSetup: Sendable {
    package var environment: [String: String]
    /// The OAuth client built into this release, if any.
    package var builtIn: ClientCredentials?

    package init(environment: [String: String], builtIn: ClientCredentials?) {
        self.environment = environment
        self.builtIn = builtIn
    }

    /// Where `token`'s requests go: where it was signed in, which the environment may name
    /// again but never change (`GoogleEndpoints.from(environment:signIn:)`).
    package func endpoints(for token: StoredToken?) throws -> GoogleEndpoints {
        try GoogleEndpoints.from(environment: environment, signIn: token)
    }

    /// The OAuth client and its source: `option` (login's), then the environment, then
    /// `client_id` and `client_secret` from `ivy config`, then the built-in one
    /// (`ClientResolution.resolve`).
    package func client(_ library: LibraryDatabase, option: PartialClient = PartialClient()) async throws
        -> ClientResolution
    {
        ClientResolution.resolve(
            option: option, environment: .from(environment: environment),
            settings: PartialClient(
                id: try await library.setting(.clientID), secret: try await library.setting(.clientSecret)),
            builtIn: builtIn)
    }

    /// The OAuth client to sign in and refresh with, or the error naming how to give one.
    package func credentials(_ library: LibraryDatabase) async throws -> ClientCredentials {
        try await client(library).required()
    }
}
