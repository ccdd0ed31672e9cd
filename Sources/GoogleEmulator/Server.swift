import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The emulator as a running server on 127.0.0.1: one base URL serves the OAuth
/// endpoints, Drive, uploads and the control API.
package final class GoogleEmulator: Sendable {
    package static let defaultAccounts = [
        EmulatedAccount(email: "alice@example.com", permissionID: "04871234567890123456"),
        EmulatedAccount(email: "bob@example.com", permissionID: "09998765432109876543"),
    ]
    /// ivy's client: "TVs and Limited Input devices", in the Ivy app's Cloud project.
    package static let defaultClient = EmulatedClient(
        id: "ivy-emulator.apps.googleusercontent.com", secret: "emulator-secret")
    /// The Ivy phone app's client: another client of the same project, so it shares the
    /// user's grant and sees the files ivy makes (and ivy sees its files).
    package static let appClient = EmulatedClient(id: "ivy-app.apps.googleusercontent.com", secret: "app-secret")
    /// Some other app, of another Cloud project: under drive.file it and ivy see none of
    /// each other's files, and its grant is its own.
    package static let otherProjectClient = EmulatedClient(
        id: "other-app.apps.googleusercontent.com", secret: "other-secret", project: "another-project")
    package static let defaultClients = [defaultClient, appClient, otherProjectClient]

    package let state: EmulatorState
    /// `http://127.0.0.1:PORT` (or `http://[::1]:PORT`), without a trailing slash.
    package let baseURL: URL
    private let server: Task<Void, any Error>
    private let listener: any Channel

    private init(state: EmulatorState, baseURL: URL, server: Task<Void, any Error>, listener: any Channel) {
        self.state = state
        self.baseURL = baseURL
        self.server = server
        self.listener = listener
    }

    /// Starts listening on 127.0.0.1, or on `host` (`::1` for IPv6 loopback); port 0 picks a
    /// free one. Returns once it accepts connections. `clock` and `seed` make a new state's
    /// time and random choices (an `existing` state has its own).
    package static func start(
        host: String = "127.0.0.1", port: Int = 0, accounts: [EmulatedAccount] = defaultAccounts,
        clients: [EmulatedClient] = defaultClients, clock: EmulatorClock = .system,
        seed: UInt64 = EmulatorState.defaultSeed, state existing: EmulatorState? = nil
    ) async throws -> GoogleEmulator {
        let state = existing ?? EmulatorState(accounts: accounts, clients: clients, clock: clock, seed: seed)
        let (listeners, continuation) = AsyncStream<any Channel>.makeStream()
        let application = Application(
            responder: EmulatorResponder(state: state),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in
                continuation.yield(channel)
                continuation.finish()
            },
            logger: Logger(label: "ivy-emulator", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let server = Task {
            defer { continuation.finish() }
            try await application.run()
        }
        var listener: (any Channel)?
        for await channel in listeners { listener = channel }
        let authority = host.contains(":") ? "[\(host)]" : host
        guard let listener, let bound = listener.localAddress?.port, bound > 0,
            let url = URL(string: "http://\(authority):\(bound)")
        else {
            server.cancel()
            _ = await server.result
            throw EmulatorStartError(host: host, port: port)
        }
        return GoogleEmulator(state: state, baseURL: url, server: server, listener: listener)
    }

    /// Stops accepting and closes every connection; returns when the server is down.
    package func stop() async {
        await state.releaseHeld()
        // The listening socket closes first, so no connection is accepted once the server
        // task is cancelled: NIO traps when it accepts one that nothing will ever serve
        // ("Deinited NIOAsyncWriter without calling finish()", swift-nio#2637), which crashed
        // a whole test run.
        try? await listener.close()
        server.cancel()
        _ = await server.result
    }
}

package struct EmulatorStartError: Error, CustomStringConvertible {
    package let host: String
    package let port: Int
    package var description: String { "could not listen on \(host) port \(port); is the port in use?" }
}

/// An error that makes the server close the connection mid-response, as a flaky network would.
struct DroppedConnection: Error {}

/// The bridge from Hummingbird to the emulator's handlers: latency, faults, logging.
struct EmulatorResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    let state: EmulatorState

    /// More than any body ivy sends (MP3s are capped at 50 MB).
    static let bodyLimit = 128 * 1024 * 1024

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = await state.now()
        let method = request.method.rawValue
        let path = request.uri.path
        let rawQuery = request.uri.query ?? ""
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
        let isControl = path.hasPrefix("/_emulator/")

        if !isControl {
            let latency = await state.latencyMilliseconds
            if latency > 0 { try await Task.sleep(for: .milliseconds(latency)) }
        }
        let fault =
            isControl ? nil : await state.fault(method: method, target: rawQuery.isEmpty ? path : path + "?" + rawQuery)
        if let delay = fault?.delayMilliseconds, delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
        if fault?.hold == true { await state.hold() }

        // A drop on a request with a body cuts the upload short: keep what arrived, then hang up.
        let expectsBody = Int(headers["content-length"] ?? "0").map { $0 > 0 } ?? true
        var body = Data()
        var truncated = false
        if let limit = fault?.dropAfterBytes, expectsBody, ["PUT", "POST", "PATCH"].contains(method) {
            for try await buffer in request.body {
                body.append(contentsOf: buffer.readableBytesView)
                if body.count >= limit {
                    body = body.prefix(limit)
                    truncated = true
                    break
                }
            }
        } else if fault?.status == nil || fault?.afterHandling == true {
            let collected = try await request.body.collect(upTo: Self.bodyLimit)
            body = Data(collected.readableBytesView)
        }

        var reply: EmulatorReply
        var account: String?
        let query = Self.queryItems(rawQuery)
        if let fault, fault.status != nil, fault.afterHandling != true, !truncated {
            reply = Self.faultReply(fault, path: path)
        } else {
            var emulated = EmulatedRequest(method: method, path: path, query: query, headers: headers, body: body)
            emulated.truncated = truncated
            let base = "http://\(request.head.authority ?? headers["host"] ?? "127.0.0.1")"
            (reply, account) = await state.handle(emulated, baseURL: base)
            if let fault {
                let replaced = fault.afterHandling == true && fault.status != nil && !truncated
                reply = replaced ? Self.faultReply(fault, path: path) : Self.patched(reply, by: fault)
            }
        }
        if method == "PUT", path == "/upload/drive/v3/files", let uploadID = query["upload_id"] {
            await state.sessionAnswered(reply, uploadID: uploadID)
        }
        let drop = truncated ? 0 : fault?.dropAfterBytes
        // The control API is the test talking, not ivy: it stays out of the log.
        if !isControl {
            await state.log(
                LoggedRequest(
                    method: method, path: path, query: rawQuery, status: drop == nil ? reply.status : 0,
                    account: account,
                    start: started, end: await state.now(), bytes: body.count))
        }
        return Self.response(reply, dropAfter: drop, state: state)
    }

    /// OAuth's endpoints answer errors in their own flat shape; the rest is Drive's envelope.
    static let oauthPaths: Set<String> = ["/device/code", "/token", "/revoke"]

    /// A fault rule's answer. Below 400 it is just the status and the rule's headers (a 308
    /// with a bad Range); an error has Google's body for the endpoint, with Retry-After when
    /// the rule gives one.
    static func faultReply(_ fault: FaultRule, path: String) -> EmulatorReply {
        let status = fault.status ?? 500
        guard status >= 400 else { return EmulatorReply(status: status, headers: fault.headers ?? [:]) }
        var extra = fault.headers ?? [:]
        if let seconds = fault.retryAfterSeconds { extra["Retry-After"] = String(seconds) }
        guard !oauthPaths.contains(path) else {
            // Google's token endpoint names a server-side failure `internal_failure` (what
            // google-auth-library-python retries on).
            var reply = EmulatorReply.oauthError(
                status, fault.reason ?? (status >= 500 ? "internal_failure" : "invalid_request"), "Injected fault.")
            reply.headers.merge(extra) { $1 }
            return reply
        }
        return .driveError(
            status, reason: fault.reason ?? defaultReason(status), message: "Injected fault.", headers: extra)
    }

    static func defaultReason(_ status: Int) -> String {
        switch status {
        case 403: "userRateLimitExceeded"
        case 429: "rateLimitExceeded"
        case 401: "authError"
        case 404: "notFound"
        case 500...599: "backendError"
        default: "invalid"
        }
    }

    static func queryItems(_ raw: String) -> [String: String] {
        var items: [String: String] = [:]
        for pair in raw.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard let key = parts.first?.formDecoded else { continue }
            items[key] = (parts.count > 1 ? parts[1] : "").formDecoded ?? ""
        }
        return items
    }

    /// A handled answer with a rule's headers and raw JSON fields put in.
    static func patched(_ reply: EmulatorReply, by fault: FaultRule) -> EmulatorReply {
        var patched = reply
        for (name, value) in fault.headers ?? [:] {
            patched.headers = patched.headers.filter { $0.key.lowercased() != name.lowercased() }
            patched.headers[name] = value
        }
        guard let fields = fault.jsonFields, !fields.isEmpty,
            var object = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any]
        else { return patched }
        for key in fields.keys { object[key] = nil }
        // Spliced in as text: a number no Double can hold survives only that way.
        var text = String(
            decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8),
            as: UTF8.self)
        text.removeLast()
        let spliced = fields.sorted { $0.key < $1.key }.map { key, raw in
            let quoted = String(
                decoding: (try? JSONSerialization.data(withJSONObject: [key])) ?? Data("[\"\"]".utf8), as: UTF8.self)
            return "\(quoted.dropFirst().dropLast()):\(raw)"
        }
        text += (object.isEmpty ? "" : ",") + spliced.joined(separator: ",") + "}"
        patched.body = Data(text.utf8)
        return patched
    }

    /// How much filler an endless download sends at most, should a client never hang up: far
    /// more than a client that does hang up can take first (see `OverlongDownloadTests`).
    static let endlessLimit = 8 << 30

    static func response(_ reply: EmulatorReply, dropAfter: Int?, state: EmulatorState) -> Response {
        var fields = HTTPFields()
        for (name, value) in reply.headers {
            if let field = HTTPField.Name(name) { fields[field] = value }
        }
        let status = HTTPResponse.Status(code: reply.status)
        if reply.endless {
            // No Content-Length: chunked, so the client cannot know where it ends.
            let content = reply.body
            return Response(
                status: status, headers: fields,
                body: ResponseBody { writer in
                    if !content.isEmpty { try await writer.write(ByteBuffer(bytes: content)) }
                    let filler = ByteBuffer(repeating: 0x55, count: 1 << 16)
                    var sent = 0
                    while sent < endlessLimit {
                        try Task.checkCancellation()
                        // Counted before it goes out: a client that has read some bytes always
                        // finds them counted, even while this write still waits on the socket.
                        await state.countEndless(filler.readableBytes)
                        try await writer.write(filler)
                        sent += filler.readableBytes
                    }
                    try await writer.finish(nil)
                })
        }
        guard let dropAfter else {
            fields[.contentLength] = String(reply.body.count)
            guard reply.media else {
                return Response(
                    status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: reply.body)))
            }
            let content = reply.body
            return Response(
                status: status, headers: fields,
                body: ResponseBody { writer in
                    // Each write waits while the connection is full, so the count is what a
                    // client that stops reading lets the server get ahead by.
                    var offset = content.startIndex
                    while offset < content.endIndex {
                        let piece = content[offset..<min(offset + (1 << 16), content.endIndex)]
                        await state.countMedia(piece.count)
                        try await writer.write(ByteBuffer(bytes: piece))
                        offset = piece.endIndex
                    }
                    await state.mediaAnswerSent()
                    try await writer.finish(nil)
                })
        }
        // Promise the whole body, send part of it, then fail the write: the connection closes.
        fields[.contentLength] = String(max(reply.body.count, dropAfter + 1))
        let part = reply.body.prefix(dropAfter)
        return Response(
            status: status, headers: fields,
            body: ResponseBody { writer in
                if !part.isEmpty { try await writer.write(ByteBuffer(bytes: part)) }
                throw DroppedConnection()
            })
    }
}
