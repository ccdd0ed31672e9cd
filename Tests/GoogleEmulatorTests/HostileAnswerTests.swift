import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
    import IvySystem
#endif

/// The knobs that make the emulator answer the way a broken or hostile server might, so
/// ivy's clients can be tested against them over real HTTP.
@Suite("Emulated hostile answers")
struct HostileAnswerTests {
    @Test("a fault below 400 answers only its status and headers: a 308 whose Range is past the upload")
    func statusAndHeaders() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let start = try await google.json(
                "POST", "/upload/drive/v3/files?uploadType=resumable", token: token,
                ["name": "clip_a.mp3", "parents": [folder]])
            let session = try #require(start.header("Location"))
            let added = try await google.json(
                "POST", "/_emulator/faults",
                [
                    "method": "PUT", "pathContains": "upload_id", "times": 1, "status": 308,
                    "headers": ["Range": "bytes=0-99999"],
                ])
            #expect(added.status == 200)
            let lied = try await google.request("PUT", session, token: token, body: Data(count: 1000))
            #expect(lied.status == 308 && lied.header("Range") == "bytes=0-99999" && lied.body.isEmpty)
            let honest = try await google.request(
                "PUT", session, token: token, headers: ["Content-Range": "bytes */1000"], body: Data())
            #expect(honest.status == 308 && honest.header("Range") == nil, "nothing was stored by the faked answer")
            #expect(await google.state.dump().filter { $0.name == "clip_a.mp3" }.isEmpty)
        }
    }

    @Test("sessionLocation answers a resumable session on another scheme, host and port, its path and query kept")
    func sessionElsewhere() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let added = try await google.json(
                "POST", "/_emulator/faults",
                ["method": "POST", "pathContains": "uploadType=resumable", "sessionLocation": "http://127.0.0.1:9"])
            #expect(added.status == 200)
            let start = try await google.json(
                "POST", "/upload/drive/v3/files?uploadType=resumable", token: token,
                ["name": "clip_a.mp3", "parents": [folder]])
            let location = try #require(start.header("Location"))
            #expect(start.status == 200)
            #expect(
                location.hasPrefix("http://127.0.0.1:9/upload/drive/v3/files?uploadType=resumable&upload_id="),
                "\(location)")
            // The session itself is real: on the emulator's own port it takes the file.
            let session = try #require(URLComponents(string: location)?.percentEncodedQuery)
            let sent = try await google.request(
                "PUT", "/upload/drive/v3/files?" + session, token: token, body: Data(count: 10))
            #expect(sent.status == 200, "\(sent.status)")
        }
    }

    @Test("jsonFields put raw JSON text into a handled answer; headers replace the answer's own")
    func rawFields() async throws {
        try await withEmulatorClient { google in
            await google.state.setDeviceCode(interval: 0)
            _ = try await google.json(
                "POST", "/_emulator/faults",
                [
                    "pathContains": "/device/code",
                    "jsonFields": ["expires_in": "99999999999999999999999", "interval": "-5"],
                    "headers": ["X-Test": "yes"],
                ])
            let code = try await google.deviceCode()
            let text = String(decoding: code.body, as: UTF8.self)
            #expect(code.status == 200 && code.header("X-Test") == "yes")
            #expect(
                text.contains("\"expires_in\":99999999999999999999999") && text.contains("\"interval\":-5"), "\(text)")
            #expect(code.json["device_code"] is String && code.json["user_code"] is String)

            await google.state.addFault(FaultRule(pathContains: "/token", jsonFields: ["expires_in": "\"3600\""]))
            try await google.state.approve(
                userCode: try #require(code.json["user_code"] as? String), email: "alice@example.com")
            let tokens = try await google.poll(try #require(code.json["device_code"] as? String))
            #expect(tokens.status == 200 && tokens.json["expires_in"] as? String == "3600")
            #expect(tokens.json["access_token"] is String && tokens.json["refresh_token"] is String)
        }
    }

    @Test("list faults: a page token that comes back unchanged, and empty pages after the last file")
    func listFaults() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("books", token: token)
            for index in 0..<3 {
                await google.state.putFile(
                    email: "alice@example.com", name: "book_\(index).json", parents: [folder], content: Data("{}".utf8))
            }
            let query = "'\(folder)' in parents"
            #expect(try await google.json("POST", "/_emulator/list-fault", ["kind": "repeat_token"]).status == 200)
            let first = try await google.list(query, token: token, pageSize: 2)
            let next = try #require(first.json["nextPageToken"] as? String)
            let second = try await google.list(query, token: token, pageSize: 2, pageToken: next)
            #expect(second.names == ["book_2.json"] && second.json["nextPageToken"] as? String == next)

            #expect(
                try await google.json("POST", "/_emulator/list-fault", ["kind": "empty_pages", "count": 3]).status
                    == 200)
            var pageToken: String? = nil
            var pages: [[String]] = []
            var tokens: Set<String> = []
            repeat {
                let page = try await google.list(query, token: token, pageSize: 2, pageToken: pageToken)
                pages.append(page.names)
                pageToken = page.json["nextPageToken"] as? String
                if let pageToken { #expect(tokens.insert(pageToken).inserted, "every token is new") }
            } while pageToken != nil && pages.count < 50
            #expect(pages == [["book_0.json", "book_1.json"], ["book_2.json"], [], [], []])

            #expect(
                try await google.json(
                    "POST", "/_emulator/list-fault", ["kind": "empty_pages", "query_contains": "nothing like it"]
                ).status == 200)
            #expect(
                try await google.list(query, token: token, pageSize: 3).json["nextPageToken"] == nil,
                "another query is left alone")
            await google.state.setListFault(ListFault(.emptyPages))
            var endless = try await google.list(query, token: token, pageSize: 3)
            for _ in 0..<30 {
                let next = try #require(endless.json["nextPageToken"] as? String, "empty pages never end")
                endless = try await google.list(query, token: token, pageSize: 3, pageToken: next)
                #expect(endless.names.isEmpty)
            }
            #expect(try await google.request("DELETE", "/_emulator/list-fault").status == 200)
            #expect(try await google.list(query, token: token, pageSize: 3).json["nextPageToken"] == nil)
        }
    }

    @Test("misreport: the size metadata lies, a download sends extra bytes, or never ends")
    func misreport() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let content = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0) })
            let file = await google.state.putFile(
                email: "alice@example.com", name: "clip_a.mp3", parents: [folder], content: content)
            #expect(
                try await google.json(
                    "POST", "/_emulator/files/\(file.id)/misreport", ["size": "-1", "extra_bytes": 500]
                ).status == 200)
            let metadata = try await google.request(
                "GET", "/drive/v3/files/\(file.id)?fields=size,md5Checksum", token: token)
            #expect(
                metadata.json["size"] as? String == "-1" && metadata.json["md5Checksum"] as? String == MD5.hex(content))
            let listed = try await google.list("'\(folder)' in parents", token: token, fields: "files(id,size)")
            #expect(listed.files.first?["size"] as? String == "-1")
            let media = try await google.request("GET", "/drive/v3/files/\(file.id)?alt=media", token: token)
            #expect(media.body.count == 1500 && media.body.prefix(1000) == content)

            try await google.state.misreport(id: file.id, Misreport(endless: true))
            let port = try #require(google.emulator.baseURL.port)
            let path = "/drive/v3/files/\(file.id)?alt=media"
            let raw = try await blocking { try rawGet(port: port, path: path, token: token, atMost: 4 << 20) }
            #expect(raw.head.lowercased().contains("transfer-encoding: chunked"))
            #expect(raw.bodyBytes >= 4 << 20 - 64 << 10, "it keeps coming: \(raw.bodyBytes) bytes")
            #expect(await google.state.endlessBytesSent >= raw.bodyBytes - 1000, "the emulator counts what it sent")

            try await google.state.misreport(id: file.id, nil)
            #expect(
                try await google.request("GET", "/drive/v3/files/\(file.id)?alt=media", token: token).body == content)
        }
    }

    @Test("a hold parks a matching request until the test releases it")
    func hold() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            await google.state.addFault(FaultRule(pathContains: "about", times: 1, hold: true))
            async let parked = google.request("GET", "/drive/v3/about?fields=user", token: token)
            await google.state.waitForHeld(count: 1)
            #expect(await google.state.requests.filter { $0.path == "/drive/v3/about" }.isEmpty, "not answered yet")
            #expect(try await google.request("POST", "/_emulator/release").status == 200)
            #expect(try await parked.status == 200)
        }
    }

    @Test("listens on the IPv6 loopback when asked, at http://[::1]:PORT")
    func ipv6() async throws {
        try await withEmulator(host: "::1", tls: false) { emulator in
            #expect(emulator.baseURL.absoluteString.hasPrefix("http://[::1]:"))
            // A plain IPv6 socket: URLSession on Linux refuses IPv6 literal URLs outright.
            let port = try #require(emulator.baseURL.port)
            let page = try await blocking { try rawGet(host: "::1", port: port, path: "/device", atMost: 1 << 16) }
            #expect(page.head.hasPrefix("HTTP/1.1 200"))
        }
    }
}

/// Blocking socket work on a GCD thread: the in-process emulator needs Swift's few
/// cooperative threads to answer it.
func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}

/// A GET over a plain socket that reads at most `atMost` bytes of body and hangs up: how a
/// test reads a body that never ends, or talks IPv6.
func rawGet(host: String = "127.0.0.1", port: Int, path: String, token: String? = nil, atMost: Int) throws -> (
    head: String, bodyBytes: Int
) {
    let ipv6 = host.contains(":")
    let socket = Glibc.socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw POSIXError(.EIO) }
    defer { close(socket) }
    let connected: Int32
    if ipv6 {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw POSIXError(.EINVAL) }
        connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    } else {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw POSIXError(.EINVAL) }
        connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
    guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
    let authority = ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    let authorization = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
    let request = "GET \(path) HTTP/1.1\r\nHost: \(authority)\r\n\(authorization)\r\n"
    _ = request.withCString { send(socket, $0, strlen($0), 0) }
    var received = Data()
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    var headEnd: Int?
    while received.count - (headEnd ?? 0) < atMost {
        let count = recv(socket, &buffer, buffer.count, 0)
        if count <= 0 { break }
        received.append(contentsOf: buffer[0..<count])
        if headEnd == nil, let range = received.range(of: Data("\r\n\r\n".utf8)) { headEnd = range.upperBound }
        // A page with Content-Length ends there; only an endless body needs the cap.
        if let headEnd, let length = contentLength(received.prefix(headEnd)), received.count - headEnd >= length {
            break
        }
    }
    let end = headEnd ?? received.count
    return (String(decoding: received.prefix(end), as: UTF8.self), received.count - end)
}

private func contentLength(_ head: Data) -> Int? {
    let text = String(decoding: head, as: UTF8.self).lowercased()
    guard let line = text.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }) else { return nil }
    return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
}
