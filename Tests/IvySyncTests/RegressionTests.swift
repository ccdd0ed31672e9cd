import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import Testing

/// Regressions for three bugs these tests found: a failed download turned into a remote
/// delete or a false conflict, and replaced audio lost in a note merge.
@Suite("Failed downloads and concurrent audio changes")
struct KnownIssueTests {
    @Test("a clip whose download failed is downloaded at the next sync, never deleted from Drive")
    func failedDownloadIsRetriedNotDeleted() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            let clip = try await a.addClip(to: book, note: "precious")
            #expect(try await a.sync().uploaded.pair == [1, 1])
            let names = await world.names()

            let b = try await world.device("b")
            await world.state.addFault(FaultRule(method: "GET", pathContains: "alt=media", status: 500))
            let failing = try await b.sync()
            #expect(Set(failing.failures.map(\.entity)) == ["book \(book.id)", "clip \(clip.id)"])
            #expect(failing.downloaded.total == 0 && failing.deletedRemote.total == 0)
            await world.state.clearFaults()

            let retried = try await b.sync()
            #expect(retried.downloaded.books == 1)
            do {
                #expect(retried.downloaded.clips == 1, "\(retried.summary)")
                #expect(retried.deletedRemote.total == 0, "\(retried.summary)")
            }
            let after = await world.names()
            let kept = try await b.clip(clip.id)
            let originReport = try await a.sync()
            let origin = try await a.clip(clip.id)
            do {
                #expect(after == names)
                #expect(kept?.note == "precious")
                #expect(originReport.deletedLocal.total == 0)
                #expect(origin?.note == "precious")
            }
        }
    }

    @Test("an edit whose download failed once is downloaded at the next sync, not merged into a false conflict")
    func failedDownloadIsNotAConflict() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.edit(clip: pair.clip.id, ClipChanges(note: "first"))
            #expect(try await a.sync().uploaded.pair == [0, 1])
            #expect(try await b.sync().downloaded.pair == [0, 1])
            try await a.edit(clip: pair.clip.id, ClipChanges(note: "second"))
            try await a.edit(book: pair.book.id, BookChanges(position: 60))  // rewound
            #expect(try await a.sync().uploaded.pair == [1, 1])

            await world.state.addFault(FaultRule(method: "GET", pathContains: "alt=media", status: 500))
            #expect(try await b.sync().failures.count == 2)
            await world.state.clearFaults()
            let retried = try await b.sync()
            #expect(retried.failures.isEmpty)
            let note = try await b.clip(pair.clip.id)?.note
            let position = try await b.book(pair.book.id)?.position
            do {
                #expect(retried.conflicts.isEmpty, "\(retried.conflicts)")
                #expect(retried.downloaded.pair == [1, 1], "\(retried.summary)")
                #expect(note == "second", "\(note ?? "nil")")
                #expect(position == 60)
            }
        }
    }

    @Test("audio replaced on one device survives a note edit merged in from another")
    func replacedAudioSurvivesMerge() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            let source = world.directory + "/retake.mp3"
            try (Data("ID3".utf8) + Data(repeating: 7, count: 5000)).write(to: URL(fileURLWithPath: source))
            try await b.library.updateClip(id: pair.clip.id, ClipChanges(), audio: source)
            let retake = try #require(b.audio(pair.clip.id))
            #expect(try await b.sync().uploaded.pair == [0, 1])

            try await a.edit(clip: pair.clip.id, ClipChanges(note: "A's note"))
            #expect(try await a.sync().merged.pair == [0, 1])
            #expect(try await b.sync().downloaded.pair == [0, 1])
            #expect(try await b.clip(pair.clip.id)?.note == "A's note")
            let onDrive = try await world.file("clip_\(pair.clip.id).mp3").content
            do {
                #expect(onDrive == retake)
                #expect(a.audio(pair.clip.id) == retake)
                #expect(b.audio(pair.clip.id) == retake)
            }
            #expect(try await a.snapshot() == b.snapshot(), "whichever audio, both devices agree")
        }
    }
}
