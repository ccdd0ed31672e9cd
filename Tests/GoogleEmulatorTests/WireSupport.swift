import AsyncHTTPClient
import Foundation
import GoogleEmulator
import IvyTestSupport
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// An answer as an AsyncHTTPClient client got it.
struct WireReply {
    let status: Int
    let version: HTTPVersion
    let headers: HTTPHeaders
    let body: Data

    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
}

/// AsyncHTTPClient talking to an emulator over its socket as ivy's transport does: trusting
/// its certificate authority only (from its CA file) when it serves TLS, HTTP/2 by ALPN
/// unless `http1Only`. Not `retrying` connections, a failed one fails the request at once
/// with its own error (retried, it fails at the connect timeout, as `connectTimeout` when a
/// loaded machine's handshake outlasts it).
final class WireClient: Sendable {
    let emulator: GoogleEmulator
    let client: HTTPClient
    var state: EmulatorState { emulator.state }

    init(
        _ emulator: GoogleEmulator, http1Only: Bool = false, trusting caFile: URL? = nil,
        retrying: Bool = true
    ) throws {
        self.emulator = emulator
        var configuration = HTTPClient.Configuration()
        if let caFile = caFile ?? emulator.caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile.path))
            configuration.tlsConfiguration = tls
        }
        configuration.httpVersion = http1Only ? .http1Only : .automatic
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(30))
        configuration.connectionPool.retryConnectionEstablishment = retrying
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    @discardableResult
    func request(
        _ method: HTTPMethod, _ path: String, token: String? = nil, headers: [String: String] = [:],
        body: Data? = nil
    ) async throws -> WireReply {
        var request = HTTPClientRequest(
            url: path.hasPrefix("http") ? path : emulator.baseURL.absoluteString + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if path.hasPrefix("/_emulator/") {
            request.headers.add(name: EmulatorState.controlSecretHeader, value: state.controlSecret)
        }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let buffer = try await response.body.collect(upTo: 64 << 20)
        return WireReply(
            status: Int(response.status.code), version: response.version, headers: response.headers,
            body: Data(buffer.readableBytesView))
    }

    func form(_ path: String, _ fields: [String: String]) async throws -> WireReply {
        let body = fields.map {
            "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        }
        .joined(separator: "&")
        return try await request(
            .POST, path, headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Data(body.utf8))
    }

    /// The device flow approved as `email`: an access token.
    func signIn(as email: String = "alice@example.com") async throws -> String {
        await state.setDeviceCode(interval: 0)
        let client = GoogleEmulator.defaultClient
        let code = try await form(
            "/device/code", ["client_id": client.id, "scope": "https://www.googleapis.com/auth/drive.file"])
        try await state.approve(userCode: try #require(code.json["user_code"] as? String), email: email)
        let tokens = try await form(
            "/token",
            [
                "client_id": client.id, "client_secret": client.secret,
                "device_code": try #require(code.json["device_code"] as? String),
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            ])
        return try #require(tokens.json["access_token"] as? String)
    }

    /// The wire settings, set through the control API as a test or `ivy-emulator` sets them.
    func setWire(_ settings: [String: Any]) async throws {
        let reply = try await request(
            .POST, "/_emulator/wire", body: try JSONSerialization.data(withJSONObject: settings))
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
    }

    func addFault(_ rule: [String: Any]) async throws {
        let reply = try await request(
            .POST, "/_emulator/faults", body: try JSONSerialization.data(withJSONObject: rule))
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
    }

    /// The connection each logged request came on, in order.
    func connections() async -> [Int?] { await state.requests.map(\.connection) }
}

/// Runs `body` against a fresh emulator serving TLS (or plain HTTP) and an AsyncHTTPClient
/// client for it, both stopped afterwards whatever happens.
@discardableResult
func withWireClient<Result>(
    tls: Bool = true, http1Only: Bool = false, _ body: (WireClient) async throws -> Result
) async throws -> Result {
    let emulator = try await GoogleEmulator.start(tls: tls)
    let client: WireClient
    do {
        client = try WireClient(emulator, http1Only: http1Only)
    } catch {
        await emulator.stop()
        throw error
    }
    do {
        let result = try await body(client)
        await client.shutdown()
        await emulator.stop()
        return result
    } catch {
        await client.shutdown()
        await emulator.stop()
        throw error
    }
}
