import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
    /// Clips of one book, or of all books, in book and start order; with `search`, only those
    /// whose note or transcription contains it, in any case (`TextSearch`).
    package func clips(bookID: BookID? = nil, search: String?) async throws -> [Clip] {
        let clips = try await self.clips(bookID: bookID)
        guard let search else { return clips }
        let query = TextSearch(search)
        return clips.filter { query.matches($0.note) || query.matches($0.transcription) }
    }

    /// Clips of one book, or of all books, in book and start order.
    package func clips(bookID: BookID? = nil) async throws -> [Clip] {
        try await read { db in
            if let bookID {
                return try Clip.fetchAll(
                    db, sql: "SELECT * FROM clips WHERE book_id = ? ORDER BY start, created_at, id", arguments: [bookID]
                )
            }
            return try Clip.fetchAll(db, sql: "SELECT * FROM clips ORDER BY book_id, start, created_at, id")
        }
    }

    package func clip(id: ClipID) async throws -> Clip? {
        try await read { db in try Self.clip(id: id, in: db) }
    }

    static func clip(id: ClipID, in db: Database) throws -> Clip? {
        let statement = try db.cachedStatement(sql: "SELECT * FROM clips WHERE id = ?")
        return try Clip.fetchOne(statement, arguments: [id])
    }

    /// Adds a clip of an existing book with its audio. Everything is checked before anything
    /// is written; the audio is in place exactly when the row is committed.
    @discardableResult
    package func addClip(
        id: ClipID, bookID: BookID, start: Double, duration: Double,
        note: String?, transcription: String?, audio source: String
    ) async throws -> Clip {
        try Self.checkTime(start, field: "start")
        try Self.checkTime(duration, field: "duration")
        guard try await book(id: bookID) != nil else { throw StoreError.bookNotFound(id: bookID) }
        try AudioFiles.validate(source)
        let now = clock.now()
        let clip = Clip(
            id: id, bookID: bookID, start: start, duration: duration, note: note,
            transcription: transcription, createdAt: now, updatedAt: now)
        try await read { db in try self.checkBackupSize(clip, in: db) }
        let staged = try AudioFiles.stage(source, in: paths.audioDirectory)
        defer { AudioFiles.remove(staged) }
        try await writeReplacingAudio(.storeClipAdd, clipID: id, staged: staged) { db in
            guard try Self.book(id: bookID, in: db) != nil else { throw StoreError.bookNotFound(id: bookID) }
            try clip.upsert(db)
        }
        return clip
    }

    /// Applies `changes` and, with `audio`, replaces the clip's MP3. Unchanged fields and no
    /// new audio write nothing; new audio always counts as a change.
    @discardableResult
    package func updateClip(id: ClipID, _ changes: ClipChanges, audio source: String? = nil) async throws -> (
        clip: Clip, changed: Bool
    ) {
        if let start = changes.start { try Self.checkTime(start, field: "start") }
        if let duration = changes.duration { try Self.checkTime(duration, field: "duration") }
        guard try await clip(id: id) != nil else { throw StoreError.clipNotFound(id: id) }
        if let source { try AudioFiles.validate(source) }

        @Sendable func apply(_ db: Database) throws -> (clip: Clip, changed: Bool) {
            guard let current = try Self.clip(id: id, in: db) else { throw StoreError.clipNotFound(id: id) }
            var updated = changes.applied(to: current)
            guard updated != current || source != nil else { return (current, false) }
            try Self.checkStoredTime(updated.start, field: "start", kind: .clip, option: "--start")
            try Self.checkStoredTime(updated.duration, field: "duration", kind: .clip, option: "--duration")
            updated.updatedAt = Timestamp.next(now: clock.now(), previous: current.updatedAt)
            try checkBackupSize(updated, in: db)
            try updated.upsert(db)
            return (updated, true)
        }

        guard let source else { return try await write(.storeClipUpdate, apply) }
        let staged = try AudioFiles.stage(source, in: paths.audioDirectory)
        defer { AudioFiles.remove(staged) }
        return try await writeReplacingAudio(.storeClipUpdate, clipID: id, staged: staged, apply)
    }

    /// Refuses a clip whose backup JSON would be over the cap ivy accepts from Drive, so
    /// nothing is written that no sync could upload.
    private func checkBackupSize(_ clip: Clip, in db: Database) throws {
        let backup = ClipBackup(clip, extras: try extras(EntityKey(clip.id), in: db))
        do {
            _ = try BackupCodec.encode(backup)
        } catch {
            throw StoreError.backupUnwritable(error.description)
        }
    }

    /// Deletes a clip and its audio; the trigger queues the remote delete.
    package func deleteClip(id: ClipID) async throws {
        let kept = try await keepAudioInHistory(clipIDs: [id])
        let deleted = try await write(.storeClipDelete) { db in
            for (clipID, md5) in kept { try HistoryAudio.stamp(clipID: clipID, md5: md5, in: db) }
            try db.execute(sql: "DELETE FROM clips WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
        guard deleted else { throw StoreError.clipNotFound(id: id) }
        AudioFiles.remove(audioPath(clipID: id))
    }

}
