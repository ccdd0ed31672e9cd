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
}
