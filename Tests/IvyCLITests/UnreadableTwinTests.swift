import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// A second file of a book's name on Drive that is not backup JSON (another program's, or
/// cut short): read once, then left alone, and described by `ivy check` as it is.
@Suite("an unreadable twin on Drive")
struct UnreadableTwinTests {
    @Test("an unreadable twin is read once, never again while unchanged, never deleted; check says so")
    func readOnce() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            #expect(try await device.ivy.run("sync").status == 0)
            let book: String = try #require(device.ivy.sql("SELECT id FROM books").first?["id"])
            let name = "book_\(book).json"
            let original = try #require(await emulator.state.dump().first { $0.name == name })
            let twin = await emulator.state.putFile(
                email: "alice@example.com", name: name, parents: original.parents, content: Data("{\"id\": ".utf8),
                mimeType: "application/json")
            func reads() async -> Int {
                await emulator.state.requests.filter { $0.method == "GET" && $0.path.contains(twin.id) }.count
            }

            let first = try await device.ivy.run("sync")
            #expect(first.status == 0, "\(first.stderr)")
            #expect(await reads() == 1, "the first sync reads it")
            for _ in 0..<2 {
                await emulator.state.clearRequests()
                let again = try await device.ivy.run("sync")
                #expect(again.status == 0, "\(again.stderr)")
                #expect(await reads() == 0, "a later sync downloaded the unreadable twin again")
            }

            let check = try await device.ivy.run("check")
            #expect(check.status == 6, "\(check.stdout)\(check.stderr)")
            #expect(check.stdout.contains("unreadable_json: book \(book): Drive has another \(name) (file \(twin.id)"))
            #expect(check.stdout.contains("leave this one alone"), "\(check.stdout)")
            #expect(check.stdout.contains("delete that copy of \(name) in Drive"), "\(check.stdout)")
            #expect(!check.stdout.contains("deletes the rest"), "check says a sync deletes it: \(check.stdout)")

            // An edit here goes up beside it; the twin stays, unread.
            #expect(try await device.ivy.run("book", "update", book, "--title", "Edited").status == 0)
            await emulator.state.clearRequests()
            #expect(try await device.ivy.run("sync").status == 0)
            #expect(await reads() == 0)
            let live = await emulator.state.dump().filter { $0.name == name && !$0.explicitlyTrashed }
            #expect(live.count == 2 && live.contains { $0.id == twin.id }, "the unreadable twin is never deleted")

            // Corrected on Drive, it is read again, merged, and the copies become one.
            let current = try #require(live.first { $0.id != twin.id })
            var fixed = try #require(try JSONSerialization.jsonObject(with: current.content) as? [String: Any])
            fixed["position"] = 4321
            fixed["updated_at"] = ((fixed["updated_at"] as? NSNumber)?.int64Value ?? 0) + 1
            try await emulator.state.corruptFile(
                id: twin.id, content: try JSONSerialization.data(withJSONObject: fixed, options: [.sortedKeys]))
            await emulator.state.clearRequests()
            #expect(try await device.ivy.run("sync").status == 0)
            #expect(await reads() == 1, "a changed twin is read again")
            let position: Double? = try device.ivy.sql("SELECT position FROM books").first?["position"]
            #expect(position == 4321)
            #expect(await emulator.state.dump().filter { $0.name == name && !$0.explicitlyTrashed }.count == 1)
            let clean = try await device.ivy.run("check")
            #expect(clean.status == 0, "\(clean.stdout)")
        }
    }
}
