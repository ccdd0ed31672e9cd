import Foundation
import GRDB
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("Typed ids in the database")
struct IdentifierColumnTests {
    @Test("a Drive file id is stored as TEXT holding the bare id, and read back typed")
    func manifestColumns() throws {
        let home = try TemporaryHome()
        let library = try LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        let key = EntityKey(.clip, "c1")
        let entry = ManifestEntry(
            key: key, localUpdatedAt: 1, remoteUpdatedAt: 2, remoteFileID: "1Json", remoteMP3FileID: "1Mp3")
        try library.recordSynced(entry, base: SyncBase(json: Data("{}".utf8)), queuedAt: nil)
        let row = try #require(
            try library.read { db in
                try Row.fetchOne(
                    db,
                    sql: "SELECT typeof(remote_file_id) AS type, remote_file_id, remote_mp3_file_id FROM sync_manifest")
            })
        #expect(row["type"] as String? == "text")
        #expect(row["remote_file_id"] as String? == "1Json" && row["remote_mp3_file_id"] as String? == "1Mp3")
        #expect(try library.manifestEntries().first?.remoteMP3FileID == DriveFileID("1Mp3"))
    }

    @Test("book and clip ids are stored as TEXT holding the bare id, and read back typed")
    func entityColumns() throws {
        let home = try TemporaryHome()
        let library = try LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        let book: BookID = testID(1)
        let clip: ClipID = testID(2)
        try library.addBook(id: book, title: "Dune", artist: nil, artwork: nil, position: 0)
        let audio = home.path + "/take.mp3"
        try (Data("ID3".utf8) + Data(repeating: 5, count: 100)).write(to: URL(fileURLWithPath: audio))
        try library.addClip(id: clip, bookID: book, start: 1, duration: 2, note: nil, transcription: nil, audio: audio)
        let row = try #require(
            try library.read { db in
                try Row.fetchOne(
                    db, sql: "SELECT typeof(id) AS type, id, typeof(book_id) AS bookType, book_id FROM clips")
            })
        #expect(row["type"] as String? == "text" && row["bookType"] as String? == "text")
        #expect(row["id"] as String? == clip.rawValue && row["book_id"] as String? == book.rawValue)
        let queued = try library.queueItems().map(\.key)
        #expect(Set(queued) == [EntityKey(book), EntityKey(clip)])
        #expect(try library.clips(bookID: book).map(\.id) == [clip])
        #expect(try library.book(id: book)?.id == book)
    }
}
