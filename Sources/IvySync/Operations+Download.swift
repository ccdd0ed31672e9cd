import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySystem
import Logging

// Downloads: Drive's change applied here.

extension SyncEngine {
    /// A backup JSON from Drive, decoded: over the size cap, unreadable or malformed, it is
    /// unusable (skipped and reported, never applied, not a failure that repeats every run).
    func fetch<Backup: EntityBackup>(_ json: RemoteFile) async throws -> Fetched<Backup> {
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
        guard let bounded = backup.bounded(received: json.modifiedTime, now: clock.now()) else {
            return Fetched(json: json, data: data, backup: backup)
        }
        logger.warning(
            "a time on Drive is later than when Google received its file; taken as that time",
            metadata: [
                "file": "\(json.name)", "updated_at": "\(backup.updatedAt)", "created_at": "\(backup.createdAt)",
                "modified_time": "\(json.modifiedTime)",
            ])
        return Fetched(json: json, data: data, backup: bounded)
    }

    /// What the copies of an entity on Drive were made from, to merge them against: the base,
    /// except when one of them is the file this device last recorded (its own upload, or one it
    /// adopted): the others were made from what came before it, the base before the last.
    func twinBase<Backup: EntityBackup>(_ key: EntityKey, _ remote: RemoteEntity?, _ context: Context) async
        -> Backup?
    {
        let files = ([remote?.json].compactMap { $0 } + (remote?.jsonTwins ?? [])).map(\.id)
        if let recorded = context.manifest[key]?.remoteFileID, files.contains(recorded), files.count > 1 {
            guard let prior = try? await library.priorBase(key) else { return nil }
            return try? Backup.decode(prior, expectedID: Backup.ID(key.id))
        }
        return await base(key).backup
    }

    /// Drive's copy of the entity: its JSON file, or all of them when several carry its name
    /// (`Resolved`), merged against `twinBase`. A copy deleted meanwhile (by another device
    /// resolving them too) is gone; an unreadable one is left alone and logged, never deleted
    /// unread. Only when none can be used is the entity's copy unusable.
    func fetchResolved<Backup: EntityBackup>(
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
                try await library.rememberUnreadable(
                    UnreadableDriveFile(
                        key: key, fileID: json.id, name: json.name, modifiedTime: json.modifiedTime, md5: json.md5,
                        reason: reason, readAt: now))
                throw SyncFailure.unusableRemote(file: name, reason: reason)
            }
            return Resolved(
                chosen: fetched, value: fetched.backup, others: [], stamps: [json.id: fetched.backup.updatedAt],
                copies: [json.id: fetched.data])
        }
        let base: Backup? = await twinBase(key, remote, context)
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
                try await library.rememberUnreadable(
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
        var conflicts: [Merge.Conflict] = []
        for other in copies.dropFirst() {
            let merged = Backup.merged(local: value, remote: other.backup, base: base, now: now)
            // Every rule the merge of two copies applies is a conflict, even one that keeps the
            // chosen copy's value: the other copy's is not kept. Both were Drive's.
            conflicts += merged.conflicts.map { conflict in
                var conflict = conflict
                if conflict.winner == .here { conflict.winner = .drive }
                return conflict
            }
            // A copy that adds nothing keeps the chosen one's stamps, so it can be adopted as it is.
            if !merged.value.sameContent(as: value) { value = merged.value }
        }
        return Resolved(
            chosen: chosen, value: value, others: copies.dropFirst().map(\.json), unreadable: unreadable,
            stamps: Dictionary(copies.map { ($0.json.id, $0.backup.updatedAt) }, uniquingKeysWith: max),
            copies: Dictionary(copies.map { ($0.json.id, $0.data) }, uniquingKeysWith: { first, _ in first }),
            conflicts: conflicts)
    }

    /// Deletes the other files of an entity's name once one of them is recorded as Drive's
    /// copy. One left (a failed request) is read again, and deleted, by the next sync.
    func deleteTwins(_ files: [RemoteFile]) async {
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
    func usableMP3(_ remote: RemoteEntity?) throws -> RemoteFile {
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
    func download(_ action: PlannedAction, _ context: Context, _ moved: Moved?) async throws -> Outcome {
        let key = action.key
        let now = clock.now()
        switch key {
        case .book:
            let resolved: Resolved<BookBackup> = try await fetchResolved(
                action.remote, key, context, now: now)
            let adopt = resolved.adoptable
            let agreement = adopt ? resolved.chosen.agreement(at: now) : nil
            let value = adopt ? resolved.chosen.backup : try Self.pushable(resolved.value)
            try await applyRemote(
                key, context, recording: agreement, conflicts: resolved.conflicts, trash: .download
            ) { try value.save(in: $0) }
            if adopt {
                await deleteTwins(resolved.others)
            } else {
                try await push(book: value, replacing: resolved.replacing(action.remote), context)
            }
            return Outcome(key: key, result: .done(.download, conflict: !resolved.conflicts.isEmpty))
        case .clip(let clipID):
            let resolved: Resolved<ClipBackup> = try await fetchResolved(
                action.remote, key, context, now: now)
            let twins = try await resolveAudio(action.remote, key, context, resolved, moved)
            defer { discard(twins) }
            let remote = twins.remote
            let mp3 = try usableMP3(remote)
            let adopt = resolved.adoptable
            let value = adopt ? resolved.chosen.backup : try Self.pushable(resolved.value)
            // The audio here is Drive's only when it is the agreed file with the agreed bytes: an
            // MP3 whose content was replaced in place keeps its id, and only its md5 tells.
            let audioKept =
                context.manifest[key].map { $0.remoteMP3FileID == mp3.id && !$0.mp3Changed(mp3) } == true
                && library.hasAudio(clipID: clipID)
            let staged = audioKept ? nil : try await stageAudio(mp3, moved)
            defer { if let staged { library.discardStagedAudio(staged.path) } }
            let audioFile = URL(fileURLWithPath: staged?.path ?? library.audioPath(clipID: clipID))
            let audioMD5 = try mp3.md5 ?? LocalFile.md5(of: audioFile)
            let agreement = adopt ? resolved.chosen.agreement(mp3: mp3, audioMD5: audioMD5, at: now) : nil
            let conflicts = resolved.conflicts + twins.conflicts
            try await applyRemote(
                key, context, recording: agreement, audio: staged, conflicts: conflicts, trash: .download
            ) { writer in
                try keepLosingTakes(twins, of: clipID, in: writer) { try value.save(in: writer) }
            }
            if adopt {
                await deleteTwins(resolved.others + twins.obsolete)
            } else {
                _ = try await push(clip: value, replacing: resolved.replacing(remote), context, nil)
            }
            let bytes = (staged?.bytes ?? 0) + twins.losers.reduce(0) { $0 + $1.staged.bytes }
            return Outcome(
                key: key, result: .done(.download, conflict: !conflicts.isEmpty), bytes: bytes, bytesDown: bytes)
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
}
