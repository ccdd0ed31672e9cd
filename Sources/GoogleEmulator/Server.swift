package import Foundation
import HTTPTypes
import HummingbirdCore
package import IvySystem
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle

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

    /// The threads every answer is made on, the server's and the in-process ones'. Not Swift's
    /// cooperative pool (two threads here): a test or an ivy command blocking both of those
    /// would stop every emulator in the process, and the requests waiting on it would time out
    /// together 60 s later, blaming tests that did nothing wrong.
    package static let executor = BlockingExecutor(name: "ivy-emulator")

    package let state: EmulatorState
    /// `http://127.0.0.1:PORT` (or `http://[::1]:PORT`; `https://` when it serves TLS),
    /// without a trailing slash.
    package let baseURL: URL
    /// The PEM file of the certificate authority a TLS emulator's certificate is signed by:
    /// what a client trusts to reach it (`IVY_CA_FILE`). Nil for plain HTTP.
    package let caFile: URL?
    /// The private directory the CA file was made in, removed at `stop`; nil when the caller
    /// chose where the file goes (and keeps it).
    private let caDirectory: URL?
    private let server: Task<Void, any Error>
    private let listener: any Channel
    /// Requests answered without the socket (see `exchange`).
    let inProcess = InProcessExchanges()

    private init(
        state: EmulatorState, baseURL: URL, caFile: URL?, caDirectory: URL?, server: Task<Void, any Error>,
        listener: any Channel
    ) {
        self.state = state
        self.baseURL = baseURL
        self.caFile = caFile
        self.caDirectory = caDirectory
        self.server = server
        self.listener = listener
    }

    /// Starts listening on 127.0.0.1, or on `host` (`::1` for IPv6 loopback); port 0 picks a
    /// free one. Returns once it accepts connections. `clock` and `seed` make a new state's
    /// time and random choices (an `existing` state has its own).
    ///
    /// With `tls`, it serves HTTPS, HTTP/2 or HTTP/1.1 as the client's ALPN offers, with a
    /// certificate for 127.0.0.1, ::1 and localhost signed by the state's certificate
    /// authority (made now if the state has none). The authority's certificate is written to
    /// `caFile` (kept at `stop`), or when that is nil to a new 0700 directory of the
    /// temporary directory (removed at `stop`); either way as a 0600 file, `self.caFile`.
    package static func start(
        host: String = "127.0.0.1", port: Int = 0, accounts: [EmulatedAccount] = defaultAccounts,
        clients: [EmulatedClient] = defaultClients, clock: EmulatorClock = .system,
        seed: UInt64 = EmulatorState.defaultSeed, state existing: EmulatorState? = nil, tls: Bool = false,
        caFile chosenCAFile: URL? = nil
    ) async throws -> GoogleEmulator {
        let state = existing ?? EmulatorState(accounts: accounts, clients: clients, clock: clock, seed: seed)
        var contexts: EmulatorChannel.Contexts?
        var caFile: URL?
        var caDirectory: URL?
        if tls {
            let authority = try await state.authority ?? EmulatorAuthority.make()
            await state.setAuthority(authority)
            contexts = EmulatorChannel.Contexts(
                trusted: try NIOSSLContext(configuration: try authority.serverIdentity().configuration),
                stranger: try NIOSSLContext(configuration: try EmulatorAuthority.strangerIdentity().configuration))
            (caFile, caDirectory) = try writeCertificate(authority, to: chosenCAFile)
        }
        let (listeners, continuation) = AsyncStream<any Channel>.makeStream()
        // HummingbirdCore's server, not Hummingbird's `Application`: the application stamps
        // its own `Date` on every answer after the responder has run, and the emulator dates
        // its answers itself (`EmulatorState.dateOffset` puts Google's clock off).
        let responder = EmulatorResponder(state: state, scheme: tls ? "https" : "http")
        let channel = EmulatorChannel(
            responder: { request, writer, channel in
                let connection = state.wire.request(
                    on: channel, counted: !request.uri.path.hasPrefix("/_emulator/"))
                let response: Response
                do {
                    response = try await responder.respond(to: request, on: connection)
                } catch let error as HTTPParserError {
                    // The server answers 400 and closes the connection, as the application does.
                    throw error
                } catch let error as DroppedConnection {
                    throw error
                } catch {
                    response = Response(status: .internalServerError)
                }
                try await writer.write(response: response.head, body: response.body)
            }, tls: contexts, wire: state.wire)
        let service = channel.server(
            configuration: ServerConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in
                continuation.yield(channel)
                continuation.finish()
            }, eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: Logger(label: "ivy-emulator", factory: { _ in SwiftLogNoOpLogHandler() }))
        let server = Task(executorPreference: executor) {
            defer { continuation.finish() }
            try await service.run()
        }
        var listener: (any Channel)?
        for await channel in listeners { listener = channel }
        let authority = host.contains(":") ? "[\(host)]" : host
        guard let listener, let bound = listener.localAddress?.port, bound > 0,
            let url = URL(string: "\(tls ? "https" : "http")://\(authority):\(bound)")
        else {
            server.cancel()
            _ = await server.result
            if let caDirectory { try? FileManager.default.removeItem(at: caDirectory) }
            throw EmulatorStartError(host: host, port: port)
        }
        return GoogleEmulator(
            state: state, baseURL: url, caFile: caFile, caDirectory: caDirectory, server: server, listener: listener)
    }

    /// Writes the authority's certificate as a 0600 file: at `chosen`, or in a new 0700
    /// directory of the temporary directory. Returns the file and the directory made.
    private static func writeCertificate(_ authority: EmulatorAuthority, to chosen: URL?) throws -> (URL, URL?) {
        if let chosen {
            try PrivateFile.write(
                Data(authority.certificatePEM.utf8), atomicallyTo: chosen.path, temporaryPrefix: ".ivy-emulator-ca-")
            return (chosen, nil)
        }
        var template = Array((FileManager.default.temporaryDirectory.path + "/ivy-emulator-ca.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw EmulatorCAError(path: FileManager.default.temporaryDirectory.path, errno: errno)
        }
        let directory = URL(fileURLWithPath: String(cString: made), isDirectory: true)
        let file = directory.appendingPathComponent("ca.pem")
        do {
            try PrivateFile.write(
                Data(authority.certificatePEM.utf8), atomicallyTo: file.path, temporaryPrefix: ".ca-")
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        return (file, directory)
    }

    /// Stops accepting and closes every connection; returns when the server is down. A CA
    /// file it made in its own directory goes with it.
    package func stop() async {
        await state.releaseHeld()
        await inProcess.stop(release: { await state.releaseHeld() })
        // The listening socket closes first, so no connection is accepted once the server
        // task is cancelled: NIO traps when it accepts one that nothing will ever serve
        // ("Deinited NIOAsyncWriter without calling finish()", swift-nio#2637), which crashed
        // a whole test run.
        try? await listener.close()
        server.cancel()
        _ = await server.result
        if let caDirectory { try? FileManager.default.removeItem(at: caDirectory) }
    }
}

package struct EmulatorStartError: Error, CustomStringConvertible {
    package let host: String
    package let port: Int
    package var description: String { "could not listen on \(host) port \(port); is the port in use?" }
}

package struct EmulatorCAError: Error, CustomStringConvertible {
    package let path: String
    package let errno: Int32
    package var description: String {
        "could not make a private directory for the emulator's certificate authority in \(path): "
            + "\(String(cString: strerror(errno))); set TMPDIR to a writable directory"
    }
}

/// An error that makes the server close the connection mid-response, as a flaky network would.
struct DroppedConnection: Error {}

/// The bridge from Hummingbird to `EmulatorPipeline`: the request's parts and body in, the
/// answer out as a response (dropped part-way, or endless, when the answer says so); the
/// connection told to go away, or reset, when a fault says so.
struct EmulatorResponder: Sendable {
    let state: EmulatorState
    /// "https" when the emulator serves TLS: the URLs in answers name it.
    let scheme: String

    func respond(to request: Request, on connection: ConnectionInfo?) async throws -> Response {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
        let incoming = IncomingRequest(
            method: request.method.rawValue, path: request.uri.path, rawQuery: request.uri.query ?? "",
            headers: headers, baseURL: "\(scheme)://\(request.head.authority ?? headers["host"] ?? "127.0.0.1")",
            connection: connection?.number, http: connection?.http)
        let answer = try await EmulatorPipeline(state: state).answer(incoming, body: StreamedBody(body: request.body))
        var reply = answer.reply
        var reset: (@Sendable () async -> Void)?
        if let connection {
            if connection.isLast || (answer.goAway && state.wire.markGoneAway(connection.channel)) {
                // HTTP/1.1 has no GOAWAY: the answer says the connection ends with it.
                if connection.http == "1.1" { reply.headers["Connection"] = "close" }
                FrontEnd.goAway(connection.channel, wire: state.wire)
            }
            if answer.resetsConnection {
                let wire = state.wire
                reset = { await FrontEnd.reset(connection.channel, wire: wire) }
            }
        }
        if let reset, answer.dropAfter == 0 {
            // Nothing of the answer goes out: the client, maybe still sending, finds the
            // connection reset under it.
            await reset()
            throw DroppedConnection()
        }
        return Self.response(reply, dropAfter: answer.dropAfter, state: state, reset: reset)
    }

    static func response(
        _ reply: EmulatorReply, dropAfter: Int?, state: EmulatorState, reset: (@Sendable () async -> Void)? = nil
    ) -> Response {
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
                    let filler = ByteBuffer(
                        repeating: EmulatorPipeline.endlessFiller, count: EmulatorPipeline.endlessChunk)
                    var sent = 0
                    do {
                        while sent < EmulatorPipeline.endlessLimit {
                            try Task.checkCancellation()
                            // Counted before it goes out: a client that has read some bytes
                            // always finds them counted, even while this write still waits.
                            await state.countEndless(filler.readableBytes)
                            try await writer.write(filler)
                            sent += filler.readableBytes
                        }
                        try await writer.finish(nil)
                    } catch {
                        // The client hung up (or reset the stream): the write failed.
                        await state.endlessAnswerEnded()
                        throw error
                    }
                    await state.endlessAnswerEnded()
                })
        }
        if reply.stalls, !reply.body.isEmpty {
            fields[.contentLength] = String(reply.body.count)
            let content = reply.body
            return Response(
                status: status, headers: fields,
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(bytes: content.prefix(1)))
                    await state.hold()
                    try await writer.write(ByteBuffer(bytes: content.dropFirst()))
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
        // Promise the whole body, send part of it, then fail the write: over HTTP/1.1 the
        // connection closes; over HTTP/2 Hummingbird closes the request's stream, which
        // swift-nio-http2 does with an RST_STREAM (CANCEL), the connection's other streams
        // going on. `reset` ends the whole connection instead.
        fields[.contentLength] = String(max(reply.body.count, dropAfter + 1))
        let part = reply.body.prefix(dropAfter)
        return Response(
            status: status, headers: fields,
            body: ResponseBody { writer in
                if !part.isEmpty { try await writer.write(ByteBuffer(bytes: part)) }
                if let reset {
                    // What was written must leave before the connection goes.
                    try await writer.write(ByteBuffer())
                    await reset()
                }
                throw DroppedConnection()
            })
    }
}

/// A Hummingbird request body as the pipeline reads it.
private struct StreamedBody: IncomingBody {
    let body: RequestBody

    func collect(upTo limit: Int) async throws -> Data {
        Data(try await body.collect(upTo: limit).readableBytesView)
    }

    func collect(upTo limit: Int, arrived: @Sendable (Int) async -> Void) async throws -> Data {
        var data = Data()
        for try await buffer in body {
            guard data.count + buffer.readableBytes <= limit else { throw DroppedConnection() }
            data.append(contentsOf: buffer.readableBytesView)
            await arrived(buffer.readableBytes)
        }
        return data
    }

    func prefix(_ count: Int) async throws -> Data {
        var data = Data()
        for try await buffer in body {
            data.append(contentsOf: buffer.readableBytesView)
            if data.count >= count { return data.prefix(count) }
        }
        return data
    }
}
