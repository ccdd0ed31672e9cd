package import Foundation
import IvySystem
import Synchronization

/// One HTTP request, independent of the client library that sends it.
package struct HTTPRequest: Sendable {
    package enum Body: Sendable {
        case none
        case data(Data)
        /// Bytes `range` of a file, streamed from disk instead of read into memory.
        case file(URL, range: Range<Int64>)
    }

    /// 8 MiB: far more than any answer ivy reads into memory (a listing page of 1,000 files
    /// is about 0.4 MiB), far less than would strain memory.
    package static let defaultResponseLimit: Int64 = 8 << 20

    package var method: String
    package var url: URL
    package var headers: [String: String]
    package var body: Body
    /// The most bytes of a 2xx answer's body to read. A longer answer fails with
    /// `ResponseTooLong` as soon as it passes the limit, without the rest being read. An
    /// error answer has a limit of its own (1 MiB), so a small file's limit never cuts off
    /// the JSON that says why it was refused.
    package var responseLimit: Int64
    /// Told of the body's bytes as they go out, and of a download's as they reach its file
    /// (an upload's answer is Drive's JSON, not the file's bytes): a chunk at a time, on the
    /// transport's own thread, so it must be quick.
    package var progress: (@Sendable (Int64) -> Void)?
    /// Only the status matters (a health-check ping): the caller is answered as soon as the
    /// status line and headers arrive, with an empty body, and the transfer is cancelled then,
    /// so a server that streams without end hands over what its sockets hold, not more.
    package var statusOnly = false

    package init(
        method: String, url: URL, headers: [String: String] = [:], body: Body = .none,
        responseLimit: Int64 = HTTPRequest.defaultResponseLimit, progress: (@Sendable (Int64) -> Void)? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.responseLimit = responseLimit
        self.progress = progress
    }
}

/// An answer whose body went past the request's `responseLimit`; reading stopped there.
package struct ResponseTooLong: Error, Sendable, Equatable {
    package var limit: Int64
    package var status: Int
}

package struct HTTPResponse: Sendable {
    package var status: Int
    /// Header names in lower case.
    package var headers: [String: String]
    package var body: Data

    package init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Sends HTTP requests. The real one is `HTTPClientTransport` (AsyncHTTPClient); tests use the
/// same one against the loopback emulator, so nothing at the HTTP layer is mocked, or
/// `EmulatorTransport`, which answers through the same `Transfer` rules.
package protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
    /// Streams a 2xx answer's body into `file` (created with mode 0600) from byte `offset`
    /// on, dropping whatever the file held from there, and returns the response with an
    /// empty body. Any other answer is Drive's error: its body comes back in memory, so its
    /// reason can be read.
    func download(_ request: HTTPRequest, to file: URL, from offset: Int64) async throws -> HTTPResponse
}

extension HTTPTransport {
    /// The whole answer into `file`, emptied first.
    package func download(_ request: HTTPRequest, to file: URL) async throws -> HTTPResponse {
        try await download(request, to: file, from: 0)
    }
}

/// One request's answer as it arrives: counted against the limit, kept in memory or written
/// to the download file, then handed to the caller: returned (`result`, for a caller that
/// reads the answer in its own task, as `HTTPClientTransport` does) or resumed (`begin`,
/// for one that is told by callbacks, as the tests' in-process transport is). (`package` for
/// that transport, which answers through the same rules.)
package final class Transfer: Sendable {
    /// An error answer is read into memory up to this much, whatever the request's limit.
    static let errorBodyLimit: Int64 = 1 << 20

    private struct State {
        var continuation: CheckedContinuation<HTTPResponse, any Error>?
        var body = Data()
        var received: Int64 = 0
        var tooLong = false
        var writeError: Int32?
        /// The caller was answered with a cancellation: nothing more is written or reported.
        var cancelled = false
    }

    private let limit: Int64
    private let file: Int32?
    private let path: String?
    private let progress: (@Sendable (Int64) -> Void)?
    /// Answered at the status and headers (`HTTPRequest.statusOnly`).
    private let statusOnly: Bool
    private let state = Mutex(State())

    package init(
        limit: Int64, file: (descriptor: Int32, path: String)?, progress: (@Sendable (Int64) -> Void)?,
        statusOnly: Bool = false
    ) {
        self.limit = limit
        self.file = file?.descriptor
        self.path = file?.path
        self.progress = progress
        self.statusOnly = statusOnly
    }

    /// The status line and headers arrived. True when the transfer goes on; false for a
    /// transfer that wanted only them: its caller is answered now, with an empty body, and
    /// nothing more is read or reported.
    package func responded(status: Int, headers: [String: String]) -> Bool {
        guard statusOnly else { return true }
        answerStatusOnly(HTTPResponse(status: status, headers: headers))
        return false
    }

    /// The bytes of the answer's body received so far.
    package var received: Int64 { state.withLock { $0.received } }

    /// Answers a status-only caller with `response`, if it still waits, and stops the transfer.
    private func answerStatusOnly(_ response: HTTPResponse) {
        let continuation = state.withLock { state in
            state.cancelled = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: response)
    }

    /// Body bytes handed to the connection.
    package func sent(_ count: Int64) {
        guard let progress, count > 0, !state.withLock({ $0.cancelled }) else { return }
        progress(count)
    }

    package func begin(_ continuation: CheckedContinuation<HTTPResponse, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    /// Answers the caller with a cancellation now, if it is still waiting; later data is
    /// dropped, so a download's file (closed once the caller returns) is never written again.
    package func cancel() {
        let continuation = state.withLock { state in
            state.cancelled = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(throwing: CancellationError())
    }

    /// False when the transfer must stop: the body passed its limit or the file write failed.
    /// A waiting caller is answered with that failure at once, as `cancel` answers, whatever
    /// the connection does next.
    package func receive(_ data: Data, status: Int) -> Bool {
        // A status-only caller not answered yet (no headers were told) is answered at the
        // first byte of the body.
        if statusOnly {
            answerStatusOnly(HTTPResponse(status: status))
            return false
        }
        let (proceed, waiting, failure) = state.withLock {
            state -> (Bool, CheckedContinuation<HTTPResponse, any Error>?, (any Error)?) in
            guard !state.tooLong, state.writeError == nil, !state.cancelled else { return (false, nil, nil) }
            let success = (200..<300).contains(status)
            let toFile = file != nil && success
            // The limit is for the content asked for. An error answer is Drive's JSON, whose
            // reason decides a retry: a rate limit on a 200-byte file still sends a longer body.
            let cap = success ? limit : Self.errorBodyLimit
            guard state.received + Int64(data.count) <= cap else {
                state.tooLong = true
                defer { state.continuation = nil }
                return (false, state.continuation, stopped(state, status: status))
            }
            state.received += Int64(data.count)
            if toFile, let file {
                if let failure = PrivateFile.writeAll(data, to: file) {
                    state.writeError = failure
                    defer { state.continuation = nil }
                    return (false, state.continuation, stopped(state, status: status))
                }
            } else {
                state.body.append(data)
            }
            return (true, nil, nil)
        }
        if let waiting, let failure { waiting.resume(throwing: failure) }
        if proceed, let progress, file != nil, (200..<300).contains(status), !data.isEmpty {
            progress(Int64(data.count))
        }
        return proceed
    }

    /// Why the transfer stopped before its end, or nil when `receive` never refused it.
    package func stopReason(status: Int) -> (any Error)? {
        state.withLock { stopped($0, status: status) }
    }

    /// The answer, for a caller that read it in its own task: the body (empty for a download
    /// written to its file), or why reading stopped.
    package func result(status: Int, headers: [String: String]) throws -> HTTPResponse {
        try state.withLock { state in
            if let failure = stopped(state, status: status) { throw failure }
            return HTTPResponse(status: status, headers: headers, body: state.body)
        }
    }

    private func stopped(_ state: State, status: Int) -> (any Error)? {
        if let failure = state.writeError {
            return path.flatMap { StorageError(path: $0, errno: failure) } ?? CocoaError.error(failure, path: path)
        }
        return state.tooLong ? ResponseTooLong(limit: limit, status: status) : nil
    }

    /// The exchange ended: with the answer's `status` and `headers` (nil when none came), or
    /// `error`. A waiting caller is answered with the answer, or why it stopped.
    package func finish(status: Int?, headers: [String: String], error: (any Error)?) {
        let (continuation, result): (CheckedContinuation<HTTPResponse, any Error>?, Result<HTTPResponse, any Error>) =
            state.withLock { state in
                let continuation = state.continuation
                state.continuation = nil
                if let failure = stopped(state, status: status ?? 0) { return (continuation, .failure(failure)) }
                if let error { return (continuation, .failure(error)) }
                guard let status else {
                    return (continuation, .failure(TransportError(.connectionLost, "no answer came")))
                }
                return (continuation, .success(HTTPResponse(status: status, headers: headers, body: state.body)))
            }
        continuation?.resume(with: result)
    }
}

extension Transfer {
    /// Opens a download's file: created with mode 0600, or emptied.
    /// `file` opened (0600) for a download's bytes from `offset` on: emptied for a whole
    /// answer; for a range, cut back to `offset`, since a retried range starts again where
    /// it started before and its earlier try's bytes go.
    package static func openDownload(_ file: URL, from offset: Int64 = 0) throws -> Int32 {
        let descriptor: Int32
        do {
            descriptor = try PrivateFile.open(file.path, offset > 0 ? .readWrite : .truncate)
        } catch {
            throw StorageError(path: file.path, errno: error.code) ?? CocoaError.error(error.code, path: file.path)
        }
        if offset > 0, ftruncate(descriptor, off_t(offset)) != 0 || lseek(descriptor, off_t(offset), SEEK_SET) < 0 {
            let code = errno
            close(descriptor)
            throw StorageError(path: file.path, errno: code) ?? CocoaError.error(code, path: file.path)
        }
        return descriptor
    }
}

extension CocoaError {
    /// A file error from an errno, in Foundation's words.
    static func error(_ code: Int32, path: String?) -> CocoaError {
        var info: [String: Any] = [NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)]
        if let path { info[NSFilePathErrorKey] = path }
        return CocoaError(code == ENOSPC ? .fileWriteOutOfSpace : .fileWriteUnknown, userInfo: info)
    }
}
