import Foundation
import GoogleEmulator
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import Testing

@Suite("Sync engine: devices converging through the emulator")
struct EngineScenarioTests {
    @Test("edits flow both ways; both sides changed merge (furthest position, both notes)")
    func editsAndMerges() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            let tablet = try await EngineDevice.signIn(google, name: "tablet")
            let book = try phone.addBook("Dune", position: 100)
            let clip = try phone.addClip(book: book, note: "start")
            try await phone.sync()
            #expect(try await tablet.sync().downloaded.total == 2)
            try phone.library.updateBook(id: book, BookChanges(position: 200))
            #expect(try await phone.sync().uploaded.books == 1)
            #expect(try await tablet.sync().downloaded.books == 1)
            #expect(try tablet.library.book(id: book)?.position == 200)
            // Both change the same entities before syncing: the later sync merges.
            try phone.library.updateBook(id: book, BookChanges(position: 900))
            try phone.library.updateClip(id: clip, ClipChanges(note: "phone's thought"))
            try tablet.library.updateBook(id: book, BookChanges(position: 500))
            try tablet.library.updateClip(id: clip, ClipChanges(note: "tablet's thought"))
            try await tablet.sync()
            let merging = try await phone.sync()
            #expect(merging.merged.total == 2 && merging.conflicts.count == 2)
            try await tablet.sync()
            #expect(try tablet.library.book(id: book)?.position == 900)
            let note = try #require(try tablet.library.clip(id: clip)?.note)
            #expect(
                note.contains("phone's thought") && note.contains("tablet's thought") && note.contains("--- Conflict (")
            )
            #expect(try phone.snapshot() == tablet.snapshot())
            #expect(await google.engineNames().count == 3)
        }
    }

    @Test(
        "a clip deleted on one device is deleted on Drive and then on the other; an archived book is hidden everywhere")
    func deletions() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            let tablet = try await EngineDevice.signIn(google, name: "tablet")
            let book = try phone.addBook("Emma")
            let clip = try phone.addClip(book: book)
            try await phone.sync()
            try await tablet.sync()
            try phone.library.deleteClip(id: clip)
            try phone.library.updateBook(id: book, BookChanges(hidden: true))
            let deleting = try await phone.sync()
            #expect(deleting.deletedRemote.clips == 1 && deleting.uploaded.books == 1)
            #expect(await google.engineNames() == ["book_\(book).json"])
            let receiving = try await tablet.sync()
            #expect(receiving.deletedLocal.clips == 1 && receiving.downloaded.books == 1)
            #expect(try tablet.library.clips().isEmpty)
            #expect(!FileManager.default.fileExists(atPath: tablet.library.audioPath(clipID: clip)))
            #expect(try tablet.library.book(id: book)?.hidden == true)
            #expect(try tablet.library.queueItems().isEmpty, "applying remote changes queues nothing")
        }
    }

    @Test("deleted on one device while edited on another: the clip comes back everywhere")
    func editBeatsDelete() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            let tablet = try await EngineDevice.signIn(google, name: "tablet")
            let clip = try phone.addClip(book: try phone.addBook("Ulysses"), note: "v1")
            try await phone.sync()
            try await tablet.sync()
            try phone.library.deleteClip(id: clip)
            try tablet.library.updateClip(id: clip, ClipChanges(note: "v2"))
            try await phone.sync()
            try await tablet.sync()
            try await phone.sync()
            #expect(try phone.library.clip(id: clip)?.note == "v2")
            #expect(FileManager.default.fileExists(atPath: phone.library.audioPath(clipID: clip)))
            #expect(try phone.snapshot() == tablet.snapshot())
        }
    }

    @Test("an offline queue fails 3 times, is held as failed, and uploads after retry-failed")
    func failedAndRetried() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            _ = try phone.addBook("Offline")
            try await phone.sync()  // folders exist now
            let book = try phone.addBook("Queued")
            await google.state.addFault(FaultRule(method: "POST", pathContains: "/upload", status: 500))
            for attempt in 1...3 {
                let report = try await phone.sync()
                #expect(report.failures.count == 1, "attempt \(attempt)")
            }
            #expect(try phone.library.localStatus().failed == 1)
            let held = try await phone.sync()
            #expect(held.failures.isEmpty && held.held.count == 1)
            await google.state.clearFaults()
            #expect(try await phone.sync().uploaded.total == 0, "still held until retry-failed")
            #expect(try phone.library.retryFailed() == 1)
            #expect(try await phone.sync().uploaded.books == 1)
            #expect(await google.engineNames().contains("book_\(book).json"))
            #expect(try phone.library.queueItems().isEmpty)
        }
    }

    @Test("a clip whose MP3 upload fails leaves no JSON on Drive; a full Drive counts one attempt")
    func rollback() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            let clip = try phone.addClip(book: try phone.addBook("Full"))
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", status: 403, reason: "storageQuotaExceeded"))
            let report = try await phone.sync()
            #expect(report.failures.count == 1 && report.failures[0].reason.contains("Drive is full"))
            #expect(!(await google.engineNames()).contains { $0.hasPrefix("clip_") })
            let item = try #require(try phone.library.queueItems().first { $0.entityID == clip })
            #expect(item.attempts == 1 && !item.hasFailed)
        }
    }

    @Test("bad files on Drive are skipped and reported; the rest syncs and local data is kept")
    func badRemoteFiles() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            let tablet = try await EngineDevice.signIn(google, name: "tablet")
            let good = try phone.addBook("Good")
            let clip = try phone.addClip(book: good)
            try await phone.sync()
            let books = try #require(await google.state.dump(email: "alice@example.com").first { $0.name == "books" })
            let clips = try #require(await google.state.dump(email: "alice@example.com").first { $0.name == "clips" })
            let broken = "0000aaaa-0000-4000-8000-000000000001"
            let mismatched = "0000aaaa-0000-4000-8000-000000000002"
            let lonely = "0000aaaa-0000-4000-8000-000000000003"
            await google.state.putFile(
                email: "alice@example.com", name: "book_\(broken).json", parents: [books.id],
                content: Data("{oops".utf8))
            await google.state.putFile(
                email: "alice@example.com", name: "book_\(mismatched).json", parents: [books.id],
                content: try BackupCodec.encode(BookBackup(id: good, title: "Impostor", createdAt: 1, updatedAt: 1)))
            await google.state.putFile(
                email: "alice@example.com", name: "notes.txt", parents: [books.id], content: Data("hi".utf8))
            await google.state.putFile(
                email: "alice@example.com", name: "clip_\(lonely).json", parents: [clips.id], content: Data("{}".utf8))
            let report = try await tablet.sync()
            let skipped = report.skipped.map(\.entity).joined(separator: " ")
            for name in ["book_\(broken).json", "book_\(mismatched).json", "notes.txt", "clip \(lonely)"] {
                #expect(skipped.contains(name), "\(name) not reported: \(skipped)")
            }
            #expect(try tablet.library.book(id: good)?.title == "Good")
            #expect(try tablet.library.clip(id: clip) != nil)
            #expect(try tablet.library.book(id: mismatched) == nil && tablet.library.book(id: broken) == nil)
        }
    }

    @Test("the safety valve holds back mass local deletions unless allowed")
    func safetyValve() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            let tablet = try await EngineDevice.signIn(google, name: "tablet")
            let book = try phone.addBook("Clips")
            let clips = try (0..<12).map { _ in try phone.addClip(book: book) }
            try await phone.sync()
            try await tablet.sync()
            for clip in clips { try phone.library.deleteClip(id: clip) }
            try await phone.sync()
            let held = try await tablet.sync()
            #expect(held.deletedLocal.total == 0 && held.deletionsHeld?.contains("12 of the 12") == true)
            #expect(try tablet.library.clips().count == 12)
            let allowed = try await tablet.sync(SyncOptions(allowDeletes: true))
            #expect(allowed.deletedLocal.clips == 12)
        }
    }

    @Test("reset-manifest: a full re-sync converges with no duplicate files and no conflict markers")
    func resetManifest() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            let tablet = try await EngineDevice.signIn(google, name: "tablet")
            let book = try phone.addBook("Reset")
            _ = try phone.addClip(book: book, note: "kept as is")
            try await phone.sync()
            try await tablet.sync()
            try tablet.library.resetManifest()
            let report = try await tablet.sync()
            #expect(report.conflicts.isEmpty && report.uploaded.total == 0)
            #expect(await google.engineNames().count == 3)
            #expect(try tablet.library.clips().first?.note == "kept as is")
            #expect(try phone.snapshot() == tablet.snapshot())
        }
    }

    @Test("signing in as another account uploads the whole library to the new Drive")
    func accountSwitch() async throws {
        try await withEngineDrive { google in
            let alice = try await EngineDevice.signIn(google, name: "alice")
            let book = try alice.addBook("Moving")
            _ = try alice.addClip(book: book)
            try await alice.sync()
            // The same library, signed in as bob: binding resets the manifest.
            let bob = try await EngineDevice.signIn(google, name: "bob", as: "bob@example.com")
            #expect(try alice.library.bindAccount(permissionID: "09998765432109876543", email: "bob@example.com"))
            let engine = SyncEngine(
                library: alice.library, drive: bob.drive,
                clock: WallClock { Milliseconds(Date().timeIntervalSince1970 * 1000) }, logger: .init(label: "t"))
            let report = try await engine.run(SyncOptions())
            #expect(report.uploaded.total == 2)
            #expect(await google.engineNames("bob@example.com").count == 3)
        }
    }

    @Test("a clip whose book is missing is kept and counted as an orphan")
    func orphans() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            let tablet = try await EngineDevice.signIn(google, name: "tablet")
            let book = try phone.addBook("Lost")
            let clip = try phone.addClip(book: book)
            try await phone.sync()
            let file = try #require(
                await google.state.dump(email: "alice@example.com").first { $0.name == "book_\(book).json" })
            try await google.state.corruptFile(id: file.id, content: Data("not json".utf8))
            let report = try await tablet.sync()
            #expect(report.orphanClips == 1)
            #expect(try tablet.library.clip(id: clip) != nil)
        }
    }

    @Test("rate limits and server errors during a sync still converge")
    func weather() async throws {
        try await withEngineDrive { google in
            let phone = try await EngineDevice.signIn(google, name: "phone")
            for index in 0..<30 { _ = try phone.addBook("Book \(index)") }
            await google.state.setWriteLimit(RateLimit(perSecond: 1000, burst: 5))
            await google.state.addFault(FaultRule(method: "POST", pathContains: "/upload", times: 3, status: 503))
            var report = try await phone.sync()
            var rounds = 1
            while !report.failures.isEmpty && rounds < 4 {
                report = try await phone.sync()
                rounds += 1
            }
            #expect(report.failures.isEmpty)
            #expect(await google.engineNames().count == 30)
            #expect(Set(await google.engineNames()).count == 30)
        }
    }
}
