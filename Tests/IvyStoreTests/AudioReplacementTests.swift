import Foundation
import GRDB
import IvyCore
import IvySystem
import IvyTestSupport
import Testing

@testable import IvyStore

/// A clip's new audio and its row change together, even when ivy is killed between the two
/// (issue 28 item 7): each test leaves the files as a kill at one point would, and opens the
/// library again as the next command does.
@Suite("Replacing a clip's audio")
struct AudioReplacementTests {
    let home: TemporaryHome
    let library: LibraryDatabase
    let clip: Clip
    let old = Self.old
    let new = Data("ID3 the new take".utf8)
    static let old = Data("ID3 the old take".utf8)

    init() async throws {
        home = try TemporaryHome()
        library = try await LibraryDatabase(paths: home.paths, clock: TestClock(tickPerRead: 1).clock)
        let book = try await library.addBook(id: testID(1), title: "Dune", artist: nil, artwork: nil, position: 0)
        clip = try await library.addClip(
            id: testID(2), bookID: book.id, start: 0, duration: 1, note: nil, transcription: nil,
            audio: try Self.source(Self.old, in: home))
        try await library.externalConnection().write { db in try db.execute(sql: "DELETE FROM sync_queue") }
    }

    private func source(_ bytes: Data, mode: mode_t = 0o644) throws -> String {
        try Self.source(bytes, mode: mode, in: home)
    }

    private static func source(_ bytes: Data, mode: mode_t = 0o644, in home: TemporaryHome) throws -> String {
        let path = home.path + "/incoming-\(UUID().uuidString).mp3"
        try bytes.write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
        return path
    }

    private var audio: Data? { FileManager.default.contents(atPath: library.audioPath(clipID: clip.id)) }
    private var aside: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: home.paths.audioDirectory)) ?? []).filter {
            $0.hasPrefix(AudioJournal.prefix)
        }
    }

    private func reopen() async throws -> LibraryDatabase {
        try await LibraryDatabase(paths: home.paths, clock: TestClock().clock)
    }

    private func markers(_ library: LibraryDatabase) async throws -> [String] {
        try await library.read { db in try String.fetchAll(db, sql: "SELECT clip_id FROM audio_replacements") }
    }

    @Test("new audio comes in private (0600) with its row, and nothing is left aside")
    func replaced() async throws {
        let result = try await library.updateClip(
            id: clip.id, ClipChanges(note: "retaken"), audio: try source(new, mode: 0o666))
        #expect(result.changed && audio == new)
        var info = stat()
        #expect(stat(library.audioPath(clipID: clip.id), &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(aside.isEmpty)
        #expect(try await markers(library).isEmpty)
        #expect(try queueRows(library.externalConnection()) == ["clip \(clip.id) upsert 0"])
    }

    @Test("killed after the new audio is in place, before the commit: the old audio comes back with the old row")
    func killedBeforeCommit() async throws {
        let journal = try AudioJournal.begin(
            clipID: clip.id, audioPath: library.audioPath(clipID: clip.id), audioDirectory: home.paths.audioDirectory)
        let staged = try AudioFiles.stage(try source(new), in: home.paths.audioDirectory)
        try AudioFiles.place(staged, at: library.audioPath(clipID: clip.id), crash: .audioReplaceAfterRename)
        journal.abandoned()
        #expect(audio == new, "the state a kill leaves: new audio, old row")

        let next = try await reopen()
        #expect(audio == old, "the audio goes back with the row that never changed")
        #expect(try await next.clip(id: clip.id) == clip)
        #expect(aside.isEmpty)
        #expect(try await markers(next).isEmpty)
        #expect(try queueRows(next.externalConnection()).isEmpty)
    }

    @Test("killed after the commit, before the old audio is dropped: the new audio stays")
    func killedAfterCommit() async throws {
        let journal = try AudioJournal.begin(
            clipID: clip.id, audioPath: library.audioPath(clipID: clip.id), audioDirectory: home.paths.audioDirectory)
        let staged = try AudioFiles.stage(try source(new), in: home.paths.audioDirectory)
        try await library.write(.storeClipUpdate) { db in
            try db.execute(
                sql: "UPDATE clips SET note = 'retaken', updated_at = updated_at + 1 WHERE id = ?", arguments: [clip.id]
            )
            try db.execute(sql: "INSERT INTO audio_replacements (clip_id) VALUES (?)", arguments: [clip.id])
            try AudioFiles.place(staged, at: library.audioPath(clipID: clip.id), crash: .audioReplaceAfterRename)
        }
        journal.abandoned()

        let next = try await reopen()
        #expect(audio == new)
        #expect(try await next.clip(id: clip.id)?.note == "retaken")
        #expect(aside.isEmpty)
        #expect(try await markers(next).isEmpty)
    }

    @Test("killed while a new clip's audio was placed but not committed: no audio without a row is left")
    func newClipKilled() async throws {
        let id: ClipID = testID(3)
        let journal = try AudioJournal.begin(
            clipID: id, audioPath: library.audioPath(clipID: id), audioDirectory: home.paths.audioDirectory)
        let staged = try AudioFiles.stage(try source(new), in: home.paths.audioDirectory)
        try AudioFiles.place(staged, at: library.audioPath(clipID: id), crash: .audioReplaceAfterRename)
        journal.abandoned()
        _ = try await reopen()
        #expect(!library.hasAudio(clipID: id) && aside.isEmpty)
    }

    @Test("a replacement still running in another process is left to it")
    func running() async throws {
        let journal = try AudioJournal.begin(
            clipID: clip.id, audioPath: library.audioPath(clipID: clip.id), audioDirectory: home.paths.audioDirectory)
        _ = try await reopen()
        #expect(aside == [".replacing-\(clip.id).mp3"])
        journal.rolledBack()
        #expect(aside.isEmpty && audio == old)
    }
}
