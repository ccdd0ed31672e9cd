import GRDB
import IvyCore

/// The local part of `ivy status`.
package struct LocalStatus: Sendable, Equatable {
    package var pending: Int
    package var failed: Int
    package var manifestEntries: Int
    package var lastSyncTime: Milliseconds?
    package var lastError: String?
}

extension LibraryDatabase {
    package func queueItems() throws -> [QueueItem] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM sync_queue ORDER BY queued_at, entity_type, entity_id").map { row in
                let kind: String = try row.decode(forColumn: "entity_type")
                let operation: String = try row.decode(forColumn: "operation")
                return QueueItem(
                    kind: EntityKind(rawValue: kind) ?? .book,
                    entityID: try row.decode(forColumn: "entity_id"),
                    operation: QueueItem.Operation(rawValue: operation) ?? .upsert,
                    attempts: try row.decode(forColumn: "attempts"),
                    lastError: try row.decode(forColumn: "last_error"),
                    queuedAt: try row.decode(forColumn: "queued_at"))
            }
        }
    }

    package func localStatus() throws -> LocalStatus {
        try read { db in
            let limit = QueueItem.maximumAttempts
            let pending = try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_queue WHERE attempts < ?", arguments: [limit]) ?? 0
            let failed = try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_queue WHERE attempts >= ?", arguments: [limit]) ?? 0
            let manifest = try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_manifest") ?? 0
            let values = try Row.fetchAll(
                db, sql: "SELECT key, value FROM settings WHERE key IN (?, ?)",
                arguments: [SettingKey.lastSyncTime.rawValue, SettingKey.lastError.rawValue]
            ).reduce(into: [String: String]()) { values, row in values[row["key"]] = row["value"] }
            return LocalStatus(
                pending: pending, failed: failed, manifestEntries: manifest,
                lastSyncTime: values[SettingKey.lastSyncTime.rawValue].flatMap { Milliseconds($0) },
                lastError: values[SettingKey.lastError.rawValue])
        }
    }
}
