import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A reply as a test reads it.
struct Reply {
    let status: Int
    let headers: [String: String]
    let body: Data

    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    var driveReason: String? {
        ((json["error"] as? [String: Any])?["errors"] as? [[String: Any]])?.first?["reason"] as? String
    }
    var oauthError: String? { json["error"] as? String }
    func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
}

/// Runs `body` against a fresh emulator on a loopback port, stopping it afterwards whatever
/// happens; `body` talks to it with plain HTTP, never through ivy's client. These tests are of
/// what the emulator answers, not of its wire, so it serves plain HTTP/1.1 here
/// (`WireTests` and `WireFaultTests` test its TLS and HTTP/2).
@discardableResult
func withEmulatorClient<Result>(
    clock: EmulatorClock = .system, seed: UInt64 = EmulatorState.defaultSeed,
    _ body: (EmulatorClient) async throws -> Result
) async throws -> Result {
    try await withEmulator(clock: clock, seed: seed, tls: false) { emulator in
        try await body(EmulatorClient(emulator: emulator))
    }
}

/// Plain HTTP to the emulator through URLSession, as ivy's own clients will talk to it.
final class EmulatorClient: Sendable {
    let emulator: GoogleEmulator
    let session: URLSession
    var state: EmulatorState { emulator.state }
    var base: String { emulator.baseURL.absoluteString }
    static let client = GoogleEmulator.defaultClient

    init(emulator: GoogleEmulator) {
        self.emulator = emulator
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 30
        session = URLSession(configuration: configuration)
    }

    @discardableResult
    func request(
        _ method: String, _ path: String, token: String? = nil, headers: [String: String] = [:], body: Data? = nil
    ) async throws -> Reply {
        let url = try #require(URL(string: path.hasPrefix("http") ? path : base + path))
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.httpBody = body
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        // The control API asks for the emulator's secret, which every caller of it is given.
        if path.hasPrefix("/_emulator/") {
            request.setValue(state.controlSecret, forHTTPHeaderField: EmulatorState.controlSecretHeader)
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (key, value) in http.allHeaderFields { fields["\(key)"] = "\(value)" }
        return Reply(status: http.statusCode, headers: fields, body: data)
    }

    func form(_ path: String, _ fields: [String: String]) async throws -> Reply {
        let body = fields.map {
            "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        }
        .joined(separator: "&")
        return try await request(
            "POST", path, headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Data(body.utf8))
    }

    func json(_ method: String, _ path: String, token: String? = nil, _ object: [String: Any]) async throws -> Reply {
        try await request(
            method, path, token: token, headers: ["Content-Type": "application/json"],
            body: try JSONSerialization.data(withJSONObject: object))
    }

    func deviceCode(scope: String = "https://www.googleapis.com/auth/drive.file", client: String = client.id)
        async throws -> Reply
    {
        try await form("/device/code", ["client_id": client, "scope": scope])
    }

    func poll(_ deviceCode: String, secret: String = client.secret) async throws -> Reply {
        try await form(
            "/token",
            [
                "client_id": Self.client.id, "client_secret": secret, "device_code": deviceCode,
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            ])
    }

    /// The whole device flow, approved as `email`; returns the token response.
    func signIn(as email: String = "alice@example.com") async throws -> (access: String, refresh: String) {
        await state.setDeviceCode(interval: 0)
        let code = try await deviceCode()
        let userCode = try #require(code.json["user_code"] as? String)
        try await state.approve(userCode: userCode, email: email)
        let tokens = try await poll(try #require(code.json["device_code"] as? String))
        #expect(tokens.status == 200)
        return (
            try #require(tokens.json["access_token"] as? String), try #require(tokens.json["refresh_token"] as? String)
        )
    }

    func createFolder(_ name: String, parent: String? = nil, token: String) async throws -> String {
        var metadata: [String: Any] = ["name": name, "mimeType": "application/vnd.google-apps.folder"]
        if let parent { metadata["parents"] = [parent] }
        let reply = try await json("POST", "/drive/v3/files?fields=id", token: token, metadata)
        #expect(reply.status == 200)
        return try #require(reply.json["id"] as? String)
    }

    /// A multipart upload, as ivy sends small JSON files.
    func upload(name: String, parent: String, content: Data, id: String? = nil, token: String) async throws -> Reply {
        var metadata: [String: Any] = ["name": name, "parents": [parent]]
        if let id { metadata["id"] = id }
        let boundary = "ivy-boundary-42"
        var body = Data("--\(boundary)\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".utf8)
        body.append(try JSONSerialization.data(withJSONObject: metadata))
        body.append(Data("\r\n--\(boundary)\r\nContent-Type: application/octet-stream\r\n\r\n".utf8))
        body.append(content)
        body.append(Data("\r\n--\(boundary)--\r\n".utf8))
        return try await request(
            "POST", "/upload/drive/v3/files?uploadType=multipart&fields=id,name,size,md5Checksum,modifiedTime",
            token: token,
            headers: ["Content-Type": "multipart/related; boundary=\(boundary)"], body: body)
    }

    func list(
        _ query: String, token: String, pageSize: Int? = nil, pageToken: String? = nil,
        fields: String = "nextPageToken,files(id,name,parents,trashed)"
    ) async throws -> Reply {
        let encoded = [query, fields].map { $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }
        var path = "/drive/v3/files?q=\(encoded[0])&fields=\(encoded[1])"
        if let pageSize { path += "&pageSize=\(pageSize)" }
        if let pageToken {
            path += "&pageToken=\(pageToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        }
        return try await request("GET", path, token: token)
    }
}

extension Reply {
    var files: [[String: Any]] { json["files"] as? [[String: Any]] ?? [] }
    var names: [String] { files.compactMap { $0["name"] as? String } }
}
