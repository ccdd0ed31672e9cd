import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
    /// The upload session kept for a clip's MP3, if a sync left one.
    package func uploadSession(clipID: ClipID) async throws -> UploadSessionRecord? {
        try await read { db in
            // A library an older ivy wrote last, read without migrating it, has none.
            guard try db.tableExists("upload_sessions") else { return nil }
            // Only an optimisation: a row another program garbled is no session, not a failed upload.
            return
                (try? UploadSessionRow.fetchOne(
                    db, sql: "SELECT * FROM upload_sessions WHERE clip_id = ?", arguments: [clipID.rawValue]
                ))??.record
        }
    }

    /// Keeps a clip's upload session as Drive last confirmed it. A new session also clears
    /// what no upload will resume: rows of clips deleted since, and sessions Drive has ended
    /// (a week old).
    package func saveUploadSession(_ record: UploadSessionRecord) async throws {
        try await write(.storeUploadSession) { db in
            if record.committed == 0 {
                try db.execute(
                    sql: """
                        DELETE FROM upload_sessions
                        WHERE clip_id NOT IN (SELECT id FROM clips) OR started_at < ?
                        """,
                    arguments: [record.startedAt - 7 * 86_400_000])
            }
            try UploadSessionRow(record).insert(db, onConflict: .replace)
        }
    }

    /// Forgets a clip's upload session: its upload completed, failed for good, or starts anew.
    /// Most clip uploads kept none (a JSON-only change): a read then finds so, and no write
    /// transaction is spent on nothing.
    package func forgetUploadSession(clipID: ClipID) async throws {
        guard try await uploadSession(clipID: clipID) != nil else { return }
        try await write(.storeUploadSessionForget) { db in
            try db.execute(sql: "DELETE FROM upload_sessions WHERE clip_id = ?", arguments: [clipID.rawValue])
        }
    }
}

/// A row of `upload_sessions`.
struct UploadSessionRow: SnakeCaseColumns {
    static let databaseTableName = "upload_sessions"

    var clipID: String
    var uri: String
    var fileID: String
    var committed: Int64
    var md5: String
    var size: Int64
    var startedAt: Milliseconds

    init(_ record: UploadSessionRecord) {
        clipID = record.clipID.rawValue
        uri = record.uri
        fileID = record.fileID.rawValue
        committed = record.committed
        md5 = record.md5
        size = record.size
        startedAt = record.startedAt
    }

    var record: UploadSessionRecord {
        UploadSessionRecord(
            clipID: ClipID(clipID), uri: uri, fileID: DriveFileID(fileID), committed: committed, md5: md5,
            size: size, startedAt: startedAt)
    }
}
