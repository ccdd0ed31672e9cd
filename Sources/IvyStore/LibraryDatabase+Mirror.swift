import Foundation
import GRDB
package import IvyCore
import IvySystem

/// The mirror of Drive's listing: replaced whole from a full listing, updated one page of
/// Drive's change feed at a time. Each write saves the change token with the rows in one
/// transaction, so the token always says how current the rows are: a run killed at any
/// moment leaves either the page applied with its token, or neither.
extension LibraryDatabase {
    /// The mirror, or nil when there is none to go on from (never built, reset, or a new
    /// account): then the sync lists Drive in full.
    package func driveMirror() async throws -> DriveMirror? {
        try await read { db in
            guard let token = try String.fetchOne(db, sql: "SELECT token FROM drive_mirror_token WHERE id = 1") else {
                return nil
            }
            let rows = try MirrorRow.fetchAll(db, sql: "SELECT * FROM drive_mirror ORDER BY file_id")
            return DriveMirror(files: rows.map(\.mirrored), token: token)
        }
    }

    /// The change token the mirror is current up to; nil when there is no mirror.
    package func driveMirrorToken() async throws -> String? {
        try await read { db in try String.fetchOne(db, sql: "SELECT token FROM drive_mirror_token WHERE id = 1") }
    }

    /// Replaces the mirror with a full listing, the change token taken before that listing
    /// and the folders it covers, in one transaction.
    package func replaceDriveMirror(
        _ files: [MirroredFile], token: String, folders: DriveFolders, listedAt: Milliseconds? = nil
    ) async throws {
        try await write(.storeMirrorReplace) { db in
            try db.execute(sql: "DELETE FROM drive_mirror")
            for file in files { try Self.upsert(file, db) }
            try Self.saveToken(token, db)
            // Without a time (tests building a mirror by hand) the mirror never ages.
            try db.execute(
                sql: "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                    + "excluded.value",
                arguments: [InternalSetting.mirrorListedAt.rawValue, listedAt.map(String.init)])
            for (key, ids) in [
                (InternalSetting.ivyFolderID, folders.ivy), (.booksFolderID, folders.books),
                (.clipsFolderID, folders.clips),
            ] {
                try db.execute(
                    sql: "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                        + "excluded.value",
                    arguments: [key.rawValue, Self.folderSetting(ids)])
            }
        }
    }

    /// Applies one page of the change feed read from `token`, and saves the token it goes on
    /// from, in one transaction. Applied twice it changes nothing more. Returns false, and
    /// writes nothing, when the mirror is no longer at `token` (reset, or rebuilt meanwhile):
    /// a page read from an older token must not bring a forgotten mirror back. A page in which
    /// a file the mirror never held came and went forgets since when each synced entity has
    /// been missing on Drive (but for a replace of this device's own cut short): that file may
    /// have been a newer copy of it, so its absence was broken, and a copy here kept since may
    /// be older than the one Drive last held.
    @discardableResult
    package func applyDriveMirrorPage(_ update: MirrorUpdate, from token: String) async throws -> Bool {
        try await write(.storeMirrorPage) { db in
            let saved = try String.fetchOne(db, sql: "SELECT token FROM drive_mirror_token WHERE id = 1")
            guard saved == token else { return false }
            for id in update.removals {
                try db.execute(sql: "DELETE FROM drive_mirror WHERE file_id = ?", arguments: [id])
            }
            for file in update.upserts { try Self.upsert(file, db) }
            if update.unseenFileGone {
                // Saved with the page that showed it, so a run killed before it records what
                // is missing cannot lose it: the absence clocks start again at the next sync.
                // An absence of this device's own making (since the epoch: a replace of its own
                // cut short) is no other device's replace and keeps its mark.
                try db.execute(
                    sql: "UPDATE sync_manifest SET missing_since = NULL WHERE missing_since IS NOT NULL "
                        + "AND missing_since != 0")
            }
            try Self.saveToken(update.token, db)
            return true
        }
    }

    /// When the full listing the mirror was last rebuilt from was taken; nil without a mirror.
    package func driveMirrorListedAt() async throws -> Milliseconds? {
        guard try await driveMirrorToken() != nil else { return nil }
        return try await internalSetting(.mirrorListedAt).flatMap { Milliseconds($0) }
    }

    /// Forgets the mirror and its token: the next sync lists Drive in full.
    package func clearDriveMirror() async throws {
        try await write(.storeMirrorClear) { db in try Self.clearMirror(db) }
    }

    static func clearMirror(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM drive_mirror_token")
        try db.execute(sql: "DELETE FROM drive_mirror")
    }

    private static func saveToken(_ token: String, _ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO drive_mirror_token (id, token) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET token = "
                + "excluded.token",
            arguments: [token])
    }

    /// Replaced whole: the row is only what Drive listed. GRDB keeps the statement prepared,
    /// as a full listing writes one row per file, ten thousand and more.
    private static func upsert(_ mirrored: MirroredFile, _ db: Database) throws {
        try MirrorRow(mirrored).insert(db, onConflict: .replace)
    }
}
