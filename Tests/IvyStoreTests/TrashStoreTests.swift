import Foundation
import GRDB
import IvyCore
import IvySystem
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("The local trash in the store")
struct TrashStoreTests {
    let home: TemporaryHome
    let clock = TestClock()
    let library: LibraryDatabase
    let clip: Clip

    init() async throws {
        home = try TemporaryHome()
        library = try await LibraryDatabase(paths: home.paths, clock: clock.clock)
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        let source = home.path + "/take.mp3"
        try (Data("ID3".utf8) + Data(repeating: 5, count: 500)).write(to: URL(fileURLWithPath: source))
        clip = try await library.addClip(
            id: testID(2), bookID: testID(1), start: 1, duration: 2, note: "kept", transcription: nil, audio: source)
    }

    var key: EntityKey { EntityKey(clip.id) }

    func trashFiles() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: home.paths.trashDirectory)) ?? []
    }

    /// What a sync's local delete does, as `applyRemote` does it; `beforeCommit` runs last
    /// inside the transaction.
    func deleteLikeASync(beforeCommit: @Sendable (EngineWriter) throws -> Void = { _ in }) async throws {
        try await library.applyingRemoteChanges { writer in
            let before = try #require(try writer.trashable(key))
            _ = try writer.keepInTrash(
                before, reason: .deleted, audio: library.audioPath(clipID: clip.id), at: clock.now)
            try writer.deleteClip(id: clip.id)
            try beforeCommit(writer)
        }
        library.removeAudio(clipID: clip.id)
    }

    @Test("the trash's MP3 is on disk before the change commits, and the entry commits with the change")
    func orderOfWrites() async throws {
        let outside = try library.externalConnection()
        let queued = try await library.queueItems()
        @Sendable func count(_ table: String) throws -> Int? {
            try outside.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") }
        }
        try await deleteLikeASync { _ in
            // Before the commit: the MP3 is in the trash already, and another program sees
            // neither the delete nor the entry.
            #expect(trashFiles().count == 1)
            let (clips, entries) = (try count("clips"), try count("trash"))
            #expect(clips == 1 && entries == 0)
        }
        #expect(try count("clips") == 0 && count("trash") == 1)
        let entry = try #require(try await library.trashEntries().first)
        #expect(entry.entity == .clip(ClipBackup(clip)))
        #expect(try await library.queueItems() == queued, "the sync's delete or its trash entry entered the queue")
    }

    struct Killed: Error {}

    @Test("a run that dies after the trash write and before the commit leaves the library as it was")
    func killedBeforeCommit() async throws {
        await #expect(throws: Killed.self) { try await deleteLikeASync { _ in throw Killed() } }
        // The library is unchanged: the clip and its audio are there, no entry was recorded.
        #expect(try await library.clip(id: clip.id) == clip)
        #expect(library.hasAudio(clipID: clip.id))
        #expect(try await library.trashEntries().isEmpty)
        // The MP3 that reached the trash may be the only copy of audio already replaced: the
        // purge keeps it as long as an entry would be kept, then removes it.
        #expect(trashFiles().count == 1)
        clock.set(Milliseconds(Date().timeIntervalSince1970 * 1000))
        #expect(try await library.purgeTrash(keepingDays: 30) == 0)
        #expect(trashFiles().count == 1)
        clock.advance(seconds: 31 * 86_400)
        #expect(try await library.purgeTrash(keepingDays: 30) == 0)
        #expect(trashFiles().isEmpty)
    }

    @Test("a clip that cannot be written as backup JSON is kept all the same, its infinite time as text")
    func unencodableIsKept() async throws {
        try await library.pool.write { db in
            try db.execute(sql: "DROP TRIGGER clips_times_valid_update")
            try db.execute(sql: "UPDATE clips SET duration = 9e999")
        }
        try await deleteLikeASync()
        let entry = try #require(try await library.trashEntries().first)
        let object = try #require(try JSONSerialization.jsonObject(with: entry.json) as? [String: Any])
        #expect(object["duration"] as? String == "inf" && object["note"] as? String == "kept")
        #expect(entry.entity == nil)
        await #expect(throws: TrashError.unreadable(id: entry.id)) { try await library.restoreFromTrash(id: entry.id) }
    }

    @Test("purge keeps entries for trash_days and removes them after, with their MP3s")
    func purge() async throws {
        try await deleteLikeASync()
        #expect(trashFiles().count == 1)
        clock.advance(seconds: 30 * 86_400 - 1)
        #expect(try await library.purgeTrash(keepingDays: 30) == 0)
        #expect(trashFiles().count == 1)
        clock.advance(seconds: 2)
        #expect(try await library.purgeTrash(keepingDays: 30) == 1)
        #expect(try await library.trashEntries().isEmpty && trashFiles().isEmpty)
    }

    @Test("restoring a clip whose book is not here is refused and changes nothing")
    func restoreWithoutBook() async throws {
        try await deleteLikeASync()
        let entry = try #require(try await library.trashEntries().first)
        try await library.pool.write { db in try db.execute(sql: "DELETE FROM books") }
        await #expect(throws: TrashError.bookMissing(id: entry.id, clipID: clip.id, bookID: testID(1))) {
            try await library.restoreFromTrash(id: entry.id)
        }
        #expect(try await library.clip(id: clip.id) == nil)
        #expect(try await library.trashEntries() == [entry])
        await #expect(throws: TrashError.notFound(id: 99)) { try await library.restoreFromTrash(id: 99) }
    }

    @Test("a restored clip is queued for upload, newer than what it replaced")
    func restoreQueues() async throws {
        try await deleteLikeASync()
        try await library.pool.write { db in try db.execute(sql: "DELETE FROM sync_queue") }
        let entry = try #require(try await library.trashEntries().first)
        clock.set(1_000)  // a clock that stepped back still moves updated_at on
        try await library.restoreFromTrash(id: entry.id)
        let restored = try #require(try await library.clip(id: clip.id))
        #expect(restored.updatedAt == clip.updatedAt + 1)
        #expect(try await library.queueItems().map(\.key) == [key])
        #expect(trashFiles().isEmpty)
    }

    @Test("an old entry is not restored over a clip made again since, unless asked; what it replaces is kept")
    func restoreOverNewer() async throws {
        try await deleteLikeASync()
        let entry = try #require(try await library.trashEntries().first)
        // Another device made the clip again (its own audio), and a sync brought it here.
        clock.advance(seconds: 60)
        let source = home.path + "/again.mp3"
        try (Data("ID3".utf8) + Data(repeating: 9, count: 300)).write(to: URL(fileURLWithPath: source))
        let again = try await library.addClip(
            id: clip.id, bookID: testID(1), start: 7, duration: 3, note: "made again", transcription: nil,
            audio: source)
        let againAudio = FileManager.default.contents(atPath: library.audioPath(clipID: clip.id))
        await #expect(
            throws: TrashError.newerHere(id: entry.id, key: key, trashedAt: entry.trashedAt)
        ) {
            try await library.restoreFromTrash(id: entry.id)
        }
        #expect(try await library.clip(id: clip.id) == again, "refused: nothing changed")
        #expect(try await library.trashEntries() == [entry])

        try await library.restoreFromTrash(id: entry.id, replacingNewer: true)
        #expect(try await library.clip(id: clip.id)?.note == "kept")
        let replaced = try #require(try await library.trashEntries().first)
        #expect(try await library.trashEntries().count == 1 && replaced.reason == .restore)
        #expect(replaced.entity == .clip(ClipBackup(again, extras: [:])))
        let keptAudio = try #require(library.trashAudioPath(replaced))
        #expect(FileManager.default.contents(atPath: keptAudio) == againAudio, "the replaced MP3 is kept too")
    }

    @Test("the trash's ids keep growing across the migration that widened its reasons")
    static func idsOnlyGrow() async throws {
        let home = try TemporaryHome()
        try Directories.ensurePrivate(home.paths.dataDirectory)
        let before = try DatabaseQueue(path: home.paths.database)
        try Schema.migrator.migrate(before, upTo: "v8: audio replacements")
        try await before.write { db in
            for _ in 1...3 {
                try db.execute(
                    sql: """
                        INSERT INTO trash (entity_type, entity_id, reason, trashed_at, json)
                        VALUES ('book', '\(testID(1))', 'merge', 1, '{}')
                        """)
            }
            try db.execute(sql: "DELETE FROM trash WHERE id = 3")
        }
        try before.close()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        let next = try await library.write(.storeRestoreTrash) { db in
            try db.execute(
                sql: """
                    INSERT INTO trash (entity_type, entity_id, reason, trashed_at, json)
                    VALUES ('book', '\(testID(1))', 'restore', 2, '{}')
                    """)
            return db.lastInsertedRowID
        }
        #expect(next == 4, "id 3 was seen once; it never names another entry")
        #expect(try await library.trashEntries().map(\.id) == [1, 2, 4])
    }
}
