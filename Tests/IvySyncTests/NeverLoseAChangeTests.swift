import Foundation
import GRDB
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import IvySystem
import IvyTestSupport
import Synchronization
import Testing

/// Issue 12: paths on which a change a person made was silently undone, each closed.
@Suite("Never lose a change")
struct NeverLoseAChangeTests {
    /// Another program writing library.db directly, as the contract allows.
    func sqlite(_ device: Device, _ updates: (Database) throws -> Void) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        try DatabaseQueue(path: device.paths.database, configuration: configuration).write(updates)
    }

    func writeAudio(_ world: World, _ name: String, byte: UInt8) throws -> String {
        let path = world.directory + "/\(name).mp3"
        try (Data("ID3".utf8) + Data(repeating: byte, count: 3000)).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a rewind and an unarchive on one device survive a title edit on the other")
    func threeWayBook() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.edit(book: pair.book.id, BookChanges(hidden: true))
            _ = try await a.sync()
            _ = try await b.sync()
            #expect(try await b.book(pair.book.id)?.hidden == true)

            try await a.edit(book: pair.book.id, BookChanges(position: 30, hidden: false))  // rewound and unarchived
            try await b.edit(book: pair.book.id, BookChanges(title: "Dune (annotated)"))
            #expect(try await a.sync().uploaded.books == 1)
            let merged = try await b.sync()
            #expect(merged.merged.books == 1)
            #expect(merged.conflicts.isEmpty, "no field changed on both sides: \(merged.conflicts)")
            #expect(try await a.sync().downloaded.books == 1)
            for device in [a, b] {
                let book = try #require(try await device.book(pair.book.id))
                #expect(book.position == 30, "\(device.name) lost the rewind")
                #expect(book.hidden == false, "\(device.name) lost the unarchive")
                #expect(book.title == "Dune (annotated)")
            }
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test("every agreement records its base; a library without bases gains them as entities next agree")
    func basesRecorded() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            for device in [pair.a, pair.b] {
                #expect(try await device.library.base(EntityKey(pair.book.id)) != nil)
                let clipBase = try #require(try await device.library.base(EntityKey(pair.clip.id)))
                #expect(clipBase.audioMD5 == MD5.hex(try #require(device.audio(pair.clip.id))))
            }
            // As an older ivy left it: manifest rows without bases.
            try sqlite(pair.b) { db in
                try db.execute(sql: "UPDATE sync_manifest SET base_json = NULL, base_audio_md5 = NULL")
            }
            #expect(try await pair.b.library.base(EntityKey(pair.book.id)) == nil)
            try await pair.a.edit(book: pair.book.id, BookChanges(position: 100))
            _ = try await pair.a.sync()
            #expect(try await pair.b.sync().downloaded.books == 1)
            #expect(try await pair.b.library.base(EntityKey(pair.book.id)) != nil)
            #expect(try await pair.b.library.base(EntityKey(pair.clip.id)) == nil)
        }
    }

    @Test("a new recording here survives a note edited on another device, and reaches it")
    func localAudioSurvivesMerge() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await b.edit(clip: pair.clip.id, ClipChanges(note: "B's note"))
            #expect(try await b.sync().uploaded.clips == 1)
            try await a.library.updateClip(
                id: pair.clip.id, ClipChanges(), audio: try writeAudio(world, "retake", byte: 9))
            let retake = try #require(a.audio(pair.clip.id))

            let merged = try await a.sync()
            #expect(merged.merged.clips == 1)
            #expect(merged.conflicts.isEmpty)
            #expect(merged.bytesUploaded == Int64(retake.count), "the merge's upload is counted")
            #expect(a.audio(pair.clip.id) == retake, "the local recording was replaced")
            #expect(try await world.file("clip_\(pair.clip.id).mp3").content == retake)
            #expect(try await a.clip(pair.clip.id)?.note == "B's note")

            let pulled = try await b.sync()
            #expect(pulled.downloaded.clips == 1)
            #expect(pulled.bytesDownloaded == Int64(retake.count))
            #expect(b.audio(pair.clip.id) == retake)
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test("audio replaced on both devices: the newer recording wins everywhere and the sync reports a conflict")
    func bothAudioChanged() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.library.updateClip(
                id: pair.clip.id, ClipChanges(), audio: try writeAudio(world, "a-take", byte: 1))
            #expect(try await a.sync().uploaded.clips == 1)
            try await b.library.updateClip(
                id: pair.clip.id, ClipChanges(), audio: try writeAudio(world, "b-take", byte: 2))
            let newer = try #require(b.audio(pair.clip.id))

            let merged = try await b.sync()
            #expect(merged.merged.clips == 1)
            #expect(merged.conflicts == ["clip \(pair.clip.id)"])
            #expect(merged.bytesUploaded == Int64(newer.count))
            #expect(b.audio(pair.clip.id) == newer)
            #expect(try await a.sync().downloaded.clips == 1)
            #expect(a.audio(pair.clip.id) == newer)
            #expect(try await a.snapshot() == b.snapshot())

            // And when Drive's recording is the newer one, it is downloaded, and counted.
            try await b.library.updateClip(
                id: pair.clip.id, ClipChanges(), audio: try writeAudio(world, "b-again", byte: 3))
            try await a.library.updateClip(
                id: pair.clip.id, ClipChanges(), audio: try writeAudio(world, "a-again", byte: 4))
            let newest = try #require(a.audio(pair.clip.id))
            _ = try await a.sync()
            let lost = try await b.sync()
            #expect(lost.conflicts == ["clip \(pair.clip.id)"])
            #expect(lost.bytesDownloaded == Int64(newest.count))
            #expect(b.audio(pair.clip.id) == newest)
        }
    }

    @Test("audio replaced on two devices at once: the newer take wins, the other stays in the history, a conflict")
    func audioReplacedAtOnce() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            let name = "clip_\(pair.clip.id).mp3"
            try await a.library.updateClip(
                id: pair.clip.id, ClipChanges(), audio: try writeAudio(world, "a-take", byte: 1))
            let older = try #require(a.audio(pair.clip.id))
            world.clock.advance(seconds: 1)
            try await b.library.updateClip(
                id: pair.clip.id, ClipChanges(), audio: try writeAudio(world, "b-take", byte: 2))
            let newer = try #require(b.audio(pair.clip.id))
            // A lists and is about to delete the old files; B replaces them meanwhile; then A's
            // deletes find them gone and A creates its own: two MP3s of one name, A's the last.
            await world.state.addFault(FaultRule(method: "DELETE", nth: 1, hold: true))
            async let first = a.sync()
            await world.state.waitForHeld(count: 1)
            await world.state.clearFaults()
            #expect(try await b.sync().uploaded.clips == 1)
            await world.state.releaseHeld()
            #expect(try await first.uploaded.clips == 1)
            #expect(await world.files().filter { $0.name == name && !$0.explicitlyTrashed }.count == 2)

            var conflicts: [String] = []
            for device in [a, b, a, b] { conflicts += try await device.sync().conflicts }
            #expect(conflicts.contains("clip \(pair.clip.id)"), "no conflict reported: \(conflicts)")
            // The newer take by the clip's own updated_at, though Drive's clock says A's came last.
            #expect(a.audio(pair.clip.id) == newer && b.audio(pair.clip.id) == newer)
            let live = await world.files().filter { $0.name == name && !$0.explicitlyTrashed }
            #expect(live.map(\.content) == [newer])
            // The other take is recoverable: a version in a device's history names it, kept whole.
            let md5 = MD5.hex(older)
            var keptBy: [String] = []
            for device in [a, b] {
                let named = try await device.library.history(of: EntityKey(pair.clip.id)).contains {
                    $0.audioMD5 == md5
                }
                let file = FileManager.default.contents(atPath: device.library.historyAudioPath(md5: md5))
                if named && file == older { keptBy.append(device.name) }
            }
            #expect(!keptBy.isEmpty, "A's take is in no device's history")
            // The conflict names both takes, which won by which rule, and the version keeping the other.
            var recorded: [ConflictRecord] = []
            for device in [a, b] { recorded += try await device.library.conflicts(of: EntityKey(pair.clip.id)) }
            let take = recorded.first { $0.field == "audio" && $0.lost == .string(md5) }
            #expect(take?.kept == .string(MD5.hex(newer)) && take?.rule == "later_write", "\(recorded)")
            #expect(take?.lostVersion != nil, "\(recorded)")
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test("a download never replaces audio recorded here while the sync ran")
    func downloadChecksBeforeWritingAudio() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await a.library.updateClip(
                id: pair.clip.id, ClipChanges(), audio: try writeAudio(world, "a-take", byte: 5))
            _ = try await a.sync()
            // B's download of A's MP3 is parked at Drive; B records a new take meanwhile.
            let mp3 = try await world.file("clip_\(pair.clip.id).mp3")
            await world.state.addFault(
                FaultRule(method: "GET", pathContains: "\(mp3.id)?alt=media", times: 1, hold: true))
            let sync = Task { try await b.sync() }
            await world.state.waitForHeld(count: 1)
            try await b.library.updateClip(
                id: pair.clip.id, ClipChanges(), audio: try writeAudio(world, "b-take", byte: 6))
            let mine = try #require(b.audio(pair.clip.id))
            await world.state.releaseHeld()
            let report = try await sync.value
            #expect(report.downloaded.clips == 0)
            #expect(b.audio(pair.clip.id) == mine, "the download overwrote a newer local recording")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: b.paths.audioDirectory)
                .filter { $0.hasPrefix(".") }
            #expect(leftovers.isEmpty, "\(leftovers)")
            await world.state.clearFaults()
            // The next sync merges: both changed the audio, B's take is the newer.
            let merged = try await b.sync()
            #expect(merged.merged.clips == 1 && merged.conflicts == ["clip \(pair.clip.id)"])
            #expect(b.audio(pair.clip.id) == mine)
        }
    }

    @Test("killed between the delete and the create of a replace: both devices end with the edit, one file on Drive")
    func replaceInterrupted() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            let name = "book_\(pair.book.id).json"
            try await a.edit(book: pair.book.id, BookChanges(position: 2700, hidden: true))  // listened on, archived
            _ = try await a.sync()
            _ = try await b.sync()

            try await a.edit(book: pair.book.id, BookChanges(position: 30, hidden: false))  // unarchived and rewound
            await world.state.addFault(FaultRule(method: "POST", pathContains: "/upload", status: 500))
            let interrupted = try await a.sync()
            #expect(interrupted.failures.map(\.entity) == ["book \(pair.book.id)"])
            #expect(await world.names().contains(name) == false, "the old file was deleted, the new one not created")
            await world.state.clearFaults()

            // B cannot tell a replace that died from one still in progress: it waits.
            let waiting = try await b.sync()
            #expect(waiting.uploaded.books == 0, "B must not put its older copy back at once")
            #expect(waiting.skipReason("book \(pair.book.id)")?.contains("another device replaces it") == true)
            #expect(try await b.sync().uploaded.books == 0, "nor a moment later")
            world.clock.advance(seconds: 61)
            let restored = try await b.sync()
            #expect(restored.uploaded.books == 1, "B restores the vanished book once it stayed missing a minute")
            let merged = try await a.sync()
            #expect(merged.merged.books == 1)
            _ = try await b.sync()
            for device in [a, b] {
                let book = try #require(try await device.book(pair.book.id))
                #expect(book.position == 30 && book.hidden == false, "\(device.name): \(book.position) \(book.hidden)")
            }
            #expect(await world.names().filter { $0 == name }.count == 1)
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test("the device whose replace died puts the book back, with its change, at its next sync")
    func replacerRepairs() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let name = "book_\(pair.book.id).json"
            try await pair.a.edit(book: pair.book.id, BookChanges(title: "Dune Messiah"))
            await world.state.addFault(FaultRule(method: "POST", pathContains: "/upload", status: 500))
            #expect(try await pair.a.sync().failures.map(\.entity) == ["book \(pair.book.id)"])
            #expect(await world.names().contains(name) == false)
            await world.state.clearFaults()
            // The absence is A's own doing: no other device's replace to wait for. Waiting, A
            // let a device that missed its edits restore an older copy first (ivy-soak seed 133).
            #expect(try await pair.a.sync().uploaded.books == 1)
            #expect(try await pair.b.sync().downloaded.books == 1)
            #expect(try await pair.b.book(pair.book.id)?.title == "Dune Messiah")
            #expect(await world.names().filter { $0 == name }.count == 1)
        }
    }

    @Test("a clip's JSON replace cut short leaves only its MP3: the other device restores it, the edit still wins")
    func clipReplaceInterrupted() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            let json = "clip_\(pair.clip.id).json"
            let mp3 = "clip_\(pair.clip.id).mp3"
            try await a.edit(clip: pair.clip.id, ClipChanges(note: "A's note"))
            await world.state.addFault(FaultRule(method: "POST", pathContains: "uploadType=multipart", status: 500))
            #expect(try await a.sync().failures.map(\.entity) == ["clip \(pair.clip.id)"])
            #expect(
                await world.names().filter { $0.hasPrefix("clip_") } == [mp3],
                "the old JSON was deleted, the new one not made")
            await world.state.clearFaults()

            #expect(try await b.sync().uploaded.clips == 0, "B waits: A's replace may still be under way")
            world.clock.advance(seconds: 61)
            let restored = try await b.sync()
            #expect(restored.uploaded.clips == 1, "B restores the clip after the grace: \(restored.skipped)")
            #expect(restored.bytesUploaded == 0, "the MP3 on Drive is kept")
            #expect(try await a.sync().merged.clips == 1)
            #expect(try await b.sync().downloaded.clips == 1)
            for device in [a, b] {
                #expect(try await device.library.clip(id: pair.clip.id)?.note == "A's note", "\(device.name)")
            }
            #expect(await world.names().filter { $0.hasPrefix("clip_") } == [json, mp3])
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test(
        """
        new audio whose upload session Drive will not open: nothing on Drive changes (old JSON and MP3 kept), \
        and the next sync sends both
        """)
    func replacedAudioNeverStarts() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            let before = await world.state.dump().filter { $0.name.hasPrefix("clip_") }.map(\.id).sorted()
            try await a.library.updateClip(
                id: pair.clip.id, ClipChanges(note: "retaken"), audio: try writeAudio(world, "retake", byte: 7))
            let retake = try #require(a.audio(pair.clip.id))
            await world.state.addFault(FaultRule(method: "POST", pathContains: "uploadType=resumable", status: 500))
            let failed = try await a.sync()
            #expect(failed.failures.map(\.entity) == ["clip \(pair.clip.id)"])
            let after = await world.state.dump().filter { $0.name.hasPrefix("clip_") }.map(\.id).sorted()
            #expect(after == before, "the clip's JSON and MP3 on Drive are the ones synced before")
            #expect(try await b.sync().downloaded.clips == 0)
            await world.state.clearFaults()

            #expect(try await a.sync().uploaded.clips == 1)
            #expect(try await b.sync().downloaded.clips == 1)
            #expect(b.audio(pair.clip.id) == retake)
            #expect(try await b.library.clip(id: pair.clip.id)?.note == "retaken")
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test(
        "new audio whose upload fails after the old MP3 is gone: Drive keeps the new JSON, no device deletes the clip")
    func replacedAudioFails() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            let json = "clip_\(pair.clip.id).json"
            let mp3 = "clip_\(pair.clip.id).mp3"
            try await a.library.updateClip(
                id: pair.clip.id, ClipChanges(note: "retaken"), audio: try writeAudio(world, "retake", byte: 7))
            let retake = try #require(a.audio(pair.clip.id))
            // Every send of the new MP3 fails once its session is open: the new JSON is made and
            // the old MP3 deleted, the new one never made.
            await world.state.addFault(FaultRule(method: "PUT", pathContains: "upload_id", status: 500))
            let failed = try await a.sync()
            #expect(failed.failures.map(\.entity) == ["clip \(pair.clip.id)"])
            #expect(
                await world.names().filter { $0.hasPrefix("clip_") } == [json],
                "the new JSON stays: the clip must not look deleted")
            await world.state.clearFaults()

            let meanwhile = try await b.sync()
            #expect(meanwhile.deletedLocal.clips == 0)
            #expect(meanwhile.skipped.map(\.entity) == ["clip \(pair.clip.id)"], "left alone while incomplete")
            #expect(try await b.library.clip(id: pair.clip.id) != nil, "B kept the clip")

            // The JSON on Drive is not the one A recorded (its own, unrecorded) and the MP3 is
            // missing. A knows the absence is its own replace's, so it does not wait the grace
            // meant for other devices' replaces: it reads and merges the JSON rather than
            // overwriting it unread, and uploads the clip whole at once.
            #expect(try await a.sync().merged.clips == 1)
            #expect(try await b.sync().downloaded.clips == 1)
            #expect(b.audio(pair.clip.id) == retake)
            #expect(try await b.library.clip(id: pair.clip.id)?.note == "retaken")
            #expect(await world.names().filter { $0.hasPrefix("clip_") } == [json, mp3])
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test("an entity that cannot be encoded fails its item by name and nothing is uploaded for it")
    func unencodableFailsItsItem() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let good = try await a.addBook("Good")
            let bad = try await a.addBook("Bad")
            try sqlite(a) { db in
                // As an older ivy or another program could have left it, before times were checked.
                let triggers = try String.fetchAll(
                    db,
                    sql:
                        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%position%' "
                        + "AND name NOT LIKE '%capture%'"
                )
                for trigger in triggers { try db.execute(sql: "DROP TRIGGER \(trigger)") }
                try db.execute(sql: "UPDATE books SET position = 9e999 WHERE id = ?", arguments: [bad.id])
            }
            let report = try await a.sync()
            #expect(report.uploaded.books == 1)
            let failure = try #require(report.failures.first)
            #expect(failure.entity == "book \(bad.id)")
            #expect(failure.reason.contains("book \(bad.id)") && failure.reason.contains("position"))
            #expect(await world.names() == ["book_\(good.id).json"])
            let item = try #require(try await a.library.queueItems().first { $0.key == EntityKey(bad.id) })
            #expect(item.hasFailed, "a local cause fails at once")
        }
    }

    @Test("a note over the JSON cap written by another program fails its item at once; nothing is uploaded")
    func oversizedNoteFails() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            let clip = try await a.addClip(to: book)
            let note = String(repeating: "x", count: BackupCodec.maximumBytes)
            try sqlite(a) { db in
                try db.execute(sql: "UPDATE clips SET note = ? WHERE id = ?", arguments: [note, clip.id])
            }
            let report = try await a.sync()
            #expect(report.failures.map(\.entity) == ["clip \(clip.id)"])
            #expect(report.failures.first?.reason.contains("limit") == true)
            #expect(await world.names() == ["book_\(book.id).json"])
            #expect(try await a.library.queueItems().first { $0.key == EntityKey(clip.id) }?.hasFailed == true)
        }
    }

    @Test("a Drive file over the JSON cap is skipped and reported on each sync, never a failure")
    func oversizedRemoteSkipped() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            _ = try await a.addBook("Seed")
            _ = try await a.sync()
            let id = UUID().uuidString.lowercased()
            let big =
                #"{"id":"\#(id)","title":"\#(String(repeating: "t", count: BackupCodec.maximumBytes))","updated_at":1}"#
            try await world.state.putFile(
                email: alice, name: "book_\(id).json", parents: [await world.folderID("books")],
                content: Data(big.utf8))
            let b = try await world.device("b")
            for round in 0..<2 {
                let report = try await b.sync()
                #expect(report.failures.isEmpty)
                #expect(report.skipReason("book_\(id).json")?.contains("limit") == true, "\(report.skipped)")
                #expect(report.downloaded.books == (round == 0 ? 1 : 0))
            }
        }
    }

    @Test("unreadable kept keys fail the upload with a message instead of dropping them from Drive")
    func unreadableExtras() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let a = pair.a
            try sqlite(a) { db in
                try db.execute(
                    sql:
                        "INSERT OR REPLACE INTO backup_extras (entity_type, entity_id, json) "
                        + "VALUES ('book', ?, '{broken')",
                    arguments: [pair.book.id])
            }
            let before = try await world.file("book_\(pair.book.id).json")
            try await a.edit(book: pair.book.id, BookChanges(position: 1))
            let report = try await a.sync()
            let failure = try #require(report.failures.first)
            #expect(failure.reason.contains("backup_extras"))
            #expect(try await world.file("book_\(pair.book.id).json").id == before.id, "nothing was uploaded")
            #expect(try await a.library.queueItems().first?.hasFailed == true)
        }
    }

    /// On Linux a cancelled `Task.sleep` keeps its timer (~2 KB) until the time it was set
    /// for: a watch polling every 2 s grew by 1.8 KB a poll while each sync left a sleep to
    /// its 30-minute deadline behind.
    @Test("a sync that finishes leaves at most a 5 s sleep of its deadline behind, not the whole 30 minutes")
    func deadlineInSlices() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            _ = try await a.addBook("Dune")
            let sleeps = Mutex<[Duration]>([])
            _ = try await a.library.setSetting(.syncTimeout, to: "1800")
            let report = try await a.sync(deadlineSleep: { duration in
                sleeps.withLock { $0.append(duration) }
                try await Task.sleep(for: duration)
            })
            #expect(report.uploaded.books == 1)
            let slept = sleeps.withLock { $0 }
            #expect(!slept.isEmpty && slept.allSatisfy { $0 <= .seconds(5) }, "\(slept)")
        }
    }

    @Test("a sync that outlives sync_timeout stops cleanly with a clear error; the next one runs")
    func deadline() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            _ = try await a.addBook("Dune")
            // Drive stops answering; the deadline passes once a request hangs there, on the
            // event itself, so a slow machine cannot let the sync finish first.
            await world.state.addFault(FaultRule(method: "GET", pathContains: "/drive/v3/files", hold: true))
            _ = try await a.library.setSetting(.syncTimeout, to: "1")
            let state = world.state
            do {
                _ = try await a.sync(deadlineSleep: { _ in await state.waitForHeld(count: 1) })
                Issue.record("a hung Drive kept the sync running")
            } catch let error as SyncError {
                #expect(error == .timedOut(seconds: 1))
                #expect(error.localizedDescription.contains("sync_timeout"))
            }
            await world.state.clearFaults()
            await world.state.releaseHeld()
            // The default deadline: on a loaded machine a healthy sync may take a minute.
            _ = try await a.library.setSetting(.syncTimeout, to: "1800")
            #expect(try await a.sync().uploaded.books == 1)
        }
    }
}
