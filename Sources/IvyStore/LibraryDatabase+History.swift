import Foundation
import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
    /// Keeps the clips' MP3s in the history before they are replaced or deleted; returns
    /// the md5 of each that had one, to stamp inside the transaction (`HistoryAudio.stamp`).
    ///
    /// With the history off nothing is kept, but the md5 of each clip whose versions still
    /// say "the audio now" is returned all the same, so that they are named their own audio
    /// (gone) rather than whatever a later version has (`HistoryAudio.namesAudioNow`).
    func keepAudioInHistory(clipIDs: [ClipID]) async throws -> [ClipID: String] {
        let enabled = try await read { db in try HistoryAudio.enabled(db) }
        var kept: [ClipID: String] = [:]
        for clipID in clipIDs {
            let path = audioPath(clipID: clipID)
            if enabled {
                kept[clipID] = try HistoryAudio.keep(path, in: paths.historyDirectory)
            } else if try await read({ db in try HistoryAudio.namesAudioNow(clipID: clipID, in: db) }),
                hasAudio(clipID: clipID)
            {
                kept[clipID] = try LocalFile.md5(of: URL(fileURLWithPath: path))
            }
        }
        return kept
    }

    /// Where the history keeps the MP3 of that md5.
    package func historyAudioPath(md5: String) -> String {
        paths.historyDirectory + "/" + md5 + ".mp3"
    }

    /// Versions, newest (last written) first: of one entity (`key`), or of the whole library;
    /// only those written between the points of `since` and `until` in the order of changes,
    /// when given. Each says what it changed from the version before it, whenever that was
    /// recorded.
    package func history(
        of key: EntityKey? = nil, since: Milliseconds? = nil, until: Milliseconds? = nil
    ) async throws -> [HistoryVersion] {
        try await read { db in
            guard try db.tableExists("history") else { return [] }
            var conditions: [String] = []
            var arguments: StatementArguments = []
            if let key {
                conditions.append("h.entity_type = ? AND h.entity_id = ?")
                _ = arguments.append(contentsOf: [key.kind.rawValue, key.id])
            }
            // Each moment is a point in the order of changes (`HistoryPoint`): from the first
            // version written after the last one recorded before `since`, up to the last one
            // recorded at or before `until`, whatever a wrong clock wrote on those between.
            if let since {
                conditions.append("h.id > ?")
                _ = arguments.append(contentsOf: [try HistoryPoint.at(since - 1, in: db) ?? 0])
            }
            if let until {
                conditions.append("h.id <= ?")
                _ = arguments.append(contentsOf: [try HistoryPoint.at(until, in: db) ?? 0])
            }
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            return try HistoryRow.fetchAll(
                db,
                sql: """
                    SELECT h.*, p.json AS previous_json, p.audio_md5 AS previous_md5, p.id AS previous_id
                    FROM history h
                    LEFT JOIN history p ON p.id = (
                        SELECT max(id) FROM history q
                        WHERE q.entity_type = h.entity_type AND q.entity_id = h.entity_id AND q.id < h.id)
                    \(filter)
                    ORDER BY h.id DESC
                    """,
                arguments: arguments
            ).map(\.versionWithChanges)
        }
    }

    /// The latest time any kept version is dated (the newest by the order of changes may be
    /// dated earlier, when a clock ran ahead before it); nil with no history.
    package func latestVersionTime() async throws -> Milliseconds? {
        try await read { db in
            guard try db.tableExists("history") else { return nil }
            return try Milliseconds.fetchOne(db, sql: "SELECT max(recorded_at) FROM history")
        }
    }

    /// How many versions the history keeps, since when, and the bytes they and their MP3s
    /// take. A library an older ivy wrote last has none.
    package func historySummary() async throws -> HistorySummary {
        let (count, since, bytes) = try await read { db -> (Int, Milliseconds?, Int64) in
            guard try db.tableExists("history") else { return (0, nil, 0) }
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*) AS n, min(recorded_at) AS since,
                        coalesce(sum(length(json) + length(entity_id) + 40), 0) AS bytes
                    FROM history
                    """)
            return (row?["n"] ?? 0, row?["since"], row?["bytes"] ?? 0)
        }
        var total = bytes
        let directory = paths.historyDirectory
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            var info = stat()
            if lstat(directory + "/" + file, &info) == 0 { total += Int64(info.st_size) }
        }
        return HistorySummary(versions: count, since: since, bytes: total)
    }
}
