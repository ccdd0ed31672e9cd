import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import Testing

@Suite("Bad files on Drive")
struct RemoteInputTests {
    static func bookJSON(id: String, title: String) -> Data {
        let json =
            #"{"id":"\#(id)","title":"\#(title)","position":1,"hidden":false,"#
            + #""created_at":1700000000000,"updated_at":1700000000000}"#
        return Data(json.utf8)
    }

    @Test("bad remote files are skipped and reported one by one; the rest syncs and local data is not overwritten")
    func badFilesAreSkipped() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            let good = try await a.addBook("Emma")
            let goodClip = try await a.addClip(to: good, note: "Mr Knightley")
            #expect(try await a.sync().uploaded.pair == [1, 1])

            let books = try await world.folderID("books")
            let clips = try await world.folderID("clips")
            let broken = UUID().uuidString.lowercased()
            let mismatched = UUID().uuidString.lowercased()
            let halfClip = UUID().uuidString.lowercased()
            await world.state.putFile(
                email: alice, name: "book_\(broken).json", parents: [books], content: Data("{not json".utf8))
            await world.state.putFile(
                email: alice, name: "book_\(mismatched).json", parents: [books],
                content: Self.bookJSON(id: UUID().uuidString.lowercased(), title: "Impostor"))
            await world.state.putFile(
                email: alice, name: "notes.txt", parents: [books], content: Data("shopping list".utf8))
            await world.state.putFile(
                email: alice, name: "clip_\(halfClip).json", parents: [clips],
                content: Data(
                    #"{"id":"\#(halfClip)","book_id":"\#(good.id)","start":1,"duration":2,"updated_at":1700000000000}"#
                        .utf8))
            // And the copy of a book B already has becomes unreadable.
            try await world.corrupt("book_\(pair.book.id).json")

            let report = try await b.sync()
            #expect(report.failures.isEmpty, "\(report.failures)")
            #expect(report.skipReason("book_\(broken).json")?.contains("not valid JSON") == true, "\(report.skipped)")
            #expect(
                report.skipReason("book_\(mismatched).json")?.contains("does not match") == true, "\(report.skipped)")
            #expect(report.skipReason("notes.txt") != nil, "\(report.skipped)")
            #expect(report.skipReason("clip \(halfClip)")?.contains("incomplete") == true, "\(report.skipped)")
            #expect(
                report.skipReason("book_\(pair.book.id).json")?.contains("not valid JSON") == true, "\(report.skipped)")
            #expect(report.skipped.count == 5, "\(report.skipped)")

            // The good files still came down.
            #expect(report.downloaded.pair == [1, 1])
            #expect(try await b.book(good.id)?.title == "Emma")
            #expect(try await b.clip(goodClip.id)?.note == "Mr Knightley")
            #expect(b.audio(goodClip.id) == a.audio(goodClip.id))
            // Nothing bad was applied, and what B had is as it was.
            #expect(try await b.book(pair.book.id) == a.book(pair.book.id))
            #expect(try await b.book(BookID(broken)) == nil)
            #expect(try await b.book(BookID(mismatched)) == nil)
            #expect(try await b.clip(ClipID(halfClip)) == nil)
            #expect(try await b.library.books(includeHidden: true).count == 2)
            #expect(try await b.library.queueItems().isEmpty, "skipping is not a local change")

            // Drive's bad files are left alone, and the next sync reports them again.
            #expect(await world.names().contains("notes.txt"))
            let again = try await b.sync()
            #expect(again.downloaded.total == 0 && again.failures.isEmpty && again.skipped.count == 5)
            #expect(try await b.book(pair.book.id) == a.book(pair.book.id))
        }
    }

    /// Second review of issue 40, low 5: the skip line said the next sync "lists it afresh",
    /// then that every sync skips it until it changes.
    @Test("a JSON Drive sends longer than it listed is skipped with one reason: skipped until it changes on Drive")
    func overlongJSON() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            _ = try await a.addBook("Emma")
            #expect(try await a.sync().uploaded.pair == [1, 0])
            let id = UUID().uuidString.lowercased()
            let file = await world.state.putFile(
                email: alice, name: "book_\(id).json", parents: [try await world.folderID("books")],
                content: Self.bookJSON(id: id, title: "Longer than listed"))
            try await world.state.misreport(id: file.id, Misreport(extraBytes: 5000))

            let b = try await world.device("b")
            for run in 1...2 {
                let report = try await b.sync()
                let reason = try #require(report.skipReason("book_\(id).json"), "run \(run): \(report.skipped)")
                #expect(reason.contains("Drive sent more than"), "run \(run): \(reason)")
                #expect(reason.contains("every sync skips it until it changes on Drive"), "run \(run): \(reason)")
                #expect(!reason.contains("afresh") && !reason.contains("next sync lists"), "run \(run): \(reason)")
                await #expect(try b.book(BookID(id)) == nil)
            }
        }
    }

    @Test("a clip whose book cannot be read on Drive is kept and counted as an orphan until the book comes back")
    func orphanClipIsKept() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune", position: 10)
            let clip = try await a.addClip(to: book, note: "orphan to be")
            #expect(try await a.sync().uploaded.pair == [1, 1])
            try await world.corrupt("book_\(book.id).json")

            let b = try await world.device("b")
            let first = try await b.sync()
            #expect(first.downloaded.pair == [0, 1])
            #expect(first.skipReason("book_\(book.id).json") != nil, "\(first.skipped)")
            #expect(first.orphanClips == 1)
            #expect(first.summary.contains("1 clip without its book"))
            #expect(try await b.clip(clip.id)?.note == "orphan to be")
            #expect(b.audio(clip.id) == a.audio(clip.id))
            #expect(try await b.book(book.id) == nil)

            let second = try await b.sync()
            #expect(second.orphanClips == 1 && second.deletedLocal.total == 0 && second.deletedRemote.total == 0)
            #expect(try await b.clip(clip.id) != nil, "the orphan is kept")
            #expect(await world.names().contains("clip_\(clip.id).json"))

            // A edits the book: its merge replaces the unreadable copy on Drive, and B gets the book.
            #expect(try await a.book(book.id)?.title == "Dune", "A's own copy was not overwritten")
            try await a.edit(book: book.id, BookChanges(position: 20))
            let repair = try await a.sync()
            #expect(repair.uploaded.pair == [1, 0] && repair.failures.isEmpty, "\(repair.summary)")
            let healed = try await b.sync()
            #expect(healed.downloaded.pair == [1, 0])
            #expect(healed.orphanClips == 0)
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test("a remote book or clip with a time out of range is skipped and reported; the rest syncs")
    func outOfRangeTimes() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let good = try await a.addBook("Emma")
            #expect(try await a.sync().uploaded.pair == [1, 0])

            let books = try await world.folderID("books")
            let clips = try await world.folderID("clips")
            let far = UUID().uuidString.lowercased()
            let long = UUID().uuidString.lowercased()
            await world.state.putFile(
                email: alice, name: "book_\(far).json", parents: [books],
                content: Data(#"{"id":"\#(far)","title":"Far","position":10000000.5,"updated_at":1700000000000}"#.utf8))
            await world.state.putFile(
                email: alice, name: "clip_\(long).json", parents: [clips],
                content: Data(
                    #"""
                    {"id":"\#(long)","book_id":"\#(good.id)","start":1,"duration":1e300,"updated_at":1700000000000}
                    """#.utf8))
            await world.state.putFile(
                email: alice, name: "clip_\(long).mp3", parents: [clips], content: Data("ID3\u{4}\0".utf8))

            let b = try await world.device("b")
            let report = try await b.sync()
            #expect(report.failures.isEmpty, "\(report.failures)")
            #expect(report.skipReason("book_\(far).json")?.contains("10,000,000") == true, "\(report.skipped)")
            #expect(report.skipReason("clip_\(long).json")?.contains("10,000,000") == true, "\(report.skipped)")
            #expect(try await b.book(BookID(far)) == nil)
            #expect(try await b.clip(ClipID(long)) == nil)
            #expect(try await b.book(good.id)?.title == "Emma")
        }
    }
}
