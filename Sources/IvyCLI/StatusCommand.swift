import ArgumentParser
import IvyCore
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
        let pending: Int
        let failed: Int
        let lastSync: String?
        let lastError: String?
        let manifestEntries: Int

        enum CodingKeys: String, CodingKey {
            case authenticated, account, pending, failed
            case lastSync = "last_sync", lastError = "last_error", manifestEntries = "manifest_entries"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(authenticated, forKey: .authenticated)
            try container.encode(account, forKey: .account)
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
        let report = Report(
            authenticated: false, account: nil,
            pending: local.pending, failed: local.failed,
            lastSync: local.lastSyncTime.map(Display.date), lastError: local.lastError,
            manifestEntries: local.manifestEntries)
        if json { return try context.output.json(report) }
        context.output.fields([
            ("authenticated", report.authenticated ? "yes" : "no"),
            ("account", Display.optional(report.account)),
            ("pending", String(report.pending)),
            ("failed", String(report.failed)),
            ("last sync", report.lastSync ?? "never"),
            ("last error", Display.optional(report.lastError)),
            ("manifest entries", String(report.manifestEntries)),
        ])
    }
}
