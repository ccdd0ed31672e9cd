package import Foundation
import GRDB
package import IvyCore
import IvySystem

/// Why a sync put an entity in the local trash.
package enum TrashReason: String, Sendable, CaseIterable {
    /// Another device deleted the clip, so the sync deleted it here.
    case deleted
    /// Drive's copy replaced the local one (fields, MP3 or both).
    case download
    /// A merge with Drive's copy replaced some of the local fields (or the MP3).
    case merge
    /// `ivy trash restore` put an older entry back over it.
    case restore

    /// As `ivy trash list` says it.
    package var description: String {
        switch self {
        case .deleted: "deleted by sync"
        case .download: "replaced by download"
        case .merge: "replaced by merge"
        case .restore: "replaced by trash restore"
        }
    }
}

/// A book or clip as its backup JSON has it (unknown keys included): what the trash keeps.
package enum TrashedEntity: Sendable, Equatable {
    case book(BookBackup)
    case clip(ClipBackup)

    package var key: EntityKey {
        switch self {
        case .book(let book): EntityKey(book.id)
        case .clip(let clip): EntityKey(clip.id)
        }
    }

    /// Whether `other` holds the same content, whenever each was written: a download that only
    /// moves `updated_at`, or a book's listening position, loses nothing worth keeping.
    package func sameContent(as other: TrashedEntity) -> Bool {
        // A listening position moves while a phone plays: a watch would keep an entry every
        // few seconds of it, thousands a day, for a value the next minute replaces anyway.
        func unplayed(_ book: BookBackup) -> BookBackup {
            var copy = book.unstamped
            copy.position = 0
            return copy
        }
        switch (self, other) {
        case (.book(let a), .book(let b)): return unplayed(a) == unplayed(b)
        case (.clip(let a), .clip(let b)): return a.sameContent(as: b)
        default: return false
        }
    }

    /// The JSON ivy would upload for it. An entity that cannot be written exactly (another
    /// program stored an infinite time, or a note over the JSON cap) is kept all the same,
    /// such a number as text: a sync that would repair it from Drive must not be held up, and
    /// what it replaces is still readable in `ivy trash list --json`, if not restorable.
    func encoded() -> Data {
        switch self {
        case .book(let book):
            if let data = try? BackupCodec.encode(book) { return data }
            return Self.lenient(
                book.extras.merging(
                    [
                        "id": .string(book.id.rawValue), "title": .string(book.title),
                        "artist": book.artist.map(JSONValue.string) ?? .null,
                        "artwork": book.artwork.map(JSONValue.string) ?? .null, "position": Self.number(book.position),
                        "hidden": .bool(book.hidden), "created_at": .number(Double(book.createdAt)),
                        "updated_at": .number(Double(book.updatedAt)),
                    ], uniquingKeysWith: { $1 }))
        case .clip(let clip):
            if let data = try? BackupCodec.encode(clip) { return data }
            return Self.lenient(
                clip.extras.merging(
                    [
                        "id": .string(clip.id.rawValue), "book_id": .string(clip.bookID.rawValue),
                        "start": Self.number(clip.start),
                        "duration": Self.number(clip.duration), "note": clip.note.map(JSONValue.string) ?? .null,
                        "transcription": clip.transcription.map(JSONValue.string) ?? .null,
                        "created_at": .number(Double(clip.createdAt)), "updated_at": .number(Double(clip.updatedAt)),
                    ], uniquingKeysWith: { $1 }))
        }
    }

    private static func number(_ value: Double) -> JSONValue {
        value.isFinite ? .number(value) : .string(String(value))
    }

    private static func lenient(_ object: [String: JSONValue]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(JSONValue.object(object))) ?? Data("{}".utf8)
    }

    static func decode(_ json: Data, key: EntityKey) throws -> TrashedEntity {
        switch key {
        case .book(let id): .book(try BackupCodec.decodeBook(json, expectedID: id))
        case .clip(let id): .clip(try BackupCodec.decodeClip(json, expectedID: id))
        }
    }
}

/// One entry of the local trash.
package struct TrashEntry: Sendable, Equatable {
    package let id: Int64
    package let key: EntityKey
    package let reason: TrashReason
    package let trashedAt: Milliseconds
    /// The entity's backup JSON as it was here.
    package let json: Data
    /// The MP3 kept beside it in the trash directory, by file name.
    package let audioFile: String?
    /// The newest history version when it was kept (the change that replaced it included):
    /// a version of the entity after it is a change here since. Nil for an entry an older
    /// ivy kept.
    package let historyMark: Int64?

    /// The entity, decoded; nil when the JSON no longer reads (another program wrote it).
    package var entity: TrashedEntity? { try? TrashedEntity.decode(json, key: key) }
}

/// The trash's MP3 files: each a file of its own in the private trash directory, flushed to
/// disk (directory entry included) before the transaction that records it commits.
enum TrashFiles {
    /// Keeps the regular file at `source` as `destination`: a hard link when the file system
    /// allows one (instant, and the audio's later replacement by rename or removal leaves it
    /// alone), else a copy. The copy is written to a hidden temporary name (`.keeping-*`),
    /// flushed, and only then renamed to `destination`: a kill mid-copy leaves a leftover the
    /// purge removes, never a short file under a name that vouches for it. Returns false when
    /// there is no regular file to keep. `crash` names the points reached once the copy is
    /// flushed and once the file is in place.
    static func keep(
        _ source: String, as destination: String, in directory: String,
        crash: (copied: CrashPoint, placed: CrashPoint)
    ) throws -> Bool {
        var info = stat()
        guard lstat(source, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        try Directories.ensurePrivate(directory)
        if link(source, destination) == 0 {
            // The audio file and the trash copy are one inode: both become private.
            chmod(destination, 0o600)
        } else {
            let temporary = directory + "/" + keepingPrefix + UUID().uuidString.lowercased() + ".mp3"
            try copy(source, to: temporary)
            CrashPoints.reach(crash.copied)
            guard rename(temporary, destination) == 0 else {
                let code = errno
                unlink(temporary)
                if let storage = StorageError(path: directory, errno: code) { throw storage }
                throw StoreError.audioCopyFailed(path: destination, reason: String(cString: strerror(code)))
            }
        }
        syncDirectory(directory)
        CrashPoints.reach(crash.placed)
        return true
    }

    /// The hidden name a copy has until it is whole and flushed.
    static let keepingPrefix = ".keeping-"

    private static func copy(_ source: String, to destination: String) throws {
        guard let input = FileHandle(forReadingAtPath: source) else {
            throw StoreError.audioUnreadable(path: source, reason: String(cString: strerror(errno)))
        }
        defer { try? input.close() }
        let descriptor: Int32
        do {
            descriptor = try PrivateFile.open(destination, .createNew)
        } catch {
            if let storage = StorageError(path: directory(of: destination), errno: error.code) { throw storage }
            throw StoreError.audioCopyFailed(path: destination, reason: error.reason)
        }
        // A short write is no failure: the rest is written, and a full disk then says so by its
        // own errno (not whatever a call before it left behind).
        var failure: (any Error)?
        do {
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                if let code = PrivateFile.writeAll(chunk, to: descriptor) {
                    failure =
                        StorageError(path: directory(of: destination), errno: code)
                        ?? StoreError.audioCopyFailed(path: destination, reason: String(cString: strerror(code)))
                    break
                }
            }
        } catch {
            failure = StoreError.audioCopyFailed(path: destination, reason: error.localizedDescription)
        }
        if failure == nil, fsync(descriptor) != 0 {
            let code = errno
            failure =
                StorageError(path: directory(of: destination), errno: code)
                ?? StoreError.audioCopyFailed(path: destination, reason: String(cString: strerror(code)))
        }
        close(descriptor)
        if let failure {
            unlink(destination)
            throw failure
        }
    }

    private static func directory(of path: String) -> String {
        (path as NSString).deletingLastPathComponent
    }

    /// Flushes the directory's entries, so a file linked into it survives a crash.
    static func syncDirectory(_ directory: String) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    static func remove(_ name: String?, in directory: String) {
        guard let name, !name.contains("/") else { return }
        unlink(directory + "/" + name)
    }
}

extension EngineWriter {
    /// The entity as this transaction sees it, unknown keys included; nil when there is no row.
    package func trashable(_ key: EntityKey) throws -> TrashedEntity? {
        let extras = try LibraryDatabase.readableExtras(key, in: db)
        switch key {
        case .book(let id): return try book(id: id).map { .book(BookBackup($0, extras: extras)) }
        case .clip(let id): return try clip(id: id).map { .clip(ClipBackup($0, extras: extras)) }
        }
    }

    /// Keeps `entity` (and the MP3 at `audio`, when given and on disk) in the local trash, in
    /// this transaction: the entry commits together with the change that removes or replaces
    /// what it keeps, or not at all. The MP3 is in the trash directory, flushed, before
    /// anything is committed. Returns the MP3's path in the trash, which the caller removes
    /// when the transaction does not commit (a leftover of a killed run is swept by
    /// `purgeTrash`).
    package func keepInTrash(
        _ entity: TrashedEntity, reason: TrashReason, audio: String?, at now: Milliseconds
    ) throws -> String? {
        let json = entity.encoded()
        var audioFile: String?
        if let audio {
            let name = UUID().uuidString.lowercased() + ".mp3"
            if try TrashFiles.keep(
                audio, as: trashDirectory + "/" + name, in: trashDirectory,
                crash: (copied: .trashKeepAfterCopy, placed: .trashKeepAfterPlace))
            {
                audioFile = name
            }
        }
        // Kept after the change that replaces it was written, so the mark is that change's
        // version (or later).
        try db.execute(
            sql: """
                INSERT INTO trash (entity_type, entity_id, reason, trashed_at, json, audio_file, history_mark)
                VALUES (?, ?, ?, ?, ?, ?, (SELECT coalesce(max(id), 0) FROM history))
                """,
            arguments: [
                entity.key.kind.rawValue, entity.key.id, reason.rawValue, now, String(decoding: json, as: UTF8.self),
                audioFile,
            ])
        return audioFile.map { trashDirectory + "/" + $0 }
    }
}

/// Why a trash entry cannot be restored.
package enum TrashError: LocalizedError, Equatable {
    case notFound(id: Int64)
    case unreadable(id: Int64)
    case bookMissing(id: Int64, clipID: ClipID, bookID: BookID)
    case audioMissing(id: Int64, clipID: ClipID)
    /// The entity here changed after the entry was trashed (edited, or made again by another
    /// device), by this library's own order of changes: restoring would replace a newer version.
    case newerHere(id: Int64, key: EntityKey, trashedAt: Milliseconds)

    package var errorDescription: String? {
        switch self {
        case .notFound(let id):
            "no trash entry \(id); `ivy trash list` shows the entries kept"
        case .unreadable(let id):
            "trash entry \(id) no longer reads as a book or clip, so it cannot be restored; `ivy trash empty` "
                + "removes it"
        case .bookMissing(let id, let clipID, let bookID):
            "trash entry \(id) is clip \(clipID) of book \(bookID), which is not in this library; run `ivy sync` "
                + "to fetch the book (or restore it from the trash first), then restore the clip again"
        case .audioMissing(let id, let clipID):
            "trash entry \(id) kept no MP3 and clip \(clipID) has no audio here, so it cannot be restored"
        case .newerHere(let id, let key, _):
            "\(key) here changed after trash entry \(id) was kept, so restoring it would replace a newer version; "
                + "pass --yes to restore it anyway (the version it replaces is kept in the trash)"
        }
    }
}

extension LibraryDatabase {
    /// The trash's entries, oldest first. A library an older ivy wrote last, opened read-only
    /// (so not migrated), has no trash yet.
    package func trashEntries() async throws -> [TrashEntry] {
        try await read { db in
            guard try db.tableExists("trash") else { return [] }
            return try TrashRow.fetchAll(db, sql: "SELECT * FROM trash ORDER BY id").map(\.entry)
        }
    }

    /// Where the trash keeps an entry's MP3.
    package func trashAudioPath(_ entry: TrashEntry) -> String? {
        entry.audioFile.map { paths.trashDirectory + "/" + $0 }
    }

    /// Puts an entry back as it was, as a local edit made now: its `updated_at` is later than
    /// anything the library holds for it, the triggers queue it, and the next sync sends it
    /// to Drive (and so to every device) and wins against the copy that replaced it. A clip
    /// gets its MP3 back (the entry's, else the one still here). The entry leaves the trash.
    /// What it replaces is kept in the trash (reason `restore`). An entity that changed here
    /// after the entry was kept (edited since, or made again by another device) is replaced
    /// only with `replacingNewer`; otherwise `TrashError.newerHere`.
    @discardableResult
    package func restoreFromTrash(id: Int64, replacingNewer: Bool = false) async throws -> TrashEntry {
        guard let entry = try await read({ db in try Self.trashEntry(id: id, in: db) }) else {
            throw TrashError.notFound(id: id)
        }
        guard let entity = entry.entity else { throw TrashError.unreadable(id: id) }
        var staged: String?
        if let audio = trashAudioPath(entry), FileManager.default.fileExists(atPath: audio) {
            staged = try AudioFiles.stage(audio, in: paths.audioDirectory)
        }
        defer { if let staged { AudioFiles.remove(staged) } }
        let now = clock.now()
        // Set inside the transaction, read if it fails to commit.
        let kept = SharedValue<String?>(nil)
        let restore = { @Sendable [self, staged] (db: Database) throws in
            guard try Self.trashEntry(id: id, in: db) != nil else { throw TrashError.notFound(id: id) }
            let writer = EngineWriter(
                db: db, trashDirectory: paths.trashDirectory, historyDirectory: paths.historyDirectory)
            // The restored version is recorded in the history as a restore.
            try db.execute(sql: "INSERT OR IGNORE INTO history_restoring (restore) VALUES (1)")
            defer { _ = try? db.execute(sql: "DELETE FROM history_restoring") }
            let current = try writer.trashable(entry.key)
            if current != nil, !replacingNewer, try Self.changedHere(since: entry, in: db) {
                throw TrashError.newerHere(id: id, key: entry.key, trashedAt: entry.trashedAt)
            }
            switch entity {
            case .book(let backup):
                let current = try Self.book(id: backup.id, in: db)
                var book = backup.book(uri: current?.uri)
                book.updatedAt = Timestamp.next(now: now, previous: max(current?.updatedAt ?? 0, backup.updatedAt))
                try writer.saveExtras(entry.key, entity.extras)
                try book.upsert(db)
            case .clip(let backup):
                guard try Self.book(id: backup.bookID, in: db) != nil else {
                    throw TrashError.bookMissing(id: id, clipID: backup.id, bookID: backup.bookID)
                }
                let current = try Self.clip(id: backup.id, in: db)
                guard staged != nil || hasAudio(clipID: backup.id) else {
                    throw TrashError.audioMissing(id: id, clipID: backup.id)
                }
                var clip = backup.clip
                clip.updatedAt = Timestamp.next(now: now, previous: max(current?.updatedAt ?? 0, backup.updatedAt))
                try writer.saveExtras(entry.key, entity.extras)
                try clip.upsert(db)
            }
            // What it replaces is kept after the write, so the entry's mark is past this change.
            if let current, let restored = entry.entity, !current.sameContent(as: restored) || staged != nil {
                let audio = staged == nil ? nil : entry.key.clipID.map { audioPath(clipID: $0) }
                let path = try writer.keepInTrash(current, reason: .restore, audio: audio, at: now)
                kept.set(path)
            }
            try db.execute(sql: "DELETE FROM trash WHERE id = ?", arguments: [id])
        }
        do {
            if let staged, let clipID = entry.key.clipID {
                try await writeReplacingAudio(.storeRestoreTrash, clipID: clipID, staged: staged, restore)
            } else {
                try await write(.storeRestoreTrash, restore)
            }
        } catch {
            // Not committed: the MP3 kept for an entry that does not exist goes.
            if let path = kept.current { unlink(path) }
            throw error
        }
        TrashFiles.remove(entry.audioFile, in: paths.trashDirectory)
        return entry
    }

    /// Removes every entry and every MP3 in the trash directory; returns how many entries
    /// there were. An MP3 no entry names goes too: one an emptying killed after its commit
    /// left, or a sync killed before its entry committed. Asked to empty the trash, ivy frees
    /// its space; only under the sync lock, so no sync is keeping one meanwhile.
    @discardableResult
    package func emptyTrash() async throws -> Int {
        let removed = try await write(.storeEmptyTrash) { db in
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM trash") ?? 0
            try db.execute(sql: "DELETE FROM trash")
            return count
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: paths.trashDirectory)) ?? []
        for file in files { TrashFiles.remove(file, in: paths.trashDirectory) }
        return removed
    }

    /// Removes the entries kept longer than `days` (all of them at 0) with their MP3s, and
    /// any MP3 in the trash directory no entry names once it is as old (a day at least): the
    /// leftover of a sync killed between keeping it and committing, which may be the only
    /// copy of the audio it replaced. Only under the sync lock, which every writer of the
    /// trash holds (syncs, `ivy trash restore` and `empty`). Returns how many entries went.
    @discardableResult
    package func purgeTrash(keepingDays days: Int) async throws -> Int {
        let limit = days == 0 ? Int64.max : clock.now() - Milliseconds(max(days, 0)) * 86_400_000
        // Most syncs (every poll of a watch) find nothing to purge: one read, and no write.
        let due = try await read { db in
            guard try db.tableExists("trash") else { return false }
            let sql = "SELECT EXISTS (SELECT 1 FROM trash WHERE trashed_at <= ?)"
            return try Bool.fetchOne(db, sql: sql, arguments: [limit]) ?? false
        }
        var removed: [TrashEntry] = []
        if due {
            removed = try await write(.storePurgeTrash) { db in
                let sql = "SELECT * FROM trash WHERE trashed_at <= ?"
                let old = try TrashRow.fetchAll(db, sql: sql, arguments: [limit]).map(\.entry)
                try db.execute(sql: "DELETE FROM trash WHERE trashed_at <= ?", arguments: [limit])
                return old
            }
        }
        for entry in removed { TrashFiles.remove(entry.audioFile, in: paths.trashDirectory) }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: paths.trashDirectory)) ?? []
        guard !files.isEmpty else { return removed.count }
        let named = try await read { db in
            guard try db.tableExists("trash") else { return Set<String>() }
            return Set(try String.fetchAll(db, sql: "SELECT audio_file FROM trash WHERE audio_file IS NOT NULL"))
        }
        let strayLimit = clock.now() - Milliseconds(max(days, 1)) * 86_400_000
        for file in files where !named.contains(file) {
            var info = stat()
            let path = (paths.trashDirectory as NSString).appendingPathComponent(file)
            // The time it was linked or copied here: the inode's change time. A copy a killed run
            // left half-written under its temporary name is no one's only copy: gone after an hour.
            let limit = file.hasPrefix(TrashFiles.keepingPrefix) ? clock.now() - 3_600_000 : strayLimit
            guard lstat(path, &info) == 0, Milliseconds(info.st_ctim.tv_sec) * 1000 <= limit else { continue }
            TrashFiles.remove(file, in: paths.trashDirectory)
        }
        return removed.count
    }

    /// Whether the entity changed here after the entry was kept: a version of it recorded
    /// after the entry's mark, by this library's own order of changes. Without a mark (an
    /// entry an older ivy kept) or with the history off, the times are all there is: the
    /// entity's `updated_at` against when the entry was kept.
    static func changedHere(since entry: TrashEntry, in db: Database) throws -> Bool {
        if let mark = entry.historyMark, try HistoryAudio.enabled(db) {
            return try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM history WHERE entity_type = ? AND entity_id = ? AND id > ?)
                    """,
                arguments: [entry.key.kind.rawValue, entry.key.id, mark]) ?? false
        }
        let updatedAt: Milliseconds? =
            switch try EngineWriter(db: db, trashDirectory: "", historyDirectory: "").trashable(entry.key) {
            case .book(let book)?: book.updatedAt
            case .clip(let clip)?: clip.updatedAt
            case nil: nil
            }
        return (updatedAt ?? 0) > entry.trashedAt
    }

    static func trashEntry(id: Int64, in db: Database) throws -> TrashEntry? {
        try TrashRow.fetchOne(db, sql: "SELECT * FROM trash WHERE id = ?", arguments: [id]).map(\.entry)
    }

    /// The unknown keys kept for an entity, read in `db`. Unreadable ones are left out: the
    /// trash keeps what can be read rather than hold up the sync (a push of that entity is
    /// refused on their account anyway, see `extras(_:)`).
    static func readableExtras(_ key: EntityKey, in db: Database) throws -> [String: JSONValue] {
        let text = try String.fetchOne(
            db.cachedStatement(sql: "SELECT json FROM backup_extras WHERE entity_type = ? AND entity_id = ?"),
            arguments: [key.kind.rawValue, key.id])
        guard let text else { return [:] }
        return (try? JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8))) ?? [:]
    }
}

extension TrashedEntity {
    var extras: [String: JSONValue] {
        switch self {
        case .book(let book): book.extras
        case .clip(let clip): clip.extras
        }
    }
}
