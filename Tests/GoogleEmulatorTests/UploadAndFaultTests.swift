import Foundation
import GoogleEmulator
import IvyCore
import IvySystem
import IvyTestSupport
import Testing

@Suite("Emulated resumable uploads, faults and limits")
struct UploadAndFaultTests {
    func startSession(_ google: EmulatorClient, token: String, folder: String, name: String, total: Int) async throws
        -> String
    {
        let start = try await google.json(
            "POST", "/upload/drive/v3/files?uploadType=resumable&fields=id,name,size,md5Checksum,modifiedTime",
            token: token,
            ["name": name, "parents": [folder], "mimeType": "audio/mpeg"])
        #expect(start.status == 200)
        #expect(start.body.isEmpty)
        return try #require(start.header("Location"))
    }

    @Test("a resumable upload in one PUT, and one in 256 KiB chunks answered with 308 and Range")
    func resumable() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let audio = Data((0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let whole = try await startSession(
                google, token: token, folder: folder, name: "clip_a.mp3", total: audio.count)
            let done = try await google.request("PUT", whole, token: token, body: audio)
            #expect(
                done.status == 200 && done.json["size"] as? String == "600000"
                    && done.json["md5Checksum"] as? String == MD5.hex(audio))

            let chunked = try await startSession(
                google, token: token, folder: folder, name: "clip_b.mp3", total: audio.count)
            let chunk = 262_144
            let first = try await google.request(
                "PUT", chunked, token: token, headers: ["Content-Range": "bytes 0-\(chunk - 1)/\(audio.count)"],
                body: audio.prefix(chunk))
            #expect(first.status == 308 && first.header("Range") == "bytes=0-\(chunk - 1)")
            let status = try await google.request(
                "PUT", chunked, token: token, headers: ["Content-Range": "bytes */\(audio.count)"], body: Data())
            #expect(status.status == 308 && status.header("Range") == "bytes=0-\(chunk - 1)")
            let last = try await google.request(
                "PUT", chunked, token: token,
                headers: ["Content-Range": "bytes \(chunk)-\(audio.count - 1)/\(audio.count)"],
                body: audio.suffix(from: chunk))
            #expect(last.status == 200)
            let id = try #require(last.json["id"] as? String)
            #expect(try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token).body == audio)
        }
    }

    @Test(
        """
        a status query before any byte is a 308 with no Range; a chunk that does not end the upload and is not \
        whole 256 KiB units, or whose body is not its Content-Range's length, is refused and nothing is kept
        """)
    func chunkRules() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let audio = Data((0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 11) })
            let total = audio.count
            let odd = try await startSession(google, token: token, folder: folder, name: "clip_o.mp3", total: total)
            let fresh = try await google.request(
                "PUT", odd, token: token, headers: ["Content-Range": "bytes */\(total)"], body: Data())
            #expect(fresh.status == 308 && fresh.header("Range") == nil)
            let uneven = try await google.request(
                "PUT", odd, token: token, headers: ["Content-Range": "bytes 0-99999/\(total)"],
                body: audio.prefix(100_000))
            #expect(uneven.status == 400, "\(uneven.status)")

            let short = try await startSession(google, token: token, folder: folder, name: "clip_s.mp3", total: total)
            let partial = try await google.request(
                "PUT", short, token: token, headers: ["Content-Range": "bytes 0-262143/\(total)"],
                body: audio.prefix(1000))
            #expect(partial.status == 400, "\(partial.status)")
            #expect(await google.state.dump().filter { $0.name.hasPrefix("clip_") }.isEmpty)
        }
    }

    @Test("an upload whose connection drops resumes from the confirmed offset without resending it")
    func resumeAfterDrop() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let audio = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let session = try await startSession(
                google, token: token, folder: folder, name: "clip_c.mp3", total: audio.count)
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", times: 1, dropAfterBytes: 100_000))
            await #expect(throws: (any Error).self) {
                try await google.request(
                    "PUT", session, token: token,
                    headers: ["Content-Range": "bytes 0-\(audio.count - 1)/\(audio.count)"], body: audio)
            }
            let status = try await google.request(
                "PUT", session, token: token, headers: ["Content-Range": "bytes */\(audio.count)"], body: Data())
            #expect(status.status == 308)
            let confirmed = try #require(status.header("Range")).split(separator: "-").last.flatMap { Int($0) }.map {
                $0 + 1
            }
            #expect(confirmed == 100_000)
            let resumed = try await google.request(
                "PUT", session, token: token,
                headers: ["Content-Range": "bytes 100000-\(audio.count - 1)/\(audio.count)"],
                body: audio.suffix(from: 100_000))
            #expect(resumed.status == 200 && resumed.json["md5Checksum"] as? String == MD5.hex(audio))
            let puts = await google.state.requests.filter { $0.method == "PUT" }
            #expect(puts.count == 3)
        }
    }

    @Test("an unknown or expired upload session answers 404")
    func expiredSession() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let session = try await startSession(google, token: token, folder: folder, name: "clip_d.mp3", total: 10)
            #expect(
                try await google.request(
                    "PUT", "/upload/drive/v3/files?uploadType=resumable&upload_id=nope", token: token, body: Data([1])
                ).status == 404)
            await google.state.setTokenLifetime(seconds: 30 * 24 * 3600)
            let longLived = try await google.signIn().access
            await google.state.advanceClock(by: 8 * 24 * 3600)
            #expect(try await google.request("PUT", session, token: longLived, body: Data(count: 10)).status == 404)
        }
    }

    @Test("the write limit lets a burst through, then answers 403 userRateLimitExceeded (or 429)")
    func writeLimit() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            await google.state.setWriteLimit(RateLimit(perSecond: 0.001, burst: 3))
            var statuses: [Int] = []
            for index in 0..<6 {
                statuses.append(
                    try await google.json("POST", "/drive/v3/files", token: token, ["name": "f\(index)"]).status)
            }
            #expect(statuses == [200, 200, 200, 403, 403, 403])
            let limited = try await google.json("POST", "/drive/v3/files", token: token, ["name": "x"])
            #expect(limited.driveReason == "userRateLimitExceeded")
            #expect(
                try await google.request("GET", "/drive/v3/files", token: token).status == 200, "reads are not limited")
            await google.state.setWriteLimit(RateLimit(perSecond: 0.001, burst: 0, status: 429))
            let tooMany = try await google.json("POST", "/drive/v3/files", token: token, ["name": "y"])
            #expect(tooMany.status == 429 && tooMany.driveReason == "rateLimitExceeded")
        }
    }

    @Test("fault rules: the nth matching request fails with Google's body and Retry-After; others pass")
    func nthFault() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            await google.state.addFault(
                FaultRule(method: "GET", pathContains: "/drive/v3/files", nth: 2, status: 503, retryAfterSeconds: 7))
            var statuses: [Int] = []
            var retryAfter: String?
            for _ in 0..<4 {
                let reply = try await google.request("GET", "/drive/v3/files", token: token)
                statuses.append(reply.status)
                if reply.status == 503 {
                    retryAfter = reply.header("Retry-After")
                    #expect(reply.driveReason == "backendError")
                }
            }
            #expect(statuses == [200, 503, 200, 200])
            #expect(retryAfter == "7")
            await google.state.clearFaults()
            await google.state.addFault(
                FaultRule(pathContains: "about", times: 2, status: 403, reason: "storageQuotaExceeded"))
            var reasons: [String?] = []
            for _ in 0..<3 {
                reasons.append(try await google.request("GET", "/drive/v3/about?fields=user", token: token).driveReason)
            }
            #expect(reasons == ["storageQuotaExceeded", "storageQuotaExceeded", nil])
        }
    }

    @Test("a response dropped after some bytes is a network error for the client")
    func droppedDownload() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let id = try #require(
                try await google.upload(name: "clip_e.mp3", parent: folder, content: Data(count: 50_000), token: token)
                    .json["id"] as? String)
            await google.state.addFault(FaultRule(pathContains: "alt=media", times: 1, dropAfterBytes: 1000))
            await #expect(throws: (any Error).self) {
                try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token)
            }
            #expect(
                try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token).body.count == 50_000)
        }
    }

    @Test("the request log records method, path, status and account, and can be reset")
    func requestLog() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            await google.state.clearRequests()
            _ = try await google.request("GET", "/drive/v3/about?fields=user", token: token)
            _ = try await google.request("GET", "/drive/v3/files/missing", token: token)
            let log = await google.state.requests
            #expect(log.map(\.status) == [200, 404])
            #expect(log.map(\.path) == ["/drive/v3/about", "/drive/v3/files/missing"])
            #expect(log.first?.query == "fields=user")
            #expect(log.allSatisfy { $0.account == "alice@example.com" && $0.end >= $0.start })
            let overHTTP = try await google.request("GET", "/_emulator/requests")
            #expect(
                (try JSONSerialization.jsonObject(with: overHTTP.body) as? [Any])?.count == 2,
                "control calls are not logged")
            _ = try await google.request("DELETE", "/_emulator/requests")
            #expect(await google.state.requests.isEmpty)
        }
    }

    @Test("the control API over HTTP: approve, latency, faults, write limit, dump, put and corrupt")
    func controlOverHTTP() async throws {
        try await withEmulatorClient { google in
            await google.state.setDeviceCode(interval: 0)
            let code = try await google.deviceCode()
            #expect(try await google.json("POST", "/_emulator/approve", ["email": "nobody@example.com"]).status == 400)
            #expect(try await google.json("POST", "/_emulator/approve", ["email": "bob@example.com"]).status == 200)
            let tokens = try await google.poll(try #require(code.json["device_code"] as? String))
            let token = try #require(tokens.json["access_token"] as? String)
            #expect(try await google.json("POST", "/_emulator/latency", ["milliseconds": 5]).status == 200)
            #expect(await google.state.latencyMilliseconds == 5)
            #expect(
                try await google.json("POST", "/_emulator/faults", ["pathContains": "about", "nth": 1, "status": 500])
                    .status == 200)
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: token).status == 500)
            #expect(try await google.request("DELETE", "/_emulator/faults").status == 200)
            #expect(
                try await google.json("POST", "/_emulator/write-limit", ["writes_per_second": 3.0, "burst": 10.0])
                    .status == 200)
            #expect(await google.state.writeLimit == RateLimit(perSecond: 3, burst: 10))
            let put = try await google.json(
                "POST", "/_emulator/files",
                [
                    "email": "bob@example.com", "name": "book_x.json",
                    "content": Data("{\"id\":1}".utf8).base64EncodedString(),
                ])
            let id = try #require(put.json["id"] as? String)
            #expect(
                try await google.json(
                    "POST", "/_emulator/files/\(id)/corrupt", ["content": Data("garbage".utf8).base64EncodedString()]
                ).status == 200)
            #expect(
                try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token).body
                    == Data("garbage".utf8))
            let dump = try await google.request("GET", "/_emulator/files?email=bob@example.com")
            let files = try #require(dump.json["files"] as? [[String: Any]])
            #expect(files.count == 1 && files[0]["content"] as? String == Data("garbage".utf8).base64EncodedString())
            #expect(files[0]["md5Checksum"] as? String == MD5.hex(Data("garbage".utf8)))
        }
    }

    @Test("the state survives a snapshot and restore: files and tokens")
    func persistence() async throws {
        let (token, folder, snapshot) = try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("Ivy", token: token)
            return (token, folder, try await google.state.snapshot())
        }
        let state = EmulatorState(accounts: [], clients: [])
        try await state.restore(from: snapshot)
        let reply = try await withEmulator(state: state, tls: false) { second in
            try await EmulatorClient(emulator: second)
                .request("GET", "/drive/v3/files/\(folder)?fields=id,name", token: token)
        }
        #expect(reply.status == 200 && reply.json["name"] as? String == "Ivy")
    }
}
