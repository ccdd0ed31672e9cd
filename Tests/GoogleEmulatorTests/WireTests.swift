import AsyncHTTPClient
import Foundation
import GoogleEmulator
import IvyTestSupport
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// The emulator over TLS as a client sees it: HTTP/2 or HTTP/1.1 by ALPN, a certificate only
/// its own authority vouches for, and the faults Google's front end deals in.
@Suite struct WireTests {
    @Test func tlsNegotiatesHTTP2ByALPN() async throws {
        try await withWireClient { client in
            #expect(client.emulator.baseURL.scheme == "https")
            let reply = try await client.request(.GET, "/drive/v3/about?fields=user")
            #expect(reply.status == 401)
            #expect(reply.version == .http2)
            let logged = try #require(await client.state.requests.last)
            #expect(logged.http == "2")
            #expect(logged.connection == 1)
        }
    }

    @Test func aClientOfferingOnlyHTTP1GetsHTTP1OverTLS() async throws {
        try await withWireClient(http1Only: true) { client in
            let reply = try await client.request(.GET, "/drive/v3/about?fields=user")
            #expect(reply.status == 401)
            #expect(reply.version == .http1_1)
            #expect(await client.state.requests.last?.http == "1.1")
        }
    }

    @Test func plainHTTPIsAsBefore() async throws {
        try await withWireClient(tls: false) { client in
            #expect(client.emulator.baseURL.scheme == "http")
            #expect(client.emulator.caFile == nil)
            let reply = try await client.request(.GET, "/drive/v3/about?fields=user")
            #expect(reply.status == 401)
            #expect(reply.version == .http1_1)
            #expect(await client.state.requests.last?.http == "1.1")
        }
    }

    /// A client that trusts only the system's roots refuses the emulator: nothing but its CA
    /// file vouches for it.
    @Test func onlyTheEmulatorsAuthorityVouchesForIt() async throws {
        let emulator = try await GoogleEmulator.start(tls: true)
        // Not tried again: the request fails with the handshake's error (see `WireClient`).
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        await #expect(throws: NIOSSLError.self) {
            _ = try await client.execute(
                HTTPClientRequest(url: emulator.baseURL.absoluteString + "/drive/v3/about"), timeout: .seconds(30))
        }
        try? await client.shutdown()
        await emulator.stop()
    }

    @Test func theCAFileIsPrivateAndGoesWithTheEmulator() async throws {
        let emulator = try await GoogleEmulator.start(tls: true)
        let file = try #require(emulator.caFile)
        let directory = file.deletingLastPathComponent()
        let fileMode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? Int
        #expect(fileMode == 0o600)
        #expect(directoryMode == 0o700)
        let pem = try String(contentsOf: file, encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(!pem.contains("PRIVATE KEY"))
        await emulator.stop()
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }

    /// The certificate names every loopback way in: 127.0.0.1, ::1 and localhost (which this
    /// machine's hosts file may give as 127.0.0.1 only).
    @Test(arguments: [("127.0.0.1", ["127.0.0.1", "localhost"]), ("::1", ["[::1]"])])
    func theCertificateServesEveryLoopbackName(host: String, names: [String]) async throws {
        let emulator = try await GoogleEmulator.start(host: host, tls: true)
        let client = try WireClient(emulator)
        let port = try #require(emulator.baseURL.port)
        for base in names.map({ "https://\($0):\(port)" }) {
            do {
                #expect(try await client.request(.GET, base + "/drive/v3/about").status == 401)
            } catch {
                Issue.record("\(base): \(error)")
            }
        }
        await client.shutdown()
        await emulator.stop()
    }

    /// URLs in answers name the emulator as the client reached it: https.
    @Test func answersNameTheHTTPSEmulator() async throws {
        try await withWireClient { client in
            let token = try await client.signIn()
            let reply = try await client.request(
                .POST, "/upload/drive/v3/files?uploadType=resumable", token: token,
                headers: ["Content-Type": "application/json; charset=UTF-8"],
                body: Data(#"{"name":"a.mp3","parents":["root"]}"#.utf8))
            #expect(reply.status == 200)
            let location = try #require(reply.headers.first(name: "location"))
            #expect(location.hasPrefix(client.emulator.baseURL.absoluteString + "/upload/drive/v3/files?"))
            #expect(location.hasPrefix("https://"))
        }
    }

    /// A restarted emulator of the same state presents a certificate the old CA file vouches for.
    @Test func aRestoredStateKeepsItsAuthority() async throws {
        let first = try await GoogleEmulator.start(tls: true)
        let kept = FileManager.default.temporaryDirectory.appendingPathComponent("ivy-ca-\(UUID().uuidString).pem")
        defer { try? FileManager.default.removeItem(at: kept) }
        try FileManager.default.copyItem(at: try #require(first.caFile), to: kept)
        let snapshot = try await first.state.snapshot()
        await first.stop()

        let state = EmulatorState(accounts: GoogleEmulator.defaultAccounts, clients: GoogleEmulator.defaultClients)
        try await state.restore(from: snapshot)
        let second = try await GoogleEmulator.start(state: state, tls: true)
        let client = try WireClient(second, trusting: kept)
        #expect(try await client.request(.GET, "/drive/v3/about").status == 401)
        #expect(
            try String(contentsOf: try #require(second.caFile), encoding: .utf8)
                == String(contentsOf: kept, encoding: .utf8))
        await client.shutdown()
        await second.stop()
    }

    /// The answer's `Date` is Google's clock (put off by `date_offset`) over HTTP/2 too, and
    /// latency still delays it.
    @Test func datesAndLatencyHoldOverHTTP2() async throws {
        try await withWireClient { client in
            await client.state.setDateOffset(seconds: -7200)
            await client.state.setLatency(milliseconds: 50)
            let started = Date()
            let reply = try await client.request(.GET, "/drive/v3/about")
            #expect(Date().timeIntervalSince(started) >= 0.05)
            #expect(reply.version == .http2)
            let date = try #require(reply.headers.first(name: "date"))
            let parser = DateFormatter()
            parser.locale = Locale(identifier: "en_US_POSIX")
            parser.timeZone = TimeZone(identifier: "GMT")
            parser.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            let sent = try #require(parser.date(from: date))
            #expect(abs(sent.timeIntervalSinceNow + 7200) < 60)
        }
    }
}
