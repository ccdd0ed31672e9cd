import Foundation
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("Remembered Drive folder ids")
struct FolderIDTests {
    @Test("folders are kept as JSON arrays and read back, twins in order")
    func roundTrip() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        #expect(try await library.rememberedFolders() == nil)
        let folders = DriveFolders(ivy: ["i1"], books: ["b1", "b2"], clips: ["c1"])
        try await library.rememberFolders(folders)
        #expect(try await library.rememberedFolders() == folders)
        #expect(try await library.internalSetting(.booksFolderID) == #"["b1","b2"]"#)
    }

    @Test("ids joined with commas by an earlier ivy are still read, and rewritten as arrays")
    func commaJoined() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        try await library.setInternalSetting(.ivyFolderID, "i1")
        try await library.setInternalSetting(.booksFolderID, "b1,b2")
        try await library.setInternalSetting(.clipsFolderID, "c1,c2,c3")
        let folders = try #require(try await library.rememberedFolders())
        #expect(folders == DriveFolders(ivy: ["i1"], books: ["b1", "b2"], clips: ["c1", "c2", "c3"]))
        try await library.rememberFolders(folders)
        #expect(try await library.internalSetting(.clipsFolderID) == #"["c1","c2","c3"]"#)
        #expect(try await library.rememberedFolders() == folders)
    }
}
