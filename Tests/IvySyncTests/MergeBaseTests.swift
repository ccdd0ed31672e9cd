import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import IvyTestSupport
import Testing

/// A merge applied here before its upload: what it took from Drive is its base from then on.
@Suite("The base of a merge not yet uploaded")
struct MergeBaseTests {
    /// The app's edit of a clip's JSON on Drive, by delete-then-create as the Ivy app does:
    /// read, change, stamp its own `updated_at`.
    private func appEdits(clip id: ClipID, note: String, _ world: World) async throws {
        let name = "clip_\(id).json"
        let live = await world.files().filter { $0.name == name && !$0.explicitlyTrashed }
        #expect(live.count == 1, "\(live.count) live files called \(name)")
        let old = try #require(live.first)
        var fields = try #require(try JSONSerialization.jsonObject(with: old.content) as? [String: Any])
        fields["note"] = note
        fields["updated_at"] = world.clock.now + 1_000
        let content = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        try await world.state.trash(id: old.id)
        _ = try await world.state.putFile(
            email: alice, name: name, parents: [await world.folderID("clips")], content: content,
            mimeType: "application/json")
        await world.state.advanceClock(by: 1)
    }

    /// ivy-soak seed 20 once ended with a clip's note "app r5 … --- Conflict --- app r15": the
    /// device had merged the app's first note with its own change, was killed before the
    /// upload, and merged the app's second note later against the base from before the first,
    /// as if it had written the first itself.
    @Test("a merge whose upload failed is merged later against what it took from Drive: no false conflict")
    func failedUploadKeepsWhatItTook() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let id = pair.clip.id
            try await appEdits(clip: id, note: "app: first", world)
            _ = try await pair.a.edit(clip: id, ClipChanges(start: 180))
            // The merge is written here; its upload (delete, then create) fails at the delete.
            await world.state.addFault(FaultRule(method: "DELETE", status: 400, reason: "badRequest"))
            let failed = try await pair.a.sync()
            #expect(failed.failures.count == 1, "\(failed.failures)")
            #expect(try await pair.a.clip(id)?.note == "app: first")
            await world.state.clearFaults()

            try await appEdits(clip: id, note: "app: second", world)
            let report = try await pair.a.sync()
            #expect(report.failures.isEmpty && report.conflicts.isEmpty, "\(report.conflicts)")
            let clip = try #require(try await pair.a.clip(id))
            #expect(clip.note == "app: second", "the app's first note came back beside its second")
            #expect(clip.start == 180)
            _ = try await pair.b.sync()
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
        }
    }

    /// ivy-soak seed 19 once ended diverged: device c deleted a clip while the app edited its
    /// note, the delete took the MP3 and the edit made a new JSON, and every device left the
    /// JSON without its MP3 alone for good: b kept the clip, a and c had deleted it.
    @Test("a delete that raced an edit leaves a JSON without MP3: after the grace the clip lives everywhere")
    func deleteRacedEdit() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let id = pair.clip.id
            let name = "clip_\(id).json"
            let before = try #require(await world.files().first { $0.name == name && !$0.explicitlyTrashed })
            try await pair.a.library.deleteClip(id: id)
            #expect(try await pair.a.sync().deletedRemote.clips == 1)
            // The app's edit, from the copy it read before the delete, lands after it.
            var fields = try #require(try JSONSerialization.jsonObject(with: before.content) as? [String: Any])
            fields["note"] = "the app's note"
            fields["updated_at"] = world.clock.now + 1_000
            _ = try await world.state.putFile(
                email: alice, name: name, parents: [await world.folderID("clips")],
                content: JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]),
                mimeType: "application/json")

            let waiting = try await pair.b.sync()
            #expect(waiting.merged.clips + waiting.uploaded.clips == 0, "within the grace B waits")
            world.clock.advance(seconds: 61)
            let completed = try await pair.b.sync()
            #expect(completed.merged.clips == 1 && completed.failures.isEmpty, "\(completed.summary)")
            #expect(try await pair.b.clip(id)?.note == "the app's note")
            let resurrected = try await pair.a.sync()
            #expect(resurrected.downloaded.clips == 1, "\(resurrected.summary)")
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
            #expect(pair.a.audio(id) == pair.b.audio(id) && pair.a.audio(id) != nil)
            let live = await world.files().filter { $0.name.hasPrefix("clip_\(id)") && !$0.explicitlyTrashed }
            #expect(live.map(\.name).sorted() == [name, "clip_\(id).mp3"])
        }
    }

    /// The mark that puts a replace of this device's own back at once is written before the
    /// delete; a delete that never happened takes it back, or a later replace by another device,
    /// listed in its gap, would be undone at once instead of after the grace.
    @Test("a replace whose first delete fails leaves no mark: the absence of another's replace still gets its grace")
    func failedDeleteLeavesNoMark() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let id = pair.book.id
            _ = try await pair.a.edit(book: id, BookChanges(artist: "Stanisław Lem"))
            await world.state.addFault(FaultRule(method: "DELETE", status: 400, reason: "badRequest"))
            let failed = try await pair.a.sync()
            #expect(failed.failures.count == 1, "\(failed.summary)")
            await world.state.clearFaults()
            let entry = try #require(try await pair.a.library.manifestEntries().first { $0.key == EntityKey(id) })
            #expect(entry.missingSince == nil, "nothing was deleted: no absence of this device's own")
        }
    }

    /// ivy-soak seed 133 once ended with a book's artist back at "Toni Morrison" on every device:
    /// device c's replace of the book deleted Drive's file and its create failed, c's next
    /// syncs waited out the grace as for another device's replace, and a device that had
    /// missed c's artist restored its own older copy first. Every device then took that copy
    /// for a newer edit.
    @Test("a replace of its own that died after the delete is put back by the next sync, before an older copy")
    func ownReplaceCutShort() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let id = pair.book.id
            _ = try await pair.a.edit(book: id, BookChanges(artist: "Stanisław Lem"))
            #expect(try await pair.a.sync().uploaded.books == 1)
            _ = try await pair.a.edit(book: id, BookChanges(position: 9000))
            await world.state.addFault(
                FaultRule(
                    method: "POST", pathContains: "upload/drive/v3/files", times: 1, status: 400, reason: "badRequest"))
            let failed = try await pair.a.sync()
            #expect(failed.failures.count == 1, "\(failed.summary)")
            await world.state.clearFaults()
            let gone = await world.files().filter { $0.name == "book_\(id).json" && !$0.explicitlyTrashed }
            #expect(gone.isEmpty, "the replace deleted Drive's file before its create failed")

            // B, which never saw the artist, finds the book missing and waits.
            let waiting = try await pair.b.sync()
            #expect(waiting.uploaded.books + waiting.downloaded.books == 0, "\(waiting.summary)")
            let repaired = try await pair.a.sync()
            #expect(repaired.uploaded.books == 1, "A's own delete is no replace of another device's to wait for")
            world.clock.advance(seconds: 61)
            _ = try await pair.b.sync()
            _ = try await pair.a.sync()
            #expect(try await pair.a.book(id)?.artist == "Stanisław Lem")
            #expect(try await pair.b.book(id)?.artist == "Stanisław Lem")
            #expect(try await pair.b.book(id)?.position == 9000)
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
        }
    }
}
