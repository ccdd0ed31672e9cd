import Foundation
import GRDB
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

@Suite("Books and clips in the store")
struct LibraryTests {
    let home: TemporaryHome
    let clock = TestClock()
    let library: LibraryDatabase

    init() async throws {
        home = try TemporaryHome()
        library = try await LibraryDatabase(paths: home.paths, clock: clock.clock)
    }

    func audioFiles() throws -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: home.paths.audioDirectory).sorted()) ?? []
    }

    @Test("a new book gets created_at and updated_at from the clock")
    func addStampsTimes() async throws {
        clock.set(5000)
        let book = try await library.addBook(
            id: testID(1), title: "Dune", artist: "Frank Herbert", artwork: nil, position: 12.5)
        #expect(book.createdAt == 5000 && book.updatedAt == 5000)
        #expect(try await library.book(id: testID(1)) == book)
    }

    @Test("an edit after the clock stepped back still moves updated_at forward")
    func clockStepBack() async throws {
        clock.set(10_000)
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        clock.set(2_000)
        let edited = try await library.updateBook(id: testID(1), BookChanges(position: 60)).book
        #expect(edited.updatedAt == 10_001)
        #expect(edited.createdAt == 10_000)
    }

    @Test("an edit that changes nothing writes nothing")
    func unchangedEdit() async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        clock.set(9_999_999_999_999)
        let result = try await library.updateBook(id: testID(1), BookChanges(title: "Dune", position: 0))
        #expect(!result.changed)
        #expect(try await library.book(id: testID(1))?.updatedAt == 1_700_000_000_000)
    }

    @Test("deleting a book hides it and forgets its uri; it is never removed")
    func deleteIsSoft() async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        try await library.pool.write { db in try db.execute(sql: "UPDATE books SET uri = '/m/dune.m4b'") }
        try await library.updateBook(id: testID(1), BookChanges(hidden: true, uri: .some(nil)))
        let book = try #require(try await library.book(id: testID(1)))
        #expect(book.hidden && book.uri == nil)
        #expect(try await library.books(includeHidden: false).isEmpty)
        #expect(try await library.books(includeHidden: true).count == 1)
    }

    @Test(
        "bad values are refused before anything is written",
        arguments: [
            BookChanges(title: "  "), BookChanges(position: -1), BookChanges(position: .infinity),
            BookChanges(position: .nan),
        ])
    func badBookValues(changes: BookChanges) async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        let before = try await library.book(id: testID(1))
        await #expect(throws: StoreError.self) { try await library.updateBook(id: testID(1), changes) }
        #expect(try await library.book(id: testID(1)) == before)
    }

    @Test("unknown ids are errors that say how to find the right one")
    func unknownIDs() async throws {
        await #expect(throws: StoreError.bookNotFound(id: testID(9))) {
            try await library.updateBook(id: testID(9), BookChanges(title: "X"))
        }
        await #expect(throws: StoreError.clipNotFound(id: testID(9))) { try await library.deleteClip(id: testID(9)) }
        await #expect(throws: StoreError.clipNotFound(id: testID(9))) {
            try await library.updateClip(id: testID(9), ClipChanges(note: "n"))
        }
        #expect(StoreError.bookNotFound(id: "x").errorDescription?.contains("ivy book list") == true)
    }

    @Test("a clip's audio is copied in and removed with the clip")
    func clipAudioLifecycle() async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        let source = try home.mp3("in.mp3", size: 300_000)
        try await library.addClip(
            id: testID(2), bookID: testID(1), start: 5, duration: 10, note: "n", transcription: nil, audio: source)
        let stored = library.audioPath(clipID: testID(2))
        #expect(FileManager.default.contents(atPath: stored) == FileManager.default.contents(atPath: source))
        #expect(try audioFiles() == ["\(testID(2)).mp3"])
        try await library.deleteClip(id: testID(2))
        #expect(try audioFiles().isEmpty)
        #expect(try await library.clip(id: testID(2)) == nil)
    }

    @Test("exactly 50 MB of audio is allowed; one byte more is not")
    func sizeCap() async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        let atCap = try home.mp3("cap.mp3", size: 52_428_800)
        try await library.addClip(
            id: testID(2), bookID: testID(1), start: 0, duration: 1, note: nil, transcription: nil, audio: atCap)
        let over = try home.mp3("over.mp3", size: 52_428_801)
        await #expect(throws: StoreError.audioTooLarge(path: over, bytes: 52_428_801)) {
            try await library.addClip(
                id: testID(3), bookID: testID(1), start: 0, duration: 1, note: nil, transcription: nil, audio: over)
        }
        #expect(try audioFiles() == ["\(testID(2)).mp3"])
    }

    @Test("a clip whose row cannot be written leaves no audio behind")
    func noPartialAudio() async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        let source = try home.mp3("in.mp3")
        // The database refuses the id, after the audio was staged: nothing may remain.
        await #expect(throws: StoreError.self) {
            try await library.addClip(
                id: "NOT-VALID", bookID: testID(1), start: 0, duration: 1, note: nil, transcription: nil, audio: source)
        }
        #expect(try audioFiles().isEmpty)
        #expect(try await library.clips().isEmpty)
        #expect(try queueRows(library.externalConnection()) == ["book \(testID(1)) upsert 0"])
    }

    @Test("replacing a clip's audio counts as a change even when nothing else changes")
    func newAudioIsAChange() async throws {
        try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        try await library.addClip(
            id: testID(2), bookID: testID(1), start: 0, duration: 1, note: nil, transcription: nil,
            audio: try home.mp3("a.mp3", size: 100))
        clock.set(1_800_000_000_000)
        let replacement = try home.mp3("b.mp3", size: 200)
        let result = try await library.updateClip(id: testID(2), ClipChanges(), audio: replacement)
        #expect(result.changed && result.clip.updatedAt == 1_800_000_000_000)
        #expect(FileManager.default.contents(atPath: library.audioPath(clipID: testID(2)))?.count == 200)
        #expect(try audioFiles() == ["\(testID(2)).mp3"])
    }

    @Test("settings: defaults, validated changes, and unset")
    func settings() async throws {
        #expect(try await library.setting(.autoSyncCooldown) == "300")
        #expect(try await library.setSetting(.syncEnabled, to: "no") == "false")
        #expect(try await library.setting(.syncEnabled) == "false")
        await #expect(throws: StoreError.self) { try await library.setSetting(.concurrency, to: "0") }
        #expect(try await library.setting(.concurrency) == "8")
        try await library.unsetSetting(.syncEnabled)
        #expect(try await library.setting(.syncEnabled) == "true")
    }
}
