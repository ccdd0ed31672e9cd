import Foundation
import GRDB
package import IvyCore
import IvySystem

/// The local part of `ivy status`.
package struct LocalStatus: Sendable, Equatable {
    package var pending: Int
    package var failed: Int
    package var manifestEntries: Int
    package var lastSyncTime: Milliseconds?
    package var lastError: String?
    /// When the last sync that left everything on Drive finished.
    package var lastSuccess: Milliseconds? = nil
    /// Why the last sync held deletions back (the safety valve); nil when it held none.
    package var deletionsHeld: String? = nil
}

extension LibraryDatabase {
    package func queueItems() async throws -> [QueueItem] {
        try await read { db in
            try QueueRow.fetchAll(db, sql: "SELECT * FROM sync_queue ORDER BY queued_at, entity_type, entity_id")
                .map(\.item)
        }
    }

    package func localStatus() async throws -> LocalStatus {
        try await read { db in
            let limit = QueueItem.maximumAttempts
            let pending =
                try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_queue WHERE attempts < ?", arguments: [limit]) ?? 0
            let failed =
                try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_queue WHERE attempts >= ?", arguments: [limit])
                ?? 0
            let manifest = try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_manifest") ?? 0
            let values = try Row.fetchAll(
                db, sql: "SELECT key, value FROM settings WHERE key IN (?, ?, ?, ?)",
                arguments: [
                    SettingKey.lastSyncTime.rawValue, SettingKey.lastError.rawValue, SettingKey.lastSuccess.rawValue,
                    InternalSetting.deletionsHeld.rawValue,
                ]
            ).reduce(into: [String: String]()) { values, row in values[row["key"]] = row["value"] }
            return LocalStatus(
                pending: pending, failed: failed, manifestEntries: manifest,
                lastSyncTime: values[SettingKey.lastSyncTime.rawValue].flatMap { Milliseconds($0) },
                lastError: values[SettingKey.lastError.rawValue],
                lastSuccess: values[SettingKey.lastSuccess.rawValue].flatMap { Milliseconds($0) },
                deletionsHeld: values[InternalSetting.deletionsHeld.rawValue])
        }
    }
}

extension LibraryDatabase {
    /// This ivy's migrations the library has not had yet (`ivy doctor`; a sync applies them).
    package func pendingMigrations() async throws -> [String] {
        let applied = try await read { db -> Set<String> in
            guard try db.tableExists("grdb_migrations") else { return [] }
            return Set(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
        }
        return Schema.migrator.migrations.filter { !applied.contains($0) }
    }

    /// Changes held back after failing: they reach Drive only after `ivy retry-failed`.
    package func heldItems() async throws -> [QueueItem] {
        try await queueItems().filter(\.hasFailed)
    }

    /// Held changes that `sync --auto` has not told cron about yet. A change made since (a new
    /// queue row) or a retry (attempts reset, which `markHeldReported` forgets the mark of) is
    /// news again; an item told about stays quiet for as long as it stays the same.
    package func unreportedHeldItems() async throws -> [QueueItem] {
        try await read { db in
            try QueueRow.fetchAll(
                db,
                sql: """
                    SELECT * FROM sync_queue q WHERE attempts >= ? AND NOT EXISTS (
                        SELECT 1 FROM sync_reported r WHERE r.entity_type = q.entity_type
                        AND r.entity_id = q.entity_id AND r.queued_at = q.queued_at)
                    ORDER BY queued_at, entity_type, entity_id
                    """, arguments: [QueueItem.maximumAttempts]
            ).map(\.item)
        }
    }

    /// Marks `items` told, once cron was told (marked first, a run killed in between left
    /// cron never hearing of them), and forgets the marks of items no longer held as they
    /// were. Writes nothing when nothing changes, as at almost every `sync --auto`.
    package func markHeldReported(_ items: [QueueItem]) async throws {
        let stale = """
            FROM sync_reported WHERE NOT EXISTS (
                SELECT 1 FROM sync_queue q WHERE q.entity_type = sync_reported.entity_type
                AND q.entity_id = sync_reported.entity_id AND q.queued_at = sync_reported.queued_at
                AND q.attempts >= ?)
            """
        let limit = QueueItem.maximumAttempts
        let changed = try await read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) " + stale, arguments: [limit]) ?? 0
        }
        guard changed > 0 || !items.isEmpty else { return }
        try await write(.storeHeldReported) { db in
            try db.execute(sql: "DELETE " + stale, arguments: [limit])
            for item in items {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO sync_reported (entity_type, entity_id, queued_at) VALUES (?, ?, ?)",
                    arguments: [item.key.kind.rawValue, item.key.id, item.queuedAt])
            }
        }
    }
}

/// How big the library is, for `ivy status`: what is in it and what its audio takes.
package struct LibraryFigures: Sendable, Equatable {
    /// Every book, the archived ones among them.
    package var books = 0
    package var archivedBooks = 0
    package var clips = 0
    /// The MP3s in the audio directory and their bytes.
    package var audioFiles = 0
    package var audioBytes: Int64 = 0
}

extension LibraryDatabase {
    package func figures() async throws -> LibraryFigures {
        var figures = try await read { db -> LibraryFigures in
            var figures = LibraryFigures()
            guard try db.tableExists("books") else { return figures }
            figures.books = try Int.fetchOne(db, sql: "SELECT count(*) FROM books") ?? 0
            figures.archivedBooks = try Int.fetchOne(db, sql: "SELECT count(*) FROM books WHERE hidden") ?? 0
            figures.clips = try Int.fetchOne(db, sql: "SELECT count(*) FROM clips") ?? 0
            return figures
        }
        let directory = paths.audioDirectory
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where file.hasSuffix(".mp3")
        {
            guard !file.hasPrefix(".") else { continue }
            var info = stat()
            if lstat(directory + "/" + file, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                figures.audioFiles += 1
                figures.audioBytes += Int64(info.st_size)
            }
        }
        return figures
    }
}
