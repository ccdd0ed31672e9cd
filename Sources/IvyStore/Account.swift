import Foundation
import GRDB
package import IvyCore
import IvySystem

/// Settings ivy keeps for itself, never shown by `ivy config`.
package enum InternalSetting: String, Sendable, CaseIterable {
    /// The Google account (Drive permission id) the manifest belongs to.
    case accountPermissionID = "account_permission_id"
    case accountEmail = "account_email"
    /// Drive folder ids remembered across runs, validated once per sync.
    case ivyFolderID = "folder_ivy_id"
    case booksFolderID = "folder_books_id"
    case clipsFolderID = "folder_clips_id"
    /// What `sync --auto` last told cron about a sync that could not run, and about deletions
    /// held by the safety valve: each is said once, not on every run.
    case autoReportedError = "auto_reported_error"
    case autoReportedHold = "auto_reported_hold"
    /// Why the last sync held local deletions back (the safety valve), for `ivy doctor`;
    /// none when it held none.
    case deletionsHeld = "deletions_held"
    /// When the mirror of Drive's listing was last rebuilt from a full listing (milliseconds).
    case mirrorListedAt = "mirror_listed_at"
    /// When the history was last pruned (milliseconds): at most once an hour.
    case historyPrunedAt = "history_pruned_at"
    /// When a sync last ran the restore drill (milliseconds): every `history_check_days`.
    case historyCheckedAt = "history_checked_at"
    /// How the last health-check ping went (`HealthPingRecord`, as JSON).
    case lastHealthPing = "last_health_ping"
    /// What is known of Google's clock against this boot's clock (`GoogleTimeRange.text`), so
    /// that every run of this boot records Google's time, not one it learns only when it syncs.
    case googleTime = "google_time"
}

extension LibraryDatabase {
    package func internalSetting(_ key: InternalSetting) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key.rawValue])
        }
    }

    package func setInternalSetting(_ key: InternalSetting, _ value: String?) async throws {
        try await recordSetting(rawKey: key.rawValue, value)
    }

    /// How the last health-check ping went; nil before the first (or when another program
    /// wrote something else there).
    package func lastHealthPing() async throws -> HealthPingRecord? {
        guard let text = try await internalSetting(.lastHealthPing) else { return nil }
        return try? JSONDecoder().decode(HealthPingRecord.self, from: Data(text.utf8))
    }

    package func recordHealthPing(_ record: HealthPingRecord) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try await setInternalSetting(.lastHealthPing, String(decoding: try encoder.encode(record), as: UTF8.self))
    }

    /// Records that this library syncs with `permissionID`. Signing in as another account
    /// forgets the manifest, the folder ids and the mirror (the queue stays): the next sync uploads the
    /// whole library to the new account. Returns true when that reset happened.
    @discardableResult
    package func bindAccount(permissionID: String, email: String) async throws -> Bool {
        try await write(.storeAccount) { db in
            let current = try String.fetchOne(
                db, sql: "SELECT value FROM settings WHERE key = ?",
                arguments: [InternalSetting.accountPermissionID.rawValue])
            let switched = current != nil && current != permissionID
            if switched { try Self.clearManifest(db) }
            for (key, value) in [(InternalSetting.accountPermissionID, permissionID), (.accountEmail, email)] {
                try db.execute(
                    sql:
                        "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                        + "excluded.value",
                    arguments: [key.rawValue, value])
            }
            return switched
        }
    }

    /// Forgets what was synced: the manifest, the remembered Drive folders and the mirror of
    /// Drive's listing (with its change token). Queued changes stay, and the next sync lists
    /// Drive in full and compares everything afresh.
    package func resetManifest() async throws {
        try await write(.storeResetManifest) { db in try Self.clearManifest(db) }
    }

    static func clearManifest(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM sync_manifest")
        // A hold was about deletions the forgotten manifest implied.
        let forgotten = [InternalSetting.ivyFolderID, .booksFolderID, .clipsFolderID, .deletionsHeld].map(\.rawValue)
        try db.execute(
            sql: "DELETE FROM settings WHERE key IN (?, ?, ?, ?)", arguments: StatementArguments(forgotten))
        try clearMirror(db)
    }
}
