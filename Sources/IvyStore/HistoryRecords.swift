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
    /// Whether `recordedAt` is Google's time; false when this device's own clock gave it (it
    /// had not reached Google since it booted, another program wrote, or an older ivy did).
    package var sureClock = true

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
    /// When those left on doubt were made, as far as their times say (`MADE` in their reason).
    package var madeAt: [EntityKey: Milliseconds] = [:]

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
    /// `--audio-only` of a version that has no audio to give back.
    case audioOnly(Int64, AudioOnlyProblem)

    package enum AudioOnlyProblem: Equatable, Sendable {
        case book
        case deletion
        case clipGone(ClipID)
    }

    package var errorDescription: String? {
        switch self {
        case .bookMissing(let clipID, let bookID):
            "clip \(clipID) belongs to book \(bookID), which is not in this library and is not restored with it; "
                + "restore the book too (name both ids), or the whole library"
        case .changedMeanwhile:
            "the library changed while the restore was prepared; run it again"
        case .noSuchVersion(let id):
            "the history keeps no version \(id) (pruned, or never recorded); `ivy history ID` lists the versions kept"
        case .audioOnly(let id, .book):
            "version \(id) is a book's, and a book has no audio; restore it without --audio-only"
        case .audioOnly(let id, .deletion):
            "version \(id) records a deletion, which has no audio; give a version that has (`ivy history ID`)"
        case .audioOnly(let id, .clipGone(let clipID)):
            "clip \(clipID) is not in the library, so version \(id)'s audio has no fields to go with; restore "
                + "the whole version (without --audio-only)"
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
        _ = try TrashFiles.keep(
            path, as: destination, in: directory, crash: (copied: .historyKeepAfterCopy, placed: .historyKeepAfterPlace)
        )
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
