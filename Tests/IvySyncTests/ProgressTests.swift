import Foundation
import IvyCore
import IvySync
import Synchronization
import Testing

/// What a sync tells the progress line, in the order it tells it.
final class ProgressLog: Sendable {
    private let events = Mutex<[SyncProgress]>([])

    var told: @Sendable (SyncProgress) -> Void { { [self] progress in events.withLock { $0.append(progress) } } }
    var all: [SyncProgress] { events.withLock { $0 } }
    var syncing: [SyncProgress] { all.filter { $0.phase == "syncing" } }

    /// Events that counted bytes without finishing an operation: audio seen while it moved.
    var whileMoving: Int {
        zip(syncing, syncing.dropFirst()).filter { $1.done == $0.done && $1.bytesDone > $0.bytesDone }.count
    }
}

@Suite("The progress a sync tells: operations and audio bytes as they move")
struct ProgressTests {
    @Test(
        """
        uploads and downloads count their MP3 bytes as they move, against a total known from the start, \
        and end at every operation done and the report's bytes
        """)
    func bytesAsTheyMove() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try a.addBook("Dune")
            let clips = try (0..<4).map { try a.addClip(to: book, start: Double($0)) }
            let audio = clips.reduce(Int64(0)) { $0 + Int64(a.audio($1.id)?.count ?? 0) }

            for (device, direction) in [(a, "up"), (try await world.device("b"), "down")] {
                let log = ProgressLog()
                let report = try await device.sync(progress: log.told)
                let moved = direction == "up" ? report.bytesUploaded : report.bytesDownloaded
                #expect(moved == audio && report.failures.isEmpty, "\(report.summary)")
                #expect(log.all.first?.phase == "listing Drive")
                let first = try #require(log.syncing.first)
                let last = try #require(log.syncing.last)
                #expect(first.done == 0 && first.total == 5 && first.bytesTotal == audio, "\(direction): \(first)")
                #expect(
                    last.done == 5 && last.total == 5 && last.bytesDone == audio && last.bytesTotal == audio,
                    "\(direction): \(last)")
                #expect(log.whileMoving >= clips.count, "\(direction): \(log.syncing)")
                // Told in order: nothing goes backwards, nothing passes its total.
                for (before, after) in zip(log.syncing, log.syncing.dropFirst()) {
                    #expect(after.done >= before.done && after.bytesDone >= before.bytesDone)
                    #expect(after.bytesDone <= after.bytesTotal)
                }
            }
        }
    }

    @Test("a sync with nothing to do tells that it lists Drive, then that it has no operation to carry out")
    func quiet() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            _ = try a.addBook("Dune")
            _ = try await a.sync()
            let log = ProgressLog()
            _ = try await a.sync(progress: log.told)
            #expect(log.all.map(\.phase) == ["listing Drive", "syncing"])
            #expect(log.syncing.first == SyncProgress(phase: "syncing"))
        }
    }
}
