import Foundation
import GRDB
package import IvyCore
import IvySystem

/// The library's files as Drive holds them, for `ivy export`: each book's and clip's backup
/// JSON (as a sync uploads it, unknown keys included) and each clip's MP3.
package struct ArchiveContents: Sendable {
    /// By name, sorted: the same library always gives the same archive.
    package var files: [(name: String, source: ArchiveSource)] = []
    package var books = 0
    package var clips = 0
    /// The newest `updated_at` among them: what the archive's entries are dated.
    package var newest: Milliseconds = 0
    /// Clips whose MP3 is not here (missing, or of `--at` and no longer kept), with why: their
    /// JSON is in the archive, their MP3 is not.
    package var withoutAudio: [(clipID: ClipID, reason: String)] = []
    /// Versions of `--at` that no longer read, left out.
    package var unreadable: [(key: EntityKey, reason: String)] = []
}

extension LibraryDatabase {
    /// What `ivy export` writes: the library now, or at `moment` from the history (each book
    /// and clip as its newest version recorded then, with the MP3 it had then).
    package func archiveContents(at moment: Milliseconds? = nil) async throws -> ArchiveContents {
        // On the database's queue, one of ivy's own threads, as every file it asks about.
        let found = try await read { db -> [ArchiveFound] in
            try Self.found(at: moment, in: db, library: self).map { found in
                guard let audio = found.audio, !FileManager.default.fileExists(atPath: audio) else { return found }
                return (found.key, found.entity, nil, found.missing)
            }
        }
        var contents = ArchiveContents()
        for (key, entity, audio, missing) in found {
            let json: Data
            do {
                guard let entity else { throw ArchiveSkip(reason: missing ?? "it no longer reads") }
                json = try entity.backupJSON()
                contents.newest = max(contents.newest, entity.updatedAt)
            } catch let skip as ArchiveSkip {
                contents.unreadable.append((key, skip.reason))
                continue
            } catch {
                contents.unreadable.append((key, "\(error)"))
                continue
            }
            contents.files.append((key.jsonFileName, .data(json)))
            guard let clipID = key.clipID else {
                contents.books += 1
                continue
            }
            contents.clips += 1
            if let audio {
                contents.files.append((key.mp3FileName, .file(audio)))
            } else {
                contents.withoutAudio.append((clipID, missing ?? "its MP3 is missing here"))
            }
        }
        contents.files.sort { $0.name < $1.name }
        return contents
    }

    /// Each book and clip of then, with the MP3 it had, or why it cannot be had.
    private static func found(
        at moment: Milliseconds?, in db: Database, library: LibraryDatabase
    ) throws -> [ArchiveFound] {
        guard let moment else {
            return try Self.allEntities(in: db).map { key, entity in
                (key, entity, key.clipID.map { library.audioPath(clipID: $0) }, nil)
            }
        }
        // A library an older ivy wrote last, read without migrating it, has no history.
        guard try db.tableExists("history") else { return [] }
        return try Self.versions(at: moment, in: db).compactMap { version -> ArchiveFound? in
            guard let json = version.json else { return nil }
            guard let entity = try? TrashedEntity.decode(json, key: version.key) else {
                return (version.key, nil, nil, "its version of then (history row \(version.id)) no longer reads")
            }
            guard let clipID = version.key.clipID else { return (version.key, entity, nil, nil) }
            guard let md5 = version.audioMD5 else {
                return (version.key, entity, library.audioPath(clipID: clipID), nil)
            }
            let kept = library.historyAudioPath(md5: md5)
            return HistoryAudio.trusted(kept, md5: md5)
                ? (version.key, entity, kept, nil)
                : (version.key, entity, nil, "the MP3 it had then is no longer kept")
        }
    }

    /// Every book and clip as it is now, with its unknown keys.
    static func allEntities(in db: Database) throws -> [EntityKey: TrashedEntity] {
        var extras: [EntityKey: [String: JSONValue]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT entity_type, entity_id, json FROM backup_extras") {
            guard let kind = EntityKind(rawValue: row["entity_type"] ?? ""), let text = row["json"] as String?,
                let object = History.object(Data(text.utf8))
            else { continue }
            extras[EntityKey(kind, row["entity_id"] ?? "")] = object
        }
        var entities: [EntityKey: TrashedEntity] = [:]
        for book in try Book.fetchAll(db, sql: "SELECT * FROM books") {
            let key = EntityKey(book.id)
            entities[key] = .book(BookBackup(book, extras: extras[key] ?? [:]))
        }
        for clip in try Clip.fetchAll(db, sql: "SELECT * FROM clips") {
            let key = EntityKey(clip.id)
            entities[key] = .clip(ClipBackup(clip, extras: extras[key] ?? [:]))
        }
        return entities
    }

    /// The newest version of every book and clip at `moment`'s point in the order of changes
    /// (`HistoryPoint`): the greatest id up to it, whatever time a wrong clock wrote on it.
    static func versions(at moment: Milliseconds, in db: Database) throws -> [HistoryVersion] {
        guard let point = try HistoryPoint.at(moment, in: db) else { return [] }
        return try HistoryRow.fetchAll(
            db,
            sql: """
                SELECT h.* FROM history h JOIN (
                    SELECT max(id) AS id FROM history WHERE id <= ?
                    GROUP BY entity_type, entity_id) m ON h.id = m.id
                """,
            arguments: [point]
        ).map(\.version)
    }
}

/// A book or clip to export: its entity (nil when its version no longer reads), its MP3, or why
/// it has none.
private typealias ArchiveFound = (key: EntityKey, entity: TrashedEntity?, audio: String?, missing: String?)

private struct ArchiveSkip: Error {
    let reason: String
}

extension TrashedEntity {
    /// Its backup JSON exactly as a sync uploads it; an entity that cannot be written so
    /// (another program stored an infinite time) is an error, not a lenient copy.
    func backupJSON() throws -> Data {
        switch self {
        case .book(let book): try BackupCodec.encode(book)
        case .clip(let clip): try BackupCodec.encode(clip)
        }
    }
}
