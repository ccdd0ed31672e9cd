import Foundation
import GRDB
package import IvyCore
package import IvySystem

extension LibraryDatabase {
    /// Where an import copies MP3s out of the archive: a held directory of its own beside the
    /// audio (made private if need be), so each is renamed into place with the transaction,
    /// never copied again, and what a killed import copied goes with the next opening of the
    /// library (`ImportStaging`). The caller removes it when done. Blocks: on ivy's threads.
    package func importStaging() throws -> ImportStaging {
        try Directories.ensurePrivate(paths.audioDirectory)
        return try ImportStaging.make(in: paths.audioDirectory)
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
        let replacements = audio.map { (clipID: $0.key, staged: $0.value) }
        let last: @Sendable () throws -> Void = {
            CrashPoints.reach(.importBeforeCommit)
            try beforeCommit()
        }
        try await writeReplacingAudios(.storeImport, replacements, beforeCommit: last) { db in
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
