import Foundation
import IvyCore
import IvyStore
import IvySystem
import IvyTestSupport
import Testing

/// Issue 39: the library's API is async over GRDB's suspending reads and writes, so a caller
/// on Swift's cooperative pool suspends while the SQL runs on the library's own queues.
@Suite("The library's calls run off the cooperative pool")
struct LibraryThreadsTests {
    @Test("a task on the cooperative pool opens, writes and reads the library with no blocking call on the pool")
    func fromThePool() async throws {
        let home = try TemporaryHome()
        let record = BlockingCalls.Record()
        let titles = try await BlockingCalls.watching(record) {
            // An unstructured task has no executor preference: it runs on the pool.
            try await Task {
                let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
                try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
                let titles = try await library.books(includeHidden: true).map(\.title)
                _ = try await LocalChangeProbe(library).pending(since: nil)
                BlockingCalls.check("the task itself, on the pool")
                return titles
            }.value
        }
        #expect(titles == ["Dune"])
        // Only the task's own check ran on the pool: the check can see the pool, and the
        // library's reads and writes were not on it.
        #expect(record.offOwnThreads == ["the task itself, on the pool"])
    }

    @Test("a cancelled task's library read is refused, and the library stays usable")
    func cancelled() async throws {
        let home = try TemporaryHome()
        let library = try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await library.books(includeHidden: true)
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(try await library.books(includeHidden: true).map(\.title) == ["Dune"])
    }
}
