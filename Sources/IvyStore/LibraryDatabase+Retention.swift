import Foundation
import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
    /// Prunes the history when it is due: at once when `days` is 0 and anything is kept, else
    /// when the last pruning is `every` old by this clock (or the clock is behind it: it
    /// stepped back). At the end of a sync it is due hourly (a watch syncs every few seconds;
    /// retention's smallest step is an hour); when a command opens the library, daily, so a
    /// device that no longer syncs (signed out for months) prunes too. Never on a clock that
    /// was not checked against Google's since the machine started (DESIGN.md §12: a clock that
    /// ran ahead would age the whole past at once). Returns how many versions went.
    @discardableResult
    package func pruneHistoryIfDue(days: Int, every interval: Milliseconds = 3_600_000) async throws -> Int {
        let reading = clock.reading()
        let now = reading.now
        if days <= 0 {
            let kept = try await read { db in
                try db.tableExists("history")
                    && (try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM history)") ?? false)
            }
            let files = (try? FileManager.default.contentsOfDirectory(atPath: paths.historyDirectory)) ?? []
            guard kept || !files.isEmpty else { return 0 }
            return try await pruneHistory(days: 0)
        }
        guard reading.sure else { return 0 }
        let last = try await internalSetting(.historyPrunedAt).flatMap { Milliseconds($0) } ?? 0
        guard now - last >= interval || now < last else { return 0 }
        let removed = try await pruneHistory(days: days)
        try await setInternalSetting(.historyPrunedAt, String(now))
        return removed
    }

    /// Prunes the history as `History.prunable` says for `days` (`history_days`), and removes
    /// the MP3s no kept version names once they are an hour old (a younger one may belong to a
    /// change not committed yet). Returns how many versions went.
    ///
    /// Ages count back from the newest version that is not in the future (`newest` below), and
    /// a version is never taken for older than the last one not in the future written
    /// before it (a version dated by a clock far behind cannot age its past, nor one far
    /// ahead re-date what follows it). When the version written last is dated after now, this
    /// clock is behind it and nothing is pruned.
    @discardableResult
    package func pruneHistory(days: Int) async throws -> Int {
        let now = clock.now()
        let removed: Int = try await write(.storePrune) { db in
            guard try db.tableExists("history") else { return 0 }
            if days <= 0 {
                try db.execute(sql: "DELETE FROM history")
                return db.changesCount
            }
            let last = try Milliseconds.fetchOne(db, sql: "SELECT recorded_at FROM history ORDER BY id DESC LIMIT 1")
            guard let last, last <= now,
                let newest = try Milliseconds.fetchOne(
                    db, sql: "SELECT max(recorded_at) FROM history WHERE recorded_at <= ?", arguments: [now])
            else { return 0 }
            // Only entities with a version old enough to be pruned are looked at; each version's
            // age is that of the latest time not in the future written up to it.
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT id, entity_type, entity_id, coalesce(dated, :newest) AS recorded_at, deleted FROM (
                        SELECT id, entity_type, entity_id, json IS NULL AS deleted,
                            max(CASE WHEN recorded_at <= :newest THEN recorded_at END)
                                OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS dated
                        FROM history)
                    WHERE (entity_type, entity_id) IN
                        (SELECT entity_type, entity_id FROM history WHERE recorded_at < :old)
                    ORDER BY entity_type, entity_id
                    """,
                arguments: ["newest": newest, "old": newest - 3_600_000])
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
        var removed = false
        for file in files where !named.contains(String(file.prefix { $0 != "." })) {
            var info = stat()
            let path = directory + "/" + file
            guard lstat(path, &info) == 0 else { continue }
            // The time it was linked or copied here: the inode's change time.
            if all || Milliseconds(info.st_ctim.tv_sec) * 1000 <= limit { removed = unlink(path) == 0 || removed }
        }
        if removed { CrashPoints.reach(.pruneAfterUnlink) }
    }
}
