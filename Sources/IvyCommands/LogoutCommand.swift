import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem

struct LogoutCommand: ContextCommand {
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
    @Flag(help: "Also revoke the access at Google: this signs the Ivy app and your other devices out too.") var revoke =
        false
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

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        let store = home.tokenStore
        if revoke, !yes {
            guard home.terminal.input else {
                throw ValidationError(
                    "logout --revoke signs the Ivy app out too, so it asks first; run it on a terminal or pass --yes")
            }
            // No usable token file: nothing to revoke, so nothing to ask; the rest below
            // removes a damaged file and says so, as plain logout does.
            if let token = store.quietLoad() {
                home.output.line(Self.consequence)
                guard home.agrees("Revoke the access of \(Display.safe(token.email))?") else {
                    return home.output.line("Nothing changed.")
                }
            }
        }
        // A sync running now would write its refreshed token back after the delete.
        try await withSyncLock(home.waitForSyncLock()) {
            guard let token = store.load() else {
                store.delete()
                return home.output.line("Not signed in.")
            }
            guard revoke else {
                store.delete()
                return home.output.line(
                    "Signed out of \(Display.safe(token.email)) on this computer; the Ivy app and your other devices "
                        + "stay signed in."
                )
            }
            var revoked = false
            if let revocable = token.refreshToken ?? token.accessToken {
                // Before anything is deleted: a token goes only to the server that issued it.
                let endpoints = try home.endpoints(for: token)
                do {
                    let response = try await DeviceFlow.revoke(
                        revocable, endpoints: endpoints, transport: home.google.transport)
                    // 400 is Google's answer for a token it no longer knows: already revoked.
                    revoked = response.status == 200 || response.status == 400
                    if !revoked {
                        home.output.error(
                            "warning: Google answered \(response.status) to the revocation; the sign-in may stay "
                                + "listed in your Google account's third-party access"
                        )
                    }
                } catch {
                    home.output.error(
                        "warning: could not reach Google to revoke the sign-in (\(error.localizedDescription)); the "
                            + "local token is deleted anyway"
                    )
                }
            }
            store.delete()
            guard revoked else {
                return home.output.line("Signed out of \(Display.safe(token.email)) on this computer.")
            }
            home.output.line(
                """
                Signed out of \(Display.safe(token.email)) and revoked its access at Google: the Ivy app and \
                ivy on your other devices must sign in again.
                """)
        }
    }
}
