import Foundation
import GRDB
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("The library database")
struct SchemaTests {
    @Test("tables have the contract's columns")
    func contractColumns() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        let columns = try await library.externalConnection().read { db in
            try ["books", "clips", "sync_queue", "sync_manifest", "settings"].reduce(into: [String: [String]]()) {
                all, table in
                all[table] = try db.columns(in: table).map(\.name)
            }
        }
        #expect(
            columns["books"] == [
                "id", "title", "artist", "artwork", "position", "hidden", "uri", "created_at", "updated_at",
            ])
        #expect(
            columns["clips"] == [
                "id", "book_id", "start", "duration", "note", "transcription", "created_at", "updated_at",
            ])
        #expect(
            columns["sync_queue"] == ["entity_type", "entity_id", "operation", "attempts", "last_error", "queued_at"])
        #expect(
            columns["sync_manifest"] == [
                "entity_type", "entity_id", "local_updated_at", "remote_updated_at", "remote_file_id",
                "remote_mp3_file_id", "synced_at",
                "base_json", "base_audio_md5", "missing_since", "prior_base_json",
            ])
        #expect(columns["settings"] == ["key", "value"])
    }

    @Test("the database runs in WAL mode and waits for other writers")
    func walAndBusyTimeout() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        let (mode, timeout) = try await library.pool.write { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode"), try Int.fetchOne(db, sql: "PRAGMA busy_timeout"))
        }
        #expect(mode == "wal")
        #expect(timeout == 10_000)
    }

    @Test("the data directory is created with mode 0700")
    func privateDirectory() async throws {
        let home = try TemporaryHome()
        let nested = home.file("deep/er/ivy")
        let paths = try IvyPaths.resolve(home: nested, environment: [:], workingDirectory: "/")
        _ = try await LibraryDatabase(paths: paths, clock: TestClock().clock)
        let mode = try FileManager.default.attributesOfItem(atPath: nested)[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    @Test("opening twice migrates once and keeps the data")
    func reopen() async throws {
        let home = try TemporaryHome()
        let clock = TestClock().clock
        _ = try await LibraryDatabase(paths: home.paths, clock: clock).addBook(
            id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        let again = try await LibraryDatabase(paths: home.paths, clock: clock)
        #expect(try await again.books(includeHidden: true).map(\.title) == ["Dune"])
    }

    @Test("a file that is not SQLite is refused, named, and left untouched")
    func notADatabase() async throws {
        let home = try TemporaryHome()
        let garbage = Data(("this is my shopping list, not a database\n" + String(repeating: "x", count: 5000)).utf8)
        _ = FileManager.default.createFile(atPath: home.paths.database, contents: garbage)
        await #expect(throws: StoreError.notADatabase(path: home.paths.database)) {
            try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        }
        #expect(FileManager.default.contents(atPath: home.paths.database) == garbage)
        let message = StoreError.notADatabase(path: home.paths.database).errorDescription ?? ""
        #expect(message.contains(home.paths.database))
    }

    @Test("a library from a newer ivy is refused and not migrated")
    func newerSchema() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        try await library.externalConnection().write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        await #expect(throws: StoreError.newerSchema(path: home.paths.database)) {
            try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        }
    }

    @Test(
        "the database refuses ids other devices would ignore, whoever writes them",
        arguments: [
            "ABC", "", "has space", "x", "../etc",
        ])
    func idRule(id: String) async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        let external = try library.externalConnection()
        #expect {
            try external.write { db in
                try db.execute(
                    sql: "INSERT INTO books (id, title, created_at, updated_at) VALUES (?, 'T', 1, 1)", arguments: [id])
            }
        } throws: { error in
            (error as? DatabaseError)?.message?.contains("^[a-f0-9-]+$") == true
        }
        await #expect(throws: StoreError.self) {
            try await library.addBook(id: BookID(id), title: "T", artist: nil, artwork: nil, position: 0)
        }
        #expect(try await library.books(includeHidden: true).isEmpty)
    }

    @Test("ids cannot be changed in place")
    func idsFixed() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        try await library.addBook(id: testID(1), title: "T", artist: nil, artwork: nil, position: 0)
        #expect(throws: DatabaseError.self) {
            try library.externalConnection().write { db in
                try db.execute(sql: "UPDATE books SET id = ? WHERE id = ?", arguments: [testID(2), testID(1)])
            }
        }
    }
}
