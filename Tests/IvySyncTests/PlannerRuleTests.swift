import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import Testing

/// Every planner rule carried out end to end: two devices, one emulated Drive.
@Suite("Planner rules end to end")
struct PlannerRuleTests {
    @Test("a local edit is uploaded, and the other device downloads it; unchanged audio is not sent again")
    func localEditUploadsRemoteEditDownloads() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.edit(book: pair.book.id, BookChanges(title: "Dune Messiah", position: 6000))
            try await a.edit(clip: pair.clip.id, ClipChanges(start: 130, note: "the spice must flow"))

            let up = try await a.sync()
            #expect(up.uploaded.pair == [1, 1] && up.downloaded.total == 0 && up.merged.total == 0)
            #expect(up.bytesUploaded == 0, "the MP3 on Drive has the same bytes; only the JSON is replaced")
            let onDrive = try await world.json("book_\(pair.book.id).json")
            #expect(onDrive["title"] as? String == "Dune Messiah")

            let down = try await b.sync()
            #expect(down.downloaded.pair == [1, 1] && down.uploaded.total == 0 && down.merged.total == 0)
            #expect(try await b.book(pair.book.id)?.title == "Dune Messiah")
            #expect(try await b.clip(pair.clip.id)?.note == "the spice must flow")
            #expect(try await a.snapshot() == b.snapshot())

            // And the other way round.
            try await b.edit(book: pair.book.id, BookChanges(position: 7000))
            #expect(try await b.sync().uploaded.pair == [1, 0])
            #expect(try await a.sync().downloaded.pair == [1, 0])
            #expect(try await a.book(pair.book.id)?.position == 7000)
            #expect(try await a.snapshot() == b.snapshot())
            #expect(await world.names().count == 3)
        }
    }

    @Test(
        "both devices edit: position is the furthest, the later title wins, both notes are kept under a conflict marker"
    )
    func bothEditMerges() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.edit(book: pair.book.id, BookChanges(title: "Dune (A)", position: 8100))
            try await a.edit(clip: pair.clip.id, ClipChanges(note: "Interesting point about X"))
            try await b.edit(book: pair.book.id, BookChanges(title: "Dune (B)", position: 6300))
            try await b.edit(clip: pair.clip.id, ClipChanges(note: "Remember to revisit this"))

            #expect(try await b.sync().uploaded.pair == [1, 1])
            let merge = try await a.sync()
            #expect(merge.merged.pair == [1, 1])
            #expect(Set(merge.conflicts) == ["book \(pair.book.id)", "clip \(pair.clip.id)"])
            #expect(merge.failures.isEmpty)
            #expect(try await b.sync().downloaded.pair == [1, 1])

            for device in [a, b] {
                let book = try #require(try await device.book(pair.book.id))
                #expect(book.position == 8100, "\(device.name)")
                #expect(book.title == "Dune (B)", "\(device.name): B wrote its title last")
                let note = try #require(try await device.clip(pair.clip.id)?.note)
                #expect(note.hasPrefix("Interesting point about X\n\n--- Conflict ("), "\(device.name): \(note)")
                #expect(note.hasSuffix(") ---\nRemember to revisit this"), "\(device.name): \(note)")
            }
            #expect(try await a.snapshot() == b.snapshot())
            for device in [a, b] {
                let quiet = try await device.sync()
                #expect(quiet.transferredNothing, "\(device.name): \(quiet.summary)")
            }
            #expect(await world.names().count == 3)
        }
    }

    @Test("a clip deleted on one device is deleted on Drive, then on the other device")
    func deletePropagates() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.library.deleteClip(id: pair.clip.id)

            let deleting = try await a.sync()
            #expect(deleting.deletedRemote.pair == [0, 1] && deleting.failures.isEmpty)
            #expect(await world.names() == ["book_\(pair.book.id).json"])
            #expect(try await a.library.queueItems().isEmpty)

            let following = try await b.sync()
            #expect(following.deletedLocal.pair == [0, 1] && following.deletionsHeld == nil)
            #expect(try await b.clip(pair.clip.id) == nil)
            #expect(b.audio(pair.clip.id) == nil, "the audio file goes with the clip")
            #expect(try await b.library.queueItems().isEmpty, "a delete applied from Drive is not queued back")
            #expect(try await a.snapshot() == b.snapshot())
            for device in [a, b] {
                let quiet = try await device.sync()
                #expect(quiet.transferredNothing, "\(device.name): \(quiet.summary)")
                #expect(try await device.library.manifestEntries().map(\.key) == [EntityKey(pair.book.id)])
            }
        }
    }

    @Test(
        "a clip deleted on one device while edited on the other is resurrected everywhere, whoever syncs first",
        arguments: [true, false])
    func editBeatsDelete(deleterSyncsFirst: Bool) async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            let audio = try #require(a.audio(pair.clip.id))
            try await a.library.deleteClip(id: pair.clip.id)
            try await b.edit(clip: pair.clip.id, ClipChanges(note: "keep me"))

            if deleterSyncsFirst {
                #expect(try await a.sync().deletedRemote.pair == [0, 1])
                let restoring = try await b.sync()
                #expect(restoring.uploaded.pair == [0, 1], "an edit beats a delete: \(restoring.summary)")
                #expect(restoring.deletedLocal.total == 0)
                #expect(try await a.sync().downloaded.pair == [0, 1])
            } else {
                #expect(try await b.sync().uploaded.pair == [0, 1])
                let restoring = try await a.sync()
                #expect(restoring.downloaded.pair == [0, 1], "an edit beats a delete: \(restoring.summary)")
                #expect(restoring.deletedRemote.total == 0)
            }
            for device in [a, b] {
                #expect(try await device.clip(pair.clip.id)?.note == "keep me", "\(device.name)")
                #expect(device.audio(pair.clip.id) == audio, "\(device.name)")
                #expect(try await device.library.queueItems().isEmpty, "\(device.name)")
            }
            #expect(try await a.snapshot() == b.snapshot())
            #expect(
                await world.names().sorted()
                    == ["book_\(pair.book.id).json", "clip_\(pair.clip.id).json", "clip_\(pair.clip.id).mp3"].sorted())
            for device in [a, b] {
                let quiet = try await device.sync()
                #expect(quiet.transferredNothing, "\(device.name): \(quiet.summary)")
            }
        }
    }

    @Test("a book archived on one device is hidden everywhere, even when the other device edited it meanwhile")
    func archiveWins() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.edit(book: pair.book.id, BookChanges(hidden: true))
            try await b.edit(book: pair.book.id, BookChanges(position: 7000))

            #expect(try await a.sync().uploaded.pair == [1, 0])
            #expect(try await a.library.books(includeHidden: false).isEmpty)
            let merge = try await b.sync()
            #expect(merge.merged.pair == [1, 0])
            #expect(try await a.sync().downloaded.pair == [1, 0])

            for device in [a, b] {
                try await #expect(
                    device.library.books(includeHidden: false).isEmpty,
                    "\(device.name): archived books are not listed")
                let book = try #require(try await device.book(pair.book.id), "\(device.name): archived, never deleted")
                #expect(book.hidden && book.position == 7000, "\(device.name)")
                #expect(try await device.clip(pair.clip.id) != nil, "\(device.name): its clips stay")
            }
            #expect(try await world.json("book_\(pair.book.id).json")["hidden"] as? Bool == true)
            #expect(try await a.snapshot() == b.snapshot())
        }
    }
}

@Suite("The seed design's worked scenario")
struct WorkedScenarioTests {
    @Test("edits queued offline on A are merged with B's synced edits, never written over them")
    func mondayTuesday() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            // Monday morning, A offline on the subway: both edits wait in the queue.
            try await a.edit(book: pair.book.id, BookChanges(position: 8100))
            try await a.edit(clip: pair.clip.id, ClipChanges(note: "Great metaphor"))
            let queued = try await a.library.queueItems()
            #expect(Set(queued.map(\.key)) == [EntityKey(pair.book.id), EntityKey(pair.clip.id)])
            #expect(queued.allSatisfy { $0.operation == .upsert && $0.attempts == 0 })
            // Monday evening, B online at home.
            try await b.edit(book: pair.book.id, BookChanges(position: 6300))
            try await b.edit(clip: pair.clip.id, ClipChanges(note: "use in essay"))
            #expect(try await b.sync().uploaded.pair == [1, 1])

            // Tuesday morning, A back online: the queue goes through the three-way rules.
            let tuesday = try await a.sync()
            #expect(tuesday.merged.pair == [1, 1], "\(tuesday.summary)")
            #expect(tuesday.conflicts.count == 2)
            #expect(try await a.library.queueItems().isEmpty)
            // What A left on Drive still holds B's note and the furthest position.
            let clipJSON = try await world.json("clip_\(pair.clip.id).json")
            let driveNote = try #require(clipJSON["note"] as? String)
            #expect(driveNote.contains("use in essay") && driveNote.contains("Great metaphor"))
            #expect(try await world.json("book_\(pair.book.id).json")["position"] as? Double == 8100)

            #expect(try await b.sync().downloaded.pair == [1, 1])
            for device in [a, b] {
                #expect(try await device.book(pair.book.id)?.position == 8100, "\(device.name)")
                let note = try #require(try await device.clip(pair.clip.id)?.note)
                #expect(note.hasPrefix("Great metaphor\n\n--- Conflict ("), "\(device.name): \(note)")
                #expect(note.hasSuffix(") ---\nuse in essay"), "\(device.name): \(note)")
            }
            #expect(try await a.snapshot() == b.snapshot())
        }
    }
}
