import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySystem
import Logging

// Uploads: a local change pushed to Drive.

extension SyncEngine {
    func upload(_ action: PlannedAction, _ context: Context, _ moved: Moved?) async throws -> Outcome {
        let key = action.key
        switch key {
        case .book(let id):
            guard let book = try await library.book(id: id) else { return Outcome(key: key, result: .nothing) }
            let backup = try await BookBackup(book, extras: localExtras(key))
            try await push(book: backup, replacing: action.remote, context)
        case .clip(let id):
            guard let clip = try await library.clip(id: id) else { return Outcome(key: key, result: .nothing) }
            let backup = try await ClipBackup(clip, extras: localExtras(key))
            let bytes = try await push(clip: backup, replacing: action.remote, context, moved)
            return Outcome(key: key, result: .done(.upload, conflict: false), bytes: bytes, bytesUp: bytes)
        }
        return Outcome(key: key, result: .done(.upload, conflict: false))
    }

    /// The unknown keys kept for an entity; unreadable ones fail its push at once.
    func localExtras(_ key: EntityKey) async throws -> [String: JSONValue] {
        do {
            return try await library.extras(key)
        } catch let error as StoreError {
            guard case .unreadableExtras = error else { throw error }
            throw SyncFailure.permanent(error.localizedDescription)
        }
    }

    /// Backup JSON for an upload; an entity that cannot be written exactly is never sent.
    static func encoded<Backup: EntityBackup>(_ backup: Backup) throws -> Data {
        do {
            return try Backup.encode(backup)
        } catch {
            throw SyncFailure.permanent(error.description)
        }
    }

    /// Uploads a book's JSON over whatever files of its name exist, and records it.
    func push(book: BookBackup, replacing remote: RemoteEntity?, _ context: Context) async throws {
        let key = EntityKey(book.id)
        let data = try Self.encoded(book)
        let files = remote?.allFiles ?? []
        if !files.isEmpty { try await library.recordReplaceCutShort(key) }
        let uploaded = try await replaceJSON(
            key, data: data, folder: context.folders.books[0], replacing: files, context)
        try await recordPushed(
            Agreement(
                key, localUpdatedAt: book.updatedAt, jsonID: uploaded.id, jsonModifiedTime: uploaded.modifiedTime,
                json: data, syncedAt: clock.now()),
            context)
    }

    /// Uploads a clip: JSON, then the MP3 (kept when Drive already has the same bytes). The
    /// JSON goes up only once Drive has opened the MP3's upload session on the sign-in's own
    /// server, so an upload that cannot even start (a session Drive refuses, or one it says is
    /// elsewhere) writes nothing. If the MP3 of a clip new to Drive fails after that, its JSON
    /// is deleted again; a replaced clip keeps its new JSON so it never looks deleted. Returns
    /// the MP3 bytes sent.
    func push(
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
        if keptMP3 == nil { try await checkUnchanged(files.filter { $0.name == mp3Name }) }
        if !files.isEmpty { try await library.recordReplaceCutShort(key) }
        let jsons = files.filter { $0.name == jsonName }
        let folder = context.folders.clips[0]
        let json: UploadedFile
        let mp3ID: DriveFileID
        if let keptMP3 {
            json = try await replaceJSON(key, data: data, folder: folder, replacing: jsons, context)
            mp3ID = keptMP3.id
            // An upload that finished though its run was killed before recording it.
            try await library.forgetUploadSession(clipID: clip.id)
        } else {
            var sent: UploadedFile?
            do {
                mp3ID = try await drive.uploadMP3(
                    name: mp3Name, file: audio, folder: folder, replacing: files.filter { $0.name == mp3Name },
                    progress: moved, journal: try await journal(clip.id, md5: md5, name: mp3Name),
                    beforeSending: {
                        sent = try await replaceJSON(key, data: data, folder: folder, replacing: jsons, context)
                    }
                ).id
            } catch {
                // Only a clip new to Drive is rolled back. Once an older copy existed, other
                // devices hold it: with both files gone they would read the clip as deleted
                // and delete it too, while a lone new JSON reads as incomplete and is left
                // alone until this device's retry completes it.
                if files.isEmpty, let sent { await rollBack(sent.id) }
                throw error
            }
            guard let sent else { throw SyncFailure.retryable("uploading \(mp3Name): the clip's JSON was not sent") }
            json = sent
        }
        try await recordPushed(
            Agreement(
                key, localUpdatedAt: clip.updatedAt, jsonID: json.id, jsonModifiedTime: json.modifiedTime, mp3ID: mp3ID,
                json: data, audioMD5: md5, syncedAt: clock.now()),
            context)
        return keptMP3 == nil ? size : 0
    }

    /// Where a clip's MP3 upload keeps its Drive session: the library, so that a sync killed
    /// mid-upload resumes it (`DriveClient.uploadMP3`).
    func journal(_ clipID: ClipID, md5: String, name: String) async throws -> UploadJournal {
        let library = library
        let logger = logger
        let clock = clock
        return UploadJournal(
            clipID: clipID, kept: try await library.uploadSession(clipID: clipID), md5: md5, now: { clock.now() },
            save: { try await library.saveUploadSession($0) },
            forget: { reason in
                if let reason {
                    logger.info(
                        "an interrupted upload starts again in a new session",
                        metadata: ["file": "\(name)", "reason": "\(reason.rawValue)"])
                }
                try await library.forgetUploadSession(clipID: clipID)
            })
    }

    /// Before an upload replaces MP3s it listed: each still has the md5 the listing gave, the
    /// bytes this sync planned by (read by it, or the ones both sides agreed on). Drive can
    /// replace a file's content in place after the listing (`files.update` with media keeps
    /// the id); deleting it then would lose a take nobody read. Then nothing is written and
    /// the next sync, which lists the new md5, merges it (the take that loses kept in the
    /// history). One `files.get` per MP3 replaced; an update landing between it and the
    /// delete is still lost, as Drive deletes unconditionally (no precondition on delete).
    func checkUnchanged(_ mp3s: [RemoteFile]) async throws {
        for listed in mp3s {
            guard let md5 = listed.md5, let now = try await drive.current(listed.id), let current = now.md5,
                current != md5
            else { continue }
            logger.warning(
                "a clip's MP3 changed on Drive after this sync listed it; not replaced, the next sync reads it",
                metadata: ["file": "\(listed.name)", "listed": "\(md5)", "now": "\(current)"])
            throw SyncFailure.changedDuringSync
        }
    }

    /// Uploads an entity's JSON over the files of its name: those are deleted, then the new
    /// one is made. A replace that stops after its deletes (a failed create, or ivy killed)
    /// leaves the entity missing on Drive by this device's own doing, so the next sync must
    /// put it back at once rather than wait out the grace meant for other devices' replaces:
    /// each push records that before its first delete (`recordReplaceCutShort`), and
    /// `recordPushed` clears it.
    func replaceJSON(
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
                try? await library.withdrawReplaceMark(key, restoring: context.manifest[key]?.missingSince)
            }
            throw error
        }
        return try await drive.uploadJSON(name: key.jsonFileName, data: data, folder: folder, replacing: [])
    }

    /// Deletes a clip JSON whose MP3 did not make it; tried up to three times. In a task of its
    /// own, which a sync stopped at once (cancelled, its MP3 upload with it) does not cancel: a
    /// new clip's JSON is never left on Drive without its MP3 by a stop.
    func rollBack(_ id: DriveFileID) async {
        let drive = drive
        let logger = logger
        await Task(executorPreference: BlockingExecutor.shared) {
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
        }.value
    }
}
