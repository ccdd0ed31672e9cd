import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem

struct LoginCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign in to Google Drive with a code entered on any device (works over SSH).",
        discussion: """
            Prints a web address and a code; open the address on a phone or computer, enter the code and allow \
            access. ivy asks only for the drive.file scope: it sees the files it (or the Ivy app) made, nothing \
            else. A release of ivy has an OAuth client built in, and then `ivy login` needs nothing more. \
            Otherwise (or to use another client) give one of type "TVs and Limited Input devices" with --client-id \
            and --client-secret (or --client-secret-file), once: it signs in with that client, and stores it in the \
            library's settings (as `ivy config set client_id` and `client_secret` do) only once the sign-in is saved. \
            The client used is the first given of: these options, IVY_CLIENT_ID and IVY_CLIENT_SECRET, the \
            settings, the built-in client (`ivy status` names which).
            """)

    @OptionGroup var global: GlobalOptions
    @Option(
        help: ArgumentHelp(
            "The OAuth client id; stored as the setting client_id before signing in.", valueName: "ID"))
    var clientID: String?
    @Option(
        help: ArgumentHelp(
            "The OAuth client secret (never printed); stored as the setting client_secret once signed in. It shows "
                + "in the process list while the login waits: --client-secret-file keeps it out.",
            valueName: "SECRET"))
    var clientSecret: String?
    @Option(
        help: ArgumentHelp(
            "Read the OAuth client secret from this file (its first line), or from standard input with -.",
            valueName: "FILE"))
    var clientSecretFile: String?

    func validate() throws {
        if clientSecret != nil, clientSecretFile != nil {
            throw ValidationError("give the client secret once: --client-secret or --client-secret-file")
        }
        for (key, value) in [(SettingKey.clientID, clientID), (.clientSecret, clientSecret)] {
            guard let value else { continue }
            if case .failure(let error) = key.normalize(value) { throw ValidationError(error.message) }
        }
    }

    /// The client options as settings, checked as `ivy config set` checks them; the secret
    /// read from its file when given so.
    private func givenClient(_ context: Context) throws -> [(SettingKey, String)] {
        var secret = clientSecret
        if let file = clientSecretFile { secret = try SecretInput.firstLine(of: file, context) }
        var given: [(SettingKey, String)] = []
        for (key, value) in [(SettingKey.clientID, clientID), (.clientSecret, secret)] {
            guard let value else { continue }
            switch key.normalize(value) {
            case .failure(let error): throw ValidationError(error.message)
            case .success(let normalized): given.append((key, normalized))
            }
        }
        return given
    }

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        let given = try givenClient(context)
        if clientSecret != nil {
            home.output.error(
                "warning: --client-secret shows the secret in the process list while the login waits; "
                    + "--client-secret-file FILE (or - for standard input) keeps it out")
        }
        // Asked before the library is opened (which may create or migrate it): a No leaves
        // the home exactly as it was, the stored client included. The question needs only the
        // token file, read.
        guard try Self.mayReplaceSignIn(home) else { return }
        let created = !FileManager.default.fileExists(atPath: home.paths.database)
        let library = try await home.library()
        // The command line wins over the environment and the settings for this sign-in; what it
        // names is stored only once the sign-in is saved, so a login that fails (a mistyped
        // secret, a denied code, Ctrl-C) leaves the working client and sign-in as they were.
        let option = PartialClient(
            id: given.first { $0.0 == .clientID }?.1, secret: given.first { $0.0 == .clientSecret }?.1)
        let credentials = try await home.client(library, option: option).required()
        // Ctrl-C (or SIGTERM) ends the wait for approval at once: there is nothing in flight to finish.
        let stop = StopRequest(forcedAt: 1)
        home.context.interruptions { _ in stop.request() }
        let signedIn = await stop.cancellable { () async -> Result<StoredToken, any Error> in
            do {
                return .success(
                    try await Self.signIn(
                        home, library: library, tokens: home.tokenStore, holdingSyncLock: false,
                        credentials: credentials))
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let error) = signedIn {
            guard stop.requested else { throw error }
            // A library this login made for nothing is not left behind, empty.
            if created {
                try? library.closeConnections()
                for suffix in ["", "-wal", "-shm"] { unlink(home.paths.database + suffix) }
            }
            home.output.error("Sign-in cancelled: nothing was saved.")
            throw ExitCode(130)
        }
        for (key, value) in given {
            let stored = try await library.setSetting(key, to: value)
            home.output.line("\(key.rawValue) = \(shown(key, stored))")
        }
        let overridden = ["IVY_CLIENT_ID", "IVY_CLIENT_SECRET"].contains { !(home.environment[$0] ?? "").isEmpty }
        if !given.isEmpty, overridden {
            home.output.error(
                "warning: IVY_CLIENT_ID or IVY_CLIENT_SECRET is set and wins over the stored client in later commands; "
                    + "unset it, or this sign-in will not refresh")
        }
    }

    /// Signing in again replaces the saved sign-in. A person at a terminal is asked first, No
    /// unless they say yes, as `gh auth login` does; declining changes nothing and is not an
    /// error (exit 0, like ivy's other declined questions). Unless both standard input and
    /// standard output (where the question is written) are terminals, it goes ahead, so
    /// scripts keep working (`ivy login > file` too), and says whose sign-in it replaces.
    private static func mayReplaceSignIn(_ home: Home) throws -> Bool {
        guard let token = home.tokenStore.quietLoad(), token.isSignedIn else { return true }
        let account = Display.safe(token.email)
        guard home.terminal.input, home.terminal.output else {
            home.output.line("Already signed in as \(account); signing in again replaces that sign-in.")
            return true
        }
        home.output.line("Already signed in as \(account).")
        // A terminal that gives no answer (a login sent to the background reads EIO) is no No:
        // the person decides, not the terminal.
        guard let yes = home.answer("Sign in again, replacing the sign-in of \(account)?") else {
            throw ValidationError(
                "no answer could be read from the terminal (is `ivy login` running in the background?); "
                    + "run it in the foreground to answer, or `ivy logout` first to sign in again without the question")
        }
        guard yes else {
            home.output.line("Nothing changed; still signed in as \(account).")
            return false
        }
        return true
    }

    /// Signs in (see `SignIn`), showing the code and then who signed in. Unless the caller
    /// holds the sync lock, the token is saved under it, waiting for a running sync.
    @discardableResult
    static func signIn(
        _ home: Home, library: LibraryDatabase, tokens: TokenStore, holdingSyncLock: Bool,
        credentials given: ClientCredentials? = nil
    ) async throws -> StoredToken {
        let credentials: ClientCredentials
        if let given { credentials = given } else { credentials = try await home.credentials(library) }
        // A new sign-in's servers, and whom it trusts, are the environment's, whatever an
        // earlier sign-in here recorded.
        let endpoints = try home.endpoints()
        let signIn = SignIn(
            library: library, tokens: tokens, lockFile: home.paths.lockFile, endpoints: endpoints,
            credentials: credentials, effects: home.google(for: endpoints))
        let authorization = try await signIn.start()
        showCode(authorization, output: home.output)
        let output = home.output
        let terminal = home.terminal
        let signedIn = try await signIn.finish(authorization, holdingSyncLock: holdingSyncLock) { pid in
            guard terminal.error else { return }
            output.error("waiting for the running sync\(pid.map { " (process \($0))" } ?? "") to finish…")
        }
        showAccount(signedIn, output: home.output)
        return signedIn.token
    }

    private static func showCode(_ authorization: DeviceAuthorization, output: Output) {
        let minutes = max(1, authorization.expiresIn / 60)
        // What Google sent is printed as text: a control character in it is escaped, never run.
        output.line(
            """
            To sign in, open this page on any device:

                \(Display.safe(authorization.verificationURL))

            and enter the code:

                \(Display.safe(authorization.userCode))

            The code works for \(minutes) minute\(minutes == 1 ? "" : "s"). Waiting for approval (Ctrl-C to cancel)...
            """)
    }

    private static func showAccount(_ signedIn: SignIn.SignedIn, output: Output) {
        let account = signedIn.account
        if signedIn.forgotOtherAccount {
            output.line(
                """
                This library last synced with a different Google account. It has forgotten what it synced there; \
                the next `ivy sync` uploads the whole library to \(Display.safe(account.email)). \
                Queued changes are kept.
                """)
        }
        let unnamed = account.emailShown ? "" : " (Google does not show ivy this account's email address)"
        output.line("Signed in as \(Display.safe(account.email))\(unnamed)")
    }
}
