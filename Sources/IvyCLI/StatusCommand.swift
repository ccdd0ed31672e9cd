import ArgumentParser
import IvyCore
import IvyGoogle
import IvyStore

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show sign-in, queue and last-sync state.")

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print one JSON object.") var json = false

    struct Report: Encodable {
        let authenticated: Bool
        let account: String?
        let accessTokenExpires: String?
        let refreshToken: Bool
        let signedOutReason: String?
        let pending: Int
        let failed: Int
        let lastSync: String?
        let lastError: String?
        let manifestEntries: Int

        enum CodingKeys: String, CodingKey {
            case authenticated, account, pending, failed
            case accessTokenExpires = "access_token_expires", refreshToken = "refresh_token_present"
            case signedOutReason = "signed_out_reason"
            case lastSync = "last_sync", lastError = "last_error", manifestEntries = "manifest_entries"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(authenticated, forKey: .authenticated)
            try container.encode(account, forKey: .account)
            try container.encode(accessTokenExpires, forKey: .accessTokenExpires)
            try container.encode(refreshToken, forKey: .refreshToken)
            try container.encode(signedOutReason, forKey: .signedOutReason)
            try container.encode(pending, forKey: .pending)
            try container.encode(failed, forKey: .failed)
            try container.encode(lastSync, forKey: .lastSync)
            try container.encode(lastError, forKey: .lastError)
            try container.encode(manifestEntries, forKey: .manifestEntries)
        }
    }

    func run() throws {
        let context = try global.context()
        let local = try context.library().localStatus()
        let token = context.tokenStore.load()
        let report = Report(
            authenticated: token?.isSignedIn ?? false, account: token?.email,
            accessTokenExpires: token?.expiresAt.map(Display.date), refreshToken: token?.refreshToken != nil,
            signedOutReason: token?.signedOutReason,
            pending: local.pending, failed: local.failed,
            lastSync: local.lastSyncTime.map(Display.date), lastError: local.lastError,
            manifestEntries: local.manifestEntries)
        if json { return try context.output.json(report) }
        context.output.fields([
            ("authenticated", report.authenticated ? "yes" : (report.signedOutReason.map { "no: \($0); run `ivy login`" } ?? "no; run `ivy login`")),
            ("account", Display.optional(report.account)),
            ("access token", report.accessTokenExpires.map { "expires \($0)" } ?? "-"),
            ("refresh token", report.refreshToken ? "present" : "none"),
            ("pending", String(report.pending)),
            ("failed", String(report.failed)),
            ("last sync", report.lastSync ?? "never"),
            ("last error", Display.optional(report.lastError)),
            ("manifest entries", String(report.manifestEntries)),
        ])
    }
}
