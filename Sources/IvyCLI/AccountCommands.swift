import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore

struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign in to Google Drive with a code entered on any device (works over SSH).",
        discussion: """
            Prints a web address and a code; open the address on a phone or computer, enter the code and allow \
            access. ivy asks only for the drive.file scope: it sees the files it (or the Ivy app) made, nothing \
            else. Needs an OAuth client of type "TVs and Limited Input devices": see `ivy config`.
            """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let context = try global.context()
        try await Self.signIn(context, library: try context.library(), holdingSyncLock: false)
    }

    /// The device flow, the account from Drive, the token file and the account binding.
    /// The token is saved and the account bound under the sync lock (taken here unless the
    /// caller holds it), so a running sync cannot write its account's token back over it.
    @discardableResult
    static func signIn(
        _ context: Context, library: LibraryDatabase, holdingSyncLock: Bool
    ) async throws -> StoredToken {
        let credentials = try context.credentials(library)
        let endpoints = try context.endpoints()
        let effects = context.google
        let flow = DeviceFlow(endpoints: endpoints, credentials: credentials, effects: effects)
        let authorization = try await flow.start()
        let minutes = max(1, authorization.expiresIn / 60)
        context.output.line("""
            To sign in, open this page on any device:

                \(authorization.verificationURL)

            and enter the code:

                \(authorization.userCode)

            The code works for \(minutes) minute\(minutes == 1 ? "" : "s"). Waiting for approval (Ctrl-C to cancel)...
            """)
        context.output.flush()
        let tokens = try await flow.waitForApproval(authorization)
        let account = try await DriveAccount.fetch(drive: endpoints.drive, accessToken: tokens.accessToken, transport: effects.transport)
        let token = StoredToken(
            accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresAt: tokens.expiresAt, scope: tokens.scope,
            clientID: credentials.id, email: account.email, permissionID: account.permissionID)
        let lock = holdingSyncLock ? nil : try context.waitForSyncLock()
        defer { withExtendedLifetime(lock) {} }
        try context.tokenStore.save(token)
        if try library.bindAccount(permissionID: account.permissionID, email: account.email) {
            context.output.line("""
                This library last synced with a different Google account. It has forgotten what it synced there; \
                the next `ivy sync` uploads the whole library to \(Display.safe(account.email)). Queued changes are kept.
                """)
        }
        context.output.line("Signed in as \(Display.safe(account.email))")
        return token
    }
}

struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Sign out: revoke the sign-in at Google and delete the token file.",
        discussion: "When Google cannot be reached the token file is deleted anyway, with a warning.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let context = try global.context()
        let store = context.tokenStore
        // A sync running now would write its refreshed token back after the delete.
        let lock = try context.waitForSyncLock()
        defer { withExtendedLifetime(lock) {} }
        guard let token = store.load() else {
            store.delete()
            return context.output.line("Not signed in.")
        }
        if let revocable = token.refreshToken ?? token.accessToken {
            do {
                let response = try await DeviceFlow.revoke(
                    revocable, endpoints: try context.endpoints(), transport: context.google.transport)
                if response.status != 200, response.status != 400 {
                    context.output.error("warning: Google answered \(response.status) to the revocation; the sign-in may stay listed in your Google account's third-party access")
                }
            } catch {
                context.output.error("warning: could not reach Google to revoke the sign-in (\(error.localizedDescription)); the local token is deleted anyway")
            }
        }
        store.delete()
        context.output.line("Signed out of \(Display.safe(token.email))")
    }
}
