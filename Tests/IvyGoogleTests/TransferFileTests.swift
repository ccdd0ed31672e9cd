import Foundation
import GoogleEmulator
import IvyCore
import IvySystem
import IvyTestSupport
import Testing

@testable import IvyGoogle

extension GoogleHarness {
    /// ivy's audio directory for these tests: private (0700), as the library makes it.
    var audioDirectory: String { directory + "/audio" }

    func privateAudio(_ name: String, bytes: Int) throws -> URL {
        try PrivateDirectory.ensure(audioDirectory)
        let url = URL(fileURLWithPath: audioDirectory + "/" + name)
        try Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: url)
        return url
    }

    func transferFiles(_ prefix: String) throws -> [(name: String, mode: Int, size: Int)] {
        try FileManager.default.contentsOfDirectory(atPath: audioDirectory).filter { $0.hasPrefix(prefix) }.map {
            name in
            let attributes = try FileManager.default.attributesOfItem(atPath: audioDirectory + "/" + name)
            return (name, attributes[.posixPermissions] as? Int ?? -1, (attributes[.size] as? NSNumber)?.intValue ?? -1)
        }
    }
}

/// Files in /tmp that ivy or an HTTP library could have made for a transfer: ivy's own
/// names, and Foundation's URLSession's, which ivy used before (a UUID, or CFNetworkDownload_,
/// with .tmp). Other programs share
/// /tmp (a compiler's `md5-….s.tmp` once failed this test), so nothing else is counted.
private func temporaryTransferFiles() -> Set<String> {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []
    return Set(
        names.filter { name in
            // Directories are the homes other tests (and ivy-soak) make meanwhile, never a transfer.
            var isDirectory: ObjCBool = false
            let path = NSTemporaryDirectory() + "/" + name
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue
            else { return false }
            return name.hasPrefix("ivy-") || name.hasPrefix("CFNetworkDownload")
                || (name.hasSuffix(".tmp") && UUID(uuidString: String(name.prefix(36))) != nil)
        })
}

/// Over loopback HTTP: the files are `HTTPClientTransport`'s own.
@Suite("Transfer files: private, beside the audio, never in /tmp")
struct TransferFileTests {
    @Test("the tail of a resumed upload is read from the audio file itself: no copy beside it, none in /tmp")
    func uploadSlice() async throws {
        try await withGoogle(.http) { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let audio = try google.privateAudio("take.mp3", bytes: 9_000_000)
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", times: 1, dropAfterBytes: 200_000))
            // The third PUT (after the status query) sends the tail: held while the test looks.
            await google.state.addFault(FaultRule(method: "PUT", pathContains: "upload_id", nth: 2, hold: true))
            let before = temporaryTransferFiles()
            async let uploaded = drive.uploadMP3(
                name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [])
            await google.state.waitForHeld(count: 1)
            #expect(try google.transferFiles(".upload-").isEmpty, "URLSession's transport copied the tail there")
            #expect(temporaryTransferFiles().subtracting(before).isEmpty, "nothing new in \(NSTemporaryDirectory())")
            await google.state.releaseHeld()
            #expect(try await uploaded.md5 == MD5.hex(try Data(contentsOf: audio)))
            let tails = await google.state.requests.filter { $0.method == "PUT" }.map(\.bytes)
            // The 8,800,000 bytes left go as an 8 MiB chunk and the rest, each read from its offset.
            #expect(Array(tails.suffix(2)) == [8_388_608, 411_392], "the tail went in chunks: \(tails)")
        }
    }

    @Test("a download streams into a 0600 .download- file beside its destination, never to /tmp")
    func downloadFile() async throws {
        try await withGoogle(.http) { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let content = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 5) })
            await google.state.putFile(
                email: "alice@example.com", name: "clip_c.mp3", parents: [folders.clips[0].rawValue], content: content)
            let remote = try #require(try await drive.listLibrary(remembered: folders).files.first)
            try PrivateDirectory.ensure(google.audioDirectory)
            let target = URL(fileURLWithPath: google.audioDirectory + "/c.mp3")
            await google.state.addFault(FaultRule(pathContains: "alt=media", times: 1, hold: true))
            let before = temporaryTransferFiles()
            async let downloaded: Void = drive.downloadFile(remote, to: target)
            await google.state.waitForHeld(count: 1)
            let partial = try google.transferFiles(".download-")
            #expect(partial.count == 1 && partial.first?.mode == 0o600, "\(partial)")
            await google.state.releaseHeld()
            try await downloaded
            #expect(try Data(contentsOf: target) == content)
            #expect(try google.transferFiles(".download-").isEmpty)
            #expect(temporaryTransferFiles().subtracting(before).isEmpty, "nothing new in \(NSTemporaryDirectory())")
        }
    }

    @Test("a download answered with a rate limit is retried: the error body of a download is read for its reason")
    func rateLimitedDownload() async throws {
        try await withGoogle(.http) { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            await google.state.putFile(
                email: "alice@example.com", name: "clip_c.mp3", parents: [folders.clips[0].rawValue],
                content: Data(count: 1000))
            let remote = try #require(try await drive.listLibrary(remembered: folders).files.first)
            await google.state.addFault(
                FaultRule(pathContains: "alt=media", times: 1, status: 403, reason: "userRateLimitExceeded"))
            try await drive.downloadFile(remote, to: URL(fileURLWithPath: google.directory + "/c.mp3"))
            #expect(await google.state.requests.filter { $0.query.contains("alt=media") }.map(\.status) == [403, 200])
        }
    }

    @Test(
        "a file smaller than Drive's error body: its rate-limit answer is read whole, retried, and slows every request",
        arguments: [403, 429])
    func rateLimitedSmallDownload(status: Int) async throws {
        try await withGoogle(.http) { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            await google.state.putFile(
                email: "alice@example.com", name: "book_b.json", parents: [folders.books[0].rawValue],
                content: Data("{}".utf8))
            await google.state.putFile(
                email: "alice@example.com", name: "clip_c.mp3", parents: [folders.clips[0].rawValue],
                content: Data("ID3".utf8))
            let listed = try await drive.listLibrary(remembered: folders).files
            let json = try #require(listed.first { $0.name == "book_b.json" })
            let mp3 = try #require(listed.first { $0.name == "clip_c.mp3" })
            // Drive's JSON error body is some 250 bytes, far more than either file.
            await google.state.clearRequests()
            await google.state.addFault(FaultRule(pathContains: "alt=media", times: 1, status: status))
            #expect(try await drive.downloadData(json) == Data("{}".utf8))
            await google.state.clearFaults()
            await google.state.addFault(FaultRule(pathContains: "alt=media", times: 1, status: status))
            let target = URL(fileURLWithPath: google.directory + "/c.mp3")
            try await drive.downloadFile(mp3, to: target)
            #expect(try Data(contentsOf: target) == Data("ID3".utf8))
            let statuses = await google.state.requests.filter { $0.query.contains("alt=media") }.map(\.status)
            #expect(statuses == [status, 200, status, 200], "each refused once, then retried")
            #expect(drive.rateLimitCount == 2, "the pacer heard both")
        }
    }
}
