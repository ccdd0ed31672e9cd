import Foundation
import GoogleEmulator
import IvyCore
import IvySync
import IvyTestSupport
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
            let book = try await a.addBook("Dune")
            let clips = try await (0..<4).asyncMap { try await a.addClip(to: book, start: Double($0)) }
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

    @Test("downloads that fail after their bytes arrived never take bytes done back, nor past the total")
    func failedDownloadsKeepTheirBytes() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            let clips = try await (0..<3).asyncMap { try await a.addClip(to: book, start: Double($0)) }
            _ = try await a.sync()
            let b = try await world.device("b")
            // Drive lists each MP3 longer than it is: its bytes count as they arrive, then it
            // fails as short.
            for clip in clips {
                let mp3 = try await world.file("clip_\(clip.id).mp3")
                let size = try #require(a.audio(clip.id)?.count)
                try await world.state.misreport(id: mp3.id, Misreport(size: String(size + 10)))
            }
            let log = ProgressLog()
            let report = try await b.sync(progress: log.told)
            #expect(!report.failures.isEmpty, "\(report.summary)")
            #expect(log.syncing.contains { $0.bytesDone > 0 }, "\(log.syncing)")
            for (before, after) in zip(log.syncing, log.syncing.dropFirst()) {
                #expect(after.bytesDone >= before.bytesDone, "\(before) then \(after)")
                #expect(after.bytesDone <= after.bytesTotal, "\(after)")
            }
            // The line drawn from it, a second apart: never a negative rate.
            var meter = ProgressMeter()
            for (second, progress) in log.syncing.enumerated() {
                let rate = meter.update(progress, now: Milliseconds(second) * 1000)?.bytesPerSecond
                #expect((rate ?? 0) >= 0, "\(progress)")
            }
        }
    }

    @Test("a sync with nothing to do tells that it lists Drive, then that it has no operation to carry out")
    func quiet() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            _ = try await a.addBook("Dune")
            _ = try await a.sync()
            let log = ProgressLog()
            _ = try await a.sync(progress: log.told)
            #expect(log.all.map(\.phase) == ["listing Drive", "syncing"])
            #expect(log.syncing.first == SyncProgress(phase: "syncing"))
        }
    }
}
