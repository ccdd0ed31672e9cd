import Foundation
import IvyCore
package import IvyGoogle
package import IvyStore
import IvySystem

/// One sign-in: Google's device flow, the account from Drive, the token file and the
/// library's account binding. `ivy login` and an interactive `ivy sync` both sign in
/// through it; the caller shows the code between `start` and `finish`.
package struct SignIn: Sendable {
    let library: LibraryDatabase
    let tokens: TokenStore
    let lockFile: String
    let endpoints: GoogleEndpoints
    let credentials: ClientCredentials
    let effects: GoogleEffects

    package init(
        library: LibraryDatabase, tokens: TokenStore, lockFile: String, endpoints: GoogleEndpoints,
        credentials: ClientCredentials, effects: GoogleEffects
    ) {
        self.library = library
        self.tokens = tokens
        self.lockFile = lockFile
        self.endpoints = endpoints
        self.credentials = credentials
        self.effects = effects
    }

    /// What `finish` did: the saved token, who signed in, and whether the library forgot
    /// what it last synced because that was another account.
    package struct SignedIn: Sendable {
        package let token: StoredToken
        package let account: DriveAccount
        package let forgotOtherAccount: Bool
    }

    private var flow: DeviceFlow { DeviceFlow(endpoints: endpoints, credentials: credentials, effects: effects) }

    /// Asks Google for a code for the person to enter.
    package func start() async throws -> DeviceAuthorization {
        try await flow.start()
    }

    /// Waits for the person's approval, then saves the token and binds the account under
    /// the sync lock (taken here, calling `waiting` first if it is held, unless the caller
    /// holds it), so a running sync cannot write its account's token back over it.
    package func finish(
        _ authorization: DeviceAuthorization, holdingSyncLock: Bool, waiting: (Int32?) -> Void
    ) async throws -> SignedIn {
        let granted = try await flow.waitForApproval(authorization)
        // Google's consent screen lets a person untick what ivy asks for; a sign-in without
        // drive.file could do nothing. (Not revoked: that would sign the Ivy app out too.)
        if let scope = granted.scope, !scope.split(separator: " ").contains(Substring(DeviceFlow.scope)) {
            throw GoogleError.missingDriveScope
        }
        let account = try await DriveAccount.fetch(
            drive: endpoints.drive, accessToken: granted.accessToken, transport: effects.transport,
            sleep: effects.sleep)
        let token = StoredToken(
            accessToken: granted.accessToken, refreshToken: granted.refreshToken, expiresAt: granted.expiresAt,
            scope: granted.scope, clientID: credentials.id, email: account.email, permissionID: account.permissionID,
            endpoints: endpoints)
        let lock = holdingSyncLock ? nil : try await SyncLock.acquireWaiting(path: lockFile, waiting: waiting)
        return try await withSyncLock(lock) {
            try tokens.save(token)
            let forgot = try await library.bindAccount(permissionID: account.permissionID, email: account.email)
            return SignedIn(token: token, account: account, forgotOtherAccount: forgot)
        }
    }
}
