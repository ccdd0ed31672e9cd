import Foundation
import IvyCore
import IvyStore
import IvySystem
import Logging

/// A clip's MP3s on Drive when several files carry its name, resolved by content: Drive's
/// `modifiedTime` says only which upload came last, not which take is newer.
///
/// Each MP3 whose md5 differs from the agreed audio (the manifest's base audio md5) is a
/// change; so is this device's own last upload when it is one of them (the others were made
/// from what came before it, as for JSON twins). With one change, it wins and the rest hold
/// the agreed audio. With two or more, the take whose JSON has the newer `updated_at` wins
/// (each MP3 goes with the JSON its writer made just before it, by Drive's `createdTime`;
/// Drive's `modifiedTime` decides only when that says nothing, then the id), every other take
/// is downloaded and kept in the history here as the version of the clip its writer had (the
/// JSON it made with that MP3, as Drive held it: no version pairs a take with another's
/// fields), and the sync records
/// a conflict per other take naming both md5s, whose take won and by which rule
/// (`Merge.takeConflict`, listed by `ivy history --conflicts`). Nothing is deleted from Drive
/// before it was read: a take is either held here already (its md5 is the audio here or the
/// agreed one) or downloaded first.
struct AudioTwins {
    /// The entity's files with the winning MP3 as `mp3` and every other MP3 among `stale`.
    let remote: RemoteEntity?
    /// The other takes, downloaded, to keep in the history inside the write that applies the
    /// winner, each with the JSON its writer made with it (exactly as Drive held it).
    var losers: [(file: RemoteFile, staged: StagedAudio, json: Data)] = []
    /// The other MP3 files, to delete once the winner is recorded (an upload replaces them anyway).
    var obsolete: [RemoteFile] = []
    /// Each take that lost to the winner, as the conflict recorded with the write (both md5s).
    var conflicts: [Merge.Conflict] = []
    /// Two takes differed from the agreed audio: a conflict.
    var conflict: Bool { !conflicts.isEmpty }

    /// Nothing to resolve: one MP3, or none.
    init(untouched remote: RemoteEntity?) {
        self.remote = remote
    }

    init(remote: RemoteEntity?, winner: RemoteFile, obsolete: [RemoteFile]) {
        var entity = remote
        if var resolved = entity {
            let others = ([resolved.mp3].compactMap { $0 } + resolved.stale).filter {
                $0.name == winner.name && $0.id != winner.id
            }
            resolved.stale = resolved.stale.filter { $0.name != winner.name } + others
            resolved.mp3 = winner
            entity = resolved
        }
        self.remote = entity
        self.obsolete = obsolete
    }

    /// Which of `takes` wins: the newest by the `updated_at` of the JSON made just before it
    /// (`stamps`, by JSON file), then Drive's `modifiedTime`, then the id; the same on every device.
    static func order(
        _ takes: [RemoteFile], jsons: [RemoteFile], stamps: [DriveFileID: Milliseconds]
    ) -> [RemoteFile] {
        func stamp(_ mp3: RemoteFile) -> Milliseconds { Self.stamp(mp3, jsons: jsons, stamps: stamps) ?? .min }
        return takes.sorted { a, b in (stamp(a), a.modifiedTime, a.id) > (stamp(b), b.modifiedTime, b.id) }
    }

    /// The `updated_at` of the JSON made just before `mp3` (by Drive's `createdTime`); nil
    /// when no JSON read was made before it.
    static func stamp(_ mp3: RemoteFile, jsons: [RemoteFile], stamps: [DriveFileID: Milliseconds]) -> Milliseconds? {
        json(of: mp3, among: jsons).flatMap { stamps[$0.id] }
    }

    /// The JSON file its writer made with `mp3`: the one made just before it (by Drive's
    /// `createdTime`, then the id), as a replace makes the JSON and then the MP3; nil when
    /// none of `jsons` was made before it.
    static func json(of mp3: RemoteFile, among jsons: [RemoteFile]) -> RemoteFile? {
        func made(_ file: RemoteFile) -> Milliseconds { file.createdTime ?? file.modifiedTime }
        return jsons.filter { made($0) <= made(mp3) }.max { (made($0), $0.id) < (made($1), $1.id) }
    }

    /// The bytes of the JSON its writer made with `mp3` (`json(of:among:)`), as read
    /// (`copies`). When there is none, or it could not be read (the MP3 outlived its JSON),
    /// `fallback`: Drive's chosen copy, the nearest there is to what went with it.
    static func jsonData(
        of mp3: RemoteFile, among jsons: [RemoteFile], copies: [DriveFileID: Data], fallback: Data
    ) -> Data {
        json(of: mp3, among: jsons).flatMap { copies[$0.id] } ?? fallback
    }
}

extension SyncEngine {
    /// Resolves the clip's MP3s by content (`AudioTwins`); `jsons` are the JSON files of its
    /// name as read (their `updated_at`s and bytes). Downloads the takes that lose and are not
    /// held here; the caller discards them (`discard`) when done.
    func resolveAudio(
        _ remote: RemoteEntity?, _ key: EntityKey, _ context: Context, _ jsons: Resolved<ClipBackup>,
        _ moved: Moved?
    ) async throws -> AudioTwins {
        let stamps = jsons.stamps
        guard let remote, let current = remote.mp3, !remote.mp3Twins.isEmpty, let clipID = key.clipID else {
            return AudioTwins(untouched: remote)
        }
        let mp3s = [current] + remote.stale.filter { $0.name == current.name }
        let agreed = await (try? library.base(key))?.audioMD5
        let recorded = context.manifest[key]?.remoteMP3FileID
        var takes = mp3s.filter { $0.md5 == nil || $0.md5 != agreed }
        if takes.contains(where: { $0.id != recorded }), let own = mp3s.first(where: { $0.id == recorded }),
            !takes.contains(own)
        {
            takes.append(own)
        }
        // Takes of the same content are one take.
        var seen: Set<String> = []
        let files = [remote.json].compactMap { $0 } + remote.jsonTwins
        let ordered = AudioTwins.order(takes.isEmpty ? mp3s : takes, jsons: files, stamps: stamps).filter {
            guard let md5 = $0.md5 else { return true }
            return seen.insert(md5).inserted
        }
        guard let winner = ordered.first else { return AudioTwins(untouched: remote) }
        var resolved = AudioTwins(
            remote: remote, winner: winner, obsolete: mp3s.filter { $0.id != winner.id })
        let here = try await library.audioMD5(clipID: clipID)
        func take(_ file: RemoteFile) -> Merge.Take {
            Merge.Take(
                md5: file.md5, updatedAt: AudioTwins.stamp(file, jsons: files, stamps: stamps),
                modifiedTime: file.modifiedTime, here: file.md5 != nil && file.md5 == here)
        }
        for loser in ordered.dropFirst() {
            resolved.conflicts.append(Merge.takeConflict(kept: take(winner), lost: take(loser)))
            logger.warning(
                "two takes of a clip's audio on Drive: the newer is kept as the clip's, the other in the history here",
                metadata: [
                    "entity": "\(key)", "kept": "\(winner.id) (md5 \(winner.md5 ?? "unknown"))",
                    "other": "\(loser.id) (md5 \(loser.md5 ?? "unknown"))",
                ])
            // A take held here already is kept in the history when the winner replaces it.
            if let md5 = loser.md5, md5 == here { continue }
            do {
                let json = AudioTwins.jsonData(
                    of: loser, among: files, copies: jsons.copies, fallback: jsons.chosen.data)
                resolved.losers.append((loser, try await stageAudio(loser, moved), json))
            } catch {
                discard(resolved)
                throw error
            }
        }
        return resolved
    }

    /// Removes the downloaded takes that lost.
    func discard(_ twins: AudioTwins) {
        for loser in twins.losers { library.discardStagedAudio(loser.staged.path) }
    }
}

extension SyncEngine {
    /// Inside the write that applies the winning take: each other take downloaded becomes a
    /// version of the clip in the history here, with the JSON its writer made with it, and so
    /// does Drive's take that a merge's upload is about to replace (`replaced`, with its JSON);
    /// then `write` applies the winner (`EngineWriter.keepOtherTakes`).
    func keepLosingTakes(
        _ twins: AudioTwins, replaced: (staged: StagedAudio, json: Data)? = nil, of clipID: ClipID,
        in writer: EngineWriter, _ write: () throws -> Void
    ) throws {
        let takes =
            twins.losers.map { (json: $0.json, audio: $0.staged.path) }
            + [replaced.map { (json: $0.json, audio: $0.staged.path) }].compactMap { $0 }
        try writer.keepOtherTakes(clipID: clipID, takes: takes, then: write)
    }
}
