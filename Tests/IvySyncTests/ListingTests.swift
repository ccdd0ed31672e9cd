import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import Testing

@Suite("A Drive listing that does not end")
struct ListingTests {
    @Test("a listing whose pages never end deletes nothing here, and the report says why", .timeLimit(.minutes(10)))
    func endlessListing() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let b = try await world.device("b")
            let book = try await a.addBook("Dune")
            let clip = try await a.addClip(to: book, note: "keep me")
            _ = try await a.sync()
            #expect(try await b.sync().downloaded.pair == [1, 1])
            try await a.library.deleteClip(id: clip.id)
            #expect(try await a.sync().deletedRemote.pair == [0, 1])

            // Only the listing of the files misbehaves, not the folder lookup.
            await world.state.setListFault(ListFault(.emptyPages, queryContains: "' in parents and trashed = false"))
            // A listing is taken in full (otherwise the change feed stands in for it).
            let cut = try await b.sync(SyncRequest(full: true))
            #expect(cut.deletedLocal.total == 0 && b.audio(clip.id) != nil)
            let reason = try #require(cut.skipped.first { $0.entity == "Drive listing" }?.reason)
            #expect(
                reason.contains("kept sending pages") && reason.contains("nothing was deleted locally"), "\(reason)")

            await world.state.setListFault(nil)
            #expect(try await b.sync().deletedLocal.pair == [0, 1], "a whole listing deletes it")
        }
    }
}
