import Foundation
import GoogleEmulator
import IvyCore
import IvySystem
import IvyTestSupport
import Synchronization
import Testing

@testable import IvyGoogle

/// The in-process transport most IvyGoogle and IvySync tests use must answer as
/// `HTTPClientTransport` over the loopback socket does wherever a client could tell: each test runs the same
/// exchange both ways (on one emulator when the answers are compared with each other).
@Suite("The in-process transport answers as loopback HTTP does")
struct EmulatorTransportTests {
    static let routes: [EmulatorRoute] = [.inProcess, .http]

    /// alice's access token, fresh from the device flow.
    private func accessToken(_ google: GoogleHarness) async throws -> String {
        try await google.signedIn().accessToken()
    }

    /// A `Date` header's time.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }

    private func about(_ google: GoogleHarness, token: String) -> HTTPRequest {
        let url = google.emulator.baseURL.appendingPathComponent("drive/v3/about")
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "fields", value: "user(emailAddress,permissionId)")]
        return HTTPRequest(method: "GET", url: components?.url ?? url, headers: ["Authorization": "Bearer \(token)"])
    }

    @Test("status, lower-case headers and body are the same, for an answer and for a refusal")
    func sameAnswer() async throws {
        try await withGoogle { google in
            let token = try await accessToken(google)
            let http = HTTPClientTransport(WireSettings(caFile: google.emulator.caFile?.path))
            let inProcess = EmulatorTransport(google.emulator)
            // Google's clock ten minutes behind this machine's: both ways date the answers so.
            await google.emulator.state.setDateOffset(seconds: -600)
            for request in [about(google, token: token), about(google, token: "wrong")] {
                let before = Date()
                let overHTTP = try await http.send(request)
                let direct = try await inProcess.send(request)
                let after = Date()
                #expect(direct.status == overHTTP.status)
                // Both dated, by the second each was answered in (cut down to whole seconds).
                for answer in [direct, overHTTP] {
                    let real = try #require(answer.headers["date"].flatMap(Self.httpDate)).addingTimeInterval(600)
                    #expect(real > before.addingTimeInterval(-1) && real <= after, "\(real): \(before)...\(after)")
                }
                #expect(direct.headers.filter { $0.key != "date" } == overHTTP.headers.filter { $0.key != "date" })
                #expect(direct.body == overHTTP.body)
            }
        }
    }

    @Test("a resumable session's Location names the emulator's own base URL", arguments: routes)
    func location(route: EmulatorRoute) async throws {
        try await withGoogle(route) { google in
            let token = try await accessToken(google)
            var components = try #require(
                URLComponents(
                    url: google.emulator.baseURL.appendingPathComponent("upload/drive/v3/files"),
                    resolvingAgainstBaseURL: false))
            components.queryItems = [URLQueryItem(name: "uploadType", value: "resumable")]
            let response = try await google.transport.send(
                HTTPRequest(
                    method: "POST", url: try #require(components.url),
                    headers: [
                        "Authorization": "Bearer \(token)", "Content-Type": "application/json; charset=UTF-8",
                        "X-Upload-Content-Type": "audio/mpeg",
                    ],
                    body: .data(Data(#"{"name":"clip_x.mp3"}"#.utf8))))
            #expect(response.status == 200)
            let location = try #require(response.headers["location"])
            #expect(location.hasPrefix(google.emulator.baseURL.absoluteString + "/upload/drive/v3/files?"))
        }
    }

    @Test("an answer the emulator cuts off fails as cut off, naming the bytes unread", arguments: routes)
    func droppedAnswer(route: EmulatorRoute) async throws {
        try await withGoogle(route) { google in
            let token = try await accessToken(google)
            await google.state.addFault(FaultRule(pathContains: "/about", times: 1, dropAfterBytes: 10))
            let server = TransportError.server(of: google.emulator.baseURL)
            await #expect {
                _ = try await google.transport.send(about(google, token: token))
            } throws: { error in
                (error as? TransportError)?.kind == .cutOff
                    && error.localizedDescription
                        == "the connection to \(server) closed with 73 bytes of the answer unread"
            }
            #expect(await google.state.requests.last?.status == 0)
        }
    }

    @Test(
        "an upload the emulator cuts short fails as a lost connection; the part that arrived counts", arguments: routes)
    func uploadCutShort(route: EmulatorRoute) async throws {
        try await withGoogle(route) { google in
            let token = try await accessToken(google)
            let file = try google.writeFile("cut.bin", bytes: 300_000)
            await google.state.addFault(FaultRule(method: "POST", times: 1, dropAfterBytes: 100_000))
            var components = try #require(
                URLComponents(
                    url: google.emulator.baseURL.appendingPathComponent("upload/drive/v3/files"),
                    resolvingAgainstBaseURL: false))
            components.queryItems = [URLQueryItem(name: "uploadType", value: "media")]
            await #expect {
                _ = try await google.transport.send(
                    HTTPRequest(
                        method: "POST", url: try #require(components.url),
                        headers: ["Authorization": "Bearer \(token)", "Content-Type": "audio/mpeg"],
                        body: .file(file, range: 0..<300_000)))
            } throws: { error in
                // Cut off in its answer, or lost while still sending when the close comes first.
                [.cutOff, .connectionLost].contains((error as? TransportError)?.kind)
            }
            let logged = try #require(await google.state.requests.last)
            #expect(logged.status == 0 && logged.bytes == 100_000)
        }
    }

    @Test("a file's range is the body; its bytes are told as sent", arguments: routes)
    func fileRange(route: EmulatorRoute) async throws {
        try await withGoogle(route) { google in
            let token = try await accessToken(google)
            let file = try google.writeFile("range.bin", bytes: 50_000)
            var components = try #require(
                URLComponents(
                    url: google.emulator.baseURL.appendingPathComponent("upload/drive/v3/files"),
                    resolvingAgainstBaseURL: false))
            components.queryItems = [URLQueryItem(name: "uploadType", value: "media")]
            let sent = Mutex<Int64>(0)
            let response = try await google.transport.send(
                HTTPRequest(
                    method: "POST", url: try #require(components.url),
                    headers: ["Authorization": "Bearer \(token)", "Content-Type": "audio/mpeg"],
                    body: .file(file, range: 1000..<21_000), progress: { count in sent.withLock { $0 += count } }))
            #expect(response.status == 200)
            let stored = await google.state.dump(email: "alice@example.com").filter { !$0.isFolder }
            #expect(stored.map(\.content) == [try Data(contentsOf: file)[1000..<21_000]])
            #expect(sent.withLock { $0 } == 20_000)
        }
    }

    @Test(
        "past the response limit: ResponseTooLong, in memory and to a file, for an endless body too", arguments: routes)
    func responseLimit(route: EmulatorRoute) async throws {
        try await withGoogle(route) { google in
            let token = try await accessToken(google)
            let content = Data(count: 5000)
            let file = await google.state.putFile(
                email: "alice@example.com", name: "clip_c.mp3", parents: ["root"], content: content)
            let url = google.emulator.baseURL.appendingPathComponent("drive/v3/files/\(file.id)")
            var components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
            components.queryItems = [URLQueryItem(name: "alt", value: "media")]
            let media = HTTPRequest(
                method: "GET", url: try #require(components.url), headers: ["Authorization": "Bearer \(token)"],
                responseLimit: 1000)
            await #expect(throws: ResponseTooLong(limit: 1000, status: 200)) {
                _ = try await google.transport.send(media)
            }
            let target = URL(fileURLWithPath: google.directory + "/download.mp3")
            await #expect(throws: ResponseTooLong(limit: 1000, status: 200)) {
                _ = try await google.transport.download(media, to: target)
            }
            try await google.state.misreport(id: file.id, Misreport(size: "unknown", endless: true))
            var endless = media
            endless.responseLimit = 3 << 20
            await #expect(throws: ResponseTooLong(limit: 3 << 20, status: 200)) {
                _ = try await google.transport.download(endless, to: target)
            }
            let written = try FileManager.default.attributesOfItem(atPath: target.path)
            #expect((written[.size] as? NSNumber)?.intValue ?? 0 <= 3 << 20)
            #expect(written[.posixPermissions] as? Int == 0o600)
        }
    }

    @Test(
        "a download streams into its 0600 file, told as it arrives; an error answer stays in memory", arguments: routes)
    func download(route: EmulatorRoute) async throws {
        try await withGoogle(route) { google in
            let token = try await accessToken(google)
            let content = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let file = await google.state.putFile(
                email: "alice@example.com", name: "clip_d.mp3", parents: ["root"], content: content)
            let received = Mutex<Int64>(0)
            func media(_ id: String) throws -> HTTPRequest {
                let url = google.emulator.baseURL.appendingPathComponent("drive/v3/files/\(id)")
                var components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
                components.queryItems = [URLQueryItem(name: "alt", value: "media")]
                return HTTPRequest(
                    method: "GET", url: try #require(components.url), headers: ["Authorization": "Bearer \(token)"],
                    progress: { count in received.withLock { $0 += count } })
            }
            let target = URL(fileURLWithPath: google.directory + "/d.mp3")
            let response = try await google.transport.download(try media(file.id), to: target)
            #expect(response.status == 200 && response.body.isEmpty)
            #expect(try Data(contentsOf: target) == content)
            #expect(try FileManager.default.attributesOfItem(atPath: target.path)[.posixPermissions] as? Int == 0o600)
            #expect(received.withLock { $0 } == 300_000)
            let missing = try await google.transport.download(try media("nothere"), to: target)
            #expect(missing.status == 404 && (try? JSONSerialization.jsonObject(with: missing.body)) != nil)
            #expect(try Data(contentsOf: target).isEmpty)
        }
    }

    @Test("a request made by a task already cancelled ends at once with CancellationError and sends nothing")
    func alreadyCancelled() async throws {
        try await withGoogle { google in
            let request = HTTPRequest(
                method: "GET", url: google.emulator.baseURL.appendingPathComponent("drive/v3/about"))
            let outcome = await Task { [transport = google.transport] in
                withUnsafeCurrentTask { $0?.cancel() }
                do {
                    _ = try await transport.send(request)
                    return "sent"
                } catch is CancellationError {
                    return "cancelled"
                } catch {
                    return "\(error)"
                }
            }.value
            #expect(outcome == "cancelled")
            #expect(await google.state.requests.isEmpty)
        }
    }

    @Test("a request cancelled while the emulator holds it ends at once; the emulator still answers it")
    func cancelledWhileHeld() async throws {
        try await withGoogle { google in
            let token = try await accessToken(google)
            await google.state.clearRequests()
            await google.state.addFault(FaultRule(method: "GET", pathContains: "/about", hold: true))
            let request = Task { [transport = google.transport] in try await transport.send(about(google, token: token))
            }
            await google.state.waitForHeld(count: 1)
            request.cancel()
            await #expect(throws: CancellationError.self) { try await request.value }
            await google.state.releaseHeld()
            await google.state.waitForRequests(count: 1)
            let logged = await google.state.requests.map { "\($0.method) \($0.path) \($0.status)" }
            #expect(logged == ["GET /drive/v3/about 200"])
        }
    }

    @Test("a request for another server finds nobody listening", arguments: routes)
    func otherServer(route: EmulatorRoute) async throws {
        try await withGoogle(route) { google in
            let elsewhere = try #require(URL(string: "http://127.0.0.1:1/drive/v3/about"))
            await #expect {
                _ = try await google.transport.send(HTTPRequest(method: "GET", url: elsewhere))
            } throws: { error in
                (error as? TransportError) == TransportError.refused(elsewhere)
            }
            #expect(await google.state.requests.isEmpty)
        }
    }

    @Test("a request still held when the emulator stops is let go, stop returns, and then nobody listens")
    func stoppedWhileHeld() async throws {
        let emulator = try await GoogleEmulator.start()
        let transport = EmulatorTransport(emulator)
        let url = emulator.baseURL.appendingPathComponent("drive/v3/about")
        await emulator.state.addFault(FaultRule(method: "GET", hold: true))
        let request = Task { try await transport.send(HTTPRequest(method: "GET", url: url)) }
        await emulator.state.waitForHeld(count: 1)
        await emulator.stop()
        // Let go either before the stop cancels it (Drive's 401) or after (a lost connection).
        switch await request.result {
        case .success(let response): #expect(response.status == 401)
        case .failure(let error): #expect((error as? TransportError)?.kind == .connectionLost)
        }
        await #expect {
            _ = try await transport.send(HTTPRequest(method: "GET", url: url))
        } throws: { error in
            (error as? TransportError)?.kind == .cannotConnect
        }
    }
}
