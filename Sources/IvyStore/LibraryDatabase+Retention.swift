import Foundation
import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
    /// Prunes the history when it is due: at once when `days` is 0 and anything is kept, else
    /// when the last pruning is `every` old by this clock (or the clock is behind it: it
    /// stepped back). At the end of a sync it is due hourly (a watch syncs every few seconds;
    /// retention's smallest step is an hour); when a command opens the library, daily, so a
    /// device that no longer syncs (signed out for months) prunes too. Returns how many
    /// versions went.
    @discardableResult
    package func pruneHistoryIfDue(days: Int, every interval: Milliseconds = 3_600_000) async throws -> Int {
        let now = clock.now()
        if days <= 0 {
            let kept = try await read { db in
                try db.tableExists("history")
                    && (try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM history)") ?? false)
            }
            let files = (try? FileManager.default.contentsOfDirectory(atPath: paths.historyDirectory)) ?? []
            guard kept || !files.isEmpty else { return 0 }
            return try await pruneHistory(days: 0)
        }
        let last = try await internalSetting(.historyPrunedAt).flatMap { Milliseconds($0) } ?? 0
        guard now - last >= interval || now < last else { return 0 }
        let removed = try await pruneHistory(days: days)
        try await setInternalSetting(.historyPrunedAt, String(now))
        return removed
    }

    /// Prunes the history as `History.prunable` says for `days` (`history_days`), ages counted
    /// back from the newest version, and removes the MP3s no kept version names once they are
    /// an hour old (a younger one may belong to a change not committed yet). Returns how many
    /// versions went.
    @discardableResult
    package func pruneHistory(days: Int) async throws -> Int {
        let now = clock.now()
        let removed: Int = try await write { db in
            guard try db.tableExists("history") else { return 0 }
            if days <= 0 {
                try db.execute(sql: "DELETE FROM history")
                return db.changesCount
            }
            let newest = try Milliseconds.fetchOne(db, sql: "SELECT max(recorded_at) FROM history") ?? now
            // Only entities with a version old enough to be pruned are looked at.
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT id, entity_type, entity_id, recorded_at, json IS NULL AS deleted FROM history
                    WHERE (entity_type, entity_id) IN
                        (SELECT entity_type, entity_id FROM history WHERE recorded_at < ?)
                    ORDER BY entity_type, entity_id
                    """,
                arguments: [newest - 3_600_000])
            var prunable: [Int64] = []
            var current: [History.Version] = []
            var currentKey: String?
            func flush() {
                prunable += History.prunable(current, newest: newest, days: days)
                current = []
            }
            for row in rows {
                let key = (row["entity_type"] as String? ?? "") + "/" + (row["entity_id"] as String? ?? "")
                if key != currentKey {
                    flush()
                    currentKey = key
                }
                current.append(
                    History.Version(
                        id: try row.decode(forColumn: "id"), recordedAt: try row.decode(forColumn: "recorded_at"),
                        deleted: try row.decode(forColumn: "deleted")))
            }
            flush()
            let statement = try db.makeStatement(sql: "DELETE FROM history WHERE id = ?")
            for id in prunable { try statement.execute(arguments: [id]) }
            return prunable.count
        }
        try await removeUnnamedHistoryAudio(olderThan: now - 3_600_000, all: days <= 0)
        return removed
    }

    func removeUnnamedHistoryAudio(olderThan limit: Milliseconds, all: Bool) async throws {
        let directory = paths.historyDirectory
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard !files.isEmpty else { return }
        let named = try await read { db in
            Set(try String.fetchAll(db, sql: "SELECT DISTINCT audio_md5 FROM history WHERE audio_md5 IS NOT NULL"))
        }
        for file in files where !named.contains(String(file.prefix { $0 != "." })) {
            var info = stat()
            let path = directory + "/" + file
            guard lstat(path, &info) == 0 else { continue }
            // The time it was linked or copied here: the inode's change time.
            if all || Milliseconds(info.st_ctim.tv_sec) * 1000 <= limit { unlink(path) }
        }
    }
}
