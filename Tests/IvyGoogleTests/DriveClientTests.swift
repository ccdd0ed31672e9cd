import Foundation
import GoogleEmulator
import IvyCore
import IvySystem
import IvyTestSupport
import Synchronization
import Testing

@testable import IvyGoogle

extension GoogleHarness {
    /// A Drive client for alice whose retries do not really wait (the waits are recorded).
    func drive(
        sleeper: Sleeper = Sleeper(), concurrency: Int = 8, realSleep: Bool = false,
        now: @escaping @Sendable () -> Duration = Pacer.monotonic(), uploadChunk: Int64 = ResumableUpload.defaultChunk
    ) async throws -> DriveClient {
        let provider = try await signedIn()
        let real: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
        return DriveClient(
            drive: emulator.baseURL, authorized: AuthorizedTransport(tokens: provider, transport: transport),
            concurrency: concurrency, sleep: realSleep ? real : sleeper.sleep, now: now, uploadChunk: uploadChunk)
    }

    func names(in folder: String) async -> [String] {
        await state.dump(email: "alice@example.com").filter { $0.parents == [folder] }.map(\.name).sorted()
    }

    func writeFile(_ name: String, bytes: Int) throws -> URL {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let url = URL(fileURLWithPath: directory + "/" + name)
        try Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: url)
        return url
    }
}

@Suite("Drive client against the emulator")
struct DriveClientTests {
    @Test("folders are created once; 100 concurrent callers share one lookup and one creation")
    func inFlightFolders() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            await google.state.clearRequests()
            let results = try await withThrowingTaskGroup(of: DriveFolders.self) { group in
                for _ in 0..<100 { group.addTask { try await drive.folders() } }
                return try await group.reduce(into: [DriveFolders]()) { $0.append($1) }
            }
            #expect(Set(results.map(\.ivy)).count == 1)
            let log = await google.state.requests
            #expect(
                log.filter { $0.method == "GET" && $0.path == "/drive/v3/files" }.count == 2,
                "the lookup, and one after creating")
            #expect(log.filter { $0.method == "POST" && $0.path == "/drive/v3/files" }.count == 3)
            let all = await google.state.dump(email: "alice@example.com")
            #expect(all.filter { $0.name == "Ivy" }.count == 1)
            #expect(all.map(\.name).sorted() == ["Ivy", "books", "clips"])
        }
    }

    @Test("uploads, listing, downloads and deletes; delete-then-create leaves one file per name")
    func everyOperation() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let first = try await drive.uploadJSON(
                name: "book_b1.json", data: Data(#"{"v":1}"#.utf8), folder: folders.books[0], replacing: [])
            let listing = try await drive.listLibrary(remembered: nil)
            #expect(listing.isComplete && listing.files.map(\.name) == ["book_b1.json"])
            #expect(listing.files.first?.modifiedTime == first.modifiedTime)
            let second = try await drive.uploadJSON(
                name: "book_b1.json", data: Data(#"{"v":2}"#.utf8), folder: folders.books[0], replacing: listing.files)
            #expect(second.id != first.id)
            #expect(await google.names(in: folders.books[0].rawValue) == ["book_b1.json"])
            let current = try #require(try await drive.listLibrary(remembered: folders).files.first)
            #expect(try await drive.downloadData(current) == Data(#"{"v":2}"#.utf8))

            let audio = try google.writeFile("take.mp3", bytes: 300_000)
            let mp3 = try await drive.uploadMP3(
                name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [])
            let sent = try Data(contentsOf: audio)
            #expect(mp3.size == 300_000 && mp3.md5 == MD5.hex(sent))
            let listed = try await drive.listLibrary(remembered: folders)
            let remote = try #require(listed.files.first { $0.name == "clip_c1.mp3" })
            let target = URL(fileURLWithPath: google.directory + "/back.mp3")
            try await drive.downloadFile(remote, to: target)
            #expect(try Data(contentsOf: target) == sent)
            try await drive.delete(remote.id)
            try await drive.delete(remote.id)  // already gone: still fine
            #expect(await google.names(in: folders.clips[0].rawValue).isEmpty)
        }
    }

    @Test("listing follows every page: 35 files with a page cap of 10")
    func pagination() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            for index in 0..<35 {
                await google.state.putFile(
                    email: "alice@example.com", name: "book_\(index).json", parents: [folders.books[0].rawValue],
                    content: Data("{}".utf8))
            }
            await google.state.setPageSizeCap(10)
            await google.state.clearRequests()
            let listing = try await drive.listLibrary(remembered: folders)
            #expect(listing.isComplete && listing.files.count == 35)
            #expect(await google.state.requests.filter { $0.query.contains(folders.books[0].rawValue) }.count == 4)
        }
    }

    @Test(
        "a no-op listing with remembered folders costs three requests, none a name query; a trashed folder is noticed")
    func rememberedFolders() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            _ = try await drive.uploadJSON(
                name: "book_b1.json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
            await google.state.clearRequests()
            #expect(try await drive.listLibrary(remembered: folders).files.count == 1)
            let log = await google.state.requests
            #expect(log.count == 3, "the folders, the books, the clips")
            #expect(log.allSatisfy { !($0.query.removingPercentEncoding ?? "").contains("name =") })
            try await google.state.trash(id: folders.ivy[0].rawValue)
            let relisted = try await drive.listLibrary(remembered: folders)
            #expect(relisted.folders.ivy != folders.ivy, "a new Ivy folder replaces the trashed one")
            #expect(relisted.files.isEmpty)
        }
    }

    @Test("a remembered folder missing from the folder listing is asked for by id, and no twin of it is made")
    func knownFolderNeverTwinned() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            _ = try await drive.uploadJSON(
                name: "book_b1.json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
            // Drive lists no folders at all, as a lagging or short answer would.
            await google.state.addFault(
                FaultRule(method: "GET", pathContains: "q=mimeType", jsonFields: ["files": "[]"]))
            await google.state.clearRequests()
            let listing = try await drive.listLibrary(remembered: folders)
            #expect(listing.folders == folders)
            #expect(listing.files.map(\.name) == ["book_b1.json"])
            #expect(await google.state.requests.filter { $0.method == "POST" }.isEmpty, "nothing created")
            let checked = await google.state.requests.filter {
                $0.method == "GET" && $0.path.hasPrefix("/drive/v3/files/")
            }
            #expect(checked.count == 3, "Ivy, books and clips, each by id")
            #expect(await google.state.dump(email: "alice@example.com").filter(\.isFolder).count == 3)
        }
    }

    @Test("twin folders made by two devices are both listed; new files go to the oldest")
    func twins() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let state = google.state
            let older = await state.putFile(
                email: "alice@example.com", name: "Ivy", parents: ["root"], content: Data(),
                mimeType: DriveClient.folderType)
            let newer = await state.putFile(
                email: "alice@example.com", name: "Ivy", parents: ["root"], content: Data(),
                mimeType: DriveClient.folderType)
            let booksA = await state.putFile(
                email: "alice@example.com", name: "books", parents: [older.id], content: Data(),
                mimeType: DriveClient.folderType)
            let booksB = await state.putFile(
                email: "alice@example.com", name: "books", parents: [newer.id], content: Data(),
                mimeType: DriveClient.folderType)
            await state.putFile(
                email: "alice@example.com", name: "book_a.json", parents: [booksA.id], content: Data("{}".utf8))
            await state.putFile(
                email: "alice@example.com", name: "book_b.json", parents: [booksB.id], content: Data("{}".utf8))
            let listing = try await drive.listLibrary(remembered: nil)
            #expect(listing.folders.ivy.map(\.rawValue) == [older.id, newer.id])
            #expect(listing.folders.books.map(\.rawValue) == [booksA.id, booksB.id])
            #expect(Set(listing.files.map(\.name)) == ["book_a.json", "book_b.json"])
            #expect(listing.folders.clips.count == 1)
            #expect(await state.dump(email: "alice@example.com").first { $0.name == "clips" }?.parents == [older.id])
        }
    }

    @Test("an MP3 upload whose connection drops resumes from the confirmed offset without resending it")
    func resumeAfterDrop() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let audio = try google.writeFile("take.mp3", bytes: 500_000)
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", times: 1, dropAfterBytes: 200_000))
            await google.state.clearRequests()
            let uploaded = try await drive.uploadMP3(
                name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [])
            let sent = try Data(contentsOf: audio)
            #expect(uploaded.md5 == MD5.hex(sent))
            let puts = await google.state.requests.filter { $0.method == "PUT" }
            #expect(puts.map(\.bytes) == [200_000, 0, 300_000], "data, status query, the rest")
            #expect(await google.names(in: folders.clips[0].rawValue) == ["clip_c1.mp3"])
        }
    }

    @Test("an expired upload session starts a new one; a lost create answer never makes a second file")
    func expiredSessionAndLostAnswer() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let audio = try google.writeFile("take.mp3", bytes: 10_000)
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", times: 1, status: 404, reason: "notFound"))
            _ = try await drive.uploadMP3(name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [])
            #expect(await google.names(in: folders.clips[0].rawValue) == ["clip_c1.mp3"])
            // The create succeeds but its answer is lost: the retry carries the same id and gets 409.
            await google.state.addFault(
                FaultRule(method: "POST", pathContains: "uploadType=multipart", times: 1, dropAfterBytes: 0))
            await google.state.clearFaults()
            await google.state.addFault(
                FaultRule(
                    method: "POST", pathContains: "uploadType=multipart", nth: 1, delayMilliseconds: 0,
                    dropAfterBytes: 1))
            let json = try await drive.uploadJSON(
                name: "clip_c1.json", data: Data("{}".utf8), folder: folders.clips[0], replacing: [])
            #expect(await google.names(in: folders.clips[0].rawValue) == ["clip_c1.json", "clip_c1.mp3"])
            #expect(
                await google.state.dump(email: "alice@example.com").first { $0.name == "clip_c1.json" }?.id
                    == json.id.rawValue)
        }
    }

    @Test("429 with Retry-After is honoured; 5xx is retried; a full Drive is not")
    func retries() async throws {
        try await withGoogle { google in
            let sleeper = Sleeper()
            let drive = try await google.drive(sleeper: sleeper)
            let folders = try await drive.folders()
            await google.state.addFault(
                FaultRule(method: "POST", pathContains: "multipart", nth: 1, status: 429, retryAfterSeconds: 7))
            _ = try await drive.uploadJSON(
                name: "book_a.json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
            #expect(sleeper.durations.contains(7))
            await google.state.clearFaults()
            await google.state.addFault(FaultRule(method: "POST", pathContains: "multipart", times: 2, status: 503))
            _ = try await drive.uploadJSON(
                name: "book_b.json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
            await google.state.clearFaults()
            await google.state.addFault(
                FaultRule(method: "POST", pathContains: "multipart", status: 403, reason: "storageQuotaExceeded"))
            await google.state.clearRequests()
            await #expect {
                try await drive.uploadJSON(
                    name: "book_c.json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
            } throws: { error in
                // Not retried, and not one file's failure: the sync stops with one message.
                (error as? GoogleError) == .driveFull && error.localizedDescription.contains("Drive is full")
            }
            #expect(await google.state.requests.filter { $0.path.hasPrefix("/upload") }.count == 1)
            #expect(await google.names(in: folders.books[0].rawValue) == ["book_a.json", "book_b.json"])
        }
    }

    @Test("the 50 MB cap: a larger MP3 fails before any request, and a larger remote MP3 is not downloaded")
    func cap() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let big = URL(fileURLWithPath: google.directory + "/big.mp3")
            _ = FileManager.default.createFile(atPath: big.path, contents: nil)
            let handle = try FileHandle(forWritingTo: big)
            try handle.truncate(atOffset: 52_428_801)
            try handle.close()
            await google.state.clearRequests()
            await #expect {
                try await drive.uploadMP3(name: "clip_x.mp3", file: big, folder: folders.clips[0], replacing: [])
            } throws: { error in
                (error as? DriveError)?.kind == .fileTooLarge && error.localizedDescription.contains("52,428,801")
            }
            #expect(await google.state.requests.isEmpty)
            let remote = RemoteFile(id: "x", name: "clip_x.mp3", modifiedTime: 1, size: 52_428_801)
            await #expect(throws: DriveError.self) {
                try await drive.downloadFile(remote, to: URL(fileURLWithPath: google.directory + "/x.mp3"))
            }
            #expect(await google.state.requests.isEmpty)
        }
    }

    @Test("a download that does not match Drive's size or checksum is refused and leaves no file")
    func integrity() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let file = await google.state.putFile(
                email: "alice@example.com", name: "clip_c.mp3", parents: [folders.clips[0].rawValue],
                content: Data(count: 1000))
            let lying = RemoteFile(
                id: DriveFileID(file.id), name: file.name, modifiedTime: 1, size: 1000,
                md5: String(repeating: "0", count: 32))
            let target = URL(fileURLWithPath: google.directory + "/c.mp3")
            await #expect(throws: DriveError.self) { try await drive.downloadFile(lying, to: target) }
            #expect(!FileManager.default.fileExists(atPath: target.path))
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: google.directory).filter {
                    $0.hasPrefix(".download")
                }.isEmpty)
        }
    }

    @Test("with Drive's write limit at 5/s and a burst of 10, 60 uploads at once get exactly one rate-limited answer")
    func writeLimit() async throws {
        try await withGoogle { google in
            // The client's waits pass in the emulator's time instead of real time: its clock
            // stands still but for them, so the bucket refills exactly as long as the client waits.
            // The pacer's clock is that time too, so how busy the machine is changes nothing.
            let state = google.state
            let slept = Mutex(Duration.zero)
            let sleeper = Sleeper { _, duration in
                slept.withLock { $0 += duration }
                let (seconds, attoseconds) = duration.components
                await state.advanceClock(by: Double(seconds) + Double(attoseconds) / 1e18)
            }
            let drive = try await google.drive(sleeper: sleeper, concurrency: 1, now: { slept.withLock { $0 } })
            let folders = try await drive.folders()
            await state.freezeClock()
            await state.setWriteLimit(RateLimit(perSecond: 5, burst: 10))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<60 {
                    group.addTask {
                        _ = try await drive.uploadJSON(
                            name: "book_\(index).json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
                    }
                }
                try await group.waitForAll()
            }
            #expect(await google.names(in: folders.books[0].rawValue).count == 60)
            // Why exactly 1: the first 10 writes take the burst, and nothing has slept, so no
            // time has passed when the 11th finds the bucket empty. That 403 widens the shared
            // pacer: the next start waits its 1 s pause (5 tokens), each later one at least the
            // pacer's 250 ms gap, narrowed 0.3% a success: 250 ms × 0.997^50 ≈ 215 ms after the
            // 50 that follow, still 1.08 tokens at 5/s. Every gap refills more than a write takes, so no
            // second 403. One request at a time,
            // so no write is already on its way when the bucket runs dry: with 8 at once, how
            // many of those in flight beat the first retry's clock advance would vary.
            let limited = await google.state.requests.filter { $0.status == 403 }.count
            #expect(limited == 1, "\(limited) rate-limited answers for 60 uploads")
            #expect(drive.rateLimitCount == 1)
        }
    }
}
