import Foundation
import GRDB
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("Typed ids in the database")
struct IdentifierColumnTests {
    /// A row's columns as text (nil for NULL), to take out of the read.
    static func texts(_ row: Row) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: row.compactMap { column, value in String.fromDatabaseValue(value).map { (column, $0) }
            })
    }

    @Test("a Drive file id is stored as TEXT holding the bare id, and read back typed")
    func manifestColumns() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        let key = EntityKey(.clip, "c1")
        let entry = ManifestEntry(
            key: key, localUpdatedAt: 1, remoteUpdatedAt: 2, remoteFileID: "1Json", remoteMP3FileID: "1Mp3")
        try await library.recordSynced(entry, base: SyncBase(json: Data("{}".utf8)), queuedAt: nil)
        let row = try await #require(
            try library.read { db in
                try Row.fetchOne(
                    db,
                    sql: "SELECT typeof(remote_file_id) AS type, remote_file_id, remote_mp3_file_id FROM sync_manifest"
                ).map(Self.texts)
            })
        #expect(row["type"] == "text")
        #expect(row["remote_file_id"] == "1Json" && row["remote_mp3_file_id"] == "1Mp3")
        #expect(try await library.manifestEntries().first?.remoteMP3FileID == DriveFileID("1Mp3"))
    }

    @Test("book and clip ids are stored as TEXT holding the bare id, and read back typed")
    func entityColumns() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        let book: BookID = testID(1)
        let clip: ClipID = testID(2)
        try await library.addBook(id: book, title: "Dune", artist: nil, artwork: nil, position: 0)
        let audio = home.path + "/take.mp3"
        try (Data("ID3".utf8) + Data(repeating: 5, count: 100)).write(to: URL(fileURLWithPath: audio))
        try await library.addClip(
            id: clip, bookID: book, start: 1, duration: 2, note: nil, transcription: nil, audio: audio)
        let row = try await #require(
            try library.read { db in
                try Row.fetchOne(
                    db, sql: "SELECT typeof(id) AS type, id, typeof(book_id) AS bookType, book_id FROM clips"
                ).map(Self.texts)
            })
        #expect(row["type"] == "text" && row["bookType"] == "text")
        #expect(row["id"] == clip.rawValue && row["book_id"] == book.rawValue)
        let queued = try await library.queueItems().map(\.key)
        #expect(Set(queued) == [EntityKey(book), EntityKey(clip)])
        #expect(try await library.clips(bookID: book).map(\.id) == [clip])
        #expect(try await library.book(id: book)?.id == book)
    }
}
