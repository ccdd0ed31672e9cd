import Foundation
import GRDB
package import IvyCore
import IvySystem

/// A field a merge settled by a rule, as recorded with the version it wrote: what
/// `ivy history --conflicts` lists. Values are JSON as the backup JSON holds them (a clip's
/// audio as its md5).
package struct ConflictRecord: Sendable, Equatable {
    /// The row id: conflicts are in the order they were written, whatever the clock said.
    package let id: Int64
    package let key: EntityKey
    package let field: String
    package let kept: JSONValue
    /// The value not kept; nil when both were kept (notes joined).
    package let lost: JSONValue?
    /// `here`, `drive` or `both` (`Merge.Conflict.Winner`).
    package let winner: String
    /// `Merge.Conflict.Rule`'s raw value (a newer ivy's rule is shown as it is).
    package let rule: String
    package let recordedAt: Milliseconds
    /// The history version the merge wrote; nil when history was off, or once that version
    /// was pruned.
    package let version: Int64?
    /// For a clip's audio: the newest history version that keeps the take not kept (its MP3
    /// by md5), which `ivy restore --version` puts back; nil for other fields, when history
    /// was off, or once that version was pruned.
    package var lostVersion: Int64? = nil
}

extension EngineWriter {
    /// The newest history version of the entity, to tell which version a write makes.
    package func latestVersion(_ key: EntityKey) throws -> Int64? {
        guard try db.tableExists("history") else { return nil }
        return try Int64.fetchOne(
            db, sql: "SELECT max(id) FROM history WHERE entity_type = ? AND entity_id = ?",
            arguments: [key.kind.rawValue, key.id])
    }

    /// Records what a merge resolved, in the transaction that writes the merge, after the
    /// write: tied to the version the write made (newer than `versionBefore`), if any. Only the
    /// newest `ConflictRecord.maximumKept` rows are kept: older ones go as new ones come.
    package func recordConflicts(
        _ conflicts: [Merge.Conflict], of key: EntityKey, at now: Milliseconds, versionBefore: Int64?
    ) throws {
        guard !conflicts.isEmpty else { return }
        let version = try latestVersion(key).flatMap { $0 == versionBefore ? nil : $0 }
        for conflict in conflicts {
            try db.execute(
                sql: """
                    INSERT INTO merge_conflicts (entity_type, entity_id, field, kept_json, lost_json, winner, rule,
                        recorded_at, history_id, lost_history_id)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    key.kind.rawValue, key.id, conflict.field, try ConflictJSON.text(conflict.kept),
                    try conflict.lost.map(ConflictJSON.text), conflict.winner.rawValue, conflict.rule.rawValue, now,
                    version, try lostTakeVersion(conflict, of: key),
                ])
        }
        try db.execute(
            sql: "DELETE FROM merge_conflicts WHERE id <= (SELECT max(id) FROM merge_conflicts) - ?",
            arguments: [ConflictRecord.maximumKept])
    }
}

extension EngineWriter {
    /// The newest version of the clip that names the audio a conflict did not keep by its md5
    /// (the take kept in the history by this write, or earlier); nil for other fields.
    private func lostTakeVersion(_ conflict: Merge.Conflict, of key: EntityKey) throws -> Int64? {
        guard key.kind == .clip, conflict.field == "audio", case .string(let md5)? = conflict.lost,
            try db.tableExists("history")
        else { return nil }
        return try Int64.fetchOne(
            db,
            sql: """
                SELECT max(id) FROM history
                WHERE entity_type = 'clip' AND entity_id = ? AND audio_md5 = ? AND json IS NOT NULL
                """,
            arguments: [key.id, md5])
    }
}

extension ConflictRecord {
    /// How many conflicts the library keeps: the newest 1,000.
    package static let maximumKept = 1000
}

extension LibraryDatabase {
    /// Conflicts, newest first (by the order they were written): of one entity (`key`), or of
    /// the whole library; only those recorded in `since...until` when given. Every conflict
    /// recorded so far counts as seen afterwards (`unseenConflicts`), in the same transaction.
    package func conflicts(
        of key: EntityKey? = nil, since: Milliseconds? = nil, until: Milliseconds? = nil
    ) async throws -> [ConflictRecord] {
        try await read { db in
            guard try db.tableExists("merge_conflicts") else { return [] }
            var conditions: [String] = []
            var arguments: StatementArguments = []
            if let key {
                conditions.append("entity_type = ? AND entity_id = ?")
                _ = arguments.append(contentsOf: [key.kind.rawValue, key.id])
            }
            if let since {
                conditions.append("recorded_at >= ?")
                _ = arguments.append(contentsOf: [since])
            }
            if let until {
                conditions.append("recorded_at <= ?")
                _ = arguments.append(contentsOf: [until])
            }
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            return try ConflictRow.fetchAll(
                db,
                sql: """
                    SELECT c.*, EXISTS (SELECT 1 FROM history h WHERE h.id = c.history_id) AS version_kept,
                        EXISTS (SELECT 1 FROM history h WHERE h.id = c.lost_history_id) AS lost_version_kept
                    FROM merge_conflicts c \(filter) ORDER BY id DESC
                    """,
                arguments: arguments
            ).map(\.record)
        }
    }

    /// Marks the conflicts shown (`ids`) seen: `ivy status` counts only the others. One
    /// recorded while they were listed stays unseen.
    package func markConflictsSeen(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await write(.storeConflictsSeen) { db in
            guard try db.tableExists("merge_conflicts") else { return }
            try db.execute(
                sql: "UPDATE merge_conflicts SET seen = 1 WHERE seen = 0 AND id IN (SELECT value FROM json_each(?))",
                arguments: [String(decoding: try JSONEncoder().encode(ids), as: UTF8.self)])
        }
    }

    /// How many conflicts were recorded since `ivy history --conflicts` last showed them (all
    /// of them when it never has); 0 for a library an older ivy wrote last.
    package func unseenConflicts() async throws -> Int {
        try await read { db in
            guard try db.tableExists("merge_conflicts") else { return 0 }
            return try Int.fetchOne(db, sql: "SELECT count(*) FROM merge_conflicts WHERE seen = 0") ?? 0
        }
    }
}

/// Conflict values as stored: JSON text, keys sorted.
enum ConflictJSON {
    static func text(_ value: JSONValue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// A stored value; text that does not read as JSON (written by another program) as a string.
    static func value(_ text: String) -> JSONValue {
        (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .string(text)
    }
}
