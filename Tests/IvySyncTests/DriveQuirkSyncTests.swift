import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import Testing

/// Syncs against a Drive that behaves as Google's does, not as a tidy fake would.
@Suite("Sync against Drive's quirks")
struct DriveQuirkSyncTests {
    @Test("a new device downloads everything under Drive's read limit: rate-limited reads are retried and slow every request")
    func readLimit() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let b = try await world.device("b")
            for index in 0..<20 {
                let book = try a.addBook("Book \(index)")
                if index < 5 { try a.addClip(to: book, note: "clip \(index)") }
            }
            #expect(try await a.sync().uploaded.pair == [20, 5])

            // 403 userRateLimitExceeded, the reason only in the JSON body, for every read over 5 a second.
            await world.state.setReadLimit(ReadLimit(readsPerSecond: 5, burst: 3))
            await world.state.clearRequests()
            let report = try await b.sync()
            #expect(report.failures.isEmpty && report.downloaded.pair == [20, 5], "\(report.summary) \(report.skipped)")
            let log = await world.requests()
            let limited = log.filter { $0.status == 403 }
            #expect(!limited.isEmpty, "the limit was reached")
            #expect(limited.contains { $0.query.contains("alt=media") }, "downloads among them")
            #expect(!b.sleeps.isEmpty, "retries waited")
            #expect(try a.snapshot() == b.snapshot())
        }
    }

    @Test("a page token Drive rejects mid-listing (400) restarts the listing from the first page", .timeLimit(.minutes(1)))
    func rejectedPageToken() async throws {
        try await withWorld { world in
            // Access tokens outlive the hours the clock moves on.
            await world.state.setTokenLifetime(seconds: 86_400)
            let a = try await world.device("a")
            let b = try await world.device("b")
            for index in 0..<7 { try a.addBook("Book \(index)") }
            #expect(try await a.sync().uploaded.books == 7)
            await world.state.setPageSizeCap(3)

            // The second page is asked for after its token has expired.
            await world.state.addFault(FaultRule(method: "GET", pathContains: "pageToken=", times: 1, hold: true))
            async let synced = b.sync()
            await world.state.waitForHeld(count: 1)
            await world.state.advanceClock(by: 4 * 3600)
            await world.state.releaseHeld()
            let report = try await synced
            #expect(report.failures.isEmpty && report.skipped.isEmpty, "\(report.summary)")
            #expect(report.downloaded.books == 7)
            let rejected = await world.requests().filter { $0.status == 400 }
            #expect(rejected.count == 1 && rejected[0].query.contains("pageToken="))
            #expect(try a.snapshot() == b.snapshot())
        }
    }
}
