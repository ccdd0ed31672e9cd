import Foundation
import GoogleEmulator
import IvyCore
import Testing

@Suite("Emulated resumable sessions that must start over")
struct ResumableRestartTests {
    func startSession(_ google: EmulatorClient, token: String, folder: String, name: String, id: String? = nil)
        async throws -> Reply
    {
        var metadata: [String: Any] = ["name": name, "parents": [folder], "mimeType": "audio/mpeg"]
        if let id { metadata["id"] = id }
        return try await google.json(
            "POST", "/upload/drive/v3/files?uploadType=resumable&fields=id,name", token: token, metadata)
    }

    func status(_ google: EmulatorClient, _ session: String, token: String, total: Int) async throws -> Int {
        try await google.request(
            "PUT", session, token: token, headers: ["Content-Range": "bytes */\(total)"], body: Data()
        ).status
    }

    // Drive's manage-uploads guide: "For any 4xx errors (including 403) during a resumable
    // upload, restart the upload." A rate limit is the exception: it asks to retry.
    @Test(
        "a 4xx other than a rate limit ends the session, which answers 404 from then on; a rate limit does not",
        arguments: [
            (400, "badRequest", false), (403, "forbidden", false), (403, "userRateLimitExceeded", true),
            (429, "rateLimitExceeded", true),
        ])
    func fourHundredsEndTheSession(status: Int, reason: String, survives: Bool) async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let session = try #require(
                try await startSession(google, token: token, folder: folder, name: "clip_a.mp3").header("Location"))
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", times: 1, status: status, reason: reason))
            let refused = try await google.request("PUT", session, token: token, body: Data(count: 1000))
            #expect(refused.status == status && refused.driveReason == reason)
            #expect(try await self.status(google, session, token: token, total: 1000) == (survives ? 308 : 404))
        }
    }

    @Test("asking for a session with a pre-generated id already used answers 409")
    func reusedID() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let ids = try await google.request("GET", "/drive/v3/files/generateIds?count=1", token: token)
            let id = try #require((ids.json["ids"] as? [String])?.first)
            #expect(
                try await google.upload(
                    name: "clip_b.mp3", parent: folder, content: Data(count: 10), id: id, token: token
                ).status == 200)
            let again = try await startSession(google, token: token, folder: folder, name: "clip_b.mp3", id: id)
            #expect(again.status == 409)
        }
    }

    @Test("an afterHandling fault lets the request take effect, then answers with the fault")
    func answerLostAfterTheWork() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let session = try #require(
                try await startSession(google, token: token, folder: folder, name: "clip_c.mp3").header("Location"))
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", times: 1, status: 500, afterHandling: true))
            #expect(try await google.request("PUT", session, token: token, body: Data(count: 1000)).status == 500)
            let made = await google.state.dump(email: "alice@example.com").filter { $0.name == "clip_c.mp3" }
            #expect(made.count == 1 && made.first?.size == 1000)
            #expect(
                try await status(google, session, token: token, total: 1000) == 200, "the session knows it finished")
        }
    }
}
