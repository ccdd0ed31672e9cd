import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import IvyTestSupport
import Testing

/// Syncs that overlap another writer's replace. ivy and the Ivy app replace a file by deleting
/// it and then creating the new one; a device that lists Drive between the two sees the
/// entity missing. The interleaving that lost edits (issue 26):
///
/// 1. The app (or another ivy) deletes `book_X.json` (F1) to replace it with its edit.
/// 2. Device A lists Drive: X is missing, synced before, unchanged here.
/// 3. The app creates F2, its edit (a newer `updated_at`).
/// 4. A, taking the absence for a replace cut short, uploads its own copy F3: the old fields.
/// 5. F3 is the newest file of the name by Drive's clock, so every device took it as current,
///    downloaded the old fields, and deleted F2 as a stale duplicate. The edit was gone.
///
/// The same for a clip's JSON (its MP3, unchanged, stays). Two rules close it: an absence is
/// acted on only once it has outlasted `SyncPlanner.replaceGrace`, and several files of one
/// name are all read and resolved by `updated_at` and the merge, never by which came last.
@Suite("Syncs overlapping another device's replace")
struct OverlapTests {
    /// The Ivy app's edit of a backup JSON on Drive, as `PhoneApp` in ivy-soak makes it: read,
    /// change, stamp its own `updated_at`.
    private func appEdit(_ world: World, _ name: String, _ change: (inout [String: Any]) -> Void) async throws -> Data {
        var fields = try await json(world, name)
        change(&fields)
        fields["updated_at"] = world.clock.now + 1_000
        return try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
    }

    /// The live (untrashed) files called `name`.
    private func live(_ world: World, _ name: String) async -> [DriveFile] {
        await world.files().filter { $0.name == name && !$0.explicitlyTrashed }
    }

    /// The content of the one live file called `name`.
    private func json(_ world: World, _ name: String) async throws -> [String: Any] {
        let files = await live(world, name)
        #expect(files.count == 1, "expected one live \(name), found \(files.count)")
        let file = try #require(files.first)
        return try #require(try JSONSerialization.jsonObject(with: file.content) as? [String: Any])
    }

    /// B renames the book and its sync uploads it; then a copy of what the book was before
    /// lands after it, as a restore made in the gap of B's replace did: two files of one name,
    /// the older content in the newer file. Returns the book's file name and that copy.
    private func oldCopyAfterBsRename(_ world: World, _ pair: SyncedPair) async throws -> (String, DriveFile) {
        let name = "book_\(pair.book.id).json"
        let books = try await world.folderID("books")
        let base = try #require(await live(world, name).first).content
        try await pair.b.edit(book: pair.book.id, BookChanges(title: "Dune: B's title"))
        #expect(try await pair.b.sync().uploaded.books == 1)
        await world.state.advanceClock(by: 1)
        let copy = await world.state.putFile(
            email: alice, name: name, parents: [books], content: base, mimeType: "application/json")
        #expect(await live(world, name).count == 2)
        return (name, copy)
    }

    /// Runs `device`'s sync while Drive holds back the `nth` upload it starts. If it starts one
    /// (the bug: restoring what the app is replacing), `meanwhile` runs before the upload goes
    /// on; otherwise `meanwhile` runs after the sync. Returns the sync's report and whether it
    /// made an upload while the app's create was still to come.
    private func sync(
        _ device: Device, _ world: World, holdingUpload nth: Int = 1,
        meanwhile: @Sendable () async throws -> Void
    ) async throws -> (SyncReport, uploadedInTheGap: Bool) {
        let state = world.state
        await state.addFault(FaultRule(method: "POST", pathContains: "/upload", nth: nth, hold: true))
        let outcome = try await withThrowingTaskGroup(of: SyncReport?.self) { group in
            group.addTask { try await device.sync() }
            group.addTask {
                await state.waitForHeld(count: 1)
                return nil
            }
            let first = try await group.next() ?? nil
            if let report = first {
                await state.endHeldWaits()
                _ = try await group.next()
                try await meanwhile()
                return (report, false)
            }
            try await meanwhile()
            await state.releaseHeld()
            let report = try #require(try await group.next() ?? nil)
            return (report, true)
        }
        await state.clearFaults()
        return outcome
    }

    /// The entity whose JSON the app replaces, the field its edit sets, and the device that
    /// lists Drive in the gap: A for the book, B for the clip (A made it).
    struct Replace: Sendable, CustomTestStringConvertible {
        let kind: EntityKind
        let field: String
        let value: String
        let lister: @Sendable (SyncedPair) -> Device

        var testDescription: String { "a \(kind.rawValue)'s JSON" }

        static let cases = [
            Replace(kind: .book, field: "title", value: "Dune (app)", lister: { $0.a }),
            Replace(kind: .clip, field: "note", value: "the app's note", lister: { $0.b }),
        ]

        func id(_ pair: SyncedPair) -> String {
            switch kind {
            case .book: "\(pair.book.id)"
            case .clip: "\(pair.clip.id)"
            }
        }

        /// What `device` holds in `field` now.
        func value(on device: Device, _ pair: SyncedPair) async throws -> String? {
            switch kind {
            case .book: try await device.book(pair.book.id)?.title
            case .clip: try await device.clip(pair.clip.id)?.note
            }
        }
    }

    @Test(
        "a device that lists between the app's delete and create of a book's or clip's JSON never restores the old one",
        arguments: Replace.cases)
    func replaceInProgress(_ replace: Replace) async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let kind = replace.kind
            let name = "\(kind.rawValue)_\(replace.id(pair)).json"
            let folder = try await world.folderID("\(kind.rawValue)s")
            let old = try #require(await live(world, name).first)
            let edited = try await appEdit(world, name) { $0[replace.field] = replace.value }
            try await world.state.trash(id: old.id)

            let lister = replace.lister(pair)
            let (during, uploadedInTheGap) = try await sync(lister, world) {
                _ = await world.state.putFile(
                    email: alice, name: name, parents: [folder], content: edited, mimeType: "application/json")
            }
            #expect(!uploadedInTheGap, "\(lister.name) restored its old copy while the app's create was in flight")
            #expect(during.uploaded.pair == [0, 0] && during.deletedLocal.pair == [0, 0], "\(during.summary)")
            let reason = during.skipReason("\(kind.rawValue) \(replace.id(pair))")
            #expect(reason?.contains("perhaps while another device") == true, "\(reason ?? "not skipped")")

            for device in [pair.a, pair.b, pair.a, pair.b] { _ = try await device.sync() }
            for device in [pair.a, pair.b] {
                #expect(
                    try await replace.value(on: device, pair) == replace.value, "\(device.name) lost the app's edit")
            }
            #expect(await live(world, name).count == 1)
            #expect(try await json(world, name)[replace.field] as? String == replace.value)
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
        }
    }

    @Test("two files of one name: the newer content wins even when the older content was uploaded last")
    func twinsByContent() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (name, _) = try await oldCopyAfterBsRename(world, pair)

            let report = try await pair.a.sync()
            #expect(report.downloaded.books + report.merged.books == 1)
            #expect(try await pair.a.book(pair.book.id)?.title == "Dune: B's title")
            #expect(await live(world, name).count == 1, "the older content is deleted once read")
            #expect(try await json(world, name)["title"] as? String == "Dune: B's title")
            _ = try await pair.b.sync()
            #expect(try await pair.b.book(pair.book.id)?.title == "Dune: B's title")
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
        }
    }

    @Test("two files of one name, each with another field edited: both edits survive the merge")
    func twinsMerged() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let name = "book_\(pair.book.id).json"
            let books = try await world.folderID("books")
            // Two writers replaced the book at once: one moved the position, one renamed it.
            let moved = try await appEdit(world, name) { $0["position"] = 7200 }
            let renamed = try await appEdit(world, name) { $0["title"] = "Dune (renamed)" }
            let old = try #require(await live(world, name).first)
            try await world.state.trash(id: old.id)
            for content in [renamed, moved] {
                await world.state.advanceClock(by: 1)
                _ = await world.state.putFile(
                    email: alice, name: name, parents: [books], content: content, mimeType: "application/json")
            }

            for device in [pair.a, pair.b, pair.a, pair.b] { _ = try await device.sync() }
            for device in [pair.a, pair.b] {
                let book = try #require(try await device.book(pair.book.id))
                #expect(book.title == "Dune (renamed)" && book.position == 7200, "\(device.name): \(book)")
            }
            #expect(await live(world, name).count == 1)
            #expect(try await pair.a.snapshot() == pair.b.snapshot())
        }
    }

    @Test("two files of one name that both retitle the book: the rule their merge applies is a conflict, Drive's")
    func twinsConflictRecorded() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let name = "book_\(pair.book.id).json"
            let books = try await world.folderID("books")
            let first = try await appEdit(world, name) { $0["title"] = "Dune (first)" }
            world.clock.advance(seconds: 1)
            let second = try await appEdit(world, name) { $0["title"] = "Dune (second)" }
            let old = try #require(await live(world, name).first)
            try await world.state.trash(id: old.id)
            for content in [second, first] {
                await world.state.advanceClock(by: 1)
                _ = await world.state.putFile(
                    email: alice, name: name, parents: [books], content: content, mimeType: "application/json")
            }

            _ = try await pair.a.sync()
            #expect(try await pair.a.book(pair.book.id)?.title == "Dune (second)")
            let conflicts = try await pair.a.library.conflicts(of: EntityKey(pair.book.id))
            let title = try #require(conflicts.first { $0.field == "title" }, "\(conflicts)")
            #expect(title.kept == .string("Dune (second)") && title.lost == .string("Dune (first)"), "\(title)")
            #expect(title.winner == "drive" && title.rule == "later_write", "\(title)")
        }
    }

    @Test("a book deleted on Drive for good is restored once it has stayed missing for the grace")
    func absenceOutlastsTheGrace() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let name = "book_\(pair.book.id).json"
            let old = try #require(await live(world, name).first)
            try await world.state.trash(id: old.id)
            #expect(try await pair.b.sync().uploaded.books == 0)
            world.clock.advance(seconds: 30)
            #expect(try await pair.b.sync().uploaded.books == 0)
            world.clock.advance(seconds: 31)
            #expect(try await pair.b.sync().uploaded.books == 1)
            #expect(await live(world, name).count == 1)
            // Seen again, the absence is forgotten: a later one waits the whole grace anew.
            #expect(try await pair.b.library.manifestEntries().allSatisfy { $0.missingSince == nil })
        }
    }

    /// ivy-soak seed 113: B saw the book missing in the app's replace, then (between B's syncs)
    /// the app's new file came, A read it, and A's own replace died after its delete. B took
    /// the two sightings for one absence past the grace and put back its copy, older than the
    /// app's: A merged that as an edit of Drive's, and the app's title (and its unknown key)
    /// was gone. Drive's feed told B a file it never saw came and went; that breaks the absence.
    @Test("an absence broken by a file this device never saw is timed anew: its older copy never goes back")
    func absenceBrokenBetweenSyncs() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let name = "book_\(pair.book.id).json"
            let books = try await world.folderID("books")
            let old = try #require(await live(world, name).first)
            let edited = try await appEdit(world, name) { $0["title"] = "Dune (app)" }
            try await world.state.trash(id: old.id)
            #expect(try await pair.b.sync().skipReason("book \(pair.book.id)")?.contains("perhaps while") == true)
            _ = await world.state.putFile(
                email: alice, name: name, parents: [books], content: edited, mimeType: "application/json")
            #expect(try await pair.a.sync().downloaded.books == 1)
            try await pair.a.edit(book: pair.book.id, BookChanges(position: 7200))
            await world.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", times: 1, status: 400, reason: "badRequest"))
            #expect(try await pair.a.sync().uploaded.books == 0)
            await world.state.clearFaults()
            #expect(await live(world, name).isEmpty, "A's replace died after its delete")

            world.clock.advance(seconds: 61)
            let restart = try await pair.b.sync()
            #expect(restart.uploaded.books == 0, "B put back its copy, older than the one Drive held since")
            #expect(restart.skipReason("book \(pair.book.id)")?.contains("perhaps while") == true)
            // A's own replace died: A puts it back at its next sync, with the app's edit.
            #expect(try await pair.a.sync().uploaded.books == 1, "A restores the book with the app's edit")
            _ = try await pair.b.sync()
            for device in [pair.a, pair.b] {
                let book = try #require(try await device.book(pair.book.id))
                #expect(book.title == "Dune (app)" && book.position == 7200, "\(device.name): \(book)")
            }
            #expect(try await json(world, name)["title"] as? String == "Dune (app)")
        }
    }

    // What an independent review found (R1–R6): twins where one is this device's own upload,
    // a twin's delete that fails, a held item beside twins, and a clip's MP3 replaced meanwhile.

    @Test("R1: the device whose upload is one of the twins reads the other against the base before its own")
    func ownTwin() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (name, _) = try await oldCopyAfterBsRename(world, pair)
            _ = try await pair.b.sync()
            #expect(try await pair.b.book(pair.book.id)?.title == "Dune: B's title", "B reverted its own edit")
            _ = try await pair.a.sync()
            #expect(try await pair.a.book(pair.book.id)?.title == "Dune: B's title")
            #expect(await live(world, name).count == 1)
        }
    }

    @Test("R1': two devices' edits of other fields, uploaded at once: each reads the other's against the old base")
    func editsAtOnce() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let name = "book_\(pair.book.id).json"
            try await pair.a.edit(book: pair.book.id, BookChanges(position: 9999))
            try await pair.b.edit(book: pair.book.id, BookChanges(title: "Dune (B)"))
            // A lists and is about to delete the old file; B replaces it meanwhile; then A's delete
            // finds it gone and A creates its own: two files of one name, from the same base.
            await world.state.addFault(FaultRule(method: "DELETE", nth: 1, hold: true))
            async let first = pair.a.sync()
            await world.state.waitForHeld(count: 1)
            await world.state.clearFaults()
            #expect(try await pair.b.sync().uploaded.books == 1)
            await world.state.releaseHeld()
            #expect(try await first.uploaded.books == 1)
            #expect(await live(world, name).count == 2)
            for device in [pair.a, pair.b, pair.a, pair.b] { _ = try await device.sync() }
            for device in [pair.a, pair.b] {
                let book = try #require(try await device.book(pair.book.id))
                #expect(book.title == "Dune (B)" && book.position == 9999, "\(device.name): \(book)")
            }
            #expect(await live(world, name).count == 1)
        }
    }

    @Test("R2: a twin whose delete fails is read again against the right base, not taken for an edit")
    func twinDeleteFails() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (name, stale) = try await oldCopyAfterBsRename(world, pair)
            await world.state.addFault(
                FaultRule(method: "DELETE", pathContains: stale.id, status: 403, reason: "insufficientFilePermissions"))
            _ = try await pair.a.sync()
            #expect(try await pair.a.book(pair.book.id)?.title == "Dune: B's title")
            #expect(await live(world, name).count == 2, "the twin's delete failed")
            await world.state.clearFaults()
            _ = try await pair.a.sync()
            #expect(try await pair.a.book(pair.book.id)?.title == "Dune: B's title", "A reverted to the old title")
            _ = try await pair.b.sync()
            #expect(try await pair.b.book(pair.book.id)?.title == "Dune: B's title", "B lost its edit")
            #expect(await live(world, name).count == 1)
        }
    }

    @Test("R3: a change made here waits while the book is missing, then merges with the app's replace")
    func changedHereWaits() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let name = "book_\(pair.book.id).json"
            let books = try await world.folderID("books")
            let old = try #require(await live(world, name).first)
            let edited = try await appEdit(world, name) { $0["title"] = "Dune (app)" }
            try await pair.a.edit(book: pair.book.id, BookChanges(position: 9999))
            try await world.state.trash(id: old.id)
            let (first, uploadedInTheGap) = try await sync(pair.a, world) {
                _ = await world.state.putFile(
                    email: alice, name: name, parents: [books], content: edited, mimeType: "application/json")
            }
            #expect(!uploadedInTheGap && first.uploaded.books == 0)
            for device in [pair.a, pair.b, pair.a, pair.b] { _ = try await device.sync() }
            for device in [pair.a, pair.b] {
                let book = try #require(try await device.book(pair.book.id))
                #expect(book.title == "Dune (app)" && book.position == 9999, "\(device.name): \(book)")
            }
            #expect(await live(world, name).count == 1)
        }
    }

    @Test("R4: a device whose change is held back leaves twins alone: none is deleted unread")
    func heldTwins() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            try await pair.a.edit(book: pair.book.id, BookChanges(position: 1))
            await world.state.addFault(FaultRule(method: "DELETE", status: 403, reason: "insufficientFilePermissions"))
            for _ in 0..<3 { _ = try await pair.a.sync() }
            await world.state.clearFaults()
            let (name, _) = try await oldCopyAfterBsRename(world, pair)
            let report = try await pair.a.sync()
            #expect(report.held.count == 1 && report.staleDuplicatesDeleted == 0)
            let titles = try await live(world, name).map {
                (try JSONSerialization.jsonObject(with: $0.content) as? [String: Any])?["title"] as? String
            }
            #expect(titles.contains("Dune: B's title"), "the held device deleted B's edit unread")
        }
    }

    /// Another device's new take of a clip: the JSON replaced, the old MP3 deleted, the new one
    /// still on its way up while a device with a note edited here syncs.
    @Test("R5, R6: a clip's MP3 missing while another device replaces it: a change here waits, the new take wins")
    func retakeInProgress() async throws {
        for jsonReplacedToo in [true, false] {
            try await withWorld { world in
                let pair = try await SyncedPair(world)
                let jsonName = "clip_\(pair.clip.id).json"
                let mp3Name = "clip_\(pair.clip.id).mp3"
                let clips = try await world.folderID("clips")
                let oldJSON = try #require(await live(world, jsonName).first)
                let oldMP3 = try #require(await live(world, mp3Name).first)
                try await pair.b.edit(clip: pair.clip.id, ClipChanges(note: "B's note"))
                if jsonReplacedToo {
                    let theirs = try await appEdit(world, jsonName) { _ in }
                    try await world.state.trash(id: oldJSON.id)
                    _ = await world.state.putFile(
                        email: alice, name: jsonName, parents: [clips], content: theirs, mimeType: "application/json")
                }
                try await world.state.trash(id: oldMP3.id)
                let retake = Data("ID3 the other device's retake".utf8)
                let (during, _) = try await sync(pair.b, world, holdingUpload: jsonReplacedToo ? 2 : 1) {
                    await world.state.advanceClock(by: 1)
                    _ = await world.state.putFile(
                        email: alice, name: mp3Name, parents: [clips], content: retake, mimeType: "audio/mpeg")
                }
                #expect(during.uploaded.clips + during.merged.clips == 0, "B waits while the MP3 is missing")
                for device in [pair.a, pair.b, pair.a, pair.b] { _ = try await device.sync() }
                let mp3s = await live(world, mp3Name)
                #expect(mp3s.count == 1 && mp3s.first?.content == retake, "the retake is lost on Drive")
                for device in [pair.a, pair.b] {
                    #expect(device.audio(pair.clip.id) == retake, "\(device.name) lacks the retake")
                    #expect(try await device.clip(pair.clip.id)?.note == "B's note", "\(device.name) lost B's note")
                }
            }
        }
    }
}
