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
        // Google's consent screen lets a person untick what ivy asks for; a sign-in without
        // drive.file could do nothing. (Not revoked: that would sign the Ivy app out too.)
        if let scope = tokens.scope, !scope.split(separator: " ").contains(Substring(DeviceFlow.scope)) {
            throw GoogleError.missingDriveScope
        }
        let account = try await DriveAccount.fetch(
            drive: endpoints.drive, accessToken: tokens.accessToken, transport: effects.transport, sleep: effects.sleep)
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
        let unnamed = account.emailShown ? "" : " (Google does not show ivy this account's email address)"
        context.output.line("Signed in as \(Display.safe(account.email))\(unnamed)")
        return token
    }
}

struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Sign out on this computer: delete the saved sign-in. The Ivy app stays signed in.",
        discussion: """
            Deletes token.json and nothing else. --revoke also withdraws the access at Google, which Google does \
            for every app of the Google Cloud project ivy shares with the Ivy app: the Ivy app on every phone and \
            tablet, and ivy on your other computers, are signed out too. It asks first on a terminal; --yes is for \
            scripts. When Google cannot be reached the token file is deleted anyway, with a warning.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Also revoke the access at Google: this signs the Ivy app and your other devices out too.") var revoke = false
    @Flag(help: "With --revoke: do not ask for confirmation.") var yes = false

    /// What revoking does, said before it is done: Google's revocation is per Cloud project
    /// ("removes all OAuth 2.0 scopes previously granted to a project ... for all clients
    /// registered under that project"), and the Ivy app is a client of the same project.
    static let consequence = """
        Revoking withdraws this Google account's access for every app of the Google Cloud project ivy shares with \
        the Ivy app: the Ivy app on your phones and tablets, and ivy on your other computers, will be signed out \
        too and must sign in again.
        """

    func validate() throws {
        if yes && !revoke { throw ValidationError("--yes only goes with --revoke") }
    }

    func run() async throws {
        let context = try global.context()
        let store = context.tokenStore
        if revoke, !yes {
            guard context.stdinIsTerminal else {
                throw ValidationError("logout --revoke signs the Ivy app out too, so it asks first; run it on a terminal or pass --yes")
            }
            // No usable token file: nothing to revoke, so nothing to ask; the rest below
            // removes a damaged file and says so, as plain logout does.
            if let token = store.quietLoad() {
                context.output.line(Self.consequence)
                context.output.line("Revoke the access of \(Display.safe(token.email))? [y/N] ")
                context.output.flush()
                guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
                    return context.output.line("Nothing changed.")
                }
            }
        }
        // A sync running now would write its refreshed token back after the delete.
        let lock = try context.waitForSyncLock()
        defer { withExtendedLifetime(lock) {} }
        guard let token = store.load() else {
            store.delete()
            return context.output.line("Not signed in.")
        }
        guard revoke else {
            store.delete()
            return context.output.line(
                "Signed out of \(Display.safe(token.email)) on this computer; the Ivy app and your other devices stay signed in.")
        }
        var revoked = false
        if let revocable = token.refreshToken ?? token.accessToken {
            do {
                let response = try await DeviceFlow.revoke(
                    revocable, endpoints: try context.endpoints(), transport: context.google.transport)
                // 400 is Google's answer for a token it no longer knows: already revoked.
                revoked = response.status == 200 || response.status == 400
                if !revoked {
                    context.output.error("warning: Google answered \(response.status) to the revocation; the sign-in may stay listed in your Google account's third-party access")
                }
            } catch {
                context.output.error("warning: could not reach Google to revoke the sign-in (\(error.localizedDescription)); the local token is deleted anyway")
            }
        }
        store.delete()
        guard revoked else { return context.output.line("Signed out of \(Display.safe(token.email)) on this computer.") }
        context.output.line("""
            Signed out of \(Display.safe(token.email)) and revoked its access at Google: the Ivy app and ivy on your \
            other devices must sign in again.
            """)
    }
}
