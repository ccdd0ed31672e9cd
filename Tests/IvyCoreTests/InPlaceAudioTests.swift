import Foundation
import IvyCore
import Testing

/// Issue 48, item 4: Drive replaces an MP3's bytes under the same file id ("Manage versions →
/// Upload new version", `files.update` with media). The planner must see it by md5, as the id
/// and the clip's JSON say nothing.
@Suite("Planner rules: a clip's MP3 replaced in place on Drive")
struct InPlaceAudioTests {
    typealias F = Fixture
    let clipKey = EntityKey(.clip, "c1")
    let agreed = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    let other = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

    /// The clip as synced: its JSON `j-c1` and its MP3 `m-c1` whose agreed md5 is `agreed`.
    func synced(audioMD5: String?) -> ManifestEntry {
        var entry = F.synced(clipKey)
        entry.remoteMP3FileID = "m-c1"
        entry.audioMD5 = audioMD5
        return entry
    }

    /// Drive's MP3 of the clip, under the agreed id, with `md5`.
    func mp3(_ md5: String?) -> RemoteFile {
        var file = F.mp3("c1")
        file.md5 = md5
        return file
    }

    func plan(
        clips: [Clip] = [F.clip("c1")], files: [RemoteFile], manifest: [ManifestEntry], queue: [QueueItem] = []
    ) -> SyncPlan {
        SyncPlanner.plan(
            PlanInput(
                local: LocalSnapshot(clips: clips), remote: RemoteListing(files: files, isComplete: true),
                manifest: manifest, queue: queue, now: SyncPlanner.replaceGrace))
    }

    func actions(_ plan: SyncPlan) -> [String] {
        plan.actions.map { "\($0.action.rawValue) \($0.key)" }
    }

    @Test("same id, same JSON, other md5 than agreed, unchanged here: download")
    func downloaded() {
        let result = plan(files: [F.json(clipKey), mp3(other)], manifest: [synced(audioMD5: agreed)])
        #expect(actions(result) == ["download clip c1"])
        #expect(result.actions.first?.reason == "changed on Drive")
        #expect(result.actions.first?.remote?.mp3?.md5 == other, "the download knows the MP3 to fetch")
    }

    @Test("same id and the agreed md5: nothing to do")
    func unchanged() {
        #expect(plan(files: [F.json(clipKey), mp3(agreed)], manifest: [synced(audioMD5: agreed)]).isEmpty)
    }

    @Test("changed here too (a note, or audio): a merge, never an upload over the unread MP3")
    func bothSides() {
        let result = plan(
            clips: [F.clip("c1", updated: 200)], files: [F.json(clipKey), mp3(other)],
            manifest: [synced(audioMD5: agreed)], queue: [F.queued(clipKey, .upsert)])
        #expect(actions(result) == ["merge clip c1"])
        #expect(result.actions.first?.reason == "changed here and on Drive since the last sync")
    }

    @Test("an md5 unknown on either side leaves the id to decide, as before")
    func unknownMD5() {
        #expect(plan(files: [F.json(clipKey), mp3(nil)], manifest: [synced(audioMD5: agreed)]).isEmpty)
        #expect(plan(files: [F.json(clipKey), mp3(other)], manifest: [synced(audioMD5: nil)]).isEmpty)
        var moved = mp3(agreed)
        moved.id = "m-new"
        #expect(
            actions(plan(files: [F.json(clipKey), moved], manifest: [synced(audioMD5: agreed)]))
                == ["download clip c1"], "a new id is a change whatever the md5")
    }

    @Test("deleted here while its MP3 was replaced on Drive: downloaded (an edit beats a delete), not deleted")
    func deletedHere() {
        let result = plan(clips: [], files: [F.json(clipKey), mp3(other)], manifest: [synced(audioMD5: agreed)])
        #expect(actions(result) == ["download clip c1"])
        let untouched = plan(clips: [], files: [F.json(clipKey), mp3(agreed)], manifest: [synced(audioMD5: agreed)])
        #expect(actions(untouched) == ["delete_remote clip c1"])
    }

    @Test("its JSON missing and its MP3 replaced in place: left alone, never uploaded over it")
    func jsonMissing() {
        for clip in [F.clip("c1"), F.clip("c1", updated: 200)] {
            var entry = synced(audioMD5: agreed)
            entry.missingSince = 0
            let result = plan(clips: [clip], files: [mp3(other)], manifest: [entry])
            #expect(result.actions.isEmpty, "\(result.actions)")
            #expect(result.skipped.first?.reason.contains("its MP3 changed on Drive") == true, "\(result.skipped)")
        }
        // The agreed bytes: a replace cut short, restored from here after the grace, as before.
        var entry = synced(audioMD5: agreed)
        entry.missingSince = 0
        #expect(actions(plan(files: [mp3(agreed)], manifest: [entry])) == ["upload clip c1"])
    }

    @Test("ManifestEntry.mp3Changed: another id, or the agreed id with another md5")
    func mp3Changed() {
        let entry = synced(audioMD5: agreed)
        #expect(!entry.mp3Changed(mp3(agreed)))
        #expect(entry.mp3Changed(mp3(other)))
        #expect(!entry.mp3Changed(mp3(nil)))
        var elsewhere = mp3(agreed)
        elsewhere.id = "m-2"
        #expect(entry.mp3Changed(elsewhere))
    }
}
