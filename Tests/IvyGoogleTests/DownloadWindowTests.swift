import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Synchronization
import Testing

@testable import IvyGoogle

/// A writer that stops at `wait()` until the test lets it go: a disk far slower than loopback.
/// It blocks the transfer's thread (a `BlockingExecutor` one, never a cooperative one), as a
/// slow `write` would.
private final class HeldWriter: Sendable {
    private let open = Mutex(false)
    private let condition = NSCondition()

    func wait() {
        condition.lock()
        while !open.withLock({ $0 }) { condition.wait() }
        condition.unlock()
    }

    func release() {
        condition.lock()
        open.withLock { $0 = true }
        condition.broadcast()
        condition.unlock()
    }
}

@Suite("A large download keeps no more than a window waiting for the disk")
struct DownloadWindowTests {
    static let window: Int64 = 1 << 20

    /// A Drive client for alice that asks for MP3s `window` bytes at a time.
    private func drive(_ google: GoogleHarness) async throws -> DriveClient {
        let provider = try await google.signedIn()
        return DriveClient(
            drive: google.emulator.baseURL,
            authorized: AuthorizedTransport(tokens: provider, transport: google.transport),
            sleep: Sleeper().sleep, downloadWindow: Self.window)
    }

    /// Puts an MP3 of `bytes` bytes on Drive and returns it as listed, with its content.
    private func mp3(_ google: GoogleHarness, _ drive: DriveClient, bytes: Int) async throws -> (RemoteFile, Data) {
        let folders = try await drive.folders()
        let content = Data((0..<bytes).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ ($0 >> 11)) })
        _ = await google.state.putFile(
            email: "alice@example.com", name: "clip_c.mp3", parents: [folders.clips[0].rawValue], content: content)
        let listing = try await drive.listLibrary(remembered: folders)
        return (try #require(listing.files.first { $0.name == "clip_c.mp3" }), content)
    }

    private func leftovers(_ google: GoogleHarness) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: google.directory).filter { $0.hasPrefix(".download") }
    }

    @Test("while the writer is held, Drive gets no further ahead than one window; then the MP3 arrives whole")
    func heldWriter() async throws {
        // Over HTTP: what the transport reads ahead of a held writer is the subject (in-process,
        // the held writer would hold the sender too).
        try await withGoogle(.http) { google in
            let drive = try await drive(google)
            let (file, content) = try await mp3(google, drive, bytes: 6 * Int(Self.window) + 12_345)
            let target = URL(fileURLWithPath: google.directory + "/c.mp3")
            let writer = HeldWriter()
            defer { writer.release() }
            await google.state.clearRequests()
            async let downloaded: Void = drive.downloadFile(file, to: target, progress: { _ in writer.wait() })
            // At most the first answer is sent: the writer has not finished its first chunk.
            // Without the window, under URLSession, the whole MP3 was sent by now.
            await google.state.waitForMediaAnswers(count: 1)
            let ahead = await google.state.mediaBytesSent
            #expect(ahead <= Self.window, "\(ahead) bytes sent while the writer held its first chunk")
            #expect(await google.state.requests.count == 1)
            writer.release()
            try await downloaded

            #expect(try Data(contentsOf: target) == content)
            let gets = await google.state.requests
            #expect(gets.count == 7, "6 windows and the 12,345 bytes after them")
            #expect(gets.allSatisfy { $0.method == "GET" && $0.status == 206 })
            #expect(await google.state.mediaBytesSent == content.count, "each byte sent once")
            #expect(try leftovers(google).isEmpty)
        }
    }

    @Test("a file no larger than the window is one request, as before")
    func smallFile() async throws {
        try await withGoogle { google in
            let drive = try await drive(google)
            let (file, content) = try await mp3(google, drive, bytes: Int(Self.window))
            let target = URL(fileURLWithPath: google.directory + "/c.mp3")
            await google.state.clearRequests()
            try await drive.downloadFile(file, to: target)
            #expect(try Data(contentsOf: target) == content)
            #expect(await google.state.requests.map(\.status) == [200])
        }
    }

    @Test("a connection dropped inside a later window retries that window from its start")
    func droppedWindow() async throws {
        try await withGoogle { google in
            let drive = try await drive(google)
            let (file, content) = try await mp3(google, drive, bytes: 3 * Int(Self.window) + 7)
            await google.state.addFault(
                FaultRule(method: "GET", pathContains: file.id.rawValue, nth: 3, dropAfterBytes: 300_000))
            let target = URL(fileURLWithPath: google.directory + "/c.mp3")
            await google.state.clearRequests()
            try await drive.downloadFile(file, to: target)
            #expect(try Data(contentsOf: target) == content)
            #expect(await google.state.requests.map(\.status) == [206, 206, 0, 206, 206])
        }
    }

    @Test("a window answered with other bytes than asked for, or of a file of another size, keeps nothing")
    func wrongWindow() async throws {
        try await withGoogle { google in
            let drive = try await drive(google)
            let (file, _) = try await mp3(google, drive, bytes: 3 * Int(Self.window))
            let target = URL(fileURLWithPath: google.directory + "/c.mp3")
            await google.state.addFault(
                FaultRule(
                    method: "GET", pathContains: file.id.rawValue, nth: 2,
                    headers: ["Content-Range": "bytes 0-1048575/3145728"]))
            await #expect {
                try await drive.downloadFile(file, to: target)
            } throws: { error in
                (error as? DriveError)?.kind == .unexpected
                    && error.localizedDescription.contains("Drive answered bytes 1048576-2097151 with bytes 0-1048575")
            }

            // Listed larger than it is: the first answer names the real size.
            var listed = file
            listed.size = 5 * Self.window
            await #expect {
                try await drive.downloadFile(listed, to: target)
            } throws: { error in
                (error as? DriveError)?.kind == .integrity
                    && error.localizedDescription.contains("Drive has 3,145,728 bytes, not the 5,242,880 it listed")
            }
            #expect(!FileManager.default.fileExists(atPath: target.path))
            #expect(try leftovers(google).isEmpty)
        }
    }
}
