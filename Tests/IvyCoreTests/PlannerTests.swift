import Foundation
import IvyCore
import Testing

/// Builders for planner inputs: ids are short hex strings, times small numbers.
enum Fixture {
    static func book(_ id: BookID, updated: Milliseconds = 100) -> Book {
        Book(id: id, title: "Book \(id)", createdAt: 1, updatedAt: updated)
    }

    static func clip(_ id: ClipID, updated: Milliseconds = 100) -> Clip {
        Clip(id: id, bookID: "b0", start: 0, duration: 1, createdAt: 1, updatedAt: updated)
    }

    static func json(_ key: EntityKey, id: DriveFileID? = nil, modified: Milliseconds = 500) -> RemoteFile {
        RemoteFile(
            id: id ?? DriveFileID("j-\(key.id)"), name: "\(key.kind.rawValue)_\(key.id).json", modifiedTime: modified)
    }

    static func mp3(_ id: ClipID, fileID: DriveFileID? = nil, modified: Milliseconds = 501) -> RemoteFile {
        RemoteFile(id: fileID ?? DriveFileID("m-\(id)"), name: "clip_\(id).mp3", modifiedTime: modified)
    }

    /// `missingSince`: when a sync first found it missing on Drive (the plans below are made at
    /// `SyncPlanner.replaceGrace`, so 0 is an absence that has lasted long enough to act on).
    static func synced(
        _ key: EntityKey, local: Milliseconds = 100, remote: Milliseconds = 500, fileID: DriveFileID? = nil,
        missingSince: Milliseconds? = nil
    ) -> ManifestEntry {
        ManifestEntry(
            key: key, localUpdatedAt: local, remoteUpdatedAt: remote,
            remoteFileID: fileID ?? DriveFileID("j-\(key.id)"),
            missingSince: missingSince)
    }

    static func queued(_ key: EntityKey, _ operation: QueueItem.Operation, attempts: Int = 0) -> QueueItem {
        QueueItem(key: key, operation: operation, attempts: attempts, lastError: attempts > 0 ? "offline" : nil)
    }
}

@Suite("Planner rules")
struct PlannerRuleTests {
    typealias F = Fixture
    let bookKey = EntityKey(.book, "b1")
    let clipKey = EntityKey(.clip, "c1")

    func plan(
        books: [Book] = [], clips: [Clip] = [], files: [RemoteFile] = [], complete: Bool = true,
        manifest: [ManifestEntry] = [], queue: [QueueItem] = [], allowDeletes: Bool = false,
        folderIsRecorded: Bool = true, now: Milliseconds = SyncPlanner.replaceGrace
    ) -> SyncPlan {
        SyncPlanner.plan(
            PlanInput(
                local: LocalSnapshot(books: books, clips: clips),
                remote: RemoteListing(files: files, isComplete: complete),
                manifest: manifest, queue: queue, allowLocalDeletes: allowDeletes, folderIsRecorded: folderIsRecorded,
                now: now))
    }

    func only(_ plan: SyncPlan) -> [String] {
        plan.actions.map { "\($0.action.rawValue) \($0.key)" }
    }

    @Test("no manifest, local only: upload")
    func newLocal() {
        #expect(only(plan(books: [F.book("b1")])) == ["upload book b1"])
        #expect(only(plan(clips: [F.clip("c1")])) == ["upload clip c1"])
    }

    @Test("no manifest, remote only: download")
    func newRemote() {
        #expect(only(plan(files: [F.json(bookKey)])) == ["download book b1"])
        #expect(only(plan(files: [F.json(clipKey), F.mp3("c1")])) == ["download clip c1"])
    }

    @Test("no manifest, both sides: merge (same id made on two devices)")
    func sameIDTwice() {
        let result = plan(books: [F.book("b1")], files: [F.json(bookKey)])
        #expect(only(result) == ["merge book b1"])
        #expect(result.actions[0].reason.contains("no sync record"))
    }

    @Test("local changed (updated_at past the manifest), remote not: upload")
    func localChanged() {
        let result = plan(books: [F.book("b1", updated: 200)], files: [F.json(bookKey)], manifest: [F.synced(bookKey)])
        #expect(only(result) == ["upload book b1"])
        #expect(result.actions[0].remote?.json?.id == "j-b1", "the upload knows the file it replaces")
    }

    @Test("local changed by a pending upsert that did not move updated_at: upload")
    func queuedWithoutTimestamp() {
        let result = plan(
            books: [F.book("b1", updated: 100)], files: [F.json(bookKey)], manifest: [F.synced(bookKey)],
            queue: [F.queued(bookKey, .upsert)])
        #expect(only(result) == ["upload book b1"])
    }

    @Test("remote changed (modifiedTime past the manifest), local not: download")
    func remoteChanged() {
        #expect(
            only(plan(books: [F.book("b1")], files: [F.json(bookKey, modified: 900)], manifest: [F.synced(bookKey)]))
                == ["download book b1"])
    }

    @Test("remote replaced by a file with a new id: download")
    func remoteReplaced() {
        #expect(
            only(plan(books: [F.book("b1")], files: [F.json(bookKey, id: "other")], manifest: [F.synced(bookKey)])) == [
                "download book b1"
            ])
    }

    @Test("both changed: merge, never a blind push of the queued edit")
    func bothChanged() {
        let result = plan(
            books: [F.book("b1", updated: 200)], files: [F.json(bookKey, modified: 900)], manifest: [F.synced(bookKey)],
            queue: [F.queued(bookKey, .upsert)])
        #expect(only(result) == ["merge book b1"])
    }

    @Test("neither changed: nothing")
    func quiet() {
        let result = plan(
            books: [F.book("b1")], clips: [F.clip("c1")], files: [F.json(bookKey), F.json(clipKey), F.mp3("c1")],
            manifest: [F.synced(bookKey), F.synced(clipKey)])
        #expect(result.isEmpty)
        #expect(result.held.isEmpty && result.skipped.isEmpty)
    }

    @Test("a failed item is held back from every push until retry-failed")
    func failedHeldFromPushes() {
        let failed = [F.queued(bookKey, .upsert, attempts: 3), F.queued(clipKey, .delete, attempts: 3)]
        let result = plan(
            books: [F.book("b1", updated: 200)], files: [F.json(bookKey), F.json(clipKey), F.mp3("c1")],
            manifest: [F.synced(bookKey), F.synced(clipKey)], queue: failed)
        #expect(result.actions.isEmpty)
        #expect(result.held.map { "\($0.action.rawValue) \($0.key)" } == ["upload book b1", "delete_remote clip c1"])
        #expect(result.held.allSatisfy { $0.reason.contains("ivy retry-failed") && $0.reason.contains("offline") })
        let merging = plan(
            books: [F.book("b1", updated: 200)], files: [F.json(bookKey, modified: 900)], manifest: [F.synced(bookKey)],
            queue: [F.queued(bookKey, .upsert, attempts: 3)])
        #expect(merging.actions.isEmpty, "a held merge must not download over the unpushed local change")
        #expect(merging.held.map(\.action) == [.merge])
    }

    @Test("a failed item's pulls still happen")
    func failedStillPulls() {
        // Deleted here (failed to push), changed on Drive since: the edit comes back.
        let result = plan(
            files: [F.json(clipKey, modified: 900), F.mp3("c1")], manifest: [F.synced(clipKey)],
            queue: [F.queued(clipKey, .delete, attempts: 3)])
        #expect(only(result) == ["download clip c1"])
        // Another entity's failure holds back nothing else.
        let other = plan(
            books: [F.book("b1", updated: 200), F.book("b2")], files: [F.json(EntityKey(.book, "b2"), modified: 900)],
            manifest: [F.synced(bookKey), F.synced(EntityKey(.book, "b2"))],
            queue: [F.queued(bookKey, .upsert, attempts: 5)])
        #expect(only(other) == ["download book b2"])
    }

    @Test("clip missing locally, manifest and remote present: delete remote, with every file of it")
    func deletedHere() {
        let stale = RemoteFile(id: "old", name: "clip_c1.json", modifiedTime: 10)
        let result = plan(
            files: [F.json(clipKey), F.mp3("c1"), stale], manifest: [F.synced(clipKey)],
            queue: [F.queued(clipKey, .delete)])
        #expect(only(result) == ["delete_remote clip c1"])
        #expect(Set(result.actions[0].remote?.allFiles.map(\.id) ?? []) == ["j-c1", "m-c1", "old"])
        #expect(result.staleDuplicates.isEmpty)
    }

    @Test("clip deleted here but changed on Drive since: download (an edit beats a delete)")
    func deletedHereEditedThere() {
        #expect(
            only(plan(files: [F.json(clipKey, modified: 900), F.mp3("c1")], manifest: [F.synced(clipKey)])) == [
                "download clip c1"
            ])
    }

    @Test("a queued delete whose entity exists again is superseded by the entity")
    func deleteSuperseded() {
        let result = plan(
            clips: [F.clip("c1", updated: 300)], files: [F.json(clipKey), F.mp3("c1")], manifest: [F.synced(clipKey)],
            queue: [F.queued(clipKey, .delete)])
        #expect(only(result) == ["upload clip c1"])
    }

    @Test("a queued delete without a manifest (after a reset) deletes the remote copy")
    func queuedDeleteAfterReset() {
        #expect(
            only(plan(files: [F.json(clipKey), F.mp3("c1")], queue: [F.queued(clipKey, .delete)])) == [
                "delete_remote clip c1"
            ])
    }

    @Test("clip missing remotely, changed here: upload (an edit beats a delete)")
    func editBeatsRemoteDelete() {
        #expect(only(plan(clips: [F.clip("c1", updated: 300)], manifest: [F.synced(clipKey)])) == ["upload clip c1"])
    }

    @Test("clip missing remotely, unchanged here, listing complete: delete locally")
    func deletedThere() {
        let result = plan(clips: [F.clip("c1")], manifest: [F.synced(clipKey)])
        #expect(only(result) == ["delete_local clip c1"])
    }

    @Test("clip missing remotely with an incomplete listing: nothing is deleted or re-uploaded")
    func incompleteListing() {
        let result = plan(
            clips: [F.clip("c1"), F.clip("c2", updated: 300)], complete: false,
            manifest: [F.synced(clipKey), F.synced(EntityKey(.clip, "c2"))])
        #expect(result.actions.isEmpty)
        #expect(result.skipped.count == 2)
        #expect(result.manifestCleanup.isEmpty)
    }

    @Test("a remote clip without its MP3 is neither downloaded nor a reason to delete locally")
    func incompleteRemoteClip() {
        #expect(plan(files: [F.json(clipKey)]).actions.isEmpty)
        #expect(plan(files: [F.mp3("c1")]).actions.isEmpty)
        let kept = plan(clips: [F.clip("c1")], files: [F.json(clipKey)], manifest: [F.synced(clipKey)])
        #expect(kept.actions.isEmpty)
        #expect(kept.skipped.map(\.key) == [clipKey])
        // An interrupted upload of our own (JSON without MP3, never recorded) is finished.
        #expect(only(plan(clips: [F.clip("c1")], files: [F.json(clipKey)])) == ["upload clip c1"])
        // Only the agreed MP3 left: a JSON replace in progress on another device, or cut short.
        // Restored from here only once it has stayed so for the grace.
        var agreed = F.synced(clipKey)
        agreed.remoteMP3FileID = "m-c1"
        let fresh = plan(clips: [F.clip("c1")], files: [F.mp3("c1")], manifest: [agreed])
        #expect(fresh.actions.isEmpty && fresh.missingOnDrive == [clipKey])
        #expect(fresh.skipped.first?.reason.contains("perhaps while another device replaces it") == true)
        agreed.missingSince = 0
        #expect(only(plan(clips: [F.clip("c1")], files: [F.mp3("c1")], manifest: [agreed])) == ["upload clip c1"])
        #expect(plan(clips: [F.clip("c1")], files: [F.mp3("c1")], manifest: [agreed], now: 59_999).actions.isEmpty)
        // An MP3 nobody here agreed on is someone else's upload: left alone.
        #expect(
            plan(clips: [F.clip("c1")], files: [F.mp3("c1", fileID: "m-new")], manifest: [agreed]).skipped.map(\.key)
                == [clipKey])
    }

    @Test("books are never deleted: missing on Drive is re-uploaded, missing here is downloaded")
    func booksNeverDeleted() {
        #expect(only(plan(books: [F.book("b1")], manifest: [F.synced(bookKey, missingSince: 0)])) == ["upload book b1"])
        #expect(
            only(plan(files: [F.json(bookKey)], manifest: [F.synced(bookKey)], queue: [F.queued(bookKey, .delete)]))
                == ["download book b1"])
        #expect(plan(books: [F.book("b1")], manifest: [F.synced(bookKey)]).actions(.deleteLocal).isEmpty)
    }

    @Test("a book or part of a clip missing on Drive is acted on only once it has been missing for the grace")
    func missingBookWaits() {
        // First seen missing now: another device may be between the delete and the create.
        let fresh = plan(books: [F.book("b1")], manifest: [F.synced(bookKey)])
        #expect(fresh.actions.isEmpty && fresh.missingOnDrive == [bookKey])
        #expect(fresh.skipped.map(\.key) == [bookKey])
        // Seen missing 59.999 s ago: still waiting; 60 s ago: restored.
        let since = SyncPlanner.replaceGrace - 59_999
        #expect(plan(books: [F.book("b1")], manifest: [F.synced(bookKey, missingSince: since)]).actions.isEmpty)
        #expect(only(plan(books: [F.book("b1")], manifest: [F.synced(bookKey, missingSince: 0)])) == ["upload book b1"])
        // Changed here: waits too (another device's replace would land beside it), then goes up.
        let edited = plan(books: [F.book("b1", updated: 300)], manifest: [F.synced(bookKey)])
        #expect(edited.actions.isEmpty && edited.missingOnDrive == [bookKey])
        #expect(
            only(plan(books: [F.book("b1", updated: 300)], manifest: [F.synced(bookKey, missingSince: 0)])) == [
                "upload book b1"
            ])
        // Not in an incomplete listing: nothing is known, nothing recorded.
        let partial = plan(books: [F.book("b1")], complete: false, manifest: [F.synced(bookKey)])
        #expect(partial.actions.isEmpty && partial.missingOnDrive.isEmpty)
        // A JSON of another device's replace with its MP3 still to come, and a change here: after
        // the grace, read and merged, never uploaded over unread.
        var clip = F.synced(clipKey)
        clip.remoteMP3FileID = "m-c1"
        let theirs = F.json(clipKey, id: "j-theirs", modified: 900)
        let changed = F.clip("c1", updated: 300)
        #expect(plan(clips: [changed], files: [theirs], manifest: [clip]).missingOnDrive == [clipKey])
        #expect(plan(clips: [changed], files: [F.json(clipKey)], manifest: [clip]).actions.isEmpty)
        clip.missingSince = 0
        #expect(only(plan(clips: [changed], files: [theirs], manifest: [clip])) == ["merge clip c1"])
        // The JSON agreed on, its MP3 gone that long: the change here is uploaded whole.
        #expect(only(plan(clips: [changed], files: [F.json(clipKey)], manifest: [clip])) == ["upload clip c1"])
        // Its MP3 gone that long with nothing changed here (a delete that raced an edit took it):
        // the clip lives, its newer JSON merged with the audio here, the agreed one completed.
        let unchanged = F.clip("c1")
        #expect(only(plan(clips: [unchanged], files: [theirs], manifest: [clip])) == ["merge clip c1"])
        #expect(only(plan(clips: [unchanged], files: [F.json(clipKey)], manifest: [clip])) == ["upload clip c1"])
        clip.missingSince = nil
        let waiting = plan(clips: [unchanged], files: [theirs], manifest: [clip])
        #expect(waiting.actions.isEmpty && waiting.missingOnDrive == [clipKey])
        clip.missingSince = 0
        // A new MP3 under the agreed JSON is a change on Drive.
        let retaken = plan(
            clips: [F.clip("c1")], files: [F.json(clipKey), F.mp3("c1", fileID: "m-new")], manifest: [clip])
        #expect(only(retaken) == ["download clip c1"])
    }

    @Test("manifest rows with neither local nor remote entity are cleaned up")
    func cleanup() {
        let result = plan(manifest: [F.synced(clipKey), F.synced(bookKey)], queue: [F.queued(clipKey, .delete)])
        #expect(result.manifestCleanup == [bookKey, clipKey])
        #expect(result.droppedQueueItems == [clipKey])
        #expect(result.actions.isEmpty)
        #expect(plan(complete: false, manifest: [F.synced(clipKey)]).manifestCleanup.isEmpty)
    }

    @Test("a queued item whose entity is gone and was never synced is dropped")
    func dropNeverSynced() {
        #expect(plan(queue: [F.queued(clipKey, .delete)]).droppedQueueItems == [clipKey])
    }

    @Test("of several files with one name the newest is current; the others are stale duplicates")
    func staleDuplicates() {
        let older = RemoteFile(id: "older", name: "book_b1.json", modifiedTime: 100)
        let newest = RemoteFile(id: "newest", name: "book_b1.json", modifiedTime: 900)
        let listing = RemoteListing(
            files: [older, newest, RemoteFile(id: "x", name: "notes.txt", modifiedTime: 1)], isComplete: true)
        #expect(listing.entities[bookKey]?.json?.id == "newest")
        #expect(listing.ignored.map(\.id) == ["x"])
        // Neither is deleted unread: the newest upload need not be the newest content.
        let quiet = plan(
            books: [F.book("b1")], files: [older, newest], manifest: [F.synced(bookKey, remote: 900, fileID: "newest")])
        #expect(only(quiet) == ["merge book b1"])
        #expect(quiet.staleDuplicates.isEmpty)
        // New here: the download reads every JSON, and every MP3 whose content may differ (issue 37);
        // an MP3's older twin with the same md5 as Drive lists for the current one is a stale duplicate.
        let twinJSON = RemoteFile(id: "j-old", name: "clip_c1.json", modifiedTime: 100)
        var sameMP3 = F.mp3("c1")
        sameMP3.md5 = "aa"
        var sameTwin = F.mp3("c1", fileID: "m-old", modified: 1)
        sameTwin.md5 = "aa"
        let pulled = plan(files: [F.json(clipKey), twinJSON, sameMP3, sameTwin])
        #expect(only(pulled) == ["download clip c1"])
        #expect(pulled.staleDuplicates.map(\.file.id) == ["m-old"])
        let otherTake = plan(files: [F.json(clipKey), F.mp3("c1"), F.mp3("c1", fileID: "m-old", modified: 1)])
        #expect(only(otherTake) == ["download clip c1"])
        #expect(otherTake.staleDuplicates.isEmpty, "an MP3 of unknown content is read before it is deleted")
        let uploading = plan(
            books: [F.book("b1", updated: 300)], files: [older, newest],
            manifest: [F.synced(bookKey, remote: 900, fileID: "newest")])
        #expect(uploading.staleDuplicates.isEmpty, "the upload replaces every file of the name")
        #expect(Set(uploading.actions[0].remote?.allFiles.map(\.id) ?? []) == ["older", "newest"])
    }

    @Test(
        "file names outside the rules are ignored",
        arguments: [
            "book_B1.json", "book_b1.mp3", "clip_c1.wav", "clip-c1.json", "book_.json", "clip_c1.json.bak",
            "album_a1.json",
        ])
    func ignoredNames(name: String) {
        let listing = RemoteListing(files: [RemoteFile(id: "x", name: name, modifiedTime: 1)], isComplete: true)
        #expect(listing.entities.isEmpty)
        #expect(listing.ignored.count == 1)
    }

    @Test("safety valve: more than 10 local deletions and more than half the known clips are held back")
    func safetyValve() {
        func clips(_ count: Int) -> (local: [Clip], manifest: [ManifestEntry]) {
            let ids = (0..<count).map { String(format: "c%02x", $0) }
            return (ids.map { F.clip(ClipID($0)) }, ids.map { F.synced(EntityKey(.clip, $0)) })
        }
        let many = clips(20)
        let held = plan(clips: many.local, manifest: many.manifest)
        #expect(held.actions(.deleteLocal).isEmpty)
        #expect(held.held.count == 20)
        #expect(held.deletionsHeldReason?.contains("--allow-deletes") == true)
        #expect(plan(clips: many.local, manifest: many.manifest, allowDeletes: true).actions(.deleteLocal).count == 20)
        let few = clips(10)
        #expect(
            plan(clips: few.local, manifest: few.manifest).actions(.deleteLocal).count == 10, "10 is not more than 10")
        // 11 deletions of 30 known clips: not more than half.
        let known = clips(30)
        let files = known.local.dropFirst(11).flatMap { [F.json(EntityKey($0.id)), F.mp3($0.id)] }
        #expect(
            plan(clips: known.local, files: Array(files), manifest: known.manifest).actions(.deleteLocal).count == 11)
    }

    @Test("safety valve: local deletions are held when the Drive folder is not the recorded one")
    func foreignFolder() {
        let result = plan(clips: [F.clip("c1")], manifest: [F.synced(clipKey)], folderIsRecorded: false)
        #expect(result.actions.isEmpty)
        #expect(result.deletionsHeldReason?.contains("not the one") == true)
        #expect(
            plan(clips: [F.clip("c1")], manifest: [F.synced(clipKey)], allowDeletes: true, folderIsRecorded: false)
                .actions.count == 1)
    }

    @Test("a listing lacking more than half (and more than 10) of the books synced is not taken at its word")
    func shortListing() {
        let books = (0..<12).map { String(format: "b%02x", $0) }
        let manifest = books.map { F.synced(EntityKey(.book, $0), missingSince: 0) } + [F.synced(clipKey)]
        let local = books.map { F.book(BookID($0)) }
        // Drive lists the clip but none of the books.
        let files = [F.json(clipKey), F.mp3("c1")]
        let result = plan(books: local, clips: [F.clip("c1")], files: files, manifest: manifest)
        #expect(result.actions.isEmpty, "no book uploaded again beside the file Drive left out: \(only(result))")
        #expect(result.held.count == 12 && result.held.allSatisfy { $0.action == .upload })
        #expect(
            result.listingDistrustedReason?.contains("only 0 of the 12 books") == true,
            "\(result.listingDistrustedReason ?? "")")
        // ... nor a clip deleted here, even one alone, nor a record forgotten.
        let clipGone = plan(books: local, clips: [F.clip("c1")], manifest: manifest)
        #expect(clipGone.actions(.deleteLocal).isEmpty && clipGone.held.contains { $0.action == .deleteLocal })
        #expect(clipGone.deletionsHeldReason?.contains("--allow-deletes") == true)
        let bothGone = plan(books: local, manifest: manifest + [F.synced(EntityKey(.clip, "c2"))])
        #expect(bothGone.manifestCleanup.isEmpty)
        // --allow-deletes takes it at its word; a shorter gap (10 of 12) is an ordinary listing.
        #expect(
            plan(books: local, clips: [F.clip("c1")], files: files, manifest: manifest, allowDeletes: true).actions(
                .upload
            ).count == 12)
        let tenGone = files + books.prefix(2).map { F.json(EntityKey(.book, $0)) }
        let ordinary = plan(books: local, clips: [F.clip("c1")], files: tenGone, manifest: manifest)
        #expect(ordinary.actions(.upload).count == 10 && ordinary.listingDistrustedReason == nil)
    }

    @Test("every planned action carries a reason")
    func reasons() {
        let result = plan(
            books: [F.book("b1"), F.book("b2", updated: 900)], clips: [F.clip("c1")],
            files: [F.json(EntityKey(.book, "b3")), F.json(EntityKey(.book, "b2"), modified: 900)],
            manifest: [F.synced(EntityKey(.book, "b2")), F.synced(clipKey)])
        #expect(only(result) == ["upload book b1", "merge book b2", "download book b3", "delete_local clip c1"])
        #expect(result.actions.allSatisfy { !$0.reason.isEmpty })
    }
}
