import Foundation
import GRDB
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("The mirror of Drive's listing and its change token")
struct MirrorTests {
    static let folders = DriveFolders(ivy: ["i1"], books: ["b1"], clips: ["c1"])

    static func file(_ id: DriveFileID, _ name: String, parent: DriveFileID = "b1", modified: Milliseconds = 1_000)
        -> MirroredFile
    {
        MirroredFile(
            file: RemoteFile(
                id: id, name: name, modifiedTime: modified, createdTime: modified - 1, size: 10, md5: "m\(id)"),
            parents: [parent], mimeType: "application/json")
    }

    private func library() async throws -> (TemporaryHome, LibraryDatabase) {
        let home = try TemporaryHome()
        return await (home, try LibraryDatabase(paths: home.paths, clock: TestClock().clock))
    }

    @Test("a full listing replaces the mirror, saves its token and remembers its folders in one write")
    func replace() async throws {
        let (home, library) = try await library()
        _ = home
        #expect(try await library.driveMirror() == nil, "no mirror until a full listing built one")
        let first = [Self.file("f1", "book_a.json"), Self.file("f2", "clip_c.mp3", parent: "c1")]
        try await library.replaceDriveMirror(first, token: "100", folders: Self.folders)
        #expect(try await library.driveMirror() == DriveMirror(files: first, token: "100"))
        #expect(try await library.rememberedFolders() == Self.folders)

        let second = [Self.file("f3", "book_b.json")]
        let twins = DriveFolders(ivy: ["i1"], books: ["b1", "b2"], clips: ["c1"])
        try await library.replaceDriveMirror(second, token: "200", folders: twins)
        #expect(
            try await library.driveMirror() == DriveMirror(files: second, token: "200"),
            "nothing of the old one is left")
        #expect(try await library.rememberedFolders() == twins)
    }

    @Test("a page of changes and its next token are saved together; applied again it changes nothing")
    func applyPage() async throws {
        let (home, library) = try await library()
        _ = home
        try await library.replaceDriveMirror(
            [Self.file("f1", "book_a.json"), Self.file("f2", "book_b.json")], token: "100", folders: Self.folders)
        let edited = Self.file("f1", "book_a.json", modified: 2_000)
        let update = MirrorUpdate(upserts: [edited, Self.file("f3", "book_c.json")], removals: ["f2"], token: "101")
        #expect(try await library.applyDriveMirrorPage(update, from: "100"))
        let expected = DriveMirror(files: [edited, Self.file("f3", "book_c.json")], token: "101")
        #expect(try await library.driveMirror() == expected)

        // Drive sends the same changes again (a page read twice, or changes already in a full
        // listing taken after the token): the rows stay as they are.
        try await #expect(
            library.applyDriveMirrorPage(
                MirrorUpdate(upserts: update.upserts, removals: ["f2"], token: "102"), from: "101"))
        #expect(try await library.driveMirror() == DriveMirror(files: expected.files, token: "102"))
    }

    @Test("a page read from a token the mirror is no longer at writes nothing")
    func staleToken() async throws {
        let (home, library) = try await library()
        _ = home
        let update = MirrorUpdate(upserts: [Self.file("f9", "book_z.json")], removals: [], token: "101")
        #expect(try await !library.applyDriveMirrorPage(update, from: "100"), "no mirror at all")
        #expect(try await library.driveMirror() == nil)
        try await library.replaceDriveMirror([], token: "500", folders: Self.folders)
        #expect(try await !library.applyDriveMirrorPage(update, from: "100"), "a rebuilt mirror")
        #expect(try await library.driveMirror() == DriveMirror(files: [], token: "500"))
    }

    @Test("killed inside the transaction after the rows were written, neither the rows nor the token moved")
    func failedBeforeTheToken() async throws {
        let (home, library) = try await library()
        _ = home
        let before = [Self.file("f1", "book_a.json"), Self.file("f2", "book_b.json")]
        try await library.replaceDriveMirror(before, token: "100", folders: Self.folders)
        // The token is written last: a failure there comes after the upserts and removals.
        let other = try library.externalConnection()
        try await other.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER fail_token BEFORE UPDATE ON drive_mirror_token
                    BEGIN SELECT RAISE(ABORT, 'killed before the token'); END
                    """)
        }
        let update = MirrorUpdate(
            upserts: [Self.file("f1", "book_a.json", modified: 5_000), Self.file("f3", "book_c.json")],
            removals: ["f2"], token: "101")
        await #expect(throws: (any Error).self) { try await library.applyDriveMirrorPage(update, from: "100") }
        #expect(try await library.driveMirror() == DriveMirror(files: before, token: "100"), "all or nothing")

        try await other.write { db in try db.execute(sql: "DROP TRIGGER fail_token") }
        try other.close()
        #expect(try await library.applyDriveMirrorPage(update, from: "100"), "the next run applies the same page")
        #expect(try await library.driveMirror()?.token == "101")
        #expect(try await library.driveMirror()?.files.map(\.file.id) == ["f1", "f3"])
    }

    @Test("a file that came and went unseen restarts other absences, not one this device's own replace made")
    func ownAbsenceKeepsItsMark() async throws {
        let (home, library) = try await library()
        _ = home
        try await library.replaceDriveMirror([], token: "100", folders: Self.folders)
        let mine = EntityKey(.book, "mine")
        let theirs = EntityKey(.book, "theirs")
        for key in [mine, theirs] {
            try await library.recordSynced(
                ManifestEntry(
                    key: key, localUpdatedAt: 1, remoteUpdatedAt: 1, remoteFileID: DriveFileID("j-\(key.id)")),
                base: SyncBase(json: Data("{}".utf8)), queuedAt: nil)
        }
        try await library.recordMissingOnDrive([theirs], entries: try library.manifestEntries(), at: 5_000)
        try await library.recordReplaceCutShort(mine)
        let gone = MirrorUpdate(upserts: [], removals: ["f9"], token: "101", unseenFileGone: true)
        #expect(try await library.applyDriveMirrorPage(gone, from: "100"))
        let since = try await Dictionary(
            uniqueKeysWithValues: library.manifestEntries().map { ($0.key, $0.missingSince) })
        #expect(since[theirs] == .some(nil), "another device's replace may have made and removed a newer copy")
        #expect(since[mine] == 0, "this device deleted it itself: the next sync puts it back at once")
    }

    @Test("reset-manifest forgets the mirror and its token")
    func resetManifest() async throws {
        let (home, library) = try await library()
        _ = home
        try await library.replaceDriveMirror([Self.file("f1", "book_a.json")], token: "100", folders: Self.folders)
        try await library.resetManifest()
        #expect(try await library.driveMirror() == nil)
        #expect(try await library.driveMirrorToken() == nil)
        #expect(try await library.rememberedFolders() == nil)
    }

    @Test("signing in as another account forgets the mirror; the same account keeps it")
    func accountSwitch() async throws {
        let (home, library) = try await library()
        _ = home
        try await library.bindAccount(permissionID: "p1", email: "alice@example.com")
        try await library.replaceDriveMirror([Self.file("f1", "book_a.json")], token: "100", folders: Self.folders)
        #expect(try await !library.bindAccount(permissionID: "p1", email: "alice@example.com"))
        #expect(try await library.driveMirror()?.token == "100")
        #expect(try await library.bindAccount(permissionID: "p2", email: "bob@example.com"))
        #expect(try await library.driveMirror() == nil)
    }

    @Test("an empty token is never saved: the mirror would claim a chain it does not have")
    func emptyToken() async throws {
        let (home, library) = try await library()
        _ = home
        await #expect(throws: (any Error).self) {
            try await library.replaceDriveMirror([], token: "", folders: Self.folders)
        }
        #expect(try await library.driveMirror() == nil)
    }
}
