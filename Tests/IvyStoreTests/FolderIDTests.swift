import Foundation
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("Remembered Drive folder ids")
struct FolderIDTests {
    @Test("folders are kept as JSON arrays and read back, twins in order")
    func roundTrip() throws {
        let home = try TemporaryHome()
        let library = try LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        #expect(try library.rememberedFolders() == nil)
        let folders = DriveFolders(ivy: ["i1"], books: ["b1", "b2"], clips: ["c1"])
        try library.rememberFolders(folders)
        #expect(try library.rememberedFolders() == folders)
        #expect(try library.internalSetting(.booksFolderID) == #"["b1","b2"]"#)
    }

    @Test("ids joined with commas by an earlier ivy are still read, and rewritten as arrays")
    func commaJoined() throws {
        let home = try TemporaryHome()
        let library = try LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        try library.setInternalSetting(.ivyFolderID, "i1")
        try library.setInternalSetting(.booksFolderID, "b1,b2")
        try library.setInternalSetting(.clipsFolderID, "c1,c2,c3")
        let folders = try #require(try library.rememberedFolders())
        #expect(folders == DriveFolders(ivy: ["i1"], books: ["b1", "b2"], clips: ["c1", "c2", "c3"]))
        try library.rememberFolders(folders)
        #expect(try library.internalSetting(.clipsFolderID) == #"["c1","c2","c3"]"#)
        #expect(try library.rememberedFolders() == folders)
    }
}
