import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySystem
import Logging

/// Why an operation did not finish, and what that means for the rest of the sync. The rule
/// is written once, in `SyncFailure.of(_:)`, and every operation goes through it:
///
/// - **The whole sync stops** (`stopsSync`) when no later item could do better: the sign-in
///   gave no access token (a `GoogleError`: signed out, client refused, Google unreachable),
///   so every later request would fail the same way; the disk under the home is full or
///   read-only (`StorageError`), so every later write would; or the sync was cancelled (its deadline
///   passed: what was in flight is not that item's failure). What finished before is
///   already recorded.
/// - **One item fails** for everything else, and the sync goes on:
///   - `unusableRemote`: Drive's copy cannot be used (over a size cap, unreadable, malformed,
///     another id, a clip without its MP3). Reported as skipped, never applied, and not a
///     failure that would repeat every run.
///   - `changedDuringSync`: the local row changed while the sync ran. Nothing is written; the
///     next sync plans it afresh.
///   - `permanent`: a local cause no retry can fix (audio missing or over the cap, an entity
///     that cannot be encoded, unreadable kept keys). A push is held back at once.
///   - `retryable`: anything else, every answer from Drive included (one odd 400 must not
///     bury a change). A push counts one attempt and is retried until
///     `QueueItem.maximumAttempts`.
enum SyncFailure: Error {
    case stopsSync(any Error)
    case unusableRemote(file: String, reason: String)
    case changedDuringSync
    case permanent(String)
    case retryable(String)

    /// What an error thrown while carrying out one item means for the sync.
    static func of(_ error: any Error) -> SyncFailure {
        switch error {
        case let error as GoogleError: .stopsSync(error)
        // A full or read-only disk fails every later download and write the same way.
        case let error as StorageError: .stopsSync(error)
        case is CancellationError: .stopsSync(CancellationError())
        case let failure as SyncFailure where !failure.failsTheItem: failure
        // Stopped at the deadline: what was in flight is not this item's failure.
        case _ where Task.isCancelled: .stopsSync(CancellationError())
        case let failure as SyncFailure: failure
        default: .retryable(error.localizedDescription)
        }
    }

    /// Whether the item is reported as failed (and a push retried or held back).
    var failsTheItem: Bool {
        switch self {
        case .permanent, .retryable: true
        case .stopsSync, .unusableRemote, .changedDuringSync: false
        }
    }
}

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
            remoteMP3FileID: mp3ID, syncedAt: syncedAt)
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
                try library.forgetSynced(key, queuedAt: context.queuedAt(key))
                return Outcome(key: key, result: .done(.deleteRemote, conflict: false))
            case .deleteLocal:
                // Only clips are deleted here: books are archived, never deleted (`SyncPlanner`).
                guard case .clip(let clipID) = key else { return Outcome(key: key, result: .nothing) }
                try applyRemote(key, context, trash: .deleted) { writer in
                    try writer.deleteClip(id: clipID, audioPath: library.audioPath(clipID: clipID))
                    try writer.saveExtras(key, [:])
                }
                library.removeAudio(clipID: clipID)
                try library.forgetSynced(key, queuedAt: nil)
                return Outcome(key: key, result: .done(.deleteLocal, conflict: false))
            }
        } catch {
            if context.fromMirror, (error as? DriveError)?.kind == .notFound {
                // A file the mirror listed is gone: the mirror drifted from Drive (or another
                // device was quicker). The next sync lists Drive in full and rebuilds it.
                logger.warning(
                    "a mirrored file is gone on Drive; the next sync lists in full", metadata: ["entity": "\(key)"])
                try? library.clearDriveMirror()
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
            case .permanent(let message): return failed(action, context, message, retryable: false)
            case .retryable(let message): return failed(action, context, message, retryable: true)
            }
        }
    }

    /// Records a failed item. Only a push has a local change to retry: a failed download or
    /// local delete is reported and planned afresh next time (a queue row would turn it into
    /// a push).
    private func failed(_ action: PlannedAction, _ context: Context, _ message: String, retryable: Bool) -> Outcome {
        let key = action.key
        if [.upload, .merge, .deleteRemote].contains(action.action) {
            let exists = context.snapshot.updatedAt(key) != nil
            try? library.recordFailure(
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
    private func applyRemote(
        _ key: EntityKey, _ context: Context, recording agreement: Agreement? = nil, settling: Bool = true,
        audio staged: StagedAudio? = nil, conflicts: [Merge.Conflict] = [], trash reason: TrashReason,
        _ write: (EngineWriter) throws -> Void
    ) throws {
        let expected = context.snapshot.updatedAt(key)
        // A book has no audio: none is kept, replaced or placed for it.
        let audioPath = key.clipID.map { library.audioPath(clipID: $0) }
        var replacesAudio = false
        if context.keepsTrash, let staged { replacesAudio = try replacesOtherAudio(key, with: staged) }
        // New bytes for the clip's MP3 are a version of the clip, even under the same JSON.
        let newAudio = try staged.map { try replacesAudio || bringsOtherAudio(key, with: $0) } ?? false
        var kept: String?
        var placed = false
        do {
            try library.applyingRemoteChanges { writer in
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
                        kept = try writer.keepInTrash(
                            before, reason: reason, audio: deleted || replacesAudio ? audioPath : nil, at: clock.now())
                    }
                }
                if let agreement {
                    try writer.recordSynced(
                        agreement.entry, base: agreement.base, queuedAt: settling ? context.queuedAt(key) : nil)
                }
                if let staged, let audioPath {
                    try writer.placeAudio(staged.path, at: audioPath)
                    placed = true
                }
            }
        } catch {
            // Nothing was committed. The MP3 kept for the entry that was not is removed, unless
            // the old audio was already replaced: then it is that audio's only copy, and the
            // purge removes it after `trash_days`.
            if let kept, !placed { unlink(kept) }
            throw error
        }
    }

    /// Whether placing `staged` would replace a clip's MP3 here with other bytes.
    private func replacesOtherAudio(_ key: EntityKey, with staged: StagedAudio) throws -> Bool {
        guard let clipID = key.clipID, let local = try library.audioMD5(clipID: clipID) else { return false }
        return try LocalFile.md5(of: URL(fileURLWithPath: staged.path)) != local
    }

    /// Whether placing `staged` gives the clip here other audio than it has (or audio it lacks).
    private func bringsOtherAudio(_ key: EntityKey, with staged: StagedAudio) throws -> Bool {
        guard let clipID = key.clipID, let local = try library.audioMD5(clipID: clipID) else { return true }
        return try LocalFile.md5(of: URL(fileURLWithPath: staged.path)) != local
    }

    /// Records an agreement reached by a push (nothing was applied locally).
    private func recordPushed(_ agreement: Agreement, _ context: Context) throws {
        try library.recordSynced(agreement.entry, base: agreement.base, queuedAt: context.queuedAt(agreement.entry.key))
    }

    // MARK: upload

    private func upload(_ action: PlannedAction, _ context: Context, _ moved: Moved?) async throws -> Outcome {
        let key = action.key
        switch key {
        case .book(let id):
            guard let book = try library.book(id: id) else { return Outcome(key: key, result: .nothing) }
            let backup = BookBackup(book, extras: try localExtras(key))
            try await push(book: backup, replacing: action.remote, context)
        case .clip(let id):
            guard let clip = try library.clip(id: id) else { return Outcome(key: key, result: .nothing) }
            let backup = ClipBackup(clip, extras: try localExtras(key))
            let bytes = try await push(clip: backup, replacing: action.remote, context, moved)
            return Outcome(key: key, result: .done(.upload, conflict: false), bytes: bytes, bytesUp: bytes)
        }
        return Outcome(key: key, result: .done(.upload, conflict: false))
    }

    /// The unknown keys kept for an entity; unreadable ones fail its push at once.
    private func localExtras(_ key: EntityKey) throws -> [String: JSONValue] {
        do {
            return try library.extras(key)
        } catch let error as StoreError {
            guard case .unreadableExtras = error else { throw error }
            throw SyncFailure.permanent(error.localizedDescription)
        }
    }

    /// Backup JSON for an upload; an entity that cannot be written exactly is never sent.
    private static func encoded<Backup: EntityBackup>(_ backup: Backup) throws -> Data {
        do {
            return try Backup.encode(backup)
        } catch {
            throw SyncFailure.permanent(error.description)
        }
    }

    /// Uploads a book's JSON over whatever files of its name exist, and records it.
    private func push(book: BookBackup, replacing remote: RemoteEntity?, _ context: Context) async throws {
        let key = EntityKey(book.id)
        let data = try Self.encoded(book)
        let files = remote?.allFiles ?? []
        if !files.isEmpty { try library.recordReplaceCutShort(key) }
        let uploaded = try await replaceJSON(
            key, data: data, folder: context.folders.books[0], replacing: files, context)
        try recordPushed(
            Agreement(
                key, localUpdatedAt: book.updatedAt, jsonID: uploaded.id, jsonModifiedTime: uploaded.modifiedTime,
                json: data, syncedAt: clock.now()),
            context)
    }

    /// Uploads a clip: JSON, then the MP3 (kept when Drive already has the same bytes). If
    /// the MP3 of a clip new to Drive fails, its JSON is deleted again; a replaced clip keeps
    /// its new JSON so it never looks deleted. Returns the MP3 bytes sent.
    private func push(
        clip: ClipBackup, replacing remote: RemoteEntity?, _ context: Context, _ moved: Moved?
    ) async throws -> Int64 {
        let key = EntityKey(clip.id)
        let audio = URL(fileURLWithPath: library.audioPath(clipID: clip.id))
        guard library.hasAudio(clipID: clip.id) else {
            throw SyncFailure.permanent(
                "the clip's audio \(audio.path) is missing; replace it with `ivy clip update \(clip.id) --audio FILE`")
        }
        let size = try LocalFile.size(of: audio)
        if let excess = AudioRules.overLimit(size) {
            throw SyncFailure.permanent("\(audio.path) is \(excess); replace it with a shorter clip")
        }
        let data = try Self.encoded(clip)
        let md5 = try LocalFile.md5(of: audio)
        let files = remote?.allFiles ?? []
        let jsonName = key.jsonFileName
        let mp3Name = key.mp3FileName
        var keptMP3: RemoteFile?
        if let current = remote?.mp3, current.size == size, current.md5 == md5,
            !files.contains(where: { $0.name == mp3Name && $0.id != current.id })
        {
            keptMP3 = current
        }
        if !files.isEmpty { try library.recordReplaceCutShort(key) }
        let json = try await replaceJSON(
            key, data: data, folder: context.folders.clips[0], replacing: files.filter { $0.name == jsonName }, context)
        let mp3ID: DriveFileID
        if let keptMP3 {
            mp3ID = keptMP3.id
        } else {
            do {
                mp3ID = try await drive.uploadMP3(
                    name: mp3Name, file: audio, folder: context.folders.clips[0],
                    replacing: files.filter { $0.name == mp3Name }, progress: moved
                ).id
            } catch {
                // Only a clip new to Drive is rolled back. Once an older copy existed, other
                // devices hold it: with both files gone they would read the clip as deleted
                // and delete it too, while a lone new JSON reads as incomplete and is left
                // alone until this device's retry completes it.
                if files.isEmpty { await rollBack(json.id) }
                throw error
            }
        }
        try recordPushed(
            Agreement(
                key, localUpdatedAt: clip.updatedAt, jsonID: json.id, jsonModifiedTime: json.modifiedTime, mp3ID: mp3ID,
                json: data, audioMD5: md5, syncedAt: clock.now()),
            context)
        return keptMP3 == nil ? size : 0
    }

    /// Uploads an entity's JSON over the files of its name: those are deleted, then the new
    /// one is made. A replace that stops after its deletes (a failed create, or ivy killed)
    /// leaves the entity missing on Drive by this device's own doing, so the next sync must
    /// put it back at once rather than wait out the grace meant for other devices' replaces:
    /// each push records that before its first delete (`recordReplaceCutShort`), and
    /// `recordPushed` clears it.
    private func replaceJSON(
        _ key: EntityKey, data: Data, folder: DriveFileID, replacing files: [RemoteFile], _ context: Context
    ) async throws -> UploadedFile {
        var deleted = 0
        do {
            for file in files {
                try await drive.delete(file.id)
                deleted += 1
            }
        } catch {
            // Nothing deleted, nothing of this device's own making is missing: the mark goes, or
            // another device's replace seen later would not get its grace.
            if deleted == 0, !files.isEmpty {
                try? library.withdrawReplaceMark(key, restoring: context.manifest[key]?.missingSince)
            }
            throw error
        }
        return try await drive.uploadJSON(name: key.jsonFileName, data: data, folder: folder, replacing: [])
    }

    /// Deletes a clip JSON whose MP3 did not make it; tried up to three times.
    private func rollBack(_ id: DriveFileID) async {
        for attempt in 1...3 {
            do {
                try await drive.delete(id)
                return
            } catch {
                logger.warning(
                    "rolling back a clip JSON failed",
                    metadata: ["attempt": "\(attempt)", "error": "\(error.localizedDescription)"])
            }
        }
    }

    // MARK: download

    /// A backup JSON from Drive, decoded: over the size cap, unreadable or malformed, it is
    /// unusable (skipped and reported, never applied, not a failure that repeats every run).
    private func fetch<Backup: EntityBackup>(_ json: RemoteFile) async throws -> Fetched<Backup> {
        guard let id = (EntityFileName(parsing: json.name)?.key.id).map(Backup.ID.init) else {
            throw SyncFailure.unusableRemote(file: json.name, reason: "not a \(Backup.kind.rawValue) file")
        }
        if let size = json.size, size > BackupCodec.maximumBytes {
            let limit = AudioRules.grouped(Int64(BackupCodec.maximumBytes))
            throw SyncFailure.unusableRemote(
                file: json.name,
                reason: "\(AudioRules.grouped(size)) bytes, over the \(limit)-byte limit for backup JSON")
        }
        let data: Data
        do {
            data = try await drive.downloadData(json, limit: BackupCodec.maximumBytes)
        } catch let error as DriveError where error.kind == .fileTooLarge {
            throw SyncFailure.unusableRemote(file: json.name, reason: error.localizedDescription)
        }
        let backup: Backup
        do {
            backup = try Backup.decode(data, expectedID: id)
        } catch {
            throw SyncFailure.unusableRemote(file: json.name, reason: error.reason)
        }
        guard let clamped = backup.clampedToNow(clock.now()) else {
            return Fetched(json: json, data: data, backup: backup)
        }
        logger.warning(
            "a time on Drive is more than a day ahead of this clock; taken as now",
            metadata: [
                "file": "\(json.name)", "updated_at": "\(backup.updatedAt)", "created_at": "\(backup.createdAt)",
            ])
        return Fetched(json: json, data: data, backup: clamped)
    }

    /// What the copies of an entity on Drive were made from, to merge them against: the base,
    /// except when one of them is the file this device last recorded (its own upload, or one it
    /// adopted): the others were made from what came before it, the base before the last.
    private func twinBase<Backup: EntityBackup>(_ key: EntityKey, _ remote: RemoteEntity?, _ context: Context)
        -> Backup?
    {
        let files = ([remote?.json].compactMap { $0 } + (remote?.jsonTwins ?? [])).map(\.id)
        if let recorded = context.manifest[key]?.remoteFileID, files.contains(recorded), files.count > 1 {
            guard let prior = try? library.priorBase(key) else { return nil }
            return try? Backup.decode(prior, expectedID: Backup.ID(key.id))
        }
        return base(key).backup
    }

    /// Drive's copy of the entity: its JSON file, or all of them when several carry its name
    /// (`Resolved`), merged against `twinBase`. A copy deleted meanwhile (by another device
    /// resolving them too) is gone; an unreadable one is left alone and logged, never deleted
    /// unread. Only when none can be used is the entity's copy unusable.
    private func fetchResolved<Backup: EntityBackup>(
        _ remote: RemoteEntity?, _ key: EntityKey, _ context: Context, now: Milliseconds
    ) async throws -> Resolved<Backup> {
        guard let json = remote?.json else {
            throw SyncFailure.unusableRemote(file: Backup.kind.rawValue, reason: "no JSON on Drive")
        }
        let twins = remote?.jsonTwins ?? []
        guard !twins.isEmpty else {
            let fetched: Fetched<Backup>
            do {
                fetched = try await fetch(json)
            } catch SyncFailure.unusableRemote(let name, let reason) {
                // Remembered as it is, so `ivy check` can say that every sync skips it and what to
                // do. With no usable copy beside it nothing is set aside: syncs read it and say so.
                try library.rememberUnreadable(
                    UnreadableDriveFile(
                        key: key, fileID: json.id, name: json.name, modifiedTime: json.modifiedTime, md5: json.md5,
                        reason: reason, readAt: now))
                throw SyncFailure.unusableRemote(file: name, reason: reason)
            }
            return Resolved(
                chosen: fetched, value: fetched.backup, others: [], stamps: [json.id: fetched.backup.updatedAt])
        }
        let base: Backup? = twinBase(key, remote, context)
        var copies: [Fetched<Backup>] = []
        var unreadable: [RemoteFile] = []
        var firstProblem: (any Error)?
        for file in [json] + twins {
            do {
                copies.append(try await fetch(file))
            } catch let error as DriveError where error.kind == .notFound {
                continue
            } catch let failure as SyncFailure where !failure.failsTheItem {
                guard case .unusableRemote(let name, let reason) = failure else { throw failure }
                logger.warning(
                    "an unreadable copy among several files of one name, left alone",
                    metadata: ["file": "\(name)", "id": "\(file.id)", "reason": "\(reason)"])
                // Remembered as it is, so later syncs leave it alone without reading it again.
                try library.rememberUnreadable(
                    UnreadableDriveFile(
                        key: key, fileID: file.id, name: file.name, modifiedTime: file.modifiedTime, md5: file.md5,
                        reason: reason, readAt: now))
                firstProblem = firstProblem ?? failure
                unreadable.append(file)
            }
        }
        // Newest content first; Drive's clock and the id only break ties, the same on every device.
        copies.sort { a, b in
            (a.backup.updatedAt, a.json.modifiedTime, a.json.id) > (b.backup.updatedAt, b.json.modifiedTime, b.json.id)
        }
        guard let chosen = copies.first else { throw firstProblem ?? SyncFailure.changedDuringSync }
        var value = chosen.backup
        for other in copies.dropFirst() {
            let merged = Backup.merged(local: value, remote: other.backup, base: base, now: now).value
            // A copy that adds nothing keeps the chosen one's stamps, so it can be adopted as it is.
            if !merged.sameContent(as: value) { value = merged }
        }
        return Resolved(
            chosen: chosen, value: value, others: copies.dropFirst().map(\.json), unreadable: unreadable,
            stamps: Dictionary(copies.map { ($0.json.id, $0.backup.updatedAt) }, uniquingKeysWith: max))
    }

    /// Deletes the other files of an entity's name once one of them is recorded as Drive's
    /// copy. One left (a failed request) is read again, and deleted, by the next sync.
    private func deleteTwins(_ files: [RemoteFile]) async {
        for file in files {
            do {
                try await drive.delete(file.id)
            } catch {
                logger.warning(
                    "deleting a twin file failed; the next sync tries again",
                    metadata: ["file": "\(file.name)", "error": "\(error.localizedDescription)"])
            }
        }
    }

    /// A clip's MP3 as listed; one over the cap makes the clip unusable.
    private func usableMP3(_ remote: RemoteEntity?) throws -> RemoteFile {
        guard let mp3 = remote?.mp3 else {
            throw SyncFailure.unusableRemote(file: "clip", reason: "incomplete on Drive")
        }
        if let size = mp3.size, let excess = AudioRules.overLimit(size) {
            throw SyncFailure.unusableRemote(file: mp3.name, reason: excess)
        }
        return mp3
    }

    /// Drive's copy written here. Of several files of one name whose merge none of them holds
    /// (each has an edit the others lack), the merge is written here and uploaded over them all.
    private func download(_ action: PlannedAction, _ context: Context, _ moved: Moved?) async throws -> Outcome {
        let key = action.key
        let now = clock.now()
        switch key {
        case .book:
            let resolved: Resolved<BookBackup> = try await fetchResolved(
                action.remote, key, context, now: now)
            let adopt = resolved.adoptable
            let agreement = adopt ? resolved.chosen.agreement(at: now) : nil
            let value = adopt ? resolved.chosen.backup : try Self.pushable(resolved.value)
            try applyRemote(key, context, recording: agreement, trash: .download) { try value.save(in: $0) }
            if adopt {
                await deleteTwins(resolved.others)
            } else {
                try await push(book: value, replacing: resolved.replacing(action.remote), context)
            }
            return Outcome(key: key, result: .done(.download, conflict: false))
        case .clip(let clipID):
            let resolved: Resolved<ClipBackup> = try await fetchResolved(
                action.remote, key, context, now: now)
            let twins = try await resolveAudio(action.remote, key, context, stamps: resolved.stamps, moved)
            defer { discard(twins) }
            let remote = twins.remote
            let mp3 = try usableMP3(remote)
            let adopt = resolved.adoptable
            let value = adopt ? resolved.chosen.backup : try Self.pushable(resolved.value)
            let audioKept = context.manifest[key]?.remoteMP3FileID == mp3.id && library.hasAudio(clipID: clipID)
            let staged = audioKept ? nil : try await stageAudio(mp3, moved)
            defer { if let staged { library.discardStagedAudio(staged.path) } }
            let audioFile = URL(fileURLWithPath: staged?.path ?? library.audioPath(clipID: clipID))
            let audioMD5 = try mp3.md5 ?? LocalFile.md5(of: audioFile)
            let agreement = adopt ? resolved.chosen.agreement(mp3: mp3, audioMD5: audioMD5, at: now) : nil
            try applyRemote(
                key, context, recording: agreement, audio: staged, conflicts: twins.conflicts, trash: .download
            ) { writer in
                try keepLosingTakes(twins, of: clipID, json: resolved.chosen.data, in: writer)
                try value.save(in: writer)
            }
            if adopt {
                await deleteTwins(resolved.others + twins.obsolete)
            } else {
                _ = try await push(clip: value, replacing: resolved.replacing(remote), context, nil)
            }
            let bytes = (staged?.bytes ?? 0) + twins.losers.reduce(0) { $0 + $1.staged.bytes }
            return Outcome(key: key, result: .done(.download, conflict: twins.conflict), bytes: bytes, bytesDown: bytes)
        }
    }

    /// Downloads an MP3 (checked against Drive's size and md5) to a staging file beside the
    /// audio; it is moved into place only inside the transaction that checks its row.
    func stageAudio(_ mp3: RemoteFile, _ moved: Moved?) async throws -> StagedAudio {
        let staged = try library.downloadStagingPath()
        do {
            try await drive.downloadFile(mp3, to: URL(fileURLWithPath: staged), progress: moved)
        } catch {
            library.discardStagedAudio(staged)
            throw error
        }
        return StagedAudio(path: staged, bytes: mp3.size ?? 0)
    }

    // MARK: merge

    /// The base of a three-way merge, decoded; nil (two-way rules) when none was recorded
    /// or it cannot be read.
    private func base<Backup: EntityBackup>(_ key: EntityKey) -> (backup: Backup?, audioMD5: String?) {
        guard let base = try? library.base(key) else { return (nil, nil) }
        return (try? Backup.decode(base.json, expectedID: Backup.ID(key.id)), base.audioMD5)
    }

    /// Merges both sides' changes. When the merge changes nothing of Drive's copy it is
    /// adopted exactly (its `updated_at` included) so every device ends with identical rows;
    /// otherwise the merge is applied here and pushed. Drive's copy unreadable: the local
    /// one replaces it.
    private func merge(_ action: PlannedAction, _ context: Context, _ moved: Moved?) async throws -> Outcome {
        do {
            switch action.key.kind {
            case .book: return try await mergeBook(action, context)
            case .clip: return try await mergeClip(action, context, moved)
            }
        } catch SyncFailure.unusableRemote(let file, let reason) {
            let outcome = try await upload(action, context, moved)
            var reported = outcome
            if case .done = outcome.result { reported.result = .done(.upload, conflict: false) }
            logger.warning("replaced an unreadable Drive file", metadata: ["file": "\(file)", "reason": "\(reason)"])
            return reported
        }
    }

    private func mergeBook(_ action: PlannedAction, _ context: Context) async throws -> Outcome {
        let key = action.key
        let now = clock.now()
        let base: BookBackup? = base(key).backup
        let resolved: Resolved<BookBackup> = try await fetchResolved(action.remote, key, context, now: now)
        let remote = resolved.chosen
        guard let id = key.bookID, let local = try library.book(id: id),
            local.updatedAt == context.snapshot.updatedAt(key)
        else {
            return Outcome(key: key, result: .nothing)
        }
        let mine = BookBackup(local, extras: try localExtras(key))
        let combined = Merge.bookMerge(local: mine, remote: resolved.value, base: base, now: now)
        let adopt = resolved.adoptable && combined.value.sameContent(as: remote.backup)
        let merged = adopt ? remote.backup : try Self.pushable(combined.value)
        // Drive's copy is the base from here on, even before the merge is uploaded: a sync
        // killed or failing in between merges Drive's next edit against what this one took.
        let recorded = adopt || resolved.others.isEmpty ? remote.agreement(at: now) : nil
        try applyRemote(
            key, context, recording: recorded, settling: adopt, conflicts: combined.conflicts, trash: .merge
        ) { try merged.save(in: $0) }
        if adopt {
            await deleteTwins(resolved.others)
        } else {
            try await push(book: merged, replacing: resolved.replacing(action.remote), context)
        }
        // Both sides already held this content (an upload that reached Drive before its sync
        // was stopped or killed could record it): the record is made, and nothing was merged.
        if adopt && resolved.others.isEmpty && mine.sameContent(as: remote.backup) {
            return Outcome(key: key, result: .nothing)
        }
        return Outcome(key: key, result: .done(.merge, conflict: !combined.conflicts.isEmpty))
    }

    /// A clip's merge is a book's with the audio as one more field (`Merge.audio`). Drive may
    /// hold the JSON without its MP3 (another device between the two files of its replace, or
    /// cut short there): the audio here is then the clip's, and the merge is uploaded whole.
    private func mergeClip(_ action: PlannedAction, _ context: Context, _ moved: Moved?) async throws -> Outcome {
        let key = action.key
        let now = clock.now()
        let base: (backup: ClipBackup?, audioMD5: String?) = base(key)
        let resolved: Resolved<ClipBackup> = try await fetchResolved(action.remote, key, context, now: now)
        let remote = resolved.chosen
        let twins = try await resolveAudio(action.remote, key, context, stamps: resolved.stamps, moved)
        defer { discard(twins) }
        let files = twins.remote
        let mp3 = files?.mp3 == nil ? nil : try usableMP3(files)
        guard let clipID = key.clipID, let local = try library.clip(id: clipID),
            local.updatedAt == context.snapshot.updatedAt(key)
        else {
            return Outcome(key: key, result: .nothing)
        }
        let mine = ClipBackup(local, extras: try localExtras(key))
        let combined = Merge.clipMerge(local: mine, remote: resolved.value, base: base.backup, now: now)
        let localMD5 = try library.audioMD5(clipID: clipID)
        let audio = mp3.map { mp3 in
            Merge.audioMerge(
                Merge.AudioState(
                    localMD5: localMD5, localUpdatedAt: local.updatedAt, remoteMD5: mp3.md5, remoteFileID: mp3.id,
                    remoteUpdatedAt: remote.backup.updatedAt, baseMD5: base.audioMD5,
                    baseFileID: context.manifest[key]?.remoteMP3FileID))
        }
        let takesRemoteAudio = audio?.choice == .remote && localMD5 != mp3?.md5
        let adopt =
            resolved.adoptable && combined.value.sameContent(as: remote.backup)
            && (audio?.choice == .remote || (mp3 != nil && localMD5 == mp3?.md5))
        let merged = adopt ? remote.backup : try Self.pushable(combined.value)
        let staged = takesRemoteAudio ? try await stageAudio(try usableMP3(files), moved) : nil
        defer { if let staged { library.discardStagedAudio(staged.path) } }
        // Both sides changed the audio and the take here won: the upload will replace Drive's
        // take, so it is read first and kept in the history here as a version of the clip. A
        // failed download stops the merge before anything is written or replaced; the next
        // sync tries again.
        let replaced =
            audio?.conflict != nil && audio?.choice == .local && localMD5 != mp3?.md5
            ? try await stageAudio(try usableMP3(files), moved) : nil
        defer { if let replaced { library.discardStagedAudio(replaced.path) } }
        // Drive's copy is the base from here on, even before a merge is uploaded (see mergeBook).
        let agreement = mp3.flatMap { mp3 in
            adopt || resolved.others.isEmpty
                ? remote.agreement(mp3: mp3, audioMD5: adopt ? mp3.md5 ?? localMD5 : mp3.md5, at: now) : nil
        }
        let conflicts = combined.conflicts + [audio?.conflict].compactMap { $0 } + twins.conflicts
        try applyRemote(
            key, context, recording: agreement, settling: adopt, audio: staged, conflicts: conflicts, trash: .merge
        ) { writer in
            try keepLosingTakes(twins, replaced: replaced, of: clipID, json: remote.data, in: writer)
            try merged.save(in: writer)
        }
        let down =
            (staged?.bytes ?? 0) + (replaced?.bytes ?? 0) + twins.losers.reduce(0) { $0 + $1.staged.bytes }
        if adopt { await deleteTwins(resolved.others + twins.obsolete) }
        let up = adopt ? 0 : try await push(clip: merged, replacing: resolved.replacing(files), context, moved)
        let conflict = !conflicts.isEmpty
        // As for a book: both sides held this clip and its audio already; only the record was missing.
        if adopt && resolved.others.isEmpty && mine.sameContent(as: remote.backup) && localMD5 == mp3?.md5
            && !twins.conflict
        {
            return Outcome(key: key, result: .nothing)
        }
        return Outcome(
            key: key, result: .done(.merge, conflict: conflict), bytes: up + down, bytesUp: up, bytesDown: down)
    }

    /// A merge to write here and upload, refused before anything is written when it could
    /// not be pushed.
    private static func pushable<Backup: EntityBackup>(_ merged: Backup) throws -> Backup {
        _ = try encoded(merged)
        return merged
    }
}
