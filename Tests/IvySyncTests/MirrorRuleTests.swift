import IvyCore
import IvyGoogle
import Testing

@testable import IvySync

@Suite("What a page of Drive's changes does to the mirror")
struct MirrorRuleTests {
    static let folders = DriveFolders(ivy: ["ivy"], books: ["books", "books2"], clips: ["clips"])
    static let folder = DriveClient.folderType

    static func change(
        _ id: DriveFileID, _ name: String = "book_a.json", parents: [DriveFileID] = ["books"], trashed: Bool = false,
        mimeType: String = "application/json"
    ) -> DriveChange {
        DriveChange(
            fileID: id,
            file: ChangedFile(
                file: RemoteFile(id: id, name: name, modifiedTime: 1_000), mimeType: mimeType, parents: parents,
                trashed: trashed))
    }

    static func effect(_ changes: [DriveChange], mirrored: Set<DriveFileID> = []) -> MirrorRules.Effect {
        MirrorRules.effect(
            of: DriveChangePage(changes: changes, nextToken: "next", isLast: true), folders: folders,
            mirrored: mirrored)
    }

    static func update(_ changes: [DriveChange], mirrored: Set<DriveFileID> = []) -> MirrorUpdate? {
        guard case .update(let update) = effect(changes, mirrored: mirrored) else { return nil }
        return update
    }

    @Test("a file in any books or clips folder (twins too) is kept; trashed, removed or elsewhere it leaves")
    func files() throws {
        let update = try #require(
            Self.update([
                Self.change("f1"), Self.change("f2", parents: ["books2"]), Self.change("f3", parents: ["clips"]),
                Self.change("f4", trashed: true), DriveChange(fileID: "f5", file: nil),
                Self.change("f6", parents: ["ivy"]), Self.change("f7", parents: ["somewhere"]),
            ]))
        #expect(update.upserts.map(\.file.id) == ["f1", "f2", "f3"])
        #expect(update.removals == ["f4", "f5", "f6", "f7"])
        #expect(update.token == "next")
    }

    @Test("a file the mirror never held, now deleted or in the trash in ivy's folders, came and went unseen")
    func unseenFileGone() throws {
        let gone = DriveChange(fileID: "f2", file: nil)
        #expect(try #require(Self.update([gone])).unseenFileGone, "deleted before any sync saw it")
        #expect(try #require(Self.update([Self.change("f2", trashed: true)])).unseenFileGone)
        #expect(try #require(Self.update([Self.change("f1", "book_b.json"), gone])).unseenFileGone)
        #expect(try #require(Self.update([gone], mirrored: ["f2"])).unseenFileGone == false, "seen, then gone")
        #expect(try #require(Self.update([Self.change("f2", trashed: true)], mirrored: ["f2"])).unseenFileGone == false)
        #expect(try #require(Self.update([Self.change("f2")])).unseenFileGone == false, "new and still there")
        let elsewhere = Self.change("f2", parents: ["somewhere"], trashed: true)
        #expect(try #require(Self.update([elsewhere])).unseenFileGone == false, "never in ivy's folders")
    }

    @Test("of several changes of one file in a page the last decides")
    func lastWins() throws {
        let removedThenBack = try #require(
            Self.update([DriveChange(fileID: "f1", file: nil), Self.change("f1", "book_b.json")]))
        #expect(removedThenBack.upserts.map(\.file.name) == ["book_b.json"] && removedThenBack.removals.isEmpty)
        let backThenRemoved = try #require(
            Self.update([Self.change("f1"), DriveChange(fileID: "f1", file: nil)]))
        #expect(backThenRemoved.upserts.isEmpty && backThenRemoved.removals == ["f1"])
    }

    @Test(
        "a change to ivy's folders, or a new folder that could be a twin, asks for a full listing",
        arguments: [
            DriveChange(fileID: "books", file: nil),
            change("ivy", "Ivy", parents: ["root"], trashed: true, mimeType: folder),
            change("ivy", "Old Ivy", parents: ["root"], mimeType: folder),
            change("books", "books", parents: ["elsewhere"], mimeType: folder),
            change("clips", "books", parents: ["ivy"], mimeType: folder),
            change("clips", "clips", parents: ["ivy"], trashed: true, mimeType: folder),
            change("new", "Ivy", parents: ["root"], mimeType: folder),
            change("new", "clips", parents: ["ivy"], mimeType: folder),
        ])
    func folderChanges(change: DriveChange) {
        guard case .needsFullListing = Self.effect([Self.change("f1"), change]) else {
            Issue.record("\(change) was taken as a file change")
            return
        }
    }

    @Test(
        "folders that leave ivy's tree as it is are ignored",
        arguments: [
            change("ivy", "Ivy", parents: ["root"], mimeType: folder),
            change("books", "books", parents: ["ivy"], mimeType: folder),
            change("clips", "clips", parents: ["ivy"], mimeType: folder),
            change("other", "Photos", parents: ["root"], mimeType: folder),
            change("other", "books", parents: ["Photos"], mimeType: folder),
            change("old", "Ivy", parents: ["root"], trashed: true, mimeType: folder),
        ])
    func harmlessFolders(change: DriveChange) throws {
        let update = try #require(Self.update([change]))
        #expect(update.upserts.isEmpty)
    }

    @Test("a mirrored file reported alive without parents asks for a full listing instead of leaving")
    func noParents() {
        guard case .needsFullListing = Self.effect([Self.change("f1", parents: [])], mirrored: ["f1"]) else {
            Issue.record("dropped from the mirror")
            return
        }
        guard case .update(let update) = Self.effect([Self.change("f9", parents: [])], mirrored: ["f1"]) else {
            Issue.record("a file never mirrored needs no full listing")
            return
        }
        #expect(update.removals == ["f9"])
    }
}
