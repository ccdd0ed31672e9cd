import Foundation
import IvyCore
import IvyGoogle
import IvyStore

/// A remote file that cannot be used: reported and skipped, never applied.
struct UnusableRemote: Error {
    let file: String
    let reason: String
}

/// A local cause no retry can fix (audio missing, over a cap, cannot be encoded, unreadable
/// kept keys): the item fails at once. Every answer from Drive is worth another sync.
struct PermanentFailure: Error {
    let message: String
}

/// The local entity changed while the sync ran: leave it for the next sync.
struct ChangedDuringSync: Error {}

extension SyncEngine {
    func perform(_ action: PlannedAction, _ context: Context) async throws -> Outcome {
        let key = action.key
        do {
            switch action.action {
            case .upload: return try await upload(action, context)
            case .download: return try await download(action, context)
            case .merge: return try await merge(action, context)
            case .deleteRemote:
                for file in action.remote?.allFiles ?? [] { try await drive.delete(file.id) }
                try library.forgetSynced(key, queuedAt: context.queue[key]?.queuedAt)
                return Outcome(key: key, result: .done(.deleteRemote, conflict: false))
            case .deleteLocal:
                let expected = context.snapshot.updatedAt(key)
                try library.applyingRemoteChanges { writer in
                    guard try writer.clip(id: key.id)?.updatedAt == expected else { throw ChangedDuringSync() }
                    try writer.deleteClip(id: key.id)
                    try writer.saveExtras(key, [:])
                }
                unlink(library.audioPath(clipID: key.id))
                try library.forgetSynced(key, queuedAt: nil)
                return Outcome(key: key, result: .done(.deleteLocal, conflict: false))
            }
        } catch let error as GoogleError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch is ChangedDuringSync {
            return Outcome(key: key, result: .nothing)
        } catch let unusable as UnusableRemote {
            return Outcome(key: key, result: .skipped(unusable.file, unusable.reason))
        } catch where Task.isCancelled {
            // Stopped at the deadline: what was in flight is not this item's failure.
            throw CancellationError()
        } catch {
            // Any answer from Drive counts one attempt for this sync, whatever it was (one odd
            // 400 must not bury a change); only a local cause no retry can fix fails at once.
            let (message, retryable): (String, Bool) =
                switch error {
                case let permanent as PermanentFailure: (permanent.message, false)
                default: (error.localizedDescription, true)
                }
            // Only a push has a local change to retry. A failed download or local delete is
            // reported and planned afresh next time: a queue row would turn it into a push.
            if [.upload, .merge, .deleteRemote].contains(action.action) {
                let exists = context.snapshot.updatedAt(key) != nil
                try? library.recordFailure(key, operation: exists ? .upsert : .delete, message: message, retryable: retryable)
            }
            return Outcome(key: key, result: .failed(message))
        }
    }

    // MARK: upload

    private func upload(_ action: PlannedAction, _ context: Context) async throws -> Outcome {
        let key = action.key
        switch key.kind {
        case .book:
            guard let book = try library.book(id: key.id) else { return Outcome(key: key, result: .nothing) }
            let backup = BookBackup(book, extras: try localExtras(key))
            try await push(book: backup, replacing: action.remote, context)
        case .clip:
            guard let clip = try library.clip(id: key.id) else { return Outcome(key: key, result: .nothing) }
            let backup = ClipBackup(clip, extras: try localExtras(key))
            let bytes = try await push(clip: backup, replacing: action.remote, context)
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
            throw PermanentFailure(message: error.localizedDescription)
        }
    }

    /// Backup JSON for an upload; an entity that cannot be written exactly is never sent.
    private static func encoded(_ encode: () throws(BackupEncodingError) -> Data) throws -> Data {
        do {
            return try encode()
        } catch {
            throw PermanentFailure(message: error.description)
        }
    }

    /// Uploads a book's JSON over whatever files of its name exist, and records it.
    private func push(book: BookBackup, replacing remote: RemoteEntity?, _ context: Context) async throws {
        let key = EntityKey(.book, book.id)
        let data = try Self.encoded { () throws(BackupEncodingError) in try BackupCodec.encode(book) }
        let uploaded = try await drive.uploadJSON(
            name: "book_\(book.id).json", data: data, folder: context.folders.books[0],
            replacing: remote?.allFiles ?? [])
        try library.recordSynced(
            ManifestEntry(
                key: key, localUpdatedAt: book.updatedAt, remoteUpdatedAt: uploaded.modifiedTime,
                remoteFileID: uploaded.id, syncedAt: clock.now()),
            base: SyncBase(json: data), queuedAt: context.queue[key]?.queuedAt)
    }

    /// Uploads a clip: JSON, then the MP3 (kept when Drive already has the same bytes). If
    /// the MP3 of a clip new to Drive fails, its JSON is deleted again; a replaced clip keeps
    /// its new JSON so it never looks deleted. Returns the MP3 bytes sent.
    private func push(clip: ClipBackup, replacing remote: RemoteEntity?, _ context: Context) async throws -> Int64 {
        let key = EntityKey(.clip, clip.id)
        let audio = URL(fileURLWithPath: library.audioPath(clipID: clip.id))
        guard FileManager.default.fileExists(atPath: audio.path) else {
            throw PermanentFailure(
                message: "the clip's audio \(audio.path) is missing; replace it with `ivy clip update \(clip.id) --audio FILE`")
        }
        let size = try DriveClient.fileSize(audio)
        guard size <= AudioRules.maximumBytes else {
            throw PermanentFailure(
                message: "\(audio.path) is \(AudioRules.grouped(size)) bytes, over the 50 MB clip limit; "
                    + "replace it with a shorter clip")
        }
        let data = try Self.encoded { () throws(BackupEncodingError) in try BackupCodec.encode(clip) }
        let md5 = try DriveClient.md5(of: audio)
        let files = remote?.allFiles ?? []
        let jsonName = "clip_\(clip.id).json", mp3Name = "clip_\(clip.id).mp3"
        var keptMP3: RemoteFile?
        if let current = remote?.mp3, current.size == size, current.md5 == md5,
            !files.contains(where: { $0.name == mp3Name && $0.id != current.id })
        {
            keptMP3 = current
        }
        let json = try await drive.uploadJSON(
            name: jsonName, data: data, folder: context.folders.clips[0],
            replacing: files.filter { $0.name == jsonName })
        let mp3ID: String
        if let keptMP3 {
            mp3ID = keptMP3.id
        } else {
            do {
                mp3ID = try await drive.uploadMP3(
                    name: mp3Name, file: audio, folder: context.folders.clips[0],
                    replacing: files.filter { $0.name == mp3Name }
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
        try library.recordSynced(
            ManifestEntry(
                key: key, localUpdatedAt: clip.updatedAt, remoteUpdatedAt: json.modifiedTime, remoteFileID: json.id,
                remoteMP3FileID: mp3ID, syncedAt: clock.now()),
            base: SyncBase(json: data, audioMD5: md5), queuedAt: context.queue[key]?.queuedAt)
        return keptMP3 == nil ? size : 0
    }

    /// Deletes a clip JSON whose MP3 did not make it; tried up to three times.
    private func rollBack(_ id: String) async {
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

    /// A backup JSON from Drive: over the size cap, unreadable or malformed, it is unusable
    /// (skipped and reported, never applied, not a failure that repeats every run).
    private func fetchJSON(_ json: RemoteFile) async throws -> Data {
        if let size = json.size, size > BackupCodec.maximumBytes {
            throw UnusableRemote(
                file: json.name,
                reason: "\(AudioRules.grouped(size)) bytes, over the \(AudioRules.grouped(Int64(BackupCodec.maximumBytes)))"
                    + "-byte limit for backup JSON")
        }
        do {
            return try await drive.downloadData(json, limit: BackupCodec.maximumBytes)
        } catch let error as DriveError where error.kind == .fileTooLarge {
            throw UnusableRemote(file: json.name, reason: error.localizedDescription)
        }
    }

    private func fetchBook(_ remote: RemoteEntity?) async throws -> (BookBackup, RemoteFile, Data) {
        guard let json = remote?.json else { throw UnusableRemote(file: "book", reason: "no JSON on Drive") }
        guard let id = EntityFileName(parsing: json.name)?.key.id else {
            throw UnusableRemote(file: json.name, reason: "not a book file")
        }
        let data = try await fetchJSON(json)
        do {
            return (try BackupCodec.decodeBook(data, expectedID: id), json, data)
        } catch {
            throw UnusableRemote(file: json.name, reason: error.reason)
        }
    }

    private func fetchClip(_ remote: RemoteEntity?) async throws -> (ClipBackup, RemoteFile, RemoteFile, Data) {
        guard let json = remote?.json, let mp3 = remote?.mp3 else {
            throw UnusableRemote(file: "clip", reason: "incomplete on Drive")
        }
        guard let id = EntityFileName(parsing: json.name)?.key.id else {
            throw UnusableRemote(file: json.name, reason: "not a clip file")
        }
        let data = try await fetchJSON(json)
        let backup: ClipBackup
        do {
            backup = try BackupCodec.decodeClip(data, expectedID: id)
        } catch {
            throw UnusableRemote(file: json.name, reason: error.reason)
        }
        if let size = mp3.size, size > AudioRules.maximumBytes {
            throw UnusableRemote(file: mp3.name, reason: "\(AudioRules.grouped(size)) bytes, over the 50 MB clip limit")
        }
        return (backup, json, mp3, data)
    }

    private func download(_ action: PlannedAction, _ context: Context) async throws -> Outcome {
        let key = action.key
        let expected = context.snapshot.updatedAt(key)
        switch key.kind {
        case .book:
            let (book, json, data) = try await fetchBook(action.remote)
            let synced = clock.now()
            try library.applyingRemoteChanges { writer in
                let current = try writer.book(id: key.id)
                guard current?.updatedAt == expected else { throw ChangedDuringSync() }
                try writer.save(book.book(uri: current?.uri))
                try writer.saveExtras(key, book.extras)
                try writer.recordSynced(
                    ManifestEntry(
                        key: key, localUpdatedAt: book.updatedAt, remoteUpdatedAt: json.modifiedTime,
                        remoteFileID: json.id, syncedAt: synced),
                    base: SyncBase(json: data), queuedAt: context.queue[key]?.queuedAt)
            }
            return Outcome(key: key, result: .done(.download, conflict: false))
        case .clip:
            let (clip, json, mp3, data) = try await fetchClip(action.remote)
            let destination = library.audioPath(clipID: key.id)
            let audioKept =
                context.manifest[key]?.remoteMP3FileID == mp3.id && FileManager.default.fileExists(atPath: destination)
            let staged = audioKept ? nil : try await stageAudio(mp3)
            defer { if let staged { unlink(staged.path) } }
            let audioMD5 = try mp3.md5 ?? DriveClient.md5(of: URL(fileURLWithPath: staged?.path ?? destination))
            let synced = clock.now()
            try library.applyingRemoteChanges { writer in
                guard try writer.clip(id: key.id)?.updatedAt == expected else { throw ChangedDuringSync() }
                try writer.save(clip.clip)
                try writer.saveExtras(key, clip.extras)
                try writer.recordSynced(
                    ManifestEntry(
                        key: key, localUpdatedAt: clip.updatedAt, remoteUpdatedAt: json.modifiedTime, remoteFileID: json.id,
                        remoteMP3FileID: mp3.id, syncedAt: synced),
                    base: SyncBase(json: data, audioMD5: audioMD5), queuedAt: context.queue[key]?.queuedAt)
                if let staged { try writer.placeAudio(staged.path, at: destination) }
            }
            let bytes = staged?.bytes ?? 0
            return Outcome(key: key, result: .done(.download, conflict: false), bytes: bytes, bytesDown: bytes)
        }
    }

    /// Downloads an MP3 (checked against Drive's size and md5) to a staging file beside the
    /// audio; the caller moves it into place only inside the transaction that checks its row.
    private func stageAudio(_ mp3: RemoteFile) async throws -> (path: String, bytes: Int64) {
        // A `.download-` name: the next sync removes it if ivy is killed before it is placed.
        try PrivateDirectory.ensure(library.paths.audioDirectory)
        let staged = library.paths.audioDirectory + "/" + TransferFiles.downloadPrefix + UUID().uuidString + ".mp3"
        do {
            try await drive.downloadFile(mp3, to: URL(fileURLWithPath: staged))
        } catch {
            unlink(staged)
            throw error
        }
        return (staged, mp3.size ?? 0)
    }

    // MARK: merge

    /// The base of a three-way merge, decoded; nil (two-way rules) when none was recorded
    /// or it cannot be read.
    private func base<Backup>(
        _ key: EntityKey, _ decode: (Data, String) throws(BackupDecodingError) -> Backup
    ) -> (backup: Backup?, audioMD5: String?) {
        guard let base = try? library.base(key) else { return (nil, nil) }
        return (try? decode(base.json, key.id), base.audioMD5)
    }

    private func merge(_ action: PlannedAction, _ context: Context) async throws -> Outcome {
        let key = action.key
        let now = clock.now()
        let expected = context.snapshot.updatedAt(key)
        do {
            switch key.kind {
            case .book:
                let (remote, json, data) = try await fetchBook(action.remote)
                guard let local = try library.book(id: key.id), local.updatedAt == expected else {
                    return Outcome(key: key, result: .nothing)
                }
                let mine = BookBackup(local, extras: try localExtras(key))
                let base = base(key) { (data, id) throws(BackupDecodingError) in
                    try BackupCodec.decodeBook(data, expectedID: id)
                }
                let combined = Merge.bookMerge(local: mine, remote: remote, base: base.backup, now: now)
                // When the merge changes nothing of Drive's copy, adopt it exactly (its updated_at
                // included) so every device ends with identical rows.
                let adopt = Self.sameContent(combined.value, remote)
                let merged = adopt ? remote : combined.value
                if !adopt { _ = try Self.encoded { () throws(BackupEncodingError) in try BackupCodec.encode(merged) } }
                try library.applyingRemoteChanges { writer in
                    guard try writer.book(id: key.id)?.updatedAt == expected else { throw ChangedDuringSync() }
                    try writer.save(merged.book(uri: local.uri))
                    try writer.saveExtras(key, merged.extras)
                    if adopt {
                        try writer.recordSynced(
                            ManifestEntry(
                                key: key, localUpdatedAt: merged.updatedAt, remoteUpdatedAt: json.modifiedTime,
                                remoteFileID: json.id, syncedAt: now),
                            base: SyncBase(json: data), queuedAt: context.queue[key]?.queuedAt)
                    }
                }
                if !adopt { try await push(book: merged, replacing: action.remote, context) }
                return Outcome(key: key, result: .done(.merge, conflict: !combined.conflicts.isEmpty))
            case .clip:
                let (remote, json, mp3, data) = try await fetchClip(action.remote)
                guard let local = try library.clip(id: key.id), local.updatedAt == expected else {
                    return Outcome(key: key, result: .nothing)
                }
                let mine = ClipBackup(local, extras: try localExtras(key))
                let base = base(key) { (data, id) throws(BackupDecodingError) in
                    try BackupCodec.decodeClip(data, expectedID: id)
                }
                let combined = Merge.clipMerge(local: mine, remote: remote, base: base.backup, now: now)
                let destination = library.audioPath(clipID: key.id)
                let localMD5 =
                    FileManager.default.fileExists(atPath: destination)
                    ? try DriveClient.md5(of: URL(fileURLWithPath: destination)) : nil
                let audio = Merge.audio(
                    Merge.AudioState(
                        localMD5: localMD5, localUpdatedAt: local.updatedAt, remoteMD5: mp3.md5, remoteFileID: mp3.id,
                        remoteUpdatedAt: remote.updatedAt, baseMD5: base.audioMD5,
                        baseFileID: context.manifest[key]?.remoteMP3FileID))
                let adopt = Self.sameContent(combined.value, remote) && (audio.choice == .remote || localMD5 == mp3.md5)
                let merged = adopt ? remote : combined.value
                if !adopt { _ = try Self.encoded { () throws(BackupEncodingError) in try BackupCodec.encode(merged) } }
                let staged = audio.choice == .remote && localMD5 != mp3.md5 ? try await stageAudio(mp3) : nil
                defer { if let staged { unlink(staged.path) } }
                try library.applyingRemoteChanges { writer in
                    guard try writer.clip(id: key.id)?.updatedAt == expected else { throw ChangedDuringSync() }
                    try writer.save(merged.clip)
                    try writer.saveExtras(key, merged.extras)
                    if adopt {
                        try writer.recordSynced(
                            ManifestEntry(
                                key: key, localUpdatedAt: merged.updatedAt, remoteUpdatedAt: json.modifiedTime,
                                remoteFileID: json.id, remoteMP3FileID: mp3.id, syncedAt: now),
                            base: SyncBase(json: data, audioMD5: mp3.md5 ?? localMD5),
                            queuedAt: context.queue[key]?.queuedAt)
                    }
                    if let staged { try writer.placeAudio(staged.path, at: destination) }
                }
                let down = staged?.bytes ?? 0
                let up = adopt ? 0 : try await push(clip: merged, replacing: action.remote, context)
                let conflict = !combined.conflicts.isEmpty || audio.conflict
                return Outcome(
                    key: key, result: .done(.merge, conflict: conflict), bytes: up + down, bytesUp: up, bytesDown: down)
            }
        } catch let unusable as UnusableRemote {
            // The Drive copy cannot be read: keep the local one, replace the broken file with it.
            let outcome = try await upload(action, context)
            var reported = outcome
            if case .done = outcome.result { reported.result = .done(.upload, conflict: false) }
            logger.warning(
                "replaced an unreadable Drive file", metadata: ["file": "\(unusable.file)", "reason": "\(unusable.reason)"])
            return reported
        }
    }

    /// Equal apart from when each side was written.
    static func sameContent<Backup: StampedBackup>(_ a: Backup, _ b: Backup) -> Bool {
        var left = a, right = b
        (left.createdAt, left.updatedAt) = (0, 0)
        (right.createdAt, right.updatedAt) = (0, 0)
        return left == right
    }
}
