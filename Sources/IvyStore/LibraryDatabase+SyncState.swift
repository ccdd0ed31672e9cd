package import Foundation
import GRDB
package import IvyCore
import IvySystem

/// What the sync engine reads and records: the manifest, queue settlement, failures,
/// unknown backup keys and the remembered Drive folders.
extension LibraryDatabase {
    package func manifestEntries() async throws -> [ManifestEntry] {
        try await read { db in
            try ManifestRow.fetchAll(db, sql: "SELECT \(ManifestRow.selection) FROM sync_manifest").compactMap(\.entry)
        }
    }

    /// Records what both sides looked like after an operation finished, with the content
    /// they agreed on (the base of later merges), and settles the entity's queue item
    /// unless a newer change was queued meanwhile.
    package func recordSynced(_ entry: ManifestEntry, base: SyncBase, queuedAt: Milliseconds?) async throws {
        try await write(.storeSynced) { db in try Self.recordSynced(entry, base: base, queuedAt: queuedAt, db) }
    }

    static func recordSynced(_ entry: ManifestEntry, base: SyncBase, queuedAt: Milliseconds?, _ db: Database) throws {
        try db.executeCached(
            """
            INSERT INTO sync_manifest (entity_type, entity_id, local_updated_at, remote_updated_at, remote_file_id,
                remote_mp3_file_id, synced_at, base_json, base_audio_md5)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (entity_type, entity_id) DO UPDATE SET
                local_updated_at = excluded.local_updated_at, remote_updated_at = excluded.remote_updated_at,
                remote_file_id = excluded.remote_file_id, remote_mp3_file_id = excluded.remote_mp3_file_id,
                synced_at = excluded.synced_at, base_json = excluded.base_json,
                base_audio_md5 = excluded.base_audio_md5, missing_since = NULL,
                prior_base_json = CASE WHEN sync_manifest.base_json IS NOT excluded.base_json
                    THEN sync_manifest.base_json ELSE sync_manifest.prior_base_json END
            """,
            [
                entry.key.kind.rawValue, entry.key.id, entry.localUpdatedAt, entry.remoteUpdatedAt, entry.remoteFileID,
                entry.remoteMP3FileID, entry.syncedAt, String(decoding: base.json, as: UTF8.self), base.audioMD5,
            ])
        try settle(entry.key, queuedAt: queuedAt, db)
    }

    /// Records which synced entities a sync found missing on Drive, keeping the time each was
    /// first found so (a time ahead of `now`, from a clock that stepped back, starts again
    /// now), and forgets it for every other entity: `entries` are the manifest as the sync
    /// read it. Writes nothing when nothing changes, as in almost every sync.
    package func recordMissingOnDrive(_ missing: Set<EntityKey>, entries: [ManifestEntry], at now: Milliseconds)
        async throws
    {
        let start = entries.filter { entry in
            missing.contains(entry.key) && (entry.missingSince.map { $0 > now } ?? true)
        }
        let stop = entries.filter { !missing.contains($0.key) && $0.missingSince != nil }
        guard !start.isEmpty || !stop.isEmpty else { return }
        try await write(.storeMissingOnDrive) { db in
            for (entries, value) in [(start, now as Milliseconds?), (stop, nil)] {
                for entry in entries {
                    try db.execute(
                        sql: "UPDATE sync_manifest SET missing_since = ? WHERE entity_type = ? AND entity_id = ?",
                        arguments: [value, entry.key.kind.rawValue, entry.key.id])
                }
            }
        }
    }

    /// An entity whose files this device's own replace is about to delete on Drive: should
    /// the replace stop before its create lands (a failed create, or ivy killed between the
    /// two), no other device's replace is under way to wait for, so it is recorded missing
    /// since the epoch and the next sync restores it at once, past `replace_grace`. The
    /// replace's own `recordSynced` clears it. Waiting instead let a device that missed this
    /// one's edits restore its older copy first, which every device then took for a newer
    /// edit (ivy-soak seeds 133 and 1).
    package func recordReplaceCutShort(_ key: EntityKey) async throws {
        try await write(.storeReplaceCutShort) { db in
            try db.execute(
                sql: "UPDATE sync_manifest SET missing_since = 0 WHERE entity_type = ? AND entity_id = ?",
                arguments: [key.kind.rawValue, key.id])
        }
    }

    /// Takes back `recordReplaceCutShort` when the replace deleted nothing after all (its first
    /// delete failed): the entity's absence clock goes back to what it was. Only a mark still
    /// in place is taken back.
    package func withdrawReplaceMark(_ key: EntityKey, restoring previous: Milliseconds?) async throws {
        try await write(.storeReplaceWithdrawn) { db in
            try db.execute(
                sql: "UPDATE sync_manifest SET missing_since = ? WHERE entity_type = ? AND entity_id = ? "
                    + "AND missing_since = 0",
                arguments: [previous, key.kind.rawValue, key.id])
        }
    }

    /// The content both sides last agreed on, or nil where none was recorded (a library
    /// synced by an older ivy, or never synced).
    package func base(_ key: EntityKey) async throws -> SyncBase? {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT base_json, base_audio_md5 FROM sync_manifest WHERE entity_type = ? AND entity_id = ?",
                    arguments: [key.kind.rawValue, key.id]),
                let json: String = row["base_json"]
            else { return nil }
            return SyncBase(json: Data(json.utf8), audioMD5: row["base_audio_md5"])
        }
    }

    /// The base before the current one (see `Schema.v7`), or nil.
    package func priorBase(_ key: EntityKey) async throws -> Data? {
        try await read { db in
            try String.fetchOne(
                db, sql: "SELECT prior_base_json FROM sync_manifest WHERE entity_type = ? AND entity_id = ?",
                arguments: [key.kind.rawValue, key.id]
            ).map { Data($0.utf8) }
        }
    }

    /// Forgets an entity that is gone on both sides now.
    package func forgetSynced(_ key: EntityKey, queuedAt: Milliseconds?) async throws {
        try await write(.storeForgetSynced) { db in
            try db.execute(
                sql: "DELETE FROM sync_manifest WHERE entity_type = ? AND entity_id = ?",
                arguments: [key.kind.rawValue, key.id])
            try Self.settle(key, queuedAt: queuedAt, db)
        }
    }

    /// Removes manifest rows whose entity is still missing locally (read afresh now).
    package func cleanUpManifest(_ keys: [EntityKey]) async throws {
        try await write(.storeManifestCleanUp) { db in
            for key in keys {
                let table = key.kind == .book ? "books" : "clips"
                let exists =
                    try Bool.fetchOne(
                        db, sql: "SELECT EXISTS (SELECT 1 FROM \(table) WHERE id = ?)", arguments: [key.id]) ?? false
                guard !exists else { continue }
                try db.execute(
                    sql: "DELETE FROM sync_manifest WHERE entity_type = ? AND entity_id = ?",
                    arguments: [key.kind.rawValue, key.id])
            }
        }
    }

    package func dropQueueItem(_ key: EntityKey, queuedAt: Milliseconds?) async throws {
        try await write(.storeQueueDrop) { db in try Self.settle(key, queuedAt: queuedAt, db) }
    }

    /// A queue item is removed only if it is the one the sync read: a change made during
    /// the sync replaced it (newer `queued_at`) and must stay for the next one.
    static func settle(_ key: EntityKey, queuedAt: Milliseconds?, _ db: Database) throws {
        guard let queuedAt else { return }
        try db.executeCached(
            "DELETE FROM sync_queue WHERE entity_type = ? AND entity_id = ? AND queued_at <= ?",
            [key.kind.rawValue, key.id, queuedAt])
    }

    /// Counts a failed operation against the entity's queue item, creating one when there
    /// is none, so every failure is counted. A non-retryable failure fails the item at once.
    package func recordFailure(_ key: EntityKey, operation: QueueItem.Operation, message: String, retryable: Bool)
        async throws
    {
        try await write(.storeFailure) { db in
            let now = clock.now()
            let attempts = retryable ? "attempts + 1" : "max(attempts, \(QueueItem.maximumAttempts))"
            try db.execute(
                sql: """
                    INSERT INTO sync_queue (entity_type, entity_id, operation, attempts, last_error, queued_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (entity_type, entity_id) DO UPDATE
                    SET attempts = \(attempts), last_error = excluded.last_error
                    """,
                arguments: [
                    key.kind.rawValue, key.id, operation.rawValue, retryable ? 1 : QueueItem.maximumAttempts, message,
                    now,
                ])
        }
    }

    /// Failed items become pending again; returns how many.
    package func retryFailed() async throws -> Int {
        try await write(.storeRetryFailed) { db in
            try db.execute(
                sql: "UPDATE sync_queue SET attempts = 0 WHERE attempts >= ?", arguments: [QueueItem.maximumAttempts])
            return db.changesCount
        }
    }

    /// Clips whose book is not in the library (it failed to decode, or comes later).
    package func orphanClipCount() async throws -> Int {
        try await read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM clips WHERE book_id NOT IN (SELECT id FROM books)") ?? 0
        }
    }

    // MARK: unknown backup keys

    /// The keys another app wrote that ivy keeps for this entity. Unreadable ones are an
    /// error, never an empty set: an upload without them would drop them from Drive.
    package func extras(_ key: EntityKey) async throws -> [String: JSONValue] {
        try await read { db in try self.extras(key, in: db) }
    }

    func extras(_ key: EntityKey, in db: Database) throws -> [String: JSONValue] {
        let text = try String.fetchOne(
            db, sql: "SELECT json FROM backup_extras WHERE entity_type = ? AND entity_id = ?",
            arguments: [key.kind.rawValue, key.id])
        guard let text else { return [:] }
        do {
            return try JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8))
        } catch {
            throw StoreError.unreadableExtras(entity: "\(key)", path: paths.database)
        }
    }

    // MARK: remembered folders

    /// Drive folder ids as kept between syncs: each a list, oldest first (twins included).
    /// Nil until a sync has found them (or after the manifest was reset).
    package func rememberedFolders() async throws -> DriveFolders? {
        let values = try await read { db in
            try [InternalSetting.ivyFolderID, .booksFolderID, .clipsFolderID].map { key in
                try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key.rawValue])
            }
        }
        guard let ivy = values[0], let books = values[1], let clips = values[2] else { return nil }
        return DriveFolders(ivy: Self.folderIDs(ivy), books: Self.folderIDs(books), clips: Self.folderIDs(clips))
    }

    package func rememberFolders(_ folders: DriveFolders) async throws {
        try await setInternalSetting(.ivyFolderID, Self.folderSetting(folders.ivy))
        try await setInternalSetting(.booksFolderID, Self.folderSetting(folders.books))
        try await setInternalSetting(.clipsFolderID, Self.folderSetting(folders.clips))
    }

    /// One folder's ids as a setting: a JSON array of strings.
    static func folderSetting(_ ids: [DriveFileID]) -> String {
        (try? JSONEncoder().encode(ids)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    /// A folder setting as written now (a JSON array) or by ivy before it (the ids joined
    /// with commas, which Drive ids never contain); the next sync rewrites the old form.
    static func folderIDs(_ setting: String) -> [DriveFileID] {
        if let ids = try? JSONDecoder().decode([DriveFileID].self, from: Data(setting.utf8)) { return ids }
        return setting.split(separator: ",").map { DriveFileID(String($0)) }
    }
}

extension EngineWriter {
    package func saveExtras(_ key: EntityKey, _ extras: [String: JSONValue]) throws {
        if extras.isEmpty {
            try db.executeCached(
                "DELETE FROM backup_extras WHERE entity_type = ? AND entity_id = ?", [key.kind.rawValue, key.id])
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let text = String(decoding: try encoder.encode(extras), as: UTF8.self)
        try db.execute(
            sql: "INSERT OR REPLACE INTO backup_extras (entity_type, entity_id, json) VALUES (?, ?, ?)",
            arguments: [key.kind.rawValue, key.id, text])
    }

    package func book(id: BookID) throws -> Book? { try LibraryDatabase.book(id: id, in: db) }

    /// Records the manifest and base in the same transaction as the change they describe.
    package func recordSynced(_ entry: ManifestEntry, base: SyncBase, queuedAt: Milliseconds?) throws {
        try LibraryDatabase.recordSynced(entry, base: base, queuedAt: queuedAt, db)
    }
    package func clip(id: ClipID) throws -> Clip? { try LibraryDatabase.clip(id: id, in: db) }
}
