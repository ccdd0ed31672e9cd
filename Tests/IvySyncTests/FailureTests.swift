import Foundation
import GoogleEmulator
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvyTestSupport
import Testing

@Suite("Failures, retries and rate limits")
struct FailureTests {
    @Test(
        """
        an upload that keeps failing is counted once per sync, fails at 3 attempts, \
        is held back, and goes up after retry-failed
        """
    )
    func queueFailsThenRetries() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Offline book")
            let key = EntityKey(book.id)
            #expect(try await a.library.queueItems().map(\.key) == [key])
            await world.state.addFault(FaultRule(method: "POST", pathContains: "/upload", status: 500))

            for attempt in 1...3 {
                let sleepsBefore = a.sleeps.count
                let report = try await a.sync()
                #expect(report.uploaded.total == 0)
                #expect(report.failures.map(\.entity) == ["book \(book.id)"], "sync \(attempt)")
                let item = try #require(try await a.library.queueItems().first)
                #expect(item.attempts == attempt, "each sync counts one failed attempt, whatever the client retried")
                #expect(item.lastError?.contains("500") == true, "\(item.lastError ?? "no error")")
                // The client retried 5xx up to 6 attempts, waiting (virtually) between them.
                #expect(
                    a.sleeps.count - sleepsBefore == 5, "sync \(attempt): \(a.sleeps.count - sleepsBefore) retry waits")
            }
            let status = try await a.library.localStatus()
            #expect(status.failed == 1 && status.pending == 0)
            #expect(try await a.library.queueItems().first!.attempts >= 3)
            #expect(status.lastError?.contains("book \(book.id)") == true)

            await world.state.clearRequests()
            let held = try await a.sync()
            #expect(held.held.map(\.entity) == ["book \(book.id)"])
            #expect(held.failures.isEmpty && held.uploaded.total == 0)
            #expect(
                await world.requests().filter { $0.path.contains("/upload") }.isEmpty, "a failed item is not even tried"
            )
            #expect(try await a.library.queueItems().first?.attempts == 3, "holding back is not another failure")

            #expect(try await a.library.retryFailed() == 1)
            #expect(try await a.library.localStatus().pending == 1)
            await world.state.clearFaults()
            let retried = try await a.sync()
            #expect(retried.uploaded.pair == [1, 0] && retried.failures.isEmpty && retried.held.isEmpty)
            #expect(try await a.library.queueItems().isEmpty)
            #expect(try await a.library.localStatus().failed == 0)
            #expect(await world.names() == ["book_\(book.id).json"])
        }
    }

    @Test(
        """
        a full Drive stops the sync with one message instead of failing file after file: the clip's half-made \
        JSON is rolled back, no change counts an attempt or is held back, and with space the clip goes up whole
        """
    )
    func mp3FailureRollsBack() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            let clip = try await a.addClip(to: book, note: "spice")
            let others = try await (1...3).asyncMap { try await a.addClip(to: book, note: "more \($0)") }
            await world.state.addFault(
                FaultRule(method: "PUT", pathContains: "/upload", status: 403, reason: "storageQuotaExceeded"))

            for _ in 1...4 {
                await #expect {
                    _ = try await a.sync()
                } throws: { error in
                    (error as? GoogleError) == .driveFull && error.localizedDescription.contains("Drive is full")
                }
            }
            let onDrive = await world.names()
            // A clip JSON whose rollback the stop cancelled stays, alone: other devices read it as
            // incomplete and leave it until this device's next sync completes it.
            #expect(!onDrive.contains { $0.hasSuffix(".mp3") }, "no MP3 got through: \(onDrive)")
            let log = await world.requests()
            #expect(log.contains { $0.method == "DELETE" }, "a clip JSON made before its MP3 was deleted again")
            #expect(log.filter { $0.method == "PUT" }.count <= 4 * 4, "at most one refused MP3 per clip and sync")
            #expect(
                try await a.library.queueItems().allSatisfy { $0.attempts == 0 }, "a full Drive is no item's failure")
            #expect(try await a.library.localStatus().failed == 0)
            #expect(try await a.clip(clip.id) != nil && a.audio(clip.id) != nil, "nothing local is lost")

            await world.state.clearFaults()
            #expect(try await a.sync().uploaded.clips == 1 + others.count)
            #expect(await world.names().filter { $0.hasPrefix("clip_") }.count == 2 * (1 + others.count))
        }
    }

    @Test("a sync under Drive's write limit and with a few 5xx answers still converges without duplicates")
    func rateLimitsAndServerErrors() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            var books: [Book] = []
            for index in 0..<30 { try await books.append(a.addBook("Book \(index)", position: Double(index))) }
            let clip = try await a.addClip(to: books[0], note: "one clip too")
            // A refill far below what the client sends, so the limit is always reached; the
            // emulator's clock stands still but for the client's backoff waits, which alone
            // refill the bucket.
            await world.state.freezeClock()
            await world.state.setWriteLimit(RateLimit(perSecond: 0.5, burst: 5))
            await world.state.addFault(FaultRule(method: "POST", pathContains: "/upload", times: 3, status: 503))
            await world.state.addFault(FaultRule(method: "GET", pathContains: "generateIds", times: 1, status: 503))

            let (report, uploaded) = try await a.syncThroughRateLimit(counting: \.uploaded)
            #expect(report.failures.isEmpty, "\(report.failures)")
            #expect(uploaded == [30, 1])
            let log = await world.requests()
            #expect(log.contains { $0.status == 403 }, "the write limit was reached")
            #expect(log.filter { $0.status == 503 }.count == 4)
            #expect(!a.sleeps.isEmpty, "the client backed off (in virtual time)")
            #expect(try await a.library.queueItems().isEmpty)

            let names = await world.names()
            #expect(names.count == 32 && Set(names).count == 32, "one file per name")
            let folders = await world.state.dump(email: alice).filter(\.isFolder).map(\.name).sorted()
            #expect(folders == ["Ivy", "books", "clips"])

            let b = try await world.device("b")
            let downloaded = try await b.sync()
            #expect(downloaded.downloaded.pair == [30, 1] && downloaded.failures.isEmpty)
            #expect(try await a.snapshot() == b.snapshot())
            #expect(b.audio(clip.id) == a.audio(clip.id))
            #expect(try await a.sync().transferredNothing)
        }
    }
}
