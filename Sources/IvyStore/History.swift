package import Foundation
import GRDB
package import IvyCore
import IvySystem

/// One version of a book or clip: the state it had after a change, as its backup JSON.
package struct HistoryVersion: Sendable, Equatable {
    package let id: Int64
    package let key: EntityKey
    package let recordedAt: Milliseconds
    package let source: HistorySource
    /// The backup JSON after the change; nil for a delete.
    package let json: Data?
    /// The MP3 the clip had then, kept in the history directory; nil while it is the clip's
    /// audio now (never replaced since).
    package let audioMD5: String?
    /// The fields that differ from the version before it (all of them for a first version).
    package let changed: [String]

    package var deleted: Bool { json == nil }

    /// The JSON as an object (nil for a delete or JSON that no longer reads).
    package var object: [String: JSONValue]? { json.flatMap(History.object) }
}

extension TrashedEntity {
    var updatedAt: Milliseconds {
        switch self {
        case .book(let book): book.updatedAt
        case .clip(let clip): clip.updatedAt
        }
    }
}

extension History {
    static func object(_ json: Data) -> [String: JSONValue]? {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: json) else { return nil }
        return object
    }
}

/// What `ivy status` says of the history.
package struct HistorySummary: Sendable, Equatable {
    package let versions: Int
    package let since: Milliseconds?
    /// The rows' JSON and the kept MP3s.
    package let bytes: Int64
}

/// What a restore changes for one book or clip.
package struct RestoreChange: Sendable, Equatable {
    package enum Action: String, Sendable {
        /// It did not exist: it is made again as it was.
        case create
        /// Its fields (or its MP3) go back to what they were.
        case update
        /// It was made after the moment: deleted (a book hidden and its uri cleared).
        case delete
    }

    package let key: EntityKey
    package let action: Action
    /// The fields that change (`audio` for the MP3).
    package let fields: [String]
    /// A book's title or a clip's note, to recognise it by.
    package let label: String?
    /// Whether the next sync sends it to Drive: false when it goes back to exactly what this
    /// device and Drive last agreed on (then it is unchanged here, and the next sync takes
    /// Drive's copy if Drive changed since).
    package var sends = true
}

/// What a restore did or would do.
package struct RestoreResult: Sendable, Equatable {
    package let at: Milliseconds
    package var changes: [RestoreChange] = []
    /// Books and clips left as they are, with why: those named that need nothing, those this
    /// library knew nothing of at the moment, and those that could not be restored.
    package var skipped: [(key: EntityKey, reason: String)] = []
    /// Why an entity is left as it is when this library has no version of it at the moment
    /// and it was made before then (`WHEN` stands for the moment).
    package static let unknownThen = "unknown here at WHEN: left as is"
    /// The books and clips that should have changed and could not (an MP3 no longer kept, a
    /// version that no longer reads): the restore is incomplete.
    package var failed: [EntityKey] = []

    package static func == (lhs: RestoreResult, rhs: RestoreResult) -> Bool {
        lhs.at == rhs.at && lhs.changes == rhs.changes
            && lhs.skipped.map(\.key) == rhs.skipped.map(\.key)
            && lhs.skipped.map(\.reason) == rhs.skipped.map(\.reason) && lhs.failed == rhs.failed
    }
}

/// Why a restore cannot be done.
package enum HistoryError: LocalizedError, Equatable {
    case bookMissing(clipID: ClipID, bookID: BookID)
    case changedMeanwhile
    case noSuchVersion(Int64)

    package var errorDescription: String? {
        switch self {
        case .bookMissing(let clipID, let bookID):
            "clip \(clipID) belongs to book \(bookID), which is not in this library and is not restored with it; "
                + "restore the book too (name both ids), or the whole library"
        case .changedMeanwhile:
            "the library changed while the restore was prepared; run it again"
        case .noSuchVersion(let id):
            "the history keeps no version \(id) (pruned, or never recorded); `ivy history ID` lists the versions kept"
        }
    }
}

/// The history's MP3s: one file per content, `<md5>.mp3`, in the private history directory.
/// A file is trusted only while its content is what its name says (`trusted`): one cut short
/// or changed in place is never restored.
enum HistoryAudio {
    /// Keeps the MP3 at `path` (when there is one) by its md5: a hard link when the file
    /// system allows (instant; ivy replaces audio by rename, never in place), else a copy
    /// written under a temporary name, flushed and renamed (`TrashFiles.keep`). A file of that
    /// name already kept is kept again unless its content is that md5. Returns the md5, nil
    /// when there is no file.
    static func keep(_ path: String, in directory: String) throws -> String? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let md5 = try LocalFile.md5(of: URL(fileURLWithPath: path))
        let destination = directory + "/" + md5 + ".mp3"
        if lstat(destination, &info) == 0 {
            if trusted(destination, md5: md5) { return md5 }
            unlink(destination)
        }
        _ = try TrashFiles.keep(path, as: destination, in: directory)
        return md5
    }

    /// Whether the kept file at `path` is a regular file whose content has that md5.
    static func trusted(_ path: String, md5: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        return (try? LocalFile.md5(of: URL(fileURLWithPath: path))) == md5
    }

    /// Versions of the clip recorded so far had the audio now at `path`: they name it by
    /// `md5`, since it is about to be replaced or deleted. In the transaction that does so.
    static func stamp(clipID: ClipID, md5: String, in db: Database) throws {
        try db.execute(
            sql: """
                UPDATE history SET audio_md5 = ?
                WHERE entity_type = 'clip' AND entity_id = ? AND audio_md5 IS NULL AND json IS NOT NULL
                """,
            arguments: [md5, clipID])
    }

    /// Whether versions of the clip still say "the audio now" (a NULL `audio_md5`): the audio
    /// about to be replaced must be named in them, history on or off, or a version from
    /// before a gap would take a later version's audio for its own.
    static func namesAudioNow(clipID: ClipID, in db: Database) throws -> Bool {
        guard try db.tableExists("history") else { return false }
        return try Bool.fetchOne(
            db,
            sql: """
                SELECT EXISTS (SELECT 1 FROM history WHERE entity_type = 'clip' AND entity_id = ?
                    AND audio_md5 IS NULL AND json IS NOT NULL)
                """,
            arguments: [clipID]) ?? false
    }

    /// The id of the newest version of each clip (0 for none), before a write that replaces
    /// their audio; `recordAudioChanges` compares after it.
    static func newestVersions(_ clipIDs: [ClipID], in db: Database) throws -> [ClipID: Int64] {
        guard try db.tableExists("history") else { return [:] }
        var newest: [ClipID: Int64] = [:]
        for clipID in clipIDs {
            newest[clipID] =
                try Int64.fetchOne(
                    db.cachedStatement(sql: "SELECT max(id) FROM history WHERE entity_type = 'clip' AND entity_id = ?"),
                    arguments: [clipID]) ?? 0
        }
        return newest
    }

    /// A clip whose MP3 this transaction replaced is a new version even when no field changed
    /// (another program replaced only the MP3 on Drive, or a restore put back only the audio):
    /// unless its write already recorded one since `before` (a version of the audio now,
    /// `audio_md5` NULL), a version is recorded of the row as it is now, naming the audio now,
    /// from whoever writes (`drive` for a download, `restore` for a restore, else `here`). The
    /// older versions were named their audio by `stamp` before it was replaced.
    static func recordAudioChanges(since before: [ClipID: Int64], in db: Database) throws {
        guard try enabled(db) else { return }
        for (clipID, newest) in before.sorted(by: { $0.key < $1.key }) {
            let recorded =
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM history WHERE entity_type = 'clip' AND entity_id = ?
                            AND id > ? AND audio_md5 IS NULL AND json IS NOT NULL)
                        """,
                    arguments: [clipID, newest]) ?? false
            guard !recorded else { continue }
            try db.execute(sql: Schema.clipVersionNow, arguments: [clipID])
        }
    }

    static func enabled(_ db: Database) throws -> Bool {
        guard try db.tableExists("history") else { return false }
        let days = try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM settings WHERE key = 'history_days'"))
        return days != "0"
    }
}

extension EngineWriter {
    /// Keeps the clip's current MP3 in the history before this transaction replaces or
    /// deletes it, and names it in the versions it belongs to. With the history off nothing
    /// is kept, but versions still waiting to be named are named (their audio is then gone).
    package func keepAudioInHistory(clipID: ClipID, audioPath: String) throws {
        let md5: String?
        if try HistoryAudio.enabled(db) {
            md5 = try HistoryAudio.keep(audioPath, in: historyDirectory)
        } else if try HistoryAudio.namesAudioNow(clipID: clipID, in: db),
            FileManager.default.fileExists(atPath: audioPath)
        {
            md5 = try LocalFile.md5(of: URL(fileURLWithPath: audioPath))
        } else {
            md5 = nil
        }
        guard let md5 else { return }
        try HistoryAudio.stamp(clipID: clipID, md5: md5, in: db)
    }

    /// Runs `body`, which gives the clip a new MP3 (other bytes than it had), and records that
    /// as a version when `body` recorded none (`HistoryAudio.recordAudioChanges`).
    package func recordingAudioChange<T>(clipID: ClipID, _ body: () throws -> T) throws -> T {
        let newest = try HistoryAudio.newestVersions([clipID], in: db)
        let result = try body()
        try HistoryAudio.recordAudioChanges(since: newest, in: db)
        return result
    }
}

extension LibraryDatabase {
    /// Keeps the clips' MP3s in the history before they are replaced or deleted; returns
    /// the md5 of each that had one, to stamp inside the transaction (`HistoryAudio.stamp`).
    ///
    /// With the history off nothing is kept, but the md5 of each clip whose versions still
    /// say "the audio now" is returned all the same, so that they are named their own audio
    /// (gone) rather than whatever a later version has (`HistoryAudio.namesAudioNow`).
    func keepAudioInHistory(clipIDs: [ClipID]) throws -> [ClipID: String] {
        let enabled = try read { db in try HistoryAudio.enabled(db) }
        var kept: [ClipID: String] = [:]
        for clipID in clipIDs {
            let path = audioPath(clipID: clipID)
            if enabled {
                kept[clipID] = try HistoryAudio.keep(path, in: paths.historyDirectory)
            } else if try read({ db in try HistoryAudio.namesAudioNow(clipID: clipID, in: db) }),
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

    /// Versions, newest (last written) first: of one entity (`key`), or of the whole library; only those
    /// recorded in `since...until` when given. Each says what it changed from the version
    /// before it, whenever that was recorded.
    package func history(
        of key: EntityKey? = nil, since: Milliseconds? = nil, until: Milliseconds? = nil
    ) throws -> [HistoryVersion] {
        try read { db in
            guard try db.tableExists("history") else { return [] }
            var conditions: [String] = []
            var arguments: StatementArguments = []
            if let key {
                conditions.append("h.entity_type = ? AND h.entity_id = ?")
                _ = arguments.append(contentsOf: [key.kind.rawValue, key.id])
            }
            if let since {
                conditions.append("h.recorded_at >= ?")
                _ = arguments.append(contentsOf: [since])
            }
            if let until {
                conditions.append("h.recorded_at <= ?")
                _ = arguments.append(contentsOf: [until])
            }
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            let rows = try Row.fetchAll(
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
                arguments: arguments)
            return try rows.map { row in
                let json = (row["json"] as String?).map { Data($0.utf8) }
                let previous = (row["previous_json"] as String?).flatMap { History.object(Data($0.utf8)) }
                let hadPrevious = (row["previous_id"] as Int64?) != nil
                let md5: String? = row["audio_md5"]
                let previousMD5: String? = row["previous_md5"]
                let audioChanged = json != nil && hadPrevious && previous != nil && md5 != previousMD5
                return HistoryVersion(
                    id: try row.decode(forColumn: "id"),
                    key: EntityKey(
                        EntityKind(rawValue: try row.decode(forColumn: "entity_type")) ?? .clip,
                        try row.decode(forColumn: "entity_id")),
                    recordedAt: try row.decode(forColumn: "recorded_at"),
                    source: HistorySource(rawValue: try row.decode(forColumn: "source")) ?? .here,
                    json: json, audioMD5: md5,
                    changed: History.changedFields(
                        from: hadPrevious ? previous ?? [:] : nil, to: json.flatMap(History.object),
                        audioChanged: audioChanged))
            }
        }
    }

    /// How many versions the history keeps, since when, and the bytes they and their MP3s
    /// take. A library an older ivy wrote last has none.
    package func historySummary() throws -> HistorySummary {
        let (count, since, bytes) = try read { db -> (Int, Milliseconds?, Int64) in
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

    // MARK: retention

    /// Prunes the history when it is due: at once when `days` is 0 and anything is kept, else
    /// when the last pruning is `every` old by this clock (or the clock is behind it: it
    /// stepped back). At the end of a sync it is due hourly (a watch syncs every few seconds;
    /// retention's smallest step is an hour); when a command opens the library, daily, so a
    /// device that no longer syncs (signed out for months) prunes too. Returns how many
    /// versions went.
    @discardableResult
    package func pruneHistoryIfDue(days: Int, every interval: Milliseconds = 3_600_000) throws -> Int {
        let now = clock.now()
        if days <= 0 {
            let kept = try read { db in
                try db.tableExists("history")
                    && (try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM history)") ?? false)
            }
            let files = (try? FileManager.default.contentsOfDirectory(atPath: paths.historyDirectory)) ?? []
            guard kept || !files.isEmpty else { return 0 }
            return try pruneHistory(days: 0)
        }
        let last = try internalSetting(.historyPrunedAt).flatMap { Milliseconds($0) } ?? 0
        guard now - last >= interval || now < last else { return 0 }
        let removed = try pruneHistory(days: days)
        try setInternalSetting(.historyPrunedAt, String(now))
        return removed
    }

    /// Prunes the history as `History.prunable` says for `days` (`history_days`), ages counted
    /// back from the newest version, and removes the MP3s no kept version names once they are
    /// an hour old (a younger one may belong to a change not committed yet). Returns how many
    /// versions went.
    @discardableResult
    package func pruneHistory(days: Int) throws -> Int {
        let now = clock.now()
        let removed: Int = try write { db in
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
        try removeUnnamedHistoryAudio(olderThan: now - 3_600_000, all: days <= 0)
        return removed
    }

    private func removeUnnamedHistoryAudio(olderThan limit: Milliseconds, all: Bool) throws {
        let directory = paths.historyDirectory
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard !files.isEmpty else { return }
        let named = try read { db in
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

    // MARK: restore

    /// Puts the library (or only the books and clips of `keys`) back to how it was at `at`:
    /// fields, existence and clip audio, as one change made now. Each entity written gets an
    /// `updated_at` later than the one it replaces; the triggers queue it, and record it as
    /// a version from `restore`. A whole-library restore also deletes the books (hidden, uri
    /// cleared) and clips made after `at`. One transaction, its MP3s placed with it
    /// (`AudioJournal`): a kill leaves the library as it was or fully restored.
    /// `beforeCommit` runs inside the transaction after every write (tests stop it there).
    @discardableResult
    package func restore(
        at moment: Milliseconds, keys: [EntityKey]? = nil, dryRun: Bool = false,
        beforeCommit: () throws -> Void = {}
    ) throws -> RestoreResult {
        try restore(at: moment, keys: keys, pinned: nil, dryRun: dryRun, beforeCommit: beforeCommit)
    }

    /// Puts one book or clip back to the version of the history with that id (what
    /// `ivy history ID` and `--conflicts` show): as `restore(at:keys:)` does for the moment it
    /// was recorded at, but that very version even when others were recorded at the same
    /// time (a take that lost to another, kept just before it). Throws `noSuchVersion` when
    /// none has that id.
    @discardableResult
    package func restore(
        version id: Int64, dryRun: Bool = false, beforeCommit: () throws -> Void = {}
    ) throws -> RestoreResult {
        let found = try read { db -> (key: EntityKey, at: Milliseconds)? in
            guard try db.tableExists("history"),
                let row = try Row.fetchOne(
                    db, sql: "SELECT entity_type, entity_id, recorded_at FROM history WHERE id = ?", arguments: [id]),
                let kind = EntityKind(rawValue: row["entity_type"] ?? "")
            else { return nil }
            return (EntityKey(kind, row["entity_id"] ?? ""), row["recorded_at"] ?? 0)
        }
        guard let found else { throw HistoryError.noSuchVersion(id) }
        return try restore(at: found.at, keys: [found.key], pinned: id, dryRun: dryRun, beforeCommit: beforeCommit)
    }

    private func restore(
        at moment: Milliseconds, keys: [EntityKey]?, pinned: Int64?, dryRun: Bool, beforeCommit: () throws -> Void
    ) throws -> RestoreResult {
        let planned = try read { db in
            // A library an older ivy wrote last, read without migrating it, has no history.
            guard try db.tableExists("history") else { return RestorePlanner.Plan(result: RestoreResult(at: moment)) }
            return try RestorePlanner(db: db, library: self, at: moment, keys: keys, pinned: pinned).plan()
        }
        if dryRun || planned.result.changes.isEmpty { return planned.result }
        // MP3s to put back are linked in beside the audio first, and those to replace or
        // delete kept in the history, outside the transaction.
        var staged: [(clipID: ClipID, staged: String)] = []
        defer { for item in staged { AudioFiles.remove(item.staged) } }
        for (clipID, source) in planned.audio.sorted(by: { $0.key < $1.key }) {
            staged.append((clipID, try Self.stageLinked(source, in: paths.audioDirectory)))
        }
        // Clips it deletes keep their MP3 in the history (`writeReplacingAudios` does the same
        // for the MP3s it replaces).
        let deleted = planned.result.changes.filter { $0.action == .delete }.compactMap(\.key.clipID)
        let kept = try keepAudioInHistory(clipIDs: deleted)
        let now = clock.now()
        let result = try writeReplacingAudios(staged, beforeCommit: beforeCommit) { db in
            let again = try RestorePlanner(db: db, library: self, at: moment, keys: keys, pinned: pinned).plan()
            guard again.result == planned.result, again.audio == planned.audio else {
                throw HistoryError.changedMeanwhile
            }
            try db.execute(sql: "INSERT INTO history_restoring (restore) VALUES (1)")
            for (clipID, md5) in kept { try HistoryAudio.stamp(clipID: clipID, md5: md5, in: db) }
            let newest = try HistoryAudio.newestVersions(staged.map(\.clipID), in: db)
            try again.apply(in: db, now: now, library: self)
            // Only the audio put back is still a version, from `restore`.
            try HistoryAudio.recordAudioChanges(since: newest, in: db)
            try db.execute(sql: "DELETE FROM history_restoring")
            return again.result
        }
        for change in result.changes where change.action == .delete {
            if let clipID = change.key.clipID { removeAudio(clipID: clipID) }
        }
        return result
    }

    /// A hidden name beside the audio for `source`: a hard link, else a copy.
    static func stageLinked(_ source: String, in directory: String) throws -> String {
        try Directories.ensurePrivate(directory)
        let path = AudioFiles.stagingPath(in: directory)
        if link(source, path) == 0 { return path }
        return try AudioFiles.stage(source, in: directory)
    }
}

/// Works out what a restore changes, reading one transaction's view of the library.
private struct RestorePlanner {
    let db: Database
    let library: LibraryDatabase
    let at: Milliseconds
    let keys: [EntityKey]?
    /// The one version to restore (by id), rather than the newest recorded at or before `at`.
    var pinned: Int64? = nil

    struct Target {
        let version: HistoryVersion?
        let entity: TrashedEntity?
    }

    struct Plan {
        var result: RestoreResult
        /// The clips whose MP3 is put back, with the file it comes from.
        var audio: [ClipID: String] = [:]
        /// The entities to write, by key (nil: delete).
        var writes: [(key: EntityKey, entity: TrashedEntity?, current: TrashedEntity?)] = []

        func apply(in db: Database, now: Milliseconds, library: LibraryDatabase) throws {
            let writer = EngineWriter(
                db: db, trashDirectory: library.paths.trashDirectory, historyDirectory: library.paths.historyDirectory)
            // Books first: a clip made again needs its book.
            let ordered = writes.sorted { ($0.key.kind == .book ? 0 : 1) < ($1.key.kind == .book ? 0 : 1) }
            for write in ordered {
                switch (write.key.kind, write.entity) {
                case (.book, .book(let backup)?):
                    var book = backup.book(uri: nil)
                    let synced = try Self.synced(.book(backup), audioMD5: nil, in: db)
                    book.updatedAt =
                        synced
                        ?? Timestamp.next(now: now, previous: max(write.current?.updatedAt ?? 0, backup.updatedAt))
                    if write.current?.extras != backup.extras { try writer.saveExtras(write.key, backup.extras) }
                    // Cached statements: a whole-library restore writes thousands of rows. The
                    // book's uri (this device's own) stays as it is.
                    if write.current == nil {
                        try db.cachedStatement(sql: Book.upsertSQL).execute(arguments: book.arguments)
                    } else {
                        try db.cachedStatement(
                            sql: """
                                UPDATE books SET title = :title, artist = :artist, artwork = :artwork,
                                    position = :position, hidden = :hidden, created_at = :created_at,
                                    updated_at = :updated_at
                                WHERE id = :id
                                """
                        ).execute(arguments: book.arguments)
                    }
                    if synced != nil { try Self.unqueue(write.key, in: db) }
                case (.clip, .clip(let backup)?):
                    guard try LibraryDatabase.book(id: backup.bookID, in: db) != nil else {
                        throw HistoryError.bookMissing(clipID: backup.id, bookID: backup.bookID)
                    }
                    var clip = backup.clip
                    // The MP3 it gets back is named by its md5 in the history; else it keeps its own.
                    let md5 =
                        try audio[backup.id].map {
                            (($0 as NSString).lastPathComponent as NSString).deletingPathExtension
                        }
                        ?? library.audioMD5(clipID: backup.id)
                    let synced = try Self.synced(.clip(backup), audioMD5: md5, in: db)
                    clip.updatedAt =
                        synced
                        ?? Timestamp.next(now: now, previous: max(write.current?.updatedAt ?? 0, backup.updatedAt))
                    if write.current?.extras != backup.extras { try writer.saveExtras(write.key, backup.extras) }
                    try db.cachedStatement(sql: Clip.upsertSQL).execute(arguments: clip.arguments)
                    if synced != nil { try Self.unqueue(write.key, in: db) }
                case (.book, nil):
                    guard let id = write.key.bookID, var book = try LibraryDatabase.book(id: id, in: db) else {
                        continue
                    }
                    // Hidden as `book delete` does, but its file's uri is kept: undoing the
                    // restore shows the book again with it.
                    book.hidden = true
                    book.updatedAt = Timestamp.next(now: now, previous: book.updatedAt)
                    try db.execute(sql: Book.upsertSQL, arguments: book.arguments)
                case (.clip, nil):
                    try db.execute(sql: "DELETE FROM clips WHERE id = ?", arguments: [write.key.id])
                    try writer.saveExtras(write.key, [:])
                default:
                    continue
                }
            }
        }

        /// When `entity` (with that MP3) is what this device and Drive last agreed on, the
        /// `updated_at` the manifest knows it by: written back with it and no queue row, it is
        /// unchanged here, so the next sync uploads nothing for it (and downloads what Drive
        /// has, if Drive moved on since). A change here that never reached Drive is so undone
        /// at no cost; anything else is a change made now.
        static func synced(_ entity: TrashedEntity, audioMD5: String?, in db: Database) throws -> Milliseconds? {
            let key = entity.key
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT local_updated_at, base_json, base_audio_md5 FROM sync_manifest
                            WHERE entity_type = ? AND entity_id = ?
                            """),
                    arguments: [key.kind.rawValue, key.id]),
                let updatedAt = row["local_updated_at"] as Milliseconds?,
                let json = row["base_json"] as String?,
                let base = try? TrashedEntity.decode(Data(json.utf8), key: key)
            else { return nil }
            switch (entity, base) {
            case (.book(let a), .book(let b)) where a.sameContent(as: b): return updatedAt
            case (.clip(let a), .clip(let b)) where a.sameContent(as: b):
                return audioMD5 != nil && audioMD5 == row["base_audio_md5"] ? updatedAt : nil
            default: return nil
            }
        }

        static func unqueue(_ key: EntityKey, in db: Database) throws {
            try db.cachedStatement(sql: "DELETE FROM sync_queue WHERE entity_type = ? AND entity_id = ?")
                .execute(arguments: [key.kind.rawValue, key.id])
        }
    }

    func plan() throws -> Plan {
        var plan = Plan(result: RestoreResult(at: at))
        let targets = try versionsAt()
        let wanted: [EntityKey]
        // The whole library is read in three queries, not two per entity.
        var library: [EntityKey: TrashedEntity] = [:]
        if let keys {
            wanted = keys
        } else {
            library = try everything()
            wanted = Set(targets.keys).union(library.keys).sorted()
        }
        var earliest: [EntityKey: Milliseconds]?
        for key in wanted {
            let current =
                keys == nil
                ? library[key] : try EngineWriter(db: db, trashDirectory: "", historyDirectory: "").trashable(key)
            if let version = targets[key], !version.deleted {
                guard let json = version.json, let entity = try? TrashedEntity.decode(json, key: key) else {
                    plan.result.skipped.append(
                        (key, "its version of then (history row \(version.id)) no longer reads; left as it is"))
                    plan.result.failed.append(key)
                    continue
                }
                try restoreVersion(version, entity, over: current, into: &plan)
                continue
            }
            guard let current else {
                if keys != nil { plan.result.skipped.append((key, "it did not exist then, and does not now")) }
                continue
            }
            // Deleted at that moment, or made after it: only a whole-library restore removes
            // it. "Made after" is when it was made (the earliest time it or any version of it
            // carries), never when it reached this library: a device that joined late, or
            // was offline, has no version of what others made before it heard of them.
            let madeAfter: Bool
            if let version = targets[key] {
                madeAfter = version.deleted
            } else {
                if keys != nil || earliest == nil { earliest = try earliestEvidence(keys == nil ? nil : [key]) }
                let made = min(createdAt(current) ?? .max, earliest?[key] ?? .max)
                madeAfter = made > at
            }
            guard madeAfter else {
                plan.result.skipped.append((key, RestoreResult.unknownThen))
                continue
            }
            guard keys == nil else {
                plan.result.skipped.append((key, "it did not exist then; only a whole-library restore deletes it"))
                continue
            }
            if case .book(let book) = current, book.hidden { continue }
            plan.result.changes.append(
                RestoreChange(key: key, action: .delete, fields: [], label: label(current)))
            plan.writes.append((key, nil, current))
        }
        return plan
    }

    private func restoreVersion(
        _ version: HistoryVersion, _ entity: TrashedEntity, over current: TrashedEntity?, into plan: inout Plan
    ) throws {
        let key = version.key
        var audioSource: String?
        var audioMD5: String?
        var audioMissing: String?
        if let clipID = key.clipID {
            let currentMD5 = current == nil ? nil : try library.audioMD5(clipID: clipID)
            if let md5 = version.audioMD5 {
                audioMD5 = md5
                if currentMD5 != md5 {
                    let kept = library.historyAudioPath(md5: md5)
                    // A kept file is used only when it is what its name says.
                    if HistoryAudio.trusted(kept, md5: md5) {
                        audioSource = kept
                    } else {
                        audioMissing = "the MP3 it had then is no longer kept; left as it is"
                    }
                }
            } else if currentMD5 == nil {
                audioMissing = "its MP3 is missing here; left as it is"
            } else {
                audioMD5 = currentMD5
            }
        }
        var changed = current.map { differing($0, entity) } ?? fields(of: entity)
        if audioSource != nil || audioMissing != nil && current != nil && version.audioMD5 != nil {
            changed.append("audio")
        }
        guard current == nil || !changed.isEmpty else { return }
        // A clip whose MP3 of then cannot be had is left as it is, and the restore says so:
        // one lost file never stops the rest of the library.
        if let audioMissing {
            plan.result.skipped.append((key, audioMissing))
            plan.result.failed.append(key)
            return
        }
        let sends = try Plan.synced(entity, audioMD5: audioMD5, in: db) == nil
        plan.result.changes.append(
            RestoreChange(
                key: key, action: current == nil ? .create : .update, fields: changed.sorted(), label: label(entity),
                sends: sends))
        plan.writes.append((key, entity, current))
        if let audioSource, let clipID = key.clipID { plan.audio[clipID] = audioSource }
    }

    /// The earliest time each entity (of `keys`, or all) is known to have existed by: the
    /// least `created_at` or `updated_at` any of its versions carries.
    private func earliestEvidence(_ keys: [EntityKey]?) throws -> [EntityKey: Milliseconds] {
        var filter = ""
        var arguments: StatementArguments = []
        if let keys {
            filter = "AND entity_id IN (\(keys.map { _ in "?" }.joined(separator: ",")))"
            arguments = StatementArguments(keys.map(\.id))
        }
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT entity_type, entity_id, min(min(
                    coalesce(json_extract(json, '$.created_at'), 9e18),
                    coalesce(json_extract(json, '$.updated_at'), 9e18))) AS earliest
                FROM history WHERE json IS NOT NULL AND json_valid(json) \(filter)
                GROUP BY entity_type, entity_id
                """,
            arguments: arguments)
        var earliest: [EntityKey: Milliseconds] = [:]
        for row in rows {
            guard let kind = EntityKind(rawValue: row["entity_type"] ?? ""), let value = row["earliest"] as Double?,
                value.isFinite, value < 9e18
            else { continue }
            earliest[EntityKey(kind, row["entity_id"] ?? "")] = Milliseconds(value)
        }
        return earliest
    }

    /// Every book and clip as it is now, with its unknown keys.
    private func everything() throws -> [EntityKey: TrashedEntity] {
        var extras: [EntityKey: [String: JSONValue]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT entity_type, entity_id, json FROM backup_extras") {
            guard let kind = EntityKind(rawValue: row["entity_type"] ?? ""), let text = row["json"] as String?,
                let object = History.object(Data(text.utf8))
            else { continue }
            extras[EntityKey(kind, row["entity_id"] ?? "")] = object
        }
        var entities: [EntityKey: TrashedEntity] = [:]
        for book in try Row.fetchAll(db, sql: "SELECT * FROM books").map(Book.init(row:)) {
            let key = EntityKey(book.id)
            entities[key] = .book(BookBackup(book, extras: extras[key] ?? [:]))
        }
        for clip in try Row.fetchAll(db, sql: "SELECT * FROM clips").map(Clip.init(row:)) {
            let key = EntityKey(clip.id)
            entities[key] = .clip(ClipBackup(clip, extras: extras[key] ?? [:]))
        }
        return entities
    }

    /// The newest version of each entity recorded at or before the moment (or the pinned one).
    private func versionsAt() throws -> [EntityKey: HistoryVersion] {
        var filter = ""
        var arguments: StatementArguments = [at]
        if let keys {
            filter = "AND entity_id IN (\(keys.map { _ in "?" }.joined(separator: ",")))"
            _ = arguments.append(contentsOf: StatementArguments(keys.map(\.id)))
        }
        let rows =
            try pinned.map { try Row.fetchAll(db, sql: "SELECT * FROM history WHERE id = ?", arguments: [$0]) }
            ?? Row.fetchAll(
                db,
                sql: """
                    SELECT h.* FROM history h JOIN (
                        SELECT max(id) AS id FROM history WHERE recorded_at <= ? \(filter)
                        GROUP BY entity_type, entity_id) m ON h.id = m.id
                    """,
                arguments: arguments)
        var versions: [EntityKey: HistoryVersion] = [:]
        for row in rows {
            let key = EntityKey(
                EntityKind(rawValue: try row.decode(forColumn: "entity_type")) ?? .clip,
                try row.decode(forColumn: "entity_id"))
            if let keys, !keys.contains(key) { continue }
            versions[key] = HistoryVersion(
                id: try row.decode(forColumn: "id"), key: key, recordedAt: try row.decode(forColumn: "recorded_at"),
                source: HistorySource(rawValue: try row.decode(forColumn: "source")) ?? .here,
                json: (row["json"] as String?).map { Data($0.utf8) }, audioMD5: row["audio_md5"], changed: [])
        }
        return versions
    }

    private func createdAt(_ entity: TrashedEntity?) -> Milliseconds? {
        switch entity {
        case .book(let book)?: book.createdAt
        case .clip(let clip)?: clip.createdAt
        case nil: nil
        }
    }

    private func label(_ entity: TrashedEntity?) -> String? {
        switch entity {
        case .book(let book)?: book.title
        case .clip(let clip)?: clip.note
        case nil: nil
        }
    }

    private func fields(of entity: TrashedEntity) -> [String] {
        History.object(entity.encoded()).map { History.changedFields(from: nil, to: $0) } ?? []
    }

    /// The backup fields that differ, whenever each side was written.
    private func differing(_ current: TrashedEntity, _ target: TrashedEntity) -> [String] {
        // Most of a large library is as it was: the cheap comparison settles those.
        switch (current, target) {
        case (.book(let a), .book(let b)) where a.sameContent(as: b): return []
        case (.clip(let a), .clip(let b)) where a.sameContent(as: b): return []
        default: break
        }
        let before = History.object(current.encoded()) ?? [:]
        let after = History.object(target.encoded()) ?? [:]
        return History.changedFields(from: before, to: after)
    }
}
