import Foundation
import GRDB
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("Change capture by triggers")
struct ChangeCaptureTests {
    let home: TemporaryHome
    let clock = TestClock()
    let library: LibraryDatabase

    init() async throws {
        home = try TemporaryHome()
        library = try await LibraryDatabase(paths: home.paths, clock: clock.clock)
    }

    var external: DatabaseQueue { get throws { try library.externalConnection() } }

    @Test("ivy's own adds, edits and deletes are queued")
    func ownWrites() async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        let audio = try home.mp3("a.mp3")
        try await library.addClip(
            id: testID(2), bookID: testID(1), start: 1, duration: 2, note: nil, transcription: nil, audio: audio)
        #expect(try queueRows(external) == ["book \(testID(1)) upsert 0", "clip \(testID(2)) upsert 0"])
        try await library.deleteClip(id: testID(2))
        #expect(try queueRows(external) == ["book \(testID(1)) upsert 0", "clip \(testID(2)) delete 0"])
    }

    @Test("another program's plain-SQL writes are queued in the same transaction")
    func externalWriter() throws {
        let other = try external
        try other.write { db in
            try db.execute(sql: "INSERT INTO books (id, title, created_at, updated_at) VALUES ('b1', 'Emma', 5, 5)")
            try db.execute(
                sql:
                    "INSERT INTO clips (id, book_id, start, duration, created_at, updated_at) "
                    + "VALUES ('c1', 'b1', 0, 3, 5, 5)"
            )
        }
        #expect(try queueRows(other) == ["book b1 upsert 0", "clip c1 upsert 0"])
        try other.write { db in try db.execute(sql: "DELETE FROM clips WHERE id = 'c1'") }
        #expect(try queueRows(other) == ["book b1 upsert 0", "clip c1 delete 0"])
        // A change that rolls back leaves no queue row behind.
        try? other.write { db in
            try db.execute(sql: "INSERT INTO books (id, title, created_at, updated_at) VALUES ('b2', 'Gone', 5, 5)")
            throw CancellationError()
        }
        #expect(try queueRows(other) == ["book b1 upsert 0", "clip c1 delete 0"])
    }

    @Test("an edit that does not move updated_at is still queued")
    func editWithoutTimestamp() async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        try await library.pool.write { db in try db.execute(sql: "DELETE FROM sync_queue") }
        try await external.write { db in
            try db.execute(sql: "UPDATE books SET position = 99 WHERE id = ?", arguments: [testID(1)])
        }
        #expect(try queueRows(external) == ["book \(testID(1)) upsert 0"])
    }

    @Test(
        "an update that changes no column queues nothing",
        arguments: [
            "UPDATE books SET title = title, position = position",
            "UPDATE books SET hidden = 0",
            "UPDATE books SET uri = '/local/path/only.m4b'",
        ])
    func noOpUpdate(sql: String) async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        try await library.pool.write { db in try db.execute(sql: "DELETE FROM sync_queue") }
        try await external.write { db in try db.execute(sql: sql) }
        #expect(try queueRows(external).isEmpty)
    }

    @Test("a newer change replaces the queue row and resets its attempts")
    func newerChangeResets() async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        try await library.pool.write { db in
            try db.execute(sql: "UPDATE sync_queue SET attempts = 3, last_error = 'offline'")
        }
        #expect(try await library.localStatus().failed == 1)
        try await library.updateBook(id: testID(1), BookChanges(title: "Dune Messiah"))
        let items = try await library.queueItems()
        #expect(items.count == 1)
        #expect(items.first?.attempts == 0)
        #expect(items.first?.lastError == nil)
        #expect(try await library.localStatus().pending == 1)
    }

    @Test("the sync engine's own writes are not queued")
    func engineWritesExcluded() async throws {
        let remote = Book(id: testID(1), title: "From Drive", position: 10, createdAt: 1, updatedAt: 2)
        try await library.applyingRemoteChanges { writer in
            try writer.save(remote)
            try writer.save(Clip(id: testID(2), bookID: testID(1), start: 0, duration: 1, createdAt: 1, updatedAt: 2))
        }
        #expect(try await library.book(id: testID(1)) == remote)
        #expect(try queueRows(external).isEmpty)
        try await library.applyingRemoteChanges { try $0.deleteClip(id: testID(2)) }
        #expect(try queueRows(external).isEmpty)
        // Capture is back on right after: a user's edit is queued again.
        try await library.updateBook(id: testID(1), BookChanges(position: 20))
        #expect(try queueRows(external) == ["book \(testID(1)) upsert 0"])
    }

    @Test("while the engine applies changes, other connections never see capture paused")
    func exclusionInvisible() async throws {
        let other = try external
        let seen = try await library.applyingRemoteChanges { writer in
            try writer.save(Book(id: testID(1), title: "X", createdAt: 1, updatedAt: 1))
            return try other.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_applying") }
        }
        #expect(seen == 0)
        try await other.write { db in try db.execute(sql: "UPDATE books SET title = 'Y'") }
        #expect(try queueRows(other) == ["book \(testID(1)) upsert 0"])
    }

    @Test("a failed engine transaction leaves capture on and writes nothing")
    func engineFailureRollsBack() async throws {
        await #expect(throws: CancellationError.self) {
            try await library.applyingRemoteChanges { writer in
                try writer.save(Book(id: testID(1), title: "X", createdAt: 1, updatedAt: 1))
                throw CancellationError()
            }
        }
        #expect(try await library.books(includeHidden: true).isEmpty)
        try await external.write { db in
            try db.execute(sql: "INSERT INTO books (id, title, created_at, updated_at) VALUES ('b1', 'E', 1, 1)")
        }
        #expect(try queueRows(external) == ["book b1 upsert 0"])
    }
}
