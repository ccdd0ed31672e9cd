import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyGoogle

@Suite("Resumable MP3 uploads as Google runs them")
struct ResumableUploadTests {
    func upload(_ google: GoogleHarness, sleeper: Sleeper = Sleeper()) async throws -> (UploadedFile, URL) {
        let drive = try await google.drive(sleeper: sleeper)
        let folders = try await drive.folders()
        let audio = try google.writeFile("take.mp3", bytes: 300_000)
        return (
            try await drive.uploadMP3(name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: []), audio
        )
    }

    func mp3s(_ google: GoogleHarness) async -> [DriveFile] {
        await google.state.dump(email: "alice@example.com").filter { $0.name == "clip_c1.mp3" }
    }

    // Drive's manage-uploads guide: "For any 4xx errors (including 403) during a resumable
    // upload, restart the upload."
    @Test(
        "a 4xx other than a rate limit during the PUT starts a new session, and the upload finishes",
        arguments: [(400, "badRequest"), (403, "forbidden")])
    func deadSession(status: Int, reason: String) async throws {
        try await withGoogle { google in
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", nth: 1, status: status, reason: reason))
            let (uploaded, audio) = try await upload(google)
            let stored = await mp3s(google)
            let sent = try Data(contentsOf: audio)
            #expect(stored.count == 1 && stored.first?.content == sent && stored.first?.id == uploaded.id.rawValue)
            let starts = await google.state.requests.filter {
                $0.method == "POST" && $0.query.contains("uploadType=resumable")
            }
            #expect(starts.count == 2)
        }
    }

    @Test("sessions that keep dying stop after three, with Drive's answer in the error")
    func boundedSessions() async throws {
        try await withGoogle { google in
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", status: 403, reason: "forbidden"))
            await #expect { try await upload(google) } throws: { error in
                (error as? DriveError)?.localizedDescription.contains("403 forbidden") == true
            }
            let starts = await google.state.requests.filter {
                $0.method == "POST" && $0.query.contains("uploadType=resumable")
            }
            #expect(starts.count == 3)
            #expect(await mp3s(google).isEmpty)
        }
    }

    @Test("a 409 when a new session starts means an earlier one made the file: ivy reads it, no duplicate")
    func conflictAtStart() async throws {
        try await withGoogle { google in
            // The PUT completes the file, but its answer is lost as a 404 (session gone): ivy asks
            // for a new session with the same pre-generated id, and Drive answers 409.
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", nth: 1, status: 404, afterHandling: true))
            let (uploaded, _) = try await upload(google)
            let stored = await mp3s(google)
            #expect(stored.count == 1 && stored.first?.id == uploaded.id.rawValue && uploaded.size == 300_000)
            let starts = await google.state.requests.filter {
                $0.method == "POST" && $0.query.contains("uploadType=resumable")
            }
            #expect(starts.map(\.status) == [200, 409])
        }
    }

    @Test("the PUT honours Retry-After like every other request")
    func retryAfter() async throws {
        try await withGoogle { google in
            let sleeper = Sleeper()
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", nth: 1, status: 503, retryAfterSeconds: 9))
            _ = try await upload(google, sleeper: sleeper)
            #expect(sleeper.durations.contains(9))
            #expect(await mp3s(google).count == 1)
        }
    }

    @Test("the PUTs' waits are bounded in time like every other request's: 50 s three times, not six")
    func waitsBounded() async throws {
        try await withGoogle { google in
            let sleeper = Sleeper()
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", status: 503, retryAfterSeconds: 50))
            await #expect(throws: DriveError.self) { _ = try await upload(google, sleeper: sleeper) }
            // 150 s waited; another 50 would pass the policy's 180 s.
            #expect(sleeper.durations == [50, 50, 50])
        }
    }
}
