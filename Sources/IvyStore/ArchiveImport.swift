import Foundation
import GRDB
package import IvyCore

extension LibraryDatabase {
    /// Where an import copies MP3s out of the archive: beside the audio (made private if need
    /// be), so each is renamed into place with the transaction, never copied again.
    package func importStagingDirectory() throws -> String {
        try Directories.ensurePrivate(paths.audioDirectory)
        return paths.audioDirectory
    }

    /// Whether the library has no book and no clip: only such a library takes an import.
    package func isEmptyLibrary() async throws -> Bool {
        try await read { db in try !db.tableExists("books") || Self.isEmpty(db) }
    }

    private static func isEmpty(_ db: Database) throws -> Bool {
        try Book.fetchCount(db) == 0 && Clip.fetchCount(db) == 0
    }

    /// Writes a checked archive's books and clips, and puts its MP3s (staged beside the audio,
    /// `importStagingDirectory`) in place, in one transaction: a kill leaves the library as
    /// empty as it was, or holding all of it. Each is a change made here (queued, a version from
    /// `here`), so the next sync sends it to Drive, or finds Drive holds it already.
    /// `beforeCommit` runs inside the transaction, last.
    package func importArchive(
        books: [BookBackup], clips: [ClipBackup], audio: [ClipID: String],
        beforeCommit: @Sendable () throws -> Void = {}
    ) async throws {
        try await writeReplacingAudios(audio.map { ($0.key, $0.value) }, beforeCommit: beforeCommit) { db in
            guard try Self.isEmpty(db) else { throw StoreError.notEmpty }
            let writer = EngineWriter(db: db, trashDirectory: "", historyDirectory: "")
            for backup in books {
                try backup.book(uri: nil).insert(db)
                if !backup.extras.isEmpty { try writer.saveExtras(EntityKey(backup.id), backup.extras) }
            }
            for backup in clips {
                try backup.clip.insert(db)
                if !backup.extras.isEmpty { try writer.saveExtras(EntityKey(backup.id), backup.extras) }
            }
        }
    }
}
