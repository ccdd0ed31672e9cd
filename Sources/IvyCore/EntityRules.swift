/// The planner's rules for one entity: its facts read from the plan's input once, and the
/// verdict they lead to. Which rule applies depends on where the entity is: on both sides,
/// only here, only on Drive, or on neither.
struct EntityRules {
    /// What the rules say to do; `SyncPlanner.decide` puts it into the plan.
    enum Verdict: Equatable {
        case act(SyncAction, String)
        /// An action that rests on the entity's absence from Drive: taken only once the
        /// absence has lasted the replace grace, so another device's replace is never undone.
        case afterGrace(SyncAction, String, missing: String)
        case skip(String)
        /// Gone on both sides in a full listing: its sync record and queue item go.
        case forget
        case nothing
    }

    let key: EntityKey
    let localUpdatedAt: Milliseconds?
    let remote: RemoteEntity?
    let manifest: ManifestEntry?
    let queued: QueueItem?
    /// The remote entity when Drive has all of it (a clip's JSON and its MP3).
    let complete: RemoteEntity?
    let listingComplete: Bool
    let localChanged: Bool
    let remoteChanged: Bool
    let jsonTwins: [RemoteFile]
    /// Twin files of every kind: JSON files of its name, and MP3s of its name with other content.
    let twins: [RemoteFile]

    init(_ key: EntityKey, _ input: PlanInput) {
        self.key = key
        let localUpdatedAt = input.local.updatedAt(key)
        let remote = input.remote.entities[key]
        let manifest = input.manifest[key]
        let queued = input.queue[key]
        let complete = remote?.isComplete == true ? remote : nil
        self.localUpdatedAt = localUpdatedAt
        self.remote = remote
        self.manifest = manifest
        self.queued = queued
        self.complete = complete
        listingComplete = input.remote.isComplete
        localChanged = {
            guard let localUpdatedAt else { return false }
            guard let manifest else { return true }
            return localUpdatedAt > (manifest.localUpdatedAt ?? .min) || queued?.operation == .upsert
        }()
        remoteChanged = {
            guard let json = complete?.json, let manifest else { return false }
            guard let recorded = manifest.remoteUpdatedAt else { return true }
            // Drive replaces a file by delete-then-create, so a new file id is a change too; a
            // clip's new MP3 is one even when its JSON stayed (a program that replaced only that),
            // and so are new bytes under the agreed MP3's id (`ManifestEntry.mp3Changed`).
            let newMP3 = complete?.mp3.map { manifest.mp3Changed($0) } ?? false
            return json.modifiedTime > recorded || (manifest.remoteFileID.map { $0 != json.id } ?? false) || newMP3
        }()
        jsonTwins = remote?.jsonTwins ?? []
        twins = jsonTwins + (remote?.mp3Twins ?? [])
    }

    func verdict() -> Verdict {
        // Several JSON files of one name: two devices replaced it at once, or one restored it
        // while another was between its delete and its create. The newest upload is not the
        // newest content: every copy is read, and the sync goes by `updated_at` and the merge.
        // A download reads them all too; a clip deleted here goes by the rules below.
        if !jsonTwins.isEmpty, complete != nil, localUpdatedAt != nil {
            return .act(
                .merge,
                "\(jsonTwins.count + 1) files of its name on Drive (written at once from two devices): "
                    + "all read and merged")
        }
        // Several MP3s of one name with other content: new audio from two places at once. Each
        // is read; the clip's newer take wins and the other is kept in the history here.
        if !twins.isEmpty, complete != nil, localUpdatedAt != nil {
            return .act(
                .merge,
                "\(twins.count + 1) MP3 files of its name on Drive (new audio from two places at once): "
                    + "all read, the newer kept as the clip's and the other in the history")
        }
        switch (localUpdatedAt != nil, complete != nil) {
        case (true, true): return onBothSides()
        case (true, false): return onlyHere()
        case (false, true): return onlyOnDrive()
        case (false, false): return onNeither()
        }
    }

    private func onBothSides() -> Verdict {
        guard manifest != nil else {
            return .act(
                .merge, "on both sides with no sync record (same id made on two devices, or the record was reset)")
        }
        switch (localChanged, remoteChanged) {
        case (true, true): return .act(.merge, "changed here and on Drive since the last sync")
        case (true, false): return .act(.upload, "changed here")
        case (false, true): return .act(.download, "changed on Drive")
        case (false, false): return .nothing
        }
    }

    /// Here, and on Drive at most in part.
    private func onlyHere() -> Verdict {
        if let remote { return partlyOnDrive(remote) }
        guard manifest != nil else { return .act(.upload, "new here") }
        guard listingComplete else { return .skip("not in an incomplete Drive listing; decided on a full listing") }
        if key.kind == .book {
            // A change made here waits too: another device's replace would land beside it, a
            // twin made from the same base. After the grace it goes up whole.
            return .afterGrace(
                .upload,
                localChanged
                    ? "changed here; missing on Drive, so uploaded whole"
                    : "missing on Drive; books are never deleted, so it is restored",
                missing: localChanged ? "changed here, and missing" : "missing")
        }
        if localChanged { return .act(.upload, "deleted on Drive but changed here since: an edit beats a delete") }
        return .act(.deleteLocal, "deleted on another device")
    }

    /// Only part of a clip is on Drive (an upload in progress or interrupted, a replace on
    /// another device between its files).
    private func partlyOnDrive(_ remote: RemoteEntity) -> Verdict {
        if manifest == nil { return .act(.upload, "only part of it is on Drive; uploading it whole") }
        guard listingComplete else { return .skip("incomplete in an incomplete Drive listing; left alone") }
        // Drive's MP3 has other bytes under the agreed id and no JSON beside it: there is nothing
        // to merge the clip with, and an upload would replace those bytes unread. Left alone
        // until Drive has both files again (`ivy check` shows it).
        if remote.json == nil, let mp3 = remote.mp3, let manifest, mp3.id == manifest.remoteMP3FileID,
            manifest.mp3Changed(mp3)
        {
            return .skip("its MP3 changed on Drive and its JSON is missing; left alone until Drive has both")
        }
        if localChanged {
            // Part of the clip missing while another device replaces it (between its JSON
            // and its MP3, or while its new MP3 streams up): uploading now would put this
            // device's audio beside, or after, theirs. After the grace it is a replace cut
            // short (perhaps this device's own): a JSON other than the one agreed on is
            // read and merged, never overwritten unread.
            if let json = remote.json, json.id != manifest?.remoteFileID {
                return .afterGrace(
                    .merge, "changed here; Drive has a newer JSON but no MP3: merged, uploaded whole",
                    missing: "changed here, and its MP3 is missing")
            }
            return .afterGrace(
                .upload, "changed here; Drive has only part of it", missing: "changed here, and part of it is missing")
        }
        // The JSON is gone while the MP3 is still the one both sides agreed on: a replace
        // in progress on another device (an upload makes the JSON first, so this is no
        // upload), or one cut short between its delete and its create.
        if remote.json == nil, let mp3 = remote.mp3, mp3.id == manifest?.remoteMP3FileID {
            return .afterGrace(
                .upload, "its JSON vanished from Drive (a replace cut short); restored from here",
                missing: "its JSON is missing")
        }
        // A JSON without its MP3: another device's retake still streaming up, or a delete
        // that raced an edit (the delete took the MP3, the edit made a new JSON). Once that
        // has lasted the grace the clip lives, as an edit beats a delete: a newer JSON is
        // read and merged with the audio here and uploaded whole, the agreed one gets its
        // MP3 back. Left alone, every device kept a clip Drive could not give the others.
        if let json = remote.json, remote.mp3 == nil {
            if json.id != manifest?.remoteFileID {
                return .afterGrace(
                    .merge, "Drive has a newer JSON but no MP3: merged with the audio here, uploaded whole",
                    missing: "its MP3 is missing")
            }
            return .afterGrace(
                .upload, "its MP3 vanished from Drive; restored from here", missing: "its MP3 is missing")
        }
        return .skip("incomplete on Drive (JSON or MP3 missing); left alone")
    }

    private func onlyOnDrive() -> Verdict {
        if key.kind == .book {
            return .act(
                .download, manifest == nil ? "new on Drive" : "missing here; books are never deleted, so it is restored"
            )
        }
        if manifest != nil {
            if remoteChanged {
                return .act(.download, "changed on Drive after it was deleted here: an edit beats a delete")
            }
            return .act(.deleteRemote, "deleted here")
        }
        if queued?.operation == .delete { return .act(.deleteRemote, "deleted here (queued delete)") }
        return .act(.download, "new on Drive")
    }

    /// Not here, and on Drive at most in part.
    private func onNeither() -> Verdict {
        if remote != nil {
            if key.kind == .clip, manifest != nil || queued?.operation == .delete {
                return .act(.deleteRemote, "deleted here; removing what is left of it on Drive")
            }
            return .skip("incomplete on Drive (JSON or MP3 missing); left alone")
        }
        // Gone on both sides. Without a full listing the remote may still exist unseen.
        guard listingComplete || manifest == nil else { return .nothing }
        return .forget
    }
}
