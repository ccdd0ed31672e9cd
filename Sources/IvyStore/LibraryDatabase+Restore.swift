import Foundation
import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
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
        beforeCommit: @Sendable () throws -> Void = {}
    ) async throws -> RestoreResult {
        try await restore(at: moment, keys: keys, pinned: nil, dryRun: dryRun, beforeCommit: beforeCommit)
    }

    /// Puts one book or clip back to the version of the history with that id (what
    /// `ivy history ID` and `--conflicts` show): as `restore(at:keys:)` does for the moment it
    /// was recorded at, but that very version even when others were recorded at the same
    /// time (a take that lost to another, kept just before it). Throws `noSuchVersion` when
    /// none has that id.
    ///
    /// `audioOnly` puts back only the clip's MP3 of that version and leaves its fields as they
    /// are (a take that lost a merge, without the fields its device had then): refused for a
    /// book, a deletion, or a clip that is not here.
    @discardableResult
    package func restore(
        version id: Int64, audioOnly: Bool = false, dryRun: Bool = false,
        beforeCommit: @Sendable () throws -> Void = {}
    ) async throws -> RestoreResult {
        let found = try await read { db -> (key: EntityKey, at: Milliseconds, deleted: Bool, here: Bool)? in
            guard try db.tableExists("history"),
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT entity_type, entity_id, recorded_at, json IS NULL AS deleted,
                            EXISTS (SELECT 1 FROM clips WHERE clips.id = history.entity_id) AS here
                        FROM history WHERE id = ?
                        """,
                    arguments: [id]),
                let kind = EntityKind(rawValue: row["entity_type"] ?? "")
            else { return nil }
            return (EntityKey(kind, row["entity_id"] ?? ""), row["recorded_at"] ?? 0, row["deleted"], row["here"])
        }
        guard let found else { throw HistoryError.noSuchVersion(id) }
        if audioOnly {
            guard case .clip(let clipID) = found.key else { throw HistoryError.audioOnly(id, .book) }
            guard !found.deleted else { throw HistoryError.audioOnly(id, .deletion) }
            guard found.here else { throw HistoryError.audioOnly(id, .clipGone(clipID)) }
        }
        return try await restore(
            at: found.at, keys: [found.key], pinned: id, audioOnly: audioOnly, dryRun: dryRun,
            beforeCommit: beforeCommit)
    }

    func restore(
        at moment: Milliseconds, keys: [EntityKey]?, pinned: Int64?, audioOnly: Bool = false, dryRun: Bool,
        beforeCommit: @Sendable () throws -> Void
    ) async throws -> RestoreResult {
        let planned = try await read { db in
            // A library an older ivy wrote last, read without migrating it, has no history.
            guard try db.tableExists("history") else { return RestorePlanner.Plan(result: RestoreResult(at: moment)) }
            return try RestorePlanner(
                db: db, library: self, at: moment, keys: keys, pinned: pinned, audioOnly: audioOnly
            ).plan()
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
        let kept = try await keepAudioInHistory(clipIDs: deleted)
        let now = clock.now()
        let last: @Sendable () throws -> Void = {
            CrashPoints.reach(.restoreBeforeCommit)
            try beforeCommit()
        }
        let result = try await writeReplacingAudios(.storeRestore, staged, beforeCommit: last) { [staged] db in
            let again = try RestorePlanner(
                db: db, library: self, at: moment, keys: keys, pinned: pinned, audioOnly: audioOnly
            ).plan()
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
        if link(source, path) == 0 {
            CrashPoints.reach(.restoreStageAfterLink)
            return path
        }
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
    /// Only the version's MP3: the clip's fields stay as they are now.
    var audioOnly = false

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
                        ?? Self.restoredAt(now: now, current: write.current, version: backup.updatedAt)
                    if write.current?.extras != backup.extras { try writer.saveExtras(write.key, backup.extras) }
                    // The book's uri (this device's own) stays as it is. GRDB keeps both statements
                    // prepared: a whole-library restore writes thousands of rows.
                    if write.current == nil {
                        try book.upsert(db)
                    } else {
                        try book.update(
                            db,
                            columns: ["title", "artist", "artwork", "position", "hidden", "created_at", "updated_at"])
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
                        ?? library.hashAudio(clipID: backup.id)
                    let synced = try Self.synced(.clip(backup), audioMD5: md5, in: db)
                    clip.updatedAt =
                        synced
                        ?? Self.restoredAt(now: now, current: write.current, version: backup.updatedAt)
                    if write.current?.extras != backup.extras { try writer.saveExtras(write.key, backup.extras) }
                    try clip.upsert(db)
                    if synced != nil { try Self.unqueue(write.key, in: db) }
                case (.book, nil):
                    guard let id = write.key.bookID, var book = try LibraryDatabase.book(id: id, in: db) else {
                        continue
                    }
                    // Hidden as `book delete` does, but its file's uri is kept: undoing the
                    // restore shows the book again with it.
                    book.hidden = true
                    book.updatedAt = Timestamp.next(now: now, previous: book.updatedAt)
                    try book.upsert(db)
                case (.clip, nil):
                    try db.execute(sql: "DELETE FROM clips WHERE id = ?", arguments: [write.key.id])
                    try writer.saveExtras(write.key, [:])
                default:
                    continue
                }
            }
        }

        /// The `updated_at` a restored entity is written with: later than what it replaces and
        /// than its version's own, but a version's time is taken no later than now (a take kept
        /// as Drive held it may carry another device's clock, ahead of Google's).
        static func restoredAt(now: Milliseconds, current: TrashedEntity?, version: Milliseconds) -> Milliseconds {
            Timestamp.next(now: now, previous: max(current?.updatedAt ?? 0, min(version, now)))
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
        var evidence: Evidence?
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
                // Only the audio: the clip as it is now, with the version's MP3 (`restoreVersion`).
                let target = audioOnly ? current ?? entity : entity
                try restoreVersion(version, target, over: current, into: &plan)
                continue
            }
            guard let current else {
                if keys != nil { plan.result.skipped.append((key, "it did not exist then, and does not now")) }
                continue
            }
            // Deleted at that point of the order of changes, or made after it: only a
            // whole-library restore removes it, and only on evidence (`Evidence.doubt`).
            if targets[key] == nil {
                if keys != nil || evidence == nil { evidence = try Evidence(db: db, keys: keys == nil ? nil : [key]) }
                let made = evidence?.made(key, createdAt: createdAt(current))
                if let doubt = evidence?.doubt(key, made: made, at: at) {
                    plan.result.skipped.append((key, doubt))
                    if doubt != RestoreResult.unknownThen, let made { plan.result.madeAt[key] = made }
                    continue
                }
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

    func restoreVersion(
        _ version: HistoryVersion, _ entity: TrashedEntity, over current: TrashedEntity?, into plan: inout Plan
    ) throws {
        let key = version.key
        var audioSource: String?
        var audioMD5: String?
        var audioMissing: String?
        if let clipID = key.clipID {
            let currentMD5 = current == nil ? nil : try library.hashAudio(clipID: clipID)
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

    /// Every book and clip as it is now, with its unknown keys.
    func everything() throws -> [EntityKey: TrashedEntity] {
        try LibraryDatabase.allEntities(in: db)
    }

    /// The newest version of each entity at the moment's point in the order of changes (or
    /// the pinned one): everything written up to the last version recorded at or before the
    /// moment, whatever time a wrong clock wrote on it (ARCHITECTURE.md, "History").
    func versionsAt() throws -> [EntityKey: HistoryVersion] {
        var filter = ""
        let point = try HistoryPoint.at(at, in: db) ?? 0
        var arguments: StatementArguments = [point]
        if let keys {
            filter = "AND entity_id IN (\(keys.map { _ in "?" }.joined(separator: ",")))"
            _ = arguments.append(contentsOf: StatementArguments(keys.map(\.id)))
        }
        let rows =
            try pinned.map { try HistoryRow.fetchAll(db, sql: "SELECT * FROM history WHERE id = ?", arguments: [$0]) }
            ?? HistoryRow.fetchAll(
                db,
                sql: """
                    SELECT h.* FROM history h JOIN (
                        SELECT max(id) AS id FROM history WHERE id <= ? \(filter)
                        GROUP BY entity_type, entity_id) m ON h.id = m.id
                    """,
                arguments: arguments)
        var versions: [EntityKey: HistoryVersion] = [:]
        for row in rows {
            if let keys, !keys.contains(row.key) { continue }
            versions[row.key] = row.version
        }
        return versions
    }

    func createdAt(_ entity: TrashedEntity?) -> Milliseconds? {
        switch entity {
        case .book(let book)?: book.createdAt
        case .clip(let clip)?: clip.createdAt
        case nil: nil
        }
    }

    func label(_ entity: TrashedEntity?) -> String? {
        switch entity {
        case .book(let book)?: book.title
        case .clip(let clip)?: clip.note
        case nil: nil
        }
    }

    func fields(of entity: TrashedEntity) -> [String] {
        History.object(entity.encoded()).map { History.changedFields(from: nil, to: $0) } ?? []
    }

    /// The backup fields that differ, whenever each side was written.
    func differing(_ current: TrashedEntity, _ target: TrashedEntity) -> [String] {
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

/// A moment's place in the order of changes (DESIGN.md §12): the last version recorded at or
/// before it. Everything written up to there existed then, whatever its label says.
enum HistoryPoint {
    /// The id of the last version recorded at or before `moment`; nil when none was.
    static func at(_ moment: Milliseconds, in db: Database) throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT max(id) FROM history WHERE recorded_at <= ?"), arguments: [moment])
    }
}

/// What a restore knows of when each entity it has no version of at the moment was made.
/// It deletes one only on positive evidence that it was made after the moment; on doubt it
/// leaves it and says why (DESIGN.md §12).
private struct Evidence {
    /// How the first version this library recorded of each entity came: who wrote it, how,
    /// and by which clock.
    struct First {
        let source: String
        let operation: String
        let clock: String?
    }

    var first: [EntityKey: First] = [:]
    /// The earliest `created_at` or `updated_at` any version of each entity carries.
    var earliest: [EntityKey: Milliseconds] = [:]

    init(db: Database, keys: [EntityKey]?) throws {
        var filter = ""
        var arguments: StatementArguments = []
        if let keys {
            filter = "WHERE entity_id IN (\(keys.map { _ in "?" }.joined(separator: ",")))"
            arguments = StatementArguments(keys.map(\.id))
        }
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT h.entity_type, h.entity_id, h.source, h.operation, h.clock FROM history h
                JOIN (SELECT min(id) AS id FROM history \(filter) GROUP BY entity_type, entity_id) f ON h.id = f.id
                """,
            arguments: arguments)
        {
            guard let kind = EntityKind(rawValue: row["entity_type"] ?? "") else { continue }
            first[EntityKey(kind, row["entity_id"] ?? "")] = First(
                source: row["source"] ?? "", operation: row["operation"] ?? "", clock: row["clock"])
        }
        let condition = filter.isEmpty ? "WHERE" : filter + " AND"
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT entity_type, entity_id, min(min(
                    coalesce(json_extract(json, '$.created_at'), 9e18),
                    coalesce(json_extract(json, '$.updated_at'), 9e18))) AS earliest
                FROM history \(condition) json IS NOT NULL AND json_valid(json)
                GROUP BY entity_type, entity_id
                """,
            arguments: arguments)
        {
            guard let kind = EntityKind(rawValue: row["entity_type"] ?? ""), let value = row["earliest"] as Double?,
                value.isFinite, value < 9e18
            else { continue }
            earliest[EntityKey(kind, row["entity_id"] ?? "")] = Milliseconds(value)
        }
    }

    /// Why the entity, which this library has no version of at `moment`, is left as it is;
    /// nil when it was made after the moment: this device made it after that point in its
    /// order of changes, or Drive brought it with times that Google's clock bounds (a
    /// download by this ivy, `StampedBackup.bounded`) and that are later than the moment. A
    /// version an older ivy downloaded, another program's row, or one a restore or import
    /// made carries times nothing checked: no evidence.
    func doubt(_ key: EntityKey, made: Milliseconds?, at moment: Milliseconds) -> String? {
        guard let made, made > moment else { return RestoreResult.unknownThen }
        guard let first = first[key] else {
            return "no version of it is kept here, so when it was made is unknown; left as is"
        }
        if first.source == HistorySource.here.rawValue && first.operation == "insert" { return nil }
        guard first.source == HistorySource.drive.rawValue, first.clock != nil else {
            return "dated MADE by a clock ivy could not check against Google's, so it may have existed at WHEN; "
                + "left as is"
        }
        return nil
    }

    /// When the entity was made, as far as its times say: the earliest it or any of its
    /// versions carries.
    func made(_ key: EntityKey, createdAt: Milliseconds?) -> Milliseconds? {
        let made = min(createdAt ?? .max, earliest[key] ?? .max)
        return made == .max ? nil : made
    }
}
