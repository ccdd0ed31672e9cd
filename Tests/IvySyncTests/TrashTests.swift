import Foundation
import IvyCore
import IvyStore
import IvySync
import IvyTestSupport
import Testing

/// The local trash: what a sync deletes or overwrites here is kept first, and can be put
/// back so that it reaches every device again.
@Suite struct TrashTests {
    private func mode(_ path: String) -> mode_t {
        var info = stat()
        #expect(stat(path, &info) == 0, "\(path) is missing")
        return info.st_mode & 0o777
    }

    private func audio(_ world: World, _ name: String, byte: UInt8) throws -> String {
        let path = world.directory + "/\(name).mp3"
        try (Data("ID3".utf8) + Data(repeating: byte, count: 3000)).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a clip deleted on another device is kept in the trash, restored, and reaches every device again")
    func deletedClipComesBack() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await b.edit(clip: pair.clip.id, ClipChanges(note: "remember this"))
            #expect(try await b.sync().uploaded.pair == [0, 1])
            #expect(try await a.sync().downloaded.pair == [0, 1])
            let original = try #require(try await b.clip(pair.clip.id))
            let originalAudio = try #require(b.audio(pair.clip.id))

            try await a.library.deleteClip(id: pair.clip.id)
            #expect(try await a.sync().deletedRemote.pair == [0, 1])
            let deleted = try await b.sync()
            #expect(deleted.deletedLocal.pair == [0, 1] && deleted.failures.isEmpty)
            #expect(try await b.clip(pair.clip.id) == nil && b.audio(pair.clip.id) == nil)

            let entries = try await b.library.trashEntries()
            #expect(entries.count == 1)
            let entry = try #require(entries.first)
            #expect(entry.key == EntityKey(pair.clip.id) && entry.reason == .deleted)
            #expect(entry.entity == .clip(ClipBackup(original)))
            let kept = try #require(b.library.trashAudioPath(entry))
            #expect(FileManager.default.contents(atPath: kept) == originalAudio)
            #expect(mode(kept) == 0o600 && mode(b.paths.trashDirectory) == 0o700)

            try await b.library.restoreFromTrash(id: entry.id)
            #expect(try await b.library.trashEntries().isEmpty)
            #expect(!FileManager.default.fileExists(atPath: kept))
            let restored = try #require(try await b.clip(pair.clip.id))
            #expect(restored.note == "remember this" && restored.start == original.start)
            #expect(restored.updatedAt > original.updatedAt)
            #expect(b.audio(pair.clip.id) == originalAudio)

            let pushed = try await b.sync()
            #expect(pushed.uploaded.pair == [0, 1] && pushed.failures.isEmpty)
            #expect(await world.names().contains("clip_\(pair.clip.id).mp3"))
            let back = try await a.sync()
            #expect(back.downloaded.pair == [0, 1] && back.failures.isEmpty)
            #expect(try await a.clip(pair.clip.id)?.note == "remember this")
            #expect(try await a.snapshot() == b.snapshot())
            // Nothing is undone afterwards: both agree and stay agreed.
            #expect(try await b.sync().transferredNothing)
            #expect(try await a.sync().transferredNothing)
        }
    }

    @Test("an MP3 replaced by Drive's copy is kept in the trash with the clip as it was")
    func replacedAudioIsKept() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            let before = try #require(b.audio(pair.clip.id))
            try await a.library.updateClip(id: pair.clip.id, ClipChanges(), audio: try audio(world, "retake", byte: 7))
            #expect(try await a.sync().uploaded.pair == [0, 1])
            #expect(try await b.sync().downloaded.pair == [0, 1])
            #expect(b.audio(pair.clip.id) == a.audio(pair.clip.id))

            let entry = try #require(try await b.library.trashEntries().first)
            #expect(entry.reason == .download && entry.key == EntityKey(pair.clip.id))
            let kept = try #require(b.library.trashAudioPath(entry))
            #expect(FileManager.default.contents(atPath: kept) == before)
            #expect(mode(kept) == 0o600)

            // Restored, the old take wins the next sync and replaces the retake everywhere.
            try await b.library.restoreFromTrash(id: entry.id)
            #expect(try await b.sync().uploaded.pair == [0, 1])
            #expect(try await a.sync().downloaded.pair == [0, 1])
            #expect(a.audio(pair.clip.id) == before && b.audio(pair.clip.id) == before)
        }
    }

    @Test("a note and a book replaced by downloads are kept as they were, without an MP3")
    func replacedFieldsAreKept() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.edit(clip: pair.clip.id, ClipChanges(note: "first"))
            try await a.edit(book: pair.book.id, BookChanges(title: "Dune Messiah"))
            #expect(try await a.sync().uploaded.pair == [1, 1])
            #expect(try await b.sync().downloaded.pair == [1, 1])
            try await a.edit(clip: pair.clip.id, ClipChanges(note: "second"))
            #expect(try await a.sync().uploaded.pair == [0, 1])
            #expect(try await b.sync().downloaded.pair == [0, 1])

            let entries = try await b.library.trashEntries()
            #expect(entries.map(\.reason) == [.download, .download, .download])
            #expect(entries.allSatisfy { $0.audioFile == nil })
            let books = entries.compactMap { if case .book(let book) = $0.entity { book } else { nil } }
            let notes = entries.compactMap { if case .clip(let clip) = $0.entity { clip.note ?? "-" } else { nil } }
            #expect(books.map(\.title) == ["Dune"])
            #expect(notes == ["-", "first"])
            // A sync that changes nothing here keeps nothing.
            #expect(try await b.sync().transferredNothing)
            #expect(try await b.library.trashEntries().count == 3)
        }
    }

    @Test("a download that moves only the listening position (a phone playing) or only the times keeps nothing")
    func positionAndTimesAreNotKept() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            for position in [60.0, 120.0, 180.0] {
                try await a.edit(book: pair.book.id, BookChanges(position: position))
                #expect(try await a.sync().uploaded.pair == [1, 0])
                #expect(try await b.sync().downloaded.pair == [1, 0])
            }
            #expect(try await b.library.book(id: pair.book.id)?.position == 180)
            #expect(try await b.library.trashEntries().isEmpty, "three positions, no entry")
        }
    }

    @Test("fields a merge replaces are kept as they were here, with the reason merge")
    func replacedByMerge() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await b.edit(clip: pair.clip.id, ClipChanges(note: "mine"))
            try await a.edit(clip: pair.clip.id, ClipChanges(note: "theirs"))
            #expect(try await a.sync().uploaded.pair == [0, 1])
            let merged = try await b.sync()
            #expect(merged.merged.pair == [0, 1] && merged.failures.isEmpty)
            // Both notes are kept in the merged one, with a conflict marker: the note here changed.
            let note = try #require(try await b.clip(pair.clip.id)?.note)
            #expect(note != "mine" && note.contains("theirs"), "\(note)")

            let entry = try #require(try await b.library.trashEntries().first)
            #expect(entry.reason == .merge && entry.audioFile == nil)
            guard case .clip(let kept) = entry.entity else { return #expect(Bool(false), "not a clip") }
            #expect(kept.note == "mine")
        }
    }

    @Test("entries older than trash_days are purged by a sync; trash_days 0 keeps nothing")
    func purgeAfterTrashDays() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.edit(clip: pair.clip.id, ClipChanges(note: "first"))
            #expect(try await a.sync().uploaded.pair == [0, 1])
            #expect(try await b.sync().downloaded.pair == [0, 1])
            #expect(try await b.library.trashEntries().count == 1)

            try await b.library.setSetting(.trashDays, to: "2")
            world.clock.advance(seconds: 86_400)
            _ = try await b.sync()
            #expect(try await b.library.trashEntries().count == 1, "purged a day early")
            world.clock.advance(seconds: 86_400 + 1)
            _ = try await b.sync()
            #expect(try await b.library.trashEntries().isEmpty)

            try await b.library.setSetting(.trashDays, to: "0")
            try await a.library.deleteClip(id: pair.clip.id)
            #expect(try await a.sync().deletedRemote.pair == [0, 1])
            #expect(try await b.sync().deletedLocal.pair == [0, 1])
            #expect(try await b.library.trashEntries().isEmpty)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: b.paths.trashDirectory)) ?? []
            #expect(files.isEmpty)
        }
    }
}
