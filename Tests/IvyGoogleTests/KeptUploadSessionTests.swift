import Foundation
import GoogleEmulator
import IvyCore
import IvySystem
import IvyTestSupport
import Synchronization
import Testing

@testable import IvyGoogle

/// What an MP3 upload keeps of its session between runs, and how a later run uses it.
@Suite("Kept upload sessions")
struct KeptUploadSessionTests {
    static let day: Milliseconds = 86_400_000
    static let drive = URL(string: "https://www.googleapis.com/")!

    static func kept(md5: String = "m", size: Int64 = 1000, startedAt: Milliseconds = 0, uri: String? = nil)
        -> UploadSessionRecord
    {
        UploadSessionRecord(
            clipID: ClipID("c1"),
            uri: uri ?? "https://www.googleapis.com/upload/drive/v3/files?uploadType=resumable&upload_id=x",
            fileID: DriveFileID("f1"), committed: 0, md5: md5, size: size, startedAt: startedAt)
    }

    @Test("a kept session is resumed only for the same md5 and size, under 6 days old, on the sign-in's server")
    func rules() {
        func judge(_ kept: UploadSessionRecord, now: Milliseconds = 1000) -> Result<URL, ResumableUpload.Abandoned> {
            ResumableUpload.resumable(kept, md5: "m", size: 1000, now: now, drive: Self.drive, context: "uploading x")
        }
        #expect((try? judge(Self.kept()).get())?.host == "www.googleapis.com")
        #expect(judge(Self.kept(md5: "other")) == .failure(.changed))
        #expect(judge(Self.kept(size: 999)) == .failure(.changed))
        #expect((try? judge(Self.kept(), now: 6 * Self.day - 1).get()) != nil)
        #expect(judge(Self.kept(), now: 6 * Self.day) == .failure(.old))
        #expect(judge(Self.kept(uri: "https://evil.example/upload?upload_id=x")) == .failure(.elsewhere))
        #expect(judge(Self.kept(uri: "http://www.googleapis.com/upload?upload_id=x")) == .failure(.elsewhere))
        var machine = ResumableUpload(size: 1000, maximumStalls: 3, context: "x")
        #expect(machine.resume() == .askStatus)
    }

    @Test("every chunk but the last is whole 256 KiB units, read from the file at its own offset and length")
    func chunkRequests() throws {
        let session = Self.drive
        let file = URL(fileURLWithPath: "/nonexistent")
        let chunk = ResumableUpload.chunk(300_000)
        #expect(chunk == 262_144 && ResumableUpload.chunk(1) == 262_144)
        let middle = DriveClient.sessionPut(
            .send(from: 262_144), session: session, file: file, size: 1_000_000, chunk: chunk, progress: nil)
        #expect(middle.headers["Content-Range"] == "bytes 262144-524287/1000000")
        #expect(Self.range(middle.body) == 262_144..<524_288)
        let last = DriveClient.sessionPut(
            .send(from: 786_432), session: session, file: file, size: 1_000_000, chunk: chunk, progress: nil)
        #expect(last.headers["Content-Range"] == "bytes 786432-999999/1000000")
        #expect(Self.range(last.body) == 786_432..<1_000_000)
        let status = DriveClient.sessionPut(
            .askStatus, session: session, file: file, size: 1_000_000, chunk: chunk, progress: nil)
        #expect(status.headers["Content-Range"] == "bytes */1000000" && Self.range(status.body) == nil)
    }

    /// The part of the file a body is, if it is one.
    static func range(_ body: HTTPRequest.Body) -> Range<Int64>? {
        if case .file(_, let range) = body { return range }
        return nil
    }

    /// A journal held in memory: what was saved, in order, and whether it was forgotten.
    final class Journal: Sendable {
        let saved = Mutex<[UploadSessionRecord]>([])
        let forgotten = Mutex<[ResumableUpload.Abandoned?]>([])
        /// Throws (as a killed run stops) once Drive has confirmed this much.
        let stopAt: Int64?

        init(stopAt: Int64? = nil) { self.stopAt = stopAt }

        struct Killed: Error {}

        func journal(kept: UploadSessionRecord?, md5: String) -> UploadJournal {
            UploadJournal(
                clipID: ClipID("c1"), kept: kept, md5: md5, now: { 1000 },
                save: { record in
                    self.saved.withLock { $0.append(record) }
                    if let stop = self.stopAt, record.committed >= stop { throw Killed() }
                },
                forget: { reason in self.forgotten.withLock { $0.append(reason) } })
        }
    }

    @Test(
        """
        the journal holds Drive's confirmed offset after each chunk; a later run that kept more than Drive says \
        goes on from Drive's offset, and the file is whole and alone
        """)
    func resumeFromDrive() async throws {
        try await withGoogle { google in
            let drive = try await google.drive(uploadChunk: 262_144)
            let folders = try await drive.folders()
            let audio = try google.writeFile("take.mp3", bytes: 1_000_000)
            let md5 = try LocalFile.md5(of: audio)
            let first = Journal(stopAt: 524_288)
            await #expect(throws: Journal.Killed.self) {
                try await drive.uploadMP3(
                    name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [],
                    journal: first.journal(kept: nil, md5: md5))
            }
            #expect(first.saved.withLock { $0.map(\.committed) } == [0, 262_144, 524_288])
            #expect(first.forgotten.withLock { $0.isEmpty })
            // The library says more than Drive has: Drive's answer wins.
            var kept = try #require(first.saved.withLock { $0.last })
            kept.committed = 786_432

            await google.state.clearRequests()
            let second = Journal()
            let uploaded = try await drive.uploadMP3(
                name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [],
                journal: second.journal(kept: kept, md5: md5))
            #expect(uploaded.md5 == md5 && uploaded.id == kept.fileID)
            let puts = await google.state.requests.filter { $0.method == "PUT" }.map(\.bytes)
            #expect(puts == [0, 262_144, 213_568], "a status query, then from byte 524288: \(puts)")
            #expect(await google.state.requests.allSatisfy { $0.method != "POST" || !$0.query.contains("resumable") })
            #expect(second.forgotten.withLock { $0 } == [nil])
            let mp3s = await google.state.dump().filter { $0.name == "clip_c1.mp3" }
            #expect(mp3s.count == 1 && mp3s.first.map { MD5.hex($0.content) } == md5)
        }
    }

    @Test("a kept session on another server is never asked: a new session carries the file, the old one forgotten")
    func elsewhere() async throws {
        try await withGoogle { google in
            let drive = try await google.drive(uploadChunk: 262_144)
            let folders = try await drive.folders()
            let audio = try google.writeFile("take.mp3", bytes: 300_000)
            let md5 = try LocalFile.md5(of: audio)
            let journal = Journal()
            let kept = Self.kept(md5: md5, size: 300_000, uri: "https://evil.example/upload?upload_id=x")
            let uploaded = try await drive.uploadMP3(
                name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [],
                journal: journal.journal(kept: kept, md5: md5))
            #expect(uploaded.md5 == md5 && uploaded.id != kept.fileID)
            #expect(journal.forgotten.withLock { $0 } == [.elsewhere, nil])
            #expect(journal.saved.withLock { $0.first?.uri.contains("evil") } == false)
        }
    }
}
