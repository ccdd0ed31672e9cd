import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import Testing

@Suite("First sync and a quiet re-sync")
struct FirstSyncTests {
    @Test(
        """
        the first sync uploads everything; a second device downloads books, clips and identical audio; \
        a quiet re-sync costs one request
        """
    )
    func firstSyncThenSecondDevice() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let dune = try await a.addBook("Dune", position: 5400)
            let emma = try await a.addBook("Emma", position: 12.5)
            let clips = await [
                try a.addClip(to: dune, note: "Great metaphor", start: 10),
                try a.addClip(to: dune, start: 99.5),
                try a.addClip(to: emma, note: "Mr Knightley", start: 3),
            ]
            #expect(try await a.library.queueItems().count == 5)

            let uploaded = try await a.sync()
            #expect(uploaded.uploaded.pair == [2, 3])
            #expect(uploaded.failures.isEmpty && uploaded.skipped.isEmpty && uploaded.conflicts.isEmpty)
            #expect(uploaded.bytesUploaded == clips.reduce(0) { $0 + Int64(a.audio($1.id)?.count ?? 0) })
            #expect(try await a.library.queueItems().isEmpty)
            #expect(try await a.library.localStatus().manifestEntries == 5)
            let expectedNames =
                ([dune, emma].map { "book_\($0.id).json" }
                + clips.flatMap { ["clip_\($0.id).json", "clip_\($0.id).mp3"] }).sorted()
            #expect(await world.names() == expectedNames)
            for clip in clips {
                #expect(try await world.file("clip_\(clip.id).mp3").content == a.audio(clip.id))
            }

            let b = try await world.device("b")
            let downloaded = try await b.sync()
            #expect(downloaded.downloaded.pair == [2, 3])
            #expect(downloaded.uploaded.total == 0 && downloaded.failures.isEmpty)
            #expect(try await b.snapshot() == a.snapshot())
            for clip in clips { #expect(b.audio(clip.id) != nil && b.audio(clip.id) == a.audio(clip.id)) }
            #expect(try await b.library.queueItems().isEmpty, "downloads must not be queued for upload again")

            for device in [a, b] {
                await world.state.clearRequests()
                let quiet = try await device.sync()
                #expect(quiet.transferredNothing, "\(device.name): \(quiet.summary)")
                #expect(quiet.requests == 1, "\(device.name): \(quiet.summary)")
                let logged = await world.requests()
                #expect(logged.count == 1, "one page of Drive's change feed")
                #expect(logged.allSatisfy { $0.method == "GET" && $0.path == "/drive/v3/changes" })
            }
            #expect(await world.names() == expectedNames, "nothing was duplicated on Drive")
        }
    }
}
