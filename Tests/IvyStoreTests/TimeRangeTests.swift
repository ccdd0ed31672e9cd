import Foundation
import GRDB
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("Times of play in the store and in the database")
struct TimeRangeTests {
    let home: TemporaryHome
    let library: LibraryDatabase

    init() async throws {
        home = try TemporaryHome()
        library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
    }

    @Test(
        "the store refuses times beyond 10,000,000 seconds and writes nothing",
        arguments: [
            10_000_000.001, 1e300, -0.5,
        ])
    func storeRefuses(seconds: Double) async throws {
        await #expect(throws: StoreError.invalidTime(field: "position", value: seconds)) {
            try await library.updateBook(id: testID(1), BookChanges(position: seconds))
        }
        await #expect(throws: StoreError.self) {
            try await library.addBook(id: testID(2), title: "T", artist: nil, artwork: nil, position: seconds)
        }
        await #expect(throws: StoreError.self) {
            try await library.addClip(
                id: testID(3), bookID: testID(1), start: 0, duration: seconds, note: nil, transcription: nil,
                audio: home.mp3("a.mp3"))
        }
        #expect(try await library.books(includeHidden: true).map(\.position) == [0])
        #expect(try await library.clips().isEmpty)
        let message = StoreError.invalidTime(field: "position", value: seconds).errorDescription ?? ""
        #expect(message.contains("0 to 10,000,000 seconds"))
    }

    @Test("exactly 10,000,000 seconds is a valid time")
    func limitAccepted() async throws {
        try await library.updateBook(id: testID(1), BookChanges(position: 10_000_000))
        #expect(try await library.book(id: testID(1))?.position == 10_000_000)
    }

    static var badValues: [(any DatabaseValueConvertible)?] {
        [-1.0, 10_000_000.5, Double.infinity, -Double.infinity, Double.nan, nil, "soon", 1e300]
    }

    @Test("the database refuses another program's out-of-range times, inserted or updated", arguments: 0..<8)
    func databaseRefuses(index: Int) async throws {
        let value = Self.badValues[index]
        let external = try library.externalConnection()
        try await external.write { db in
            try db.execute(
                sql:
                    "INSERT INTO clips (id, book_id, start, duration, created_at, updated_at) "
                    + "VALUES (?, ?, 1, 2, 1, 1)",
                arguments: [testID(5), testID(1)])
        }
        let statements: [(String, StatementArguments)] = [
            (
                "INSERT INTO books (id, title, position, created_at, updated_at) VALUES (?, 'T', ?, 1, 1)",
                [testID(2), value]
            ),
            ("UPDATE books SET position = ? WHERE id = ?", [value, testID(1)]),
            (
                "INSERT INTO clips (id, book_id, start, duration, created_at, updated_at) VALUES (?, ?, ?, 1, 1, 1)",
                [testID(3), testID(1), value]
            ),
            (
                "INSERT INTO clips (id, book_id, start, duration, created_at, updated_at) VALUES (?, ?, 1, ?, 1, 1)",
                [testID(4), testID(1), value]
            ),
            ("UPDATE clips SET start = ? WHERE id = ?", [value, testID(5)]),
            ("UPDATE clips SET duration = ? WHERE id = ?", [value, testID(5)]),
        ]
        for (sql, arguments) in statements {
            #expect("\(sql)") {
                try external.write { db in try db.execute(sql: sql, arguments: arguments) }
            } throws: { error in
                (error as? DatabaseError)?.message?.contains("from 0 to 10000000") == true
            }
        }
        #expect(try await library.books(includeHidden: true).map(\.position) == [0])
        #expect(try await library.clips().map { [$0.start, $0.duration] } == [[1, 2]])
    }

    @Test("rows written before the time rules still read, migrate, and must be fixed by their next write")
    func rowsFromBefore() async throws {
        let old = try TemporaryHome()
        try FileManager.default.createDirectory(atPath: old.paths.dataDirectory, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: old.paths.database)
        try Schema.migrator.migrate(queue, upTo: "v1: library, queue, manifest, settings")
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO books (id, title, position, created_at, updated_at)
                    VALUES ('\(testID(1))', 'Huge', 1e300, 1, 1);
                    INSERT INTO clips (id, book_id, start, duration, created_at, updated_at)
                    VALUES ('\(testID(2))', '\(testID(1))', -1, 9e999, 1, 1);
                    """)
        }
        try queue.close()

        let library = try await LibraryDatabase(paths: old.paths, clock: TestClock().clock)
        #expect(try await library.book(id: testID(1))?.position == 1e300)
        #expect(try await library.clip(id: testID(2))?.duration == .infinity)
        await #expect(
            throws: StoreError.storedTimeOutOfRange(kind: .book, field: "position", value: 1e300, option: "--position")
        ) {
            try await library.updateBook(id: testID(1), BookChanges(title: "Renamed"))
        }
        try await library.updateBook(id: testID(1), BookChanges(title: "Renamed", position: 10))
        #expect(try await library.book(id: testID(1))?.position == 10)
        await #expect(throws: StoreError.self) { try await library.updateClip(id: testID(2), ClipChanges(start: 5)) }
        try await library.updateClip(id: testID(2), ClipChanges(start: 5, duration: 2))
        #expect(try await library.clip(id: testID(2)).map { [$0.start, $0.duration] } == [5, 2])
    }
}
