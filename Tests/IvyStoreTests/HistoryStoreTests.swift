import Foundation
import GRDB
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("History in the store")
struct HistoryStoreTests {
    let home: TemporaryHome
    let clock = TestClock.ticking()
    let library: LibraryDatabase
    let book: BookID = testID(1)
    let clip: ClipID = testID(2)
    let audio: String

    init() async throws {
        home = try TemporaryHome()
        library = try await LibraryDatabase(paths: home.paths, clock: clock.clock)
        try await library.addBook(id: book, title: "Dune", artist: nil, artwork: nil, position: 0)
        audio = home.path + "/take.mp3"
        try (Data("ID3".utf8) + Data(repeating: 5, count: 500)).write(to: URL(fileURLWithPath: audio))
        try await library.addClip(
            id: clip, bookID: book, start: 1, duration: 2, note: "kept", transcription: nil, audio: audio)
    }

    func rows(_ sql: String = "SELECT * FROM history ORDER BY id") throws -> [Row] {
        try library.externalConnection().read { db in try Row.fetchAll(db, sql: sql) }
    }

    /// A moment after every version recorded so far and before whatever is recorded next: the
    /// newest version's time, once SQLite's clock (which records versions to the millisecond)
    /// has moved past it. That wait is for the clock, a millisecond or two.
    func age() throws -> Milliseconds {
        let newest = try library.externalConnection().read { db in
            try Milliseconds.fetchOne(db, sql: "SELECT coalesce(max(recorded_at), 0) FROM history") ?? 0
        }
        while Milliseconds((Date().timeIntervalSince1970 * 1000).rounded(.down)) <= newest + 1 {}
        return newest
    }

    func files(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test("each insert, update and delete is a version with its source and JSON; a uri or no-op update is none")
    func everyChange() async throws {
        try await library.updateBook(id: book, BookChanges(position: 120))
        try await library.updateBook(id: book, BookChanges(position: 120))
        // The uri belongs to this device, as the queue's capture has it.
        try await library.externalConnection().write { db in
            try db.execute(sql: "UPDATE books SET uri = '/here/dune.m4b' WHERE id = ?", arguments: [book])
        }
        // Another program, through SQLite: recorded too, as a change made here.
        try await library.externalConnection().write { db in
            try db.execute(sql: "UPDATE books SET title = 'Dune!' WHERE id = ?", arguments: [book])
        }
        // The sync engine: its writes are Drive's.
        try await library.applyingRemoteChanges { writer in
            try writer.saveExtras(EntityKey(book), ["app_key": .string("kept")])
            var updated = try #require(try writer.book(id: book))
            updated.position = 300
            try writer.save(updated)
        }
        try await library.deleteClip(id: clip)
        let history = try await library.history()
        #expect(history.map(\.source) == [.here, .drive, .here, .here, .here, .here])
        #expect(history.map(\.key.kind) == [.clip, .book, .book, .book, .clip, .book])
        #expect(history[0].deleted && history[0].changed.isEmpty)
        #expect(history[1].changed == ["app_key", "position"])
        #expect(history[1].object?["app_key"] == .string("kept") && history[1].object?["position"] == .number(300))
        #expect(history[2].changed == ["title"] && history[3].changed == ["position"])
        #expect(history[5].changed.contains("title") && history[5].object?["hidden"] == .bool(false))
        // The JSON reads back as the backup ivy would upload.
        let json = try #require(history[1].json)
        let backup = try BackupCodec.decodeBook(json, expectedID: book)
        let current = try #require(try await library.book(id: book))
        #expect(backup == BookBackup(current, extras: ["app_key": .string("kept")]))
    }

    @Test("a transaction that rolls back leaves no version")
    func rollback() throws {
        struct Stop: Error {}
        let before = try rows().count
        #expect(throws: Stop.self) {
            try library.externalConnection().write { db in
                try db.execute(sql: "UPDATE books SET position = 5 WHERE id = ?", arguments: [book])
                throw Stop()
            }
        }
        #expect(try rows().count == before)
    }

    @Test("a replaced or deleted MP3 is kept once per content, private, and named by the versions it belongs to")
    func audioKept() async throws {
        let other = home.path + "/other.mp3"
        try (Data("ID3".utf8) + Data(repeating: 7, count: 900)).write(to: URL(fileURLWithPath: other))
        let firstMD5 = try #require(try await library.audioMD5(clipID: clip))
        try await library.updateClip(id: clip, ClipChanges(), audio: other)
        #expect(files(home.paths.historyDirectory) == [firstMD5 + ".mp3"])
        let secondMD5 = try #require(try await library.audioMD5(clipID: clip))
        try await library.updateClip(id: clip, ClipChanges(), audio: audio)
        try await library.updateClip(id: clip, ClipChanges(), audio: other)
        // Three replacements, two contents.
        #expect(files(home.paths.historyDirectory) == [firstMD5, secondMD5].sorted().map { $0 + ".mp3" })
        let versions = try await library.history(of: EntityKey(clip))
        #expect(versions.map(\.audioMD5) == [nil, firstMD5, secondMD5, firstMD5])
        #expect(versions.dropLast().allSatisfy { $0.changed == ["audio"] })
        try await library.deleteClip(id: clip)
        let afterDelete = try await library.history(of: EntityKey(clip))
        #expect(afterDelete.map(\.audioMD5) == [nil, secondMD5, firstMD5, secondMD5, firstMD5])
        var info = stat()
        #expect(stat(home.paths.historyDirectory, &info) == 0 && info.st_mode & 0o777 == 0o700)
        for file in files(home.paths.historyDirectory) {
            #expect(stat(home.paths.historyDirectory + "/" + file, &info) == 0 && info.st_mode & 0o777 == 0o600)
        }
    }

    @Test("a whole-library restore brings back fields, a deleted clip with its MP3, and deletes what came later")
    func restoreWholeLibrary() async throws {
        try await library.updateBook(id: book, BookChanges(position: 3600))
        let original = try #require(try await library.audioMD5(clipID: clip))
        let moment = try age()
        try await library.updateBook(id: book, BookChanges(title: "Wiped", position: 0))
        try await library.deleteClip(id: clip)
        // Made after the moment, by the clock that stamps created_at.
        clock.set(max(clock.now, moment + 1000))
        try await library.addBook(id: testID(3), title: "Later", artist: nil, artwork: nil, position: 0)
        let beforeRestore = try #require(try await library.book(id: book))
        try await library.externalConnection().write { db in try db.execute(sql: "DELETE FROM sync_queue") }

        let preview = try await library.restore(at: moment, dryRun: true)
        #expect(try await library.book(id: book) == beforeRestore, "a dry run changed the library")
        let result = try await library.restore(at: moment)
        #expect(result == preview)
        #expect(
            result.changes.map { "\($0.action) \($0.key)" }.sorted()
                == ["create clip \(clip)", "delete book \(testID(3))", "update book \(book)"])
        let restored = try #require(try await library.book(id: book))
        #expect(restored.title == "Dune" && restored.position == 3600 && restored.updatedAt > beforeRestore.updatedAt)
        #expect(try await library.clip(id: clip)?.note == "kept")
        #expect(try await library.audioMD5(clipID: clip) == original)
        #expect(try await library.book(id: testID(3))?.hidden == true)
        // Queued as local changes, recorded as a restore.
        let queued = try await library.queueItems().map(\.key).sorted()
        #expect(queued == [EntityKey(book), EntityKey(.book, testID(3)), EntityKey(clip)].sorted())
        #expect(try await library.history().prefix(3).allSatisfy { $0.source == .restore })
        // Once more changes nothing.
        #expect(try await library.restore(at: moment).changes.isEmpty)
    }

    @Test("restoring to just before a restore undoes it")
    func undo() async throws {
        try await library.updateBook(id: book, BookChanges(position: 100))
        let first = try age()
        try await library.updateBook(id: book, BookChanges(position: 200))
        let beforeRestore = try age()
        try await library.restore(at: first)
        #expect(try await library.book(id: book)?.position == 100)
        try await library.restore(at: beforeRestore)
        #expect(try await library.book(id: book)?.position == 200)
    }

    @Test("named ids restore only those; what did not exist then is left, and said")
    func named() async throws {
        let moment = try age()
        try await library.updateBook(id: book, BookChanges(position: 50))
        try await library.updateClip(id: clip, ClipChanges(note: .some("changed")))
        try await library.addBook(id: testID(3), title: "Later", artist: nil, artwork: nil, position: 0)
        let result = try await library.restore(at: moment, keys: [EntityKey(clip), EntityKey(.book, testID(3))])
        #expect(result.changes.map(\.key) == [EntityKey(clip)])
        #expect(result.skipped.map(\.key) == [EntityKey(.book, testID(3))])
        #expect(try await library.clip(id: clip)?.note == "kept")
        #expect(try await library.book(id: book)?.position == 50)
        #expect(try await library.book(id: testID(3))?.hidden == false)
    }

    struct Killed: Error {}

    @Test("a restore stopped before its commit leaves the library, its audio and its queue as they were")
    func stoppedRestore() async throws {
        let moment = try age()
        let other = home.path + "/other.mp3"
        try (Data("ID3".utf8) + Data(repeating: 7, count: 900)).write(to: URL(fileURLWithPath: other))
        try await library.updateClip(id: clip, ClipChanges(note: .some("new")), audio: other)
        try await library.updateBook(id: book, BookChanges(position: 77))
        let newMD5 = try await library.audioMD5(clipID: clip)
        let (books, clips, queue, versions) = (
            try await library.books(includeHidden: true), try await library.clips(), try await library.queueItems(),
            try rows().count
        )
        await #expect(throws: Killed.self) { try await library.restore(at: moment) { throw Killed() } }
        #expect(try await library.books(includeHidden: true) == books)
        #expect(try await library.clips() == clips)
        #expect(try await library.queueItems() == queue && rows().count == versions)
        #expect(try await library.audioMD5(clipID: clip) == newMD5)
        #expect(files(home.paths.audioDirectory) == [clip.rawValue + ".mp3"])
    }

    @Test("history_days 0 stops recording, and pruning then removes every version and MP3")
    func purge() async throws {
        try await library.updateClip(id: clip, ClipChanges(), audio: audio)
        #expect(try !rows().isEmpty && !files(home.paths.historyDirectory).isEmpty)
        try await library.setSetting(.historyDays, to: "0")
        try await library.updateBook(id: book, BookChanges(position: 9))
        #expect(try rows("SELECT * FROM history WHERE entity_type = 'book'").count == 1)
        #expect(try await library.pruneHistoryIfDue(days: 0) > 0)
        #expect(try rows().isEmpty && files(home.paths.historyDirectory).isEmpty)
        #expect(try await library.historySummary() == HistorySummary(versions: 0, since: nil, bytes: 0))
    }

    @Test("the migration gives every entity already in a library one version, dated by its updated_at")
    func baseline() async throws {
        let older = try TemporaryHome()
        try FileManager.default.createDirectory(atPath: older.paths.dataDirectory, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: older.paths.database)
        try Schema.migrator.migrate(queue, upTo: "v9: trash keeps what a restore replaces")
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO books (id, title, position, hidden, created_at, updated_at)
                    VALUES ('\(book)', 'Old', 12.5, 1, 1000, 1234);
                    INSERT INTO backup_extras (entity_type, entity_id, json) VALUES ('book', '\(book)', '{"app":1}');
                    """)
        }
        try queue.close()
        let migrated = try await LibraryDatabase(paths: older.paths, clock: clock.clock)
        let versions = try await migrated.history()
        #expect(versions.map(\.recordedAt) == [1234] && versions.map(\.source) == [.here])
        let json = try #require(versions.first?.json)
        #expect(
            try BackupCodec.decodeBook(json, expectedID: book)
                == BookBackup(
                    id: book, title: "Old", position: 12.5, hidden: true, createdAt: 1000, updatedAt: 1234,
                    extras: ["app": .number(1)]))
        let summary = try await migrated.historySummary()
        #expect(summary.versions == 1 && summary.since == 1234 && summary.bytes > 0)
    }
}
