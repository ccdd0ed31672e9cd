package import Foundation
import HTTPTypes
import HummingbirdCore
package import IvySystem
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
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
    /// `http://127.0.0.1:PORT` (or `http://[::1]:PORT`), without a trailing slash.
    package let baseURL: URL
    private let server: Task<Void, any Error>
    private let listener: any Channel
    /// Requests answered without the socket (see `exchange`).
    let inProcess = InProcessExchanges()

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
        // HummingbirdCore's HTTP/1 server, not Hummingbird's `Application`: the application
        // stamps its own `Date` on every answer after the responder has run, and the emulator
        // dates its answers itself (`EmulatorState.dateOffset` puts Google's clock off).
        let responder = EmulatorResponder(state: state)
        let service = try HTTPServerBuilder.http1().buildServer(
            configuration: ServerConfiguration(address: .hostname(host, port: port), serverName: nil),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: Logger(label: "ivy-emulator", factory: { _ in SwiftLogNoOpLogHandler() }),
            responder: { request, writer, _ in
                let response: Response
                do {
                    response = try await responder.respond(to: request)
                } catch let error as HTTPParserError {
                    // The server answers 400 and closes the connection, as the application does.
                    throw error
                } catch {
                    response = Response(status: .internalServerError)
                }
                try await writer.write(response: response.head, body: response.body)
            },
            onServerRunning: { channel in
                continuation.yield(channel)
                continuation.finish()
            })
        let server = Task(executorPreference: executor) {
            defer { continuation.finish() }
            try await service.run()
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
        await inProcess.stop(release: { await state.releaseHeld() })
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

/// The bridge from Hummingbird to `EmulatorPipeline`: the request's parts and body in, the
/// answer out as a response (dropped part-way, or endless, when the answer says so).
struct EmulatorResponder: Sendable {
    let state: EmulatorState

    func respond(to request: Request) async throws -> Response {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
        let incoming = IncomingRequest(
            method: request.method.rawValue, path: request.uri.path, rawQuery: request.uri.query ?? "",
            headers: headers, baseURL: "http://\(request.head.authority ?? headers["host"] ?? "127.0.0.1")")
        let answer = try await EmulatorPipeline(state: state).answer(incoming, body: StreamedBody(body: request.body))
        return Self.response(answer.reply, dropAfter: answer.dropAfter, state: state)
    }

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
                    let filler = ByteBuffer(
                        repeating: EmulatorPipeline.endlessFiller, count: EmulatorPipeline.endlessChunk)
                    var sent = 0
                    while sent < EmulatorPipeline.endlessLimit {
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

/// A Hummingbird request body as the pipeline reads it.
private struct StreamedBody: IncomingBody {
    let body: RequestBody

    func collect(upTo limit: Int) async throws -> Data {
        Data(try await body.collect(upTo: limit).readableBytesView)
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
