import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySystem
import Logging

// Merges: both sides changed since they last agreed.

extension SyncEngine {
    /// The base of a three-way merge, decoded; nil (two-way rules) when none was recorded
    /// or it cannot be read.
    func base<Backup: EntityBackup>(_ key: EntityKey) async -> (backup: Backup?, audioMD5: String?) {
        guard let base = try? await library.base(key) else { return (nil, nil) }
        return (try? Backup.decode(base.json, expectedID: Backup.ID(key.id)), base.audioMD5)
    }

    /// Merges both sides' changes. When the merge changes nothing of Drive's copy it is
    /// adopted exactly (its `updated_at` included) so every device ends with identical rows;
    /// otherwise the merge is applied here and pushed. Drive's copy unreadable: the local
    /// one replaces it.
    func merge(_ action: PlannedAction, _ context: Context, _ moved: Moved?) async throws -> Outcome {
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

    func mergeBook(_ action: PlannedAction, _ context: Context) async throws -> Outcome {
        let key = action.key
        let now = clock.now()
        let base: BookBackup? = await base(key).backup
        let resolved: Resolved<BookBackup> = try await fetchResolved(action.remote, key, context, now: now)
        let remote = resolved.chosen
        guard let id = key.bookID, let local = try await library.book(id: id),
            local.updatedAt == context.snapshot.updatedAt(key)
        else {
            return Outcome(key: key, result: .nothing)
        }
        let mine = try await BookBackup(local, extras: localExtras(key))
        let combined = Merge.bookMerge(local: mine, remote: resolved.value, base: base, now: now)
        let adopt = resolved.adoptable && combined.value.sameContent(as: remote.backup)
        let merged = adopt ? remote.backup : try Self.pushable(combined.value)
        // Drive's copy is the base from here on, even before the merge is uploaded: a sync
        // killed or failing in between merges Drive's next edit against what this one took.
        let recorded = adopt || resolved.others.isEmpty ? remote.agreement(at: now) : nil
        try await applyRemote(
            key, context, recording: recorded, settling: adopt, conflicts: resolved.conflicts + combined.conflicts,
            trash: .merge
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
        return Outcome(
            key: key, result: .done(.merge, conflict: !combined.conflicts.isEmpty || !resolved.conflicts.isEmpty))
    }

    /// A clip's merge is a book's with the audio as one more field (`Merge.audio`). Drive may
    /// hold the JSON without its MP3 (another device between the two files of its replace, or
    /// cut short there): the audio here is then the clip's, and the merge is uploaded whole.
    func mergeClip(_ action: PlannedAction, _ context: Context, _ moved: Moved?) async throws -> Outcome {
        let key = action.key
        let now = clock.now()
        let base: (backup: ClipBackup?, audioMD5: String?) = await base(key)
        let resolved: Resolved<ClipBackup> = try await fetchResolved(action.remote, key, context, now: now)
        let remote = resolved.chosen
        let twins = try await resolveAudio(action.remote, key, context, resolved, moved)
        defer { discard(twins) }
        let files = twins.remote
        let mp3 = files?.mp3 == nil ? nil : try usableMP3(files)
        guard let clipID = key.clipID, let local = try await library.clip(id: clipID),
            local.updatedAt == context.snapshot.updatedAt(key)
        else {
            return Outcome(key: key, result: .nothing)
        }
        let mine = try await ClipBackup(local, extras: localExtras(key))
        let combined = Merge.clipMerge(local: mine, remote: resolved.value, base: base.backup, now: now)
        let localMD5 = try await library.audioMD5(clipID: clipID)
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
        // Drive's take is kept with the JSON its writer made with it, not with the merge's.
        let replacedTake = try replaced.map { staged in
            let jsons = [files?.json].compactMap { $0 } + (files?.jsonTwins ?? [])
            return (
                staged: staged,
                json: AudioTwins.jsonData(
                    of: try usableMP3(files), among: jsons, copies: resolved.copies, fallback: remote.data)
            )
        }
        // Drive's copy is the base from here on, even before a merge is uploaded (see mergeBook).
        let agreement = mp3.flatMap { mp3 in
            adopt || resolved.others.isEmpty
                ? remote.agreement(mp3: mp3, audioMD5: adopt ? mp3.md5 ?? localMD5 : mp3.md5, at: now) : nil
        }
        let conflicts =
            resolved.conflicts + combined.conflicts + [audio?.conflict].compactMap { $0 } + twins.conflicts
        try await applyRemote(
            key, context, recording: agreement, settling: adopt, audio: staged, conflicts: conflicts, trash: .merge
        ) { writer in
            try keepLosingTakes(twins, replaced: replacedTake, of: clipID, in: writer) { try merged.save(in: writer) }
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
    static func pushable<Backup: EntityBackup>(_ merged: Backup) throws -> Backup {
        _ = try encoded(merged)
        return merged
    }
}
