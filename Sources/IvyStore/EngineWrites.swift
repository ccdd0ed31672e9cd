import GRDB
package import IvyCore
import IvySystem

/// Writes made by the sync engine when it applies remote changes. They must not be
/// queued for upload again, so they run with change capture paused.
package struct EngineWriter {
    let db: Database
    /// Where `keepInTrash` puts MP3s.
    let trashDirectory: String
    /// Where the history keeps replaced and deleted MP3s.
    let historyDirectory: String

    /// Inserts or replaces a book exactly as given (timestamps included).
    package func save(_ book: Book) throws {
        try book.upsert(db)
    }

    /// Inserts or replaces a clip exactly as given (timestamps included).
    package func save(_ clip: Clip) throws {
        try clip.upsert(db)
    }

    /// The row's `updated_at` as this transaction sees it; nil when there is no row.
    package func updatedAt(_ key: EntityKey) throws -> Milliseconds? {
        switch key {
        case .book(let id): try book(id: id)?.updatedAt
        case .clip(let id): try clip(id: id)?.updatedAt
        }
    }

    /// Deletes the clip's row; its MP3 (removed by the caller after the commit) is kept in the
    /// history first.
    package func deleteClip(id: ClipID, audioPath: String? = nil) throws {
        if let audioPath { try keepAudioInHistory(clipID: id, audioPath: audioPath) }
        try db.execute(sql: "DELETE FROM clips WHERE id = ?", arguments: [id])
    }

    /// Moves downloaded audio into place inside the transaction that saves its row, after
    /// that row was checked: a recording made here meanwhile is never replaced.
    package func placeAudio(_ staged: String, at destination: String) throws {
        try AudioFiles.place(staged, at: destination, crash: .syncDownloadAfterRename)
    }
}

extension LibraryDatabase {
    /// Runs `body` in one transaction whose writes to books and clips do not enter the queue.
    ///
    /// The marker row is inserted and deleted inside the transaction, so no other
    /// connection ever sees it: a program writing at the same time still has its change
    /// captured. If `body` throws, the whole transaction, marker included, rolls back.
    package func applyingRemoteChanges<T: Sendable>(_ body: @Sendable (EngineWriter) throws -> T) async throws -> T {
        try await write(.storeRemoteChange) { db in
            try db.executeCached("INSERT INTO sync_applying (engine) VALUES (1)")
            let writer = EngineWriter(
                db: db, trashDirectory: paths.trashDirectory, historyDirectory: paths.historyDirectory)
            let result = try body(writer)
            try db.executeCached("DELETE FROM sync_applying")
            return result
        }
    }
}
