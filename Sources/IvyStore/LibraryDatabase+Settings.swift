import Foundation
import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
    /// The stored value of `key`, or its default.
    package func setting(_ key: SettingKey) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key.rawValue])
        } ?? key.defaultValue
    }

    /// The stored value of `key` in the library at `paths`, looked at without opening it as a
    /// command does: for `ivy sync --auto` in a home ivy refuses, which pings `health_url` to
    /// say so. Read-only and immutable (no lock, no `-shm` or `-wal` file, nothing on disk
    /// created or changed); nil when there is no library, it is not SQLite, a write-ahead log
    /// holds changes (only a connection that may write could read them), or it has no value.
    package static func peekSetting(_ key: SettingKey, paths: IvyPaths) async -> String? {
        let path = paths.database
        guard FileManager.default.fileExists(atPath: path), LibraryFiles.hasSQLiteHeader(path),
            !LibraryFiles.hasPendingLog(path)
        else { return nil }
        guard
            let queue = try? DatabaseQueue(
                path: LibraryFiles.immutableURI(path), configuration: configuration(readOnly: true))
        else { return nil }
        defer { try? queue.close() }
        return try? await queue.read { db in
            guard try db.tableExists("settings") else { return nil }
            return try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key.rawValue])
        }
    }

    /// A whole-number setting (`auto_sync_cooldown`, `concurrency`), its default when unset.
    package func number(_ key: SettingKey) async throws -> Int {
        try await setting(key).flatMap { Int($0) } ?? key.defaultValue.flatMap { Int($0) } ?? 0
    }

    /// Every known key with its value (or default) and whether it was set explicitly.
    package func settings() async throws -> [(key: SettingKey, value: String?, isDefault: Bool)] {
        let stored = try await read { db in
            try Row.fetchAll(db, sql: "SELECT key, value FROM settings").reduce(into: [String: String?]()) {
                values, row in
                values[row["key"]] = row["value"] as String?
            }
        }
        return SettingKey.allCases.map { key in
            if let value = stored[key.rawValue] { return (key, value, false) }
            return (key, key.defaultValue, true)
        }
    }

    /// Stores `value` for `key` after checking it; returns the stored (normalized) form.
    @discardableResult
    package func setSetting(_ key: SettingKey, to value: String) async throws -> String {
        let normalized: String
        switch key.normalize(value) {
        case .success(let value): normalized = value
        case .failure(let error): throw StoreError.invalidSetting(message: error.message)
        }
        try await storeSetting(key.rawValue, normalized)
        return normalized
    }

    /// Forgets an explicitly set value, so the default applies again.
    package func unsetSetting(_ key: SettingKey) async throws {
        try await write(.storeSettingUnset) { db in
            try db.execute(sql: "DELETE FROM settings WHERE key = ?", arguments: [key.rawValue])
        }
    }

    /// For ivy's own records (`last_sync_time`, `last_error`, ...), without user validation.
    package func recordSetting(_ key: SettingKey, _ value: String?) async throws {
        try await storeSetting(key.rawValue, value)
    }

    func recordSetting(rawKey: String, _ value: String?) async throws {
        try await storeSetting(rawKey, value)
    }

    private func storeSetting(_ key: String, _ value: String?) async throws {
        try await write(.storeSetting) { db in try Self.store(key, value, db) }
    }

    /// What a sync that ran to its end leaves for `status` and `doctor`, in one transaction, so
    /// a kill between them never pairs one sync's time with another's error or held deletions.
    /// `historyCheckedAt`: when the sync ran its restore drill, or started the count to the
    /// first (nil leaves the record as it is).
    package func recordSyncOutcome(
        at time: Milliseconds, succeeded: Bool, lastError: String?, deletionsHeld: String?,
        historyCheckedAt: Milliseconds? = nil
    ) async throws {
        try await write(.storeSyncOutcome) { db in
            if let historyCheckedAt {
                try Self.store(InternalSetting.historyCheckedAt.rawValue, String(historyCheckedAt), db)
            }
            try Self.store(SettingKey.lastSyncTime.rawValue, String(time), db)
            if succeeded { try Self.store(SettingKey.lastSuccess.rawValue, String(time), db) }
            try Self.store(SettingKey.lastError.rawValue, lastError, db)
            try Self.store(InternalSetting.deletionsHeld.rawValue, deletionsHeld, db)
        }
    }

    private static func store(_ key: String, _ value: String?, _ db: Database) throws {
        if let value {
            try db.execute(
                sql:
                    "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                    + "excluded.value",
                arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM settings WHERE key = ?", arguments: [key])
        }
    }
}
