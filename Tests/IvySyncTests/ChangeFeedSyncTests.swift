import Foundation
import GoogleEmulator
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvyTestSupport
import Testing

extension World {
    /// The requests logged since the last `clearRequests`, by kind.
    func requestKinds() async -> [String] {
        await requests().map { request in
            switch request.path {
            case "/drive/v3/changes": "changes"
            case "/drive/v3/changes/startPageToken": "start token"
            case "/drive/v3/files" where request.method == "GET": "list"
            case let path
            where request.method == "GET" && path.hasPrefix("/drive/v3/files/")
                && request.query.contains("alt=media"):
                "download"
            default: "\(request.method) \(request.path)"
            }
        }
    }
}

extension Device {
    /// The mirror's files as (name, id), sorted by name.
    func mirrorNames() async throws -> [String] {
        try #require(try await library.driveMirror()).files.map(\.file.name).sorted()
    }
}

@Suite("A sync that reads Drive's change feed")
struct ChangeFeedSyncTests {
    @Test("the first sync builds the mirror from a full listing; a quiet sync is then one request")
    func firstThenQuiet() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            try await a.addClip(to: book)
            let first = try await a.sync()
            #expect(first.uploaded.pair == [1, 1] && first.fullListing != nil)
            let token = try #require(try await a.library.driveMirrorToken())

            // ivy's own uploads reach the mirror through the feed, like another device's.
            await world.state.clearRequests()
            let quiet = try await a.sync()
            #expect(quiet.transferredNothing && quiet.fullListing == nil, "\(quiet.summary)")
            #expect(await world.requestKinds() == ["changes"])
            #expect(try await a.mirrorNames() == world.names())
            #expect(try await a.library.driveMirrorToken() != token)

            await world.state.clearRequests()
            let again = try await a.sync()
            #expect(again.requests == 1 && again.summary.hasPrefix("Synced: nothing to do; 1 request in "))
            #expect(await world.requestKinds() == ["changes"])
        }
    }

    @Test("k books edited on another device: one page of changes and k downloads", arguments: [1, 5])
    func remoteEdits(k: Int) async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let b = try await world.device("b")
            let books = try await (0..<8).asyncMap { try await a.addBook("Book \($0)") }
            _ = try await a.sync()
            _ = try await b.sync()
            _ = try await a.sync()
            for book in books.prefix(k) { try await b.edit(book: book.id, BookChanges(position: 77)) }
            #expect(try await b.sync().uploaded.books == k)

            await world.state.clearRequests()
            let report = try await a.sync()
            #expect(report.downloaded.pair == [k, 0] && report.fullListing == nil, "\(report.summary)")
            #expect(await world.requestKinds() == ["changes"] + Array(repeating: "download", count: k))
            #expect(try await a.snapshot() == b.snapshot())
            #expect(try await a.mirrorNames() == world.names())
        }
    }

    @Test("a clip deleted on another device, and one trashed on Drive, reach this library through the feed")
    func remoteDeleteAndTrash() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let other = try await pair.b.addClip(to: pair.book, note: "to the bin")
            _ = try await pair.b.sync()
            _ = try await pair.a.sync()
            #expect(try await pair.a.clip(other.id) != nil)

            try await pair.b.library.deleteClip(id: pair.clip.id)
            #expect(try await pair.b.sync().deletedRemote.pair == [0, 1])
            // A delete acts on absence, so Drive's own listing confirms it first.
            let deleted = try await pair.a.sync()
            #expect(deleted.deletedLocal.pair == [0, 1], "\(deleted.summary)")
            #expect(deleted.fullListing?.contains("is not in the mirror") == true, "\(deleted.fullListing ?? "-")")
            #expect(try await pair.a.clip(pair.clip.id) == nil)

            // Trashed in Drive's web page: both files of the clip.
            for name in ["clip_\(other.id).json", "clip_\(other.id).mp3"] {
                try await world.state.trash(id: try await world.file(name).id)
            }
            let trashed = try await pair.a.sync()
            #expect(trashed.deletedLocal.pair == [0, 1] && trashed.fullListing != nil, "\(trashed.summary)")
            #expect(try await pair.a.clip(other.id) == nil)
            #expect(try await pair.a.mirrorNames() == ["book_\(pair.book.id).json"])
        }
    }

    @Test("a change outside ivy's books and clips folders is read and ignored")
    func outsideTheFolders() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            _ = try await a.sync()
            _ = try await a.sync()
            let ivy = try #require(try await a.library.rememberedFolders()?.ivy.first)
            let before = try await a.mirrorNames()
            // A backup-like name right in the Ivy folder, and one in another folder of the app.
            await world.state.putFile(
                email: alice, name: "book_\(book.id).json", parents: [ivy.rawValue], content: Data("{}".utf8))
            let elsewhere = await world.state.putFile(
                email: alice, name: "Notes", parents: [], content: Data(),
                mimeType: "application/vnd.google-apps.folder")
            await world.state.putFile(
                email: alice, name: "book_\(book.id).json", parents: [elsewhere.id], content: Data("{}".utf8))
            await world.state.clearRequests()
            let report = try await a.sync()
            #expect(report.transferredNothing && report.fullListing == nil, "\(report.summary)")
            #expect(await world.requestKinds() == ["changes"])
            #expect(try await a.mirrorNames() == before)
        }
    }

    @Test("a change token Drive refuses: that sync lists in full, converges, and builds a new chain")
    func rejectedToken() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            _ = try await pair.a.sync()
            let old = try #require(try await pair.a.library.driveMirrorToken())
            try await pair.b.edit(book: pair.book.id, BookChanges(position: 42))
            _ = try await pair.b.sync()
            await world.state.setChangeTokenLifetime(seconds: 60)
            await world.state.advanceClock(by: 3600)

            await world.state.clearRequests()
            let report = try await pair.a.sync()
            #expect(report.downloaded.pair == [1, 0], "\(report.summary)")
            #expect(report.fullListing?.contains("refused") == true, "\(report.fullListing ?? "-")")
            #expect(await world.requestKinds().contains("list"))
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
            #expect(try await pair.a.library.driveMirrorToken() != old)
            #expect(try await pair.a.mirrorNames() == world.names())

            await world.state.clearRequests()
            #expect(try await pair.a.sync().fullListing == nil)
            #expect(await world.requestKinds() == ["changes"])
        }
    }

    @Test("an error partway through the pages: that sync lists in full and converges; the next reads the feed")
    func errorMidway() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            _ = try await pair.a.sync()
            for index in 0..<3 { try await pair.b.addBook("New \(index)") }
            _ = try await pair.b.sync()
            await world.state.setChangesPageSize(1)
            // The first page goes through (a rule that only counts it); then the second page
            // fails every try, the first and each retry, and the retries give up.
            await world.state.addFault(FaultRule(method: "GET", pathContains: "/drive/v3/changes?", times: 1))
            await world.state.addFault(
                FaultRule(
                    method: "GET", pathContains: "/drive/v3/changes?", times: RetryPolicy().maxAttempts, status: 503))
            let report = try await pair.a.sync()
            #expect(report.downloaded.books == 3, "\(report.summary)")
            #expect(report.fullListing?.contains("changes failed") == true, "\(report.fullListing ?? "-")")
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
            #expect(try await pair.a.mirrorNames() == world.names())

            await world.state.clearFaults()
            await world.state.clearRequests()
            let next = try await pair.a.sync()
            #expect(next.fullListing == nil && next.transferredNothing, "\(next.summary)")
        }
    }

    @Test("Drive out of reach while the feed is read: the sync stops there, with no full listing tried")
    func unreachableStopsTheSync() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            _ = try await pair.a.sync()
            try await pair.b.edit(book: pair.book.id, BookChanges(position: 7))
            _ = try await pair.b.sync()
            let token = try await pair.a.library.driveMirrorToken()
            await world.state.clearRequests()
            // Every connection dropped before an answer: what a network that is down looks like.
            await world.state.addFault(FaultRule(dropAfterBytes: 0))
            await #expect(throws: DriveError.self) { try await pair.a.sync() }
            let paths = await world.state.requests.map(\.path)
            #expect(paths.allSatisfy { $0 == "/drive/v3/changes" }, "only the feed, retried: \(paths)")
            #expect(try await pair.a.library.driveMirrorToken() == token, "the mirror stays where it was")

            await world.state.clearFaults()
            let report = try await pair.a.sync()
            #expect(report.fullListing == nil && report.downloaded.books == 1, "\(report.summary)")
        }
    }

    @Test("a page of changes that makes no sense: that sync lists in full and converges; the next reads the feed")
    func hostilePage() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            _ = try await pair.a.sync()
            try await pair.b.edit(book: pair.book.id, BookChanges(position: 7))
            _ = try await pair.b.sync()
            await world.state.addFault(
                FaultRule(
                    method: "GET", pathContains: "/drive/v3/changes?", times: 1,
                    jsonFields: ["changes": #"[{"fileId": "x", "file": 12}]"#]))
            let report = try await pair.a.sync()
            #expect(report.fullListing?.contains("could not be followed") == true, "\(report.fullListing ?? "-")")
            #expect(report.downloaded.pair == [1, 0], "\(report.summary)")
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
            #expect(try await pair.a.mirrorNames() == world.names())
            await world.state.clearRequests()
            #expect(try await pair.a.sync().fullListing == nil)
            #expect(await world.requestKinds() == ["changes"])
        }
    }

    /// Puts in `folder` a new book: `book`'s backup on Drive under a new id, as another device
    /// would have made it.
    private static func putCopy(of book: BookID, in folder: String, _ world: World) async throws {
        let id = UUID().uuidString.lowercased()
        let content = String(decoding: try await world.file("book_\(book).json").content, as: UTF8.self)
            .replacingOccurrences(of: book.rawValue, with: id)
        await world.state.putFile(
            email: alice, name: "book_\(id).json", parents: [folder], content: Data(content.utf8),
            mimeType: "application/json")
    }

    @Test("a new books folder on Drive (a twin) makes that sync list in full, and the twin's files are seen")
    func twinFolder() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let dune = try await a.addBook("Dune")
            _ = try await a.sync()
            _ = try await a.sync()
            let ivy = try #require(try await a.library.rememberedFolders()?.ivy.first)
            let twin = await world.state.putFile(
                email: alice, name: "books", parents: [ivy.rawValue], content: Data(),
                mimeType: "application/vnd.google-apps.folder")
            // Another device's book in the twin.
            try await Self.putCopy(of: dune.id, in: twin.id, world)
            let report = try await a.sync()
            #expect(report.fullListing?.contains("new books folder") == true, "\(report.fullListing ?? "-")")
            #expect(report.downloaded.pair == [1, 0], "\(report.summary)")
            #expect(try await a.library.rememberedFolders()?.books.count == 2)
            #expect(try await a.mirrorNames() == world.names())
            await world.state.clearRequests()
            #expect(try await a.sync().fullListing == nil)
            #expect(await world.requestKinds() == ["changes"])
        }
    }

    @Test("a twin folder made between the folder lookup and the change token: no mirror, the next sync sees its files")
    func twinBeforeToken() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let dune = try await a.addBook("Dune")
            _ = try await a.sync()
            let b = try await world.device("b")
            // b's change token is held; its folder lookup, asked for beside it, is answered.
            await world.state.addFault(
                FaultRule(method: "GET", pathContains: "changes/startPageToken", times: 1, hold: true))
            await world.state.clearRequests()
            async let first = b.sync()
            await world.state.waitForHeld(count: 1)
            await world.state.waitForRequests(count: 1)
            #expect(await world.requests().first?.query.contains("mimeType") == true, "the folder lookup")
            // Another device's twin books folder, made before the token: neither the lookup nor
            // the feed after the token holds it.
            let ivy = try #require(try await a.library.rememberedFolders()?.ivy.first)
            let twin = await world.state.putFile(
                email: alice, name: "books", parents: [ivy.rawValue], content: Data(),
                mimeType: "application/vnd.google-apps.folder")
            await world.state.releaseHeld()
            let report = try await first
            #expect(report.downloaded.pair == [1, 0], "\(report.summary)")
            // No folder's files were listed while the token was held (the log is in the order
            // of the answers, and one sent then would have been answered first).
            let log = await world.requests()
            let token = try #require(log.firstIndex { $0.path.hasSuffix("changes/startPageToken") })
            let listings = log.indices.filter { log[$0].query.contains("%20in%20parents") }
            #expect(!listings.isEmpty && listings.allSatisfy { $0 > token }, "\(log)")
            #expect(try await b.library.driveMirror() == nil, "a mirror without the twin would never see its files")

            // A book put in the twin by another program: the next sync lists in full and sees it.
            try await Self.putCopy(of: dune.id, in: twin.id, world)
            let next = try await b.sync()
            #expect(next.fullListing != nil && next.downloaded.pair == [1, 0], "\(next.summary)")
            #expect(try await b.library.rememberedFolders()?.books.count == 2)
            #expect(try await b.mirrorNames() == world.names())
        }
    }

    @Test("--full lists Drive in full and rebuilds the mirror even when the feed could be read")
    func full() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            try await a.addBook("Dune")
            _ = try await a.sync()
            _ = try await a.sync()
            // A mirror gone wrong: a file Drive does not have. Only a full listing can tell.
            let mirror = try #require(try await a.library.driveMirror())
            let ghost = MirroredFile(
                file: RemoteFile(id: "ghost", name: "book_ghost.json", modifiedTime: 1), parents: [],
                mimeType: "application/json")
            try await a.library.replaceDriveMirror(
                mirror.files + [ghost], token: mirror.token, folders: try #require(try a.library.rememberedFolders()))
            await world.state.clearRequests()
            let report = try await a.sync(SyncRequest(full: true))
            #expect(report.fullListing == "--full" && report.transferredNothing)
            let kinds = await world.requestKinds()
            // The token is asked for beside the folder lookup, and both folders are listed after it.
            let token = try #require(kinds.firstIndex(of: "start token"), "\(kinds)")
            #expect(kinds[(token + 1)...].filter { $0 == "list" }.count >= 2 && !kinds.contains("changes"), "\(kinds)")
            #expect(try await a.mirrorNames() == world.names())
        }
    }

    @Test("--dry-run reads the feed but writes neither the mirror nor its token")
    func dryRun() async throws {
        try await withWorld { world in
            let fresh = try await world.device("fresh")
            try await fresh.addBook("Dune")
            _ = try await fresh.sync(SyncRequest(dryRun: true))
            #expect(try await fresh.library.driveMirror() == nil, "a first dry run builds no mirror")

            let pair = try await SyncedPair(world)
            _ = try await pair.a.sync()
            let before = try await pair.a.library.driveMirror()
            try await pair.b.edit(book: pair.book.id, BookChanges(position: 9))
            _ = try await pair.b.sync()
            let preview = try await pair.a.sync(SyncRequest(dryRun: true))
            #expect(preview.downloaded.pair == [1, 0] && preview.fullListing == nil, "\(preview.summary)")
            #expect(try await pair.a.library.driveMirror() == before)
            let real = try await pair.a.sync()
            #expect(real.downloaded.pair == [1, 0] && real.fullListing == nil)
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
        }
    }

    @Test("reset-manifest and a switch of account forget the mirror: the next sync lists in full")
    func resetAndSwitch() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            try await a.addBook("Dune")
            _ = try await a.sync()
            try await a.library.resetManifest()
            #expect(try await a.library.driveMirror() == nil)
            #expect(try await a.sync().fullListing != nil)
            #expect(try await a.library.driveMirror() != nil)

            #expect(try await a.signIn(as: bob))
            #expect(try await a.library.driveMirror() == nil)
            let bobs = try await a.sync()
            #expect(bobs.fullListing != nil && bobs.uploaded.books == 1)
            #expect(try await a.mirrorNames().isEmpty, "listed before its upload: the feed brings that next time")
            #expect(try await a.sync().fullListing == nil)
            #expect(try await a.mirrorNames() == world.names(bob))
        }
    }

    @Test("a mirror that lost files is checked by a full listing before anything is held or deleted")
    func shortMirror() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            for index in 0..<12 { try await a.addClip(to: book, start: Double(index)) }
            _ = try await a.sync()
            _ = try await a.sync()
            // A mirror gone wrong (a bug, a hand edit): most clips missing from it.
            let mirror = try #require(try await a.library.driveMirror())
            let kept = mirror.files.filter { !$0.file.name.hasPrefix("clip_") }
            try await a.library.replaceDriveMirror(
                kept, token: mirror.token, folders: try #require(try a.library.rememberedFolders()))
            let report = try await a.sync()
            #expect(report.fullListing?.contains("checking the mirror") == true, "\(report.fullListing ?? "-")")
            #expect(report.transferredNothing && report.deletionsHeld == nil, "\(report.summary)")
            #expect(try await a.library.clips().count == 12)
            #expect(try await a.mirrorNames() == world.names())
        }
    }

    @Test("one synced clip missing from the mirror (a drift) is not deleted: a full listing decides, and finds it")
    func driftedMirrorDeletesNothing() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            let clip = try await a.addClip(to: book)
            _ = try await a.sync()
            _ = try await a.sync()
            let mirror = try #require(try await a.library.driveMirror())
            let kept = mirror.files.filter { !$0.file.name.hasPrefix("clip_\(clip.id)") }
            try await a.library.replaceDriveMirror(
                kept, token: mirror.token, folders: try #require(try a.library.rememberedFolders()))
            let report = try await a.sync()
            #expect(report.fullListing?.contains("is not in the mirror") == true, "\(report.fullListing ?? "-")")
            #expect(report.transferredNothing, "\(report.summary)")
            #expect(try await a.clip(clip.id) != nil && a.audio(clip.id) != nil)
            #expect(try await a.mirrorNames() == world.names())
        }
    }

    @Test("the mirror is rebuilt from a full listing once it is a day old")
    func dailyFullListing() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            try await a.addBook("Dune")
            _ = try await a.sync()
            #expect(try await a.sync().fullListing == nil)
            let now = world.clock.clock.now()
            try await a.library.setInternalSetting(.mirrorListedAt, String(now - SyncEngine.mirrorMaximumAge - 1000))
            let report = try await a.sync()
            #expect(report.fullListing == "the last full listing is over a day old")
            #expect(report.transferredNothing)
            #expect(try await a.sync().fullListing == nil, "a fresh mirror again")
        }
    }

    @Test("a file the mirror lists but Drive no longer has: the mirror is forgotten, the next sync lists in full")
    func ghostInTheMirror() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            _ = try await a.sync()
            _ = try await a.sync()
            // The mirror says the book's file changed, under an id Drive does not have.
            let mirror = try #require(try await a.library.driveMirror())
            let ghosts = mirror.files.map { mirrored -> MirroredFile in
                guard mirrored.file.name == "book_\(book.id).json" else { return mirrored }
                var ghost = mirrored
                ghost.file.id = DriveFileID("ghost-\(mirrored.file.id)")
                ghost.file.modifiedTime += 5000
                return ghost
            }
            try await a.library.replaceDriveMirror(
                ghosts, token: mirror.token, folders: try #require(try a.library.rememberedFolders()))
            let failed = try await a.sync()
            #expect(!failed.failures.isEmpty && failed.fullListing == nil, "\(failed.summary)")
            #expect(try await a.library.driveMirrorToken() == nil, "the mirror is forgotten")
            let next = try await a.sync()
            #expect(next.fullListing != nil && next.failures.isEmpty, "\(next.summary)")
            #expect(try await a.book(book.id)?.title == "Dune")
            #expect(try await a.mirrorNames() == world.names())
        }
    }
}
