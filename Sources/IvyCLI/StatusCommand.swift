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
        let nextAutoSync: String?
        let orphanClips: Int

        enum CodingKeys: String, CodingKey {
            case authenticated, account, pending, failed
            case accessTokenExpires = "access_token_expires", refreshToken = "refresh_token_present"
            case signedOutReason = "signed_out_reason"
            case lastSync = "last_sync", lastError = "last_error", manifestEntries = "manifest_entries"
            case nextAutoSync = "next_auto_sync", orphanClips = "orphan_clips"
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
            try container.encode(nextAutoSync, forKey: .nextAutoSync)
            try container.encode(orphanClips, forKey: .orphanClips)
        }
    }

    func run() throws {
        let context = try global.context()
        let library = try context.library(readOnly: true)
        let local = try library.localStatus()
        let token = context.tokenStore.load()
        let enabled = try library.setting(.syncEnabled) == "true"
        let cooldown = Milliseconds(try library.number(.autoSyncCooldown)) * 1000
        let next: String? =
            if !enabled || token?.isSignedIn != true { nil } else { Display.date(max(context.clock.now(), (local.lastSyncTime ?? 0) + cooldown)) }
        let report = Report(
            authenticated: token?.isSignedIn ?? false, account: token?.email,
            accessTokenExpires: token?.expiresAt.map(Display.date), refreshToken: token?.refreshToken != nil,
            signedOutReason: token?.signedOutReason,
            pending: local.pending, failed: local.failed,
            lastSync: local.lastSyncTime.map(Display.date), lastError: local.lastError,
            manifestEntries: local.manifestEntries, nextAutoSync: next, orphanClips: try library.orphanClipCount())
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
            ("next auto sync", report.nextAutoSync ?? (enabled ? "when signed in" : "never (sync_enabled is false)")),
            ("orphan clips", String(report.orphanClips)),
        ])
    }
}
