import Foundation
import GRDB
import IvyCore
import IvySystem
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("Opening library.db")
struct LibraryOpeningTests {
    let home: TemporaryHome
    init() throws { home = try TemporaryHome() }

    func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
    }

    @Test("read-only: a missing library is an empty one, and nothing is created")
    func readOnlyMissing() async throws {
        let nested = try IvyPaths.resolve(home: home.file("not/yet"), environment: [:], workingDirectory: "/")
        let library = try await LibraryDatabase(paths: nested, clock: TestClock().clock, access: .readOnly)
        #expect(try await library.books(includeHidden: true).isEmpty)
        #expect(try await library.setting(.concurrency) == "8")
        #expect(try await library.localStatus().pending == 0)
        #expect(!FileManager.default.fileExists(atPath: home.file("not")))
    }

    @Test("read-only: no migration runs and nothing can be written")
    func readOnlyNoMigration() async throws {
        try FileManager.default.createDirectory(atPath: home.paths.dataDirectory, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: home.paths.database)
        try Schema.migrator.migrate(queue, upTo: "v1: library, queue, manifest, settings")
        try queue.close()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock, access: .readOnly)
        #expect(try await library.books(includeHidden: true).isEmpty)
        await #expect(throws: StoreError.self) {
            try await library.addBook(id: testID(1), title: "T", artist: nil, artwork: nil, position: 0)
        }
        let applied = try await DatabaseQueue(path: home.paths.database).read { db in
            try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        }
        #expect(applied == ["v1: library, queue, manifest, settings"])
    }

    @Test("a new library file is 0600 from the start; an older loose one is tightened")
    func fileModes() async throws {
        // (The umask is process-wide and tests run in parallel: the CLI tests try umask 002.)
        _ = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        #expect(mode(home.paths.database) == 0o600)
        chmod(home.paths.database, 0o664)
        _ = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        #expect(mode(home.paths.database) == 0o600)
    }

    @Test("an SQLite database with other tables is refused before anything in it changes")
    func foreignDatabase() async throws {
        let queue = try DatabaseQueue(path: home.paths.database)
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup')")
        }
        try queue.close()
        let before = try #require(FileManager.default.contents(atPath: home.paths.database))
        for access in [LibraryDatabase.Access.readWrite, .readOnly] {
            await #expect(throws: StoreError.notAnIvyLibrary(path: home.paths.database)) {
                try await LibraryDatabase(paths: home.paths, clock: TestClock().clock, access: access)
            }
        }
        #expect(FileManager.default.contents(atPath: home.paths.database) == before)
        let journal = try await DatabaseQueue(path: home.paths.database).read { db in
            try String.fetchOne(db, sql: "PRAGMA journal_mode")
        }
        #expect(journal == "delete")
    }

    @Test("an empty SQLite database, with no schema at all, becomes the library")
    func emptySQLite() async throws {
        let queue = try DatabaseQueue(path: home.paths.database)
        try await queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = 0; VACUUM") }
        try queue.close()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        #expect(try await library.books(includeHidden: true).count == 1)
    }

    @Test("a data directory others can write to is refused, read-only or not")
    func unsafeDirectory() async throws {
        _ = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        chmod(home.path, 0o775)
        for access in [LibraryDatabase.Access.readWrite, .readOnly] {
            await #expect {
                try await LibraryDatabase(paths: home.paths, clock: TestClock().clock, access: access)
            } throws: { error in
                (error as? StoreError)?.errorDescription?.contains("chmod 700 \(home.path)") == true
            }
        }
    }

    @Test("the rule: the user's own directory, writable by no one else")
    func directoryRule() {
        #expect(UnsafeDirectoryError.check(path: "/d", mode: 0o40700, owner: 5, user: 5) == nil)
        #expect(UnsafeDirectoryError.check(path: "/d", mode: 0o40755, owner: 5, user: 5) == nil)
        #expect(UnsafeDirectoryError.check(path: "/d", mode: 0o40770, owner: 5, user: 5) != nil)
        #expect(
            UnsafeDirectoryError.check(path: "/d", mode: 0o41777, owner: 5, user: 5)?.description.contains("every user")
                == true)
        #expect(
            UnsafeDirectoryError.check(path: "/d", mode: 0o40700, owner: 0, user: 5)?.description.contains(
                "another user") == true)
    }
}

@Suite("SQLite's full disk, placed")
struct SQLiteFullTests {
    private let library = "/home/me/ivy/library.db"

    /// A probe that finds exactly `full` full.
    private func probe(full: Set<String>) -> (String) -> StorageError? {
        { path in full.contains(path) ? StorageError(path: path, problem: .full) : nil }
    }

    @Test("SQLITE_FULL with the library's disk full names the library")
    func libraryFull() {
        let error = LibraryDatabase.full(
            path: library, temporaryDirectory: "/tmp", probe: probe(full: [library, "/tmp"]))
        #expect(error == StorageError(path: library, problem: .full))
    }

    @Test("SQLITE_FULL with room for the library and none in the temporary directory names TMPDIR")
    func temporaryFull() {
        let error = LibraryDatabase.full(path: library, temporaryDirectory: "/tmp", probe: probe(full: ["/tmp"]))
        #expect(error.path == "/tmp (SQLite's temporary directory, TMPDIR)")
        #expect(error.errorDescription?.hasPrefix("no space left on device for /tmp (SQLite's temporary") == true)
    }

    @Test("SQLITE_FULL that neither disk explains still says the library's disk is full")
    func unexplained() {
        #expect(
            LibraryDatabase.full(path: library, temporaryDirectory: "/tmp", probe: probe(full: []))
                == StorageError(path: library, problem: .full))
        #expect(
            LibraryDatabase.full(path: library, temporaryDirectory: nil, probe: probe(full: []))
                == StorageError(path: library, problem: .full))
    }
}
