package import Foundation
package import GoogleEmulator
package import IvyGoogle
import IvySystem

/// How a test's Google clients reach the emulator.
package enum EmulatorRoute: Sendable, CustomStringConvertible {
    /// Straight into the emulator's request pipeline (`EmulatorTransport`): for tests whose
    /// subject is ivy's sync, merges, listings or retries rather than HTTP.
    case inProcess
    /// `HTTPClientTransport` over a loopback socket (TLS and HTTP/2 when the emulator serves
    /// them, trusting its certificate authority), as `ivy` itself talks to Google: for tests
    /// of the transport, of what only a socket does (timeouts, the host a URL names), and the CLI.
    case http

    /// What a test gets unless it asks: in-process, or loopback HTTP when the environment has
    /// `IVY_TEST_ROUTE=http`, to check that what passes in-process passes over a socket too.
    package static let standard: EmulatorRoute =
        ProcessInfo.processInfo.environment["IVY_TEST_ROUTE"] == "http" ? .http : .inProcess

    package func transport(to emulator: GoogleEmulator) -> any HTTPTransport {
        switch self {
        case .inProcess: EmulatorTransport(emulator)
        case .http: HTTPClientTransport(WireSettings(caFile: emulator.caFile?.path))
        }
    }

    package var description: String {
        switch self {
        case .inProcess: "in-process"
        case .http: "loopback socket"
        }
    }
}

/// An `HTTPTransport` that hands each request to an emulator's `EmulatorPipeline` without a
/// socket: the same latency, faults, handlers and request log as its HTTP server, with none of
/// the socket's cost. What a client can notice is kept: URLs in answers name the emulator's
/// `baseURL`; header names come back in lower case; the answer is read through IvyGoogle's
/// `Transfer`, so a body past the request's limit (an endless one too) fails with the same
/// `ResponseTooLong`, a download streams into a 0600 file, and progress is told as bytes move;
/// an answer the emulator cuts off (or an upload it cuts short) fails with the `TransportError`
/// `HTTPClientTransport` gives (`cutOff`, naming the bytes unread; `connectionLost`), which
/// ivy takes for the network, as it takes every transport error; a request to any other
/// server finds nobody listening. A cancelled caller is answered at once, while the emulator finishes
/// the request it already received, as a server would.
package final class EmulatorTransport: HTTPTransport {
    private let emulator: GoogleEmulator

    package init(_ emulator: GoogleEmulator) {
        self.emulator = emulator
    }

    package func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await perform(request, into: nil)
    }

    package func download(_ request: HTTPRequest, to file: URL, from offset: Int64) async throws -> HTTPResponse {
        let descriptor = try Transfer.openDownload(file, from: offset)
        defer { close(descriptor) }
        return try await perform(request, into: (descriptor, file.path))
    }

    private func perform(_ request: HTTPRequest, into file: (descriptor: Int32, path: String)?) async throws
        -> HTTPResponse
    {
        let incoming = try incoming(request)
        let transfer = Transfer(
            limit: max(0, request.responseLimit), file: file, progress: request.progress,
            statusOnly: request.statusOnly)
        let body = OutgoingBody(body: request.body, transfer: transfer)
        let pipeline = emulator.pipeline
        let emulator = emulator
        let url = request.url
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    transfer.begin(continuation)
                    // A task cancelled before its request starts sends nothing.
                    if Task.isCancelled { return transfer.cancel() }
                    let started = emulator.exchange {
                        await Self.exchange(incoming, body: body, url: url, pipeline: pipeline, transfer: transfer)
                    }
                    if !started { transfer.finish(status: nil, headers: [:], error: TransportError.refused(url)) }
                }
            } onCancel: {
                transfer.cancel()
            }
        } catch  where Task.isCancelled {
            throw CancellationError()
        }
    }

    /// The request as the emulator's server would see it arrive.
    private func incoming(_ request: HTTPRequest) throws -> IncomingRequest {
        let base = emulator.baseURL
        guard let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false),
            request.url.scheme == base.scheme, request.url.host == base.host, request.url.port == base.port
        else { throw TransportError.refused(request.url) }
        var headers: [String: String] = [:]
        for (name, value) in request.headers { headers[name.lowercased()] = value }
        headers["host"] = base.absoluteString.components(separatedBy: "//").last
        switch request.body {
        case .none: break
        case .data(let data): headers["content-length"] = String(data.count)
        case .file(_, let range): headers["content-length"] = String(range.count)
        }
        let path = components.percentEncodedPath
        return IncomingRequest(
            method: request.method, path: path.isEmpty ? "/" : path, rawQuery: components.percentEncodedQuery ?? "",
            headers: headers, baseURL: base.absoluteString)
    }

    /// One request through the pipeline, its answer fed to `transfer` as a socket would
    /// deliver it. Runs on `BlockingExecutor`: a download's writes and an upload's reads
    /// block, and the cooperative threads must stay free for every other test.
    private static func exchange(
        _ incoming: IncomingRequest, body: OutgoingBody, url: URL, pipeline: EmulatorPipeline, transfer: Transfer
    ) async {
        await BlockingExecutor.run {
            let answer: EmulatorAnswer
            do {
                answer = try await pipeline.answer(incoming, body: body)
            } catch {
                // The emulator stopped mid-request, or the body could not be read: the
                // connection is gone.
                return transfer.finish(status: nil, headers: [:], error: TransportError.lost(url))
            }
            let reply = answer.reply
            var headers = reply.headers
            if reply.endless {
                headers["Transfer-Encoding"] = "chunked"
            } else {
                headers["Content-Length"] = String(max(reply.body.count, answer.dropAfter.map { $0 + 1 } ?? 0))
            }
            var answered: [String: String] = [:]
            for (name, value) in headers { answered[name.lowercased()] = value }
            guard transfer.responded(status: reply.status, headers: answered) else { return }
            let content = answer.dropAfter.map { reply.body.prefix($0) } ?? reply.body
            var reading = content.isEmpty || transfer.receive(content, status: reply.status)
            if reply.endless {
                let filler = Data(repeating: EmulatorPipeline.endlessFiller, count: EmulatorPipeline.endlessChunk)
                var sent = 0
                while reading, sent < EmulatorPipeline.endlessLimit, !Task.isCancelled {
                    await pipeline.countEndless(filler.count)
                    reading = transfer.receive(filler, status: reply.status)
                    sent += filler.count
                }
                await pipeline.endlessAnswerEnded()
            }
            var error: TransportError?
            if let dropAfter = answer.dropAfter {
                let remaining = max(reply.body.count, dropAfter + 1) - content.count
                error = TransportError.cutOff(url, unread: Int64(remaining))
            } else if Task.isCancelled {
                // The emulator stopped, and closed the connection with it.
                error = TransportError.lost(url)
            }
            transfer.finish(status: reply.status, headers: answered, error: error)
        }
    }
}

/// A request's body as the emulator reads it: a file's range is read a chunk at a time, never
/// copied, and every byte read counts as sent for the request's progress.
private struct OutgoingBody: IncomingBody, Sendable {
    static let chunk = 1 << 20

    let body: HTTPRequest.Body
    let transfer: Transfer

    func collect(upTo limit: Int) async throws -> Data {
        let data = try read(upTo: limit + 1)
        guard data.count <= limit else { throw TransportError(.connectionLost, "the request is too long") }
        return data
    }

    func prefix(_ count: Int) async throws -> Data { try read(upTo: count) }

    private func read(upTo count: Int) throws -> Data {
        switch body {
        case .none:
            return Data()
        case .data(let data):
            let part = data.prefix(count)
            transfer.sent(Int64(part.count))
            return Data(part)
        case .file(let url, let range):
            let input = try FileHandle(forReadingFrom: url)
            defer { try? input.close() }
            try input.seek(toOffset: UInt64(max(0, range.lowerBound)))
            var data = Data()
            var remaining = min(Int64(count), range.upperBound - range.lowerBound)
            while remaining > 0 {
                let chunk = try input.read(upToCount: Int(min(Int64(Self.chunk), remaining))) ?? Data()
                if chunk.isEmpty { break }
                data.append(chunk)
                transfer.sent(Int64(chunk.count))
                remaining -= Int64(chunk.count)
            }
            return data
        }
    }
}
