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
}
