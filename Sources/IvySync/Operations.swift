import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySystem
import Logging

/// What a finished operation records: the entity here and its files on Drive agree on this
/// content. The one place a `ManifestEntry` is made.
struct Agreement {
    let entry: ManifestEntry
    /// The merge base: the JSON exactly as sent or received, and the audio's md5.
    let base: SyncBase

    init(
        _ key: EntityKey, localUpdatedAt: Milliseconds, jsonID: DriveFileID, jsonModifiedTime: Milliseconds,
        mp3ID: DriveFileID? = nil, json: Data, audioMD5: String? = nil, syncedAt: Milliseconds
    ) {
        entry = ManifestEntry(
            key: key, localUpdatedAt: localUpdatedAt, remoteUpdatedAt: jsonModifiedTime, remoteFileID: jsonID,
            remoteMP3FileID: mp3ID, audioMD5: audioMD5, syncedAt: syncedAt)
        base = SyncBase(json: json, audioMD5: audioMD5)
    }
}

/// A backup JSON read from Drive: the file, its bytes (the next merge base) and its content.
struct Fetched<Backup: EntityBackup> {
    let json: RemoteFile
    let data: Data
    let backup: Backup

    /// Drive's copy adopted as it is.
    func agreement(mp3: RemoteFile? = nil, audioMD5: String? = nil, at now: Milliseconds) -> Agreement {
        Agreement(
            backup.key, localUpdatedAt: backup.updatedAt, jsonID: json.id,
            jsonModifiedTime: json.modifiedTime, mp3ID: mp3?.id, json: data, audioMD5: audioMD5, syncedAt: now)
    }
}

/// Drive's copy of an entity when several JSON files carry its name: read them all, the one
/// with the newest `updated_at` is taken as Drive's copy, and the others are merged into it
/// against the base (so an edit in any of them survives). With one file, that file.
struct Resolved<Backup: EntityBackup> {
    /// The file with the newest content: what the entity records as Drive's when it is adopted.
    let chosen: Fetched<Backup>
    /// Every copy merged into `chosen`; the same content as it when the others add nothing.
    let value: Backup
    /// The other readable files of the name, deleted once one is adopted.
    let others: [RemoteFile]
    /// Files of the name that could not be read: never deleted unread, not even by an upload.
    var unreadable: [RemoteFile] = []
    /// The `updated_at` of each file read, by file: which MP3 take is newer (`AudioTwins`).
    var stamps: [DriveFileID: Milliseconds] = [:]
    /// The bytes of each file read, by file: a take that loses is kept in the history with
    /// the JSON its writer made with it, exactly as Drive held it (`AudioTwins`).
    var copies: [DriveFileID: Data] = [:]
    /// What merging the files into `chosen` settled by a rule (a joined note, a title by the
    /// later write): recorded with the write as any merge's are. Both values were Drive's, so
    /// none is `here`'s.
    var conflicts: [Merge.Conflict] = []

    /// Whether `chosen` holds all there is, so it can be kept as it is on Drive.
    var adoptable: Bool { value.sameContent(as: chosen.backup) }

    /// What an upload of the entity replaces: its files but the unreadable ones.
    func replacing(_ remote: RemoteEntity?) -> RemoteEntity? {
        guard var remote, !unreadable.isEmpty else { return remote }
        remote.stale.removeAll { unreadable.contains($0) }
        if let json = remote.json, unreadable.contains(json) { remote.json = nil }
        return remote
    }
}

/// An MP3 downloaded beside the audio, waiting to be placed by the transaction that checks
/// its row.
struct StagedAudio {
    let path: String
    let bytes: Int64
}

/// What the engine does the same way for books and clips.
protocol EntityBackup: StampedBackup, Sendable {
    associatedtype ID: TextIdentifier
    static var kind: EntityKind { get }
    var id: ID { get }
    var key: EntityKey { get }
    static func decode(_ data: Data, expectedID: ID) throws(BackupDecodingError) -> Self
    static func encode(_ backup: Self) throws(BackupEncodingError) -> Data
    /// The three-way merge of the two (`Merge.bookMerge`, `Merge.clipMerge`).
    static func merged(local: Self, remote: Self, base: Self?, now: Milliseconds) -> Merge.Merged<Self>
    /// Writes the entity and its unknown keys as given, timestamps included.
    func save(in writer: EngineWriter) throws
}

extension BookBackup: EntityBackup {
    static var kind: EntityKind { .book }
    var key: EntityKey { EntityKey(id) }
    static func decode(_ data: Data, expectedID: BookID) throws(BackupDecodingError) -> BookBackup {
        try BackupCodec.decodeBook(data, expectedID: expectedID)
    }
    static func encode(_ backup: BookBackup) throws(BackupEncodingError) -> Data { try BackupCodec.encode(backup) }
    static func merged(local: Self, remote: Self, base: Self?, now: Milliseconds) -> Merge.Merged<Self> {
        Merge.bookMerge(local: local, remote: remote, base: base, now: now)
    }

    /// The book's file uri never leaves this device: the row's own is kept.
    func save(in writer: EngineWriter) throws {
        // The unknown keys first: the row's history trigger records them with it.
        try writer.saveExtras(key, extras)
        try writer.save(book(uri: try writer.book(id: id)?.uri))
    }
}

extension ClipBackup: EntityBackup {
    static var kind: EntityKind { .clip }
    var key: EntityKey { EntityKey(id) }
    static func decode(_ data: Data, expectedID: ClipID) throws(BackupDecodingError) -> ClipBackup {
        try BackupCodec.decodeClip(data, expectedID: expectedID)
    }
    static func encode(_ backup: ClipBackup) throws(BackupEncodingError) -> Data { try BackupCodec.encode(backup) }
    static func merged(local: Self, remote: Self, base: Self?, now: Milliseconds) -> Merge.Merged<Self> {
        Merge.clipMerge(local: local, remote: remote, base: base, now: now)
    }

    func save(in writer: EngineWriter) throws {
        try writer.saveExtras(key, extras)
        try writer.save(clip)
    }
}

extension SyncEngine {
    /// Told of MP3 bytes as they move, a chunk at a time.
    typealias Moved = @Sendable (Int64) -> Void

    /// Carries out one action; `moved` is told of its MP3 bytes as they move.
    func perform(_ action: PlannedAction, _ context: Context, moved: Moved?) async throws -> Outcome {
        let key = action.key
        do {
            switch action.action {
            case .upload: return try await upload(action, context, moved)
            case .download: return try await download(action, context, moved)
            case .merge: return try await merge(action, context, moved)
            case .deleteRemote:
                for file in action.remote?.allFiles ?? [] { try await drive.delete(file.id) }
                try await library.forgetSynced(key, queuedAt: context.queuedAt(key))
                return Outcome(key: key, result: .done(.deleteRemote, conflict: false))
            case .deleteLocal:
                // Only clips are deleted here: books are archived, never deleted (`SyncPlanner`).
                guard case .clip(let clipID) = key else { return Outcome(key: key, result: .nothing) }
                try await applyRemote(key, context, trash: .deleted) { writer in
                    try writer.deleteClip(id: clipID, audioPath: library.audioPath(clipID: clipID))
                    try writer.saveExtras(key, [:])
                }
                library.removeAudio(clipID: clipID)
                try await library.forgetSynced(key, queuedAt: nil)
                return Outcome(key: key, result: .done(.deleteLocal, conflict: false))
            }
        } catch {
            if context.fromMirror, (error as? DriveError)?.kind == .notFound {
                // A file the mirror listed is gone: the mirror drifted from Drive (or another
                // device was quicker). The next sync lists Drive in full and rebuilds it.
                logger.warning(
                    "a mirrored file is gone on Drive; the next sync lists in full", metadata: ["entity": "\(key)"])
                try? await library.clearDriveMirror()
            }
            switch SyncFailure.of(error) {
            case .stopsSync(let error): throw error
            case .changedDuringSync: return Outcome(key: key, result: .nothing)
            case .unusableRemote(let file, let reason):
                // Said with what comes of it: a JSON file no sync can use stays skipped until it
                // changes on Drive, and `ivy check` says what to do about it.
                let said =
                    file.hasSuffix(".json")
                    ? reason + "; every sync skips it until it changes on Drive (`ivy check` says what to do)" : reason
                return Outcome(key: key, result: .skipped(file, said))
            case .permanent(let message): return await failed(action, context, message, retryable: false)
            case .retryable(let message): return await failed(action, context, message, retryable: true)
            }
        }
    }

    /// Records a failed item. Only a push has a local change to retry: a failed download or
    /// local delete is reported and planned afresh next time (a queue row would turn it into
    /// a push).
    func failed(_ action: PlannedAction, _ context: Context, _ message: String, retryable: Bool) async -> Outcome {
        let key = action.key
        if [.upload, .merge, .deleteRemote].contains(action.action) {
            let exists = context.snapshot.updatedAt(key) != nil
            try? await library.recordFailure(
                key, operation: exists ? .upsert : .delete, message: message, retryable: retryable)
        }
        return Outcome(key: key, result: .failed(message))
    }

    /// Applies Drive's content to the library in one transaction, unless the local row
    /// changed since the plan was made (its `updated_at` is not the one the plan saw): then
    /// nothing is written and the item waits for the next sync. The agreement is recorded
    /// and staged audio placed in that same transaction, after the check, so a change made
    /// here meanwhile (a new recording included) is never overwritten.
    ///
    /// What the write removes or changes here is kept in the local trash first, as `reason`
    /// says (unless `trash_days` is 0): the entity as it was, and its MP3 when the write
    /// deletes the clip or replaces the MP3 with other bytes. The entry is written in the same
    /// transaction, and the MP3 linked (or copied) into the trash directory and flushed before
    /// the old audio is replaced and before the commit; so once the change is visible its
    /// trash entry is too. A run killed after the MP3 reached the trash and before the commit
    /// leaves an MP3 no entry names. The old audio may already have been replaced by then (it
    /// is renamed over inside the transaction), so that MP3 can be its only copy: the purge
    /// keeps such a file as long as an entry would be kept, and a failed commit after the
    /// rename keeps it too.
    ///
    /// The conflicts a merge resolved are recorded in the same transaction, after the write,
    /// with the history version it made.
    func applyRemote(
        _ key: EntityKey, _ context: Context, recording agreement: Agreement? = nil, settling: Bool = true,
        audio staged: StagedAudio? = nil, conflicts: [Merge.Conflict] = [], trash reason: TrashReason,
        _ write: @Sendable (EngineWriter) throws -> Void
    ) async throws {
        let expected = context.snapshot.updatedAt(key)
        // A book has no audio: none is kept, replaced or placed for it.
        let audioPath = key.clipID.map { library.audioPath(clipID: $0) }
        var replacesAudio = false
        if context.keepsTrash, let staged { replacesAudio = try await replacesOtherAudio(key, with: staged) }
        // New bytes for the clip's MP3 are a version of the clip, even under the same JSON.
        var newAudio = replacesAudio
        if !newAudio, let staged { newAudio = try await bringsOtherAudio(key, with: staged) }
        // Set inside the transaction, read when it did not commit.
        let kept = SharedValue<String?>(nil)
        let placed = SharedValue(false)
        do {
            try await library.applyingRemoteChanges { [replacesAudio, newAudio] writer in
                guard try writer.updatedAt(key) == expected else { throw SyncFailure.changedDuringSync }
                let before = context.keepsTrash ? try writer.trashable(key) : nil
                // The MP3 the download replaces stays in the history, named by the versions it belongs to.
                if staged != nil, let clipID = key.clipID, let audioPath {
                    try writer.keepAudioInHistory(clipID: clipID, audioPath: audioPath)
                }
                let versionBefore = conflicts.isEmpty ? nil : try writer.latestVersion(key)
                if newAudio, let clipID = key.clipID {
                    try writer.recordingAudioChange(clipID: clipID) { try write(writer) }
                } else {
                    try write(writer)
                }
                try writer.recordConflicts(conflicts, of: key, at: clock.now(), versionBefore: versionBefore)
                if let before {
                    let after = try writer.trashable(key)
                    let deleted = after == nil
                    if deleted || replacesAudio || !before.sameContent(as: after ?? before) {
                        kept.set(
                            try writer.keepInTrash(
                                before, reason: reason, audio: deleted || replacesAudio ? audioPath : nil,
                                at: clock.now()))
                    }
                }
                if let agreement {
                    try writer.recordSynced(
                        agreement.entry, base: agreement.base, queuedAt: settling ? context.queuedAt(key) : nil)
                }
                if let staged, let audioPath {
                    try writer.placeAudio(staged.path, at: audioPath)
                    placed.set(true)
                }
            }
        } catch {
            // Nothing was committed. The MP3 kept for the entry that was not is removed, unless
            // the old audio was already replaced: then it is that audio's only copy, and the
            // purge removes it after `trash_days`.
            if let kept = kept.current, !placed.current { unlink(kept) }
            throw error
        }
    }

    /// Whether placing `staged` would replace a clip's MP3 here with other bytes.
    func replacesOtherAudio(_ key: EntityKey, with staged: StagedAudio) async throws -> Bool {
        guard let clipID = key.clipID, let local = try await library.audioMD5(clipID: clipID) else { return false }
        return try LocalFile.md5(of: URL(fileURLWithPath: staged.path)) != local
    }

    /// Whether placing `staged` gives the clip here other audio than it has (or audio it lacks).
    func bringsOtherAudio(_ key: EntityKey, with staged: StagedAudio) async throws -> Bool {
        guard let clipID = key.clipID, let local = try await library.audioMD5(clipID: clipID) else { return true }
        return try LocalFile.md5(of: URL(fileURLWithPath: staged.path)) != local
    }

    /// Records an agreement reached by a push (nothing was applied locally).
    func recordPushed(_ agreement: Agreement, _ context: Context) async throws {
        try await library.recordSynced(
            agreement.entry, base: agreement.base, queuedAt: context.queuedAt(agreement.entry.key))
    }
}
