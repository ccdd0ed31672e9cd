package import Foundation
import IvySystem
import Synchronization

#if canImport(FoundationNetworking)
    package import FoundationNetworking
#endif

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

/// Sends HTTP requests. The real one is URLSession; tests use the same one against the
/// loopback emulator, so nothing at the HTTP layer is mocked.
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

/// HTTP through Foundation's URLSession (libcurl and OpenSSL on Linux), driven through a
/// delegate so every answer streams: a body is counted as it arrives and cut off at the
/// request's limit, and a download goes straight into ivy's own 0600 file (URLSession's
/// download tasks write a world-readable temporary file in /tmp first).
package final class URLSessionTransport: HTTPTransport {
    private let session: URLSession
    private let transfers: TransferDelegate
    /// The largest file body sent from memory rather than read from its file as it goes.
    static let inMemoryUpload: Int64 = 8 << 20

    /// `inlineCallbacks`: URLSession's callbacks run on its own thread, as libcurl hands over
    /// each chunk, instead of on a queue: a transfer that must stop (it wanted only the status,
    /// or its body passed the limit) says so before libcurl reads another chunk, whatever the
    /// machine's load, and the cancel follows at once. For a session of its own whose caller
    /// wants little of the answer (a health-check ping); Drive's transfers keep their queue.
    package init(timeout: TimeInterval = 60, inlineCallbacks: Bool = false) {
        Self.noDiskCache()
        // Not `.ephemeral`: on Linux it builds a URLCache that creates
        // ~/.cache/org.swift.foundation.URLCache/<program> even when the session never uses it.
        let configuration = URLSessionConfiguration.default
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpMaximumConnectionsPerHost = 16
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        let queue = inlineCallbacks ? InlineQueue() : OperationQueue()
        // One at a time, in order: a task's data arrives before its completion.
        queue.maxConcurrentOperationCount = 1
        let transfers = TransferDelegate(inline: inlineCallbacks)
        self.transfers = transfers
        session = URLSession(configuration: configuration, delegate: transfers, delegateQueue: queue)
    }

    deinit { session.finishTasksAndInvalidate() }

    /// Every URLSessionConfiguration starts from URLCache.shared, whose default creates a
    /// cache directory under ~/.cache. Replaced once, before any configuration exists, by a
    /// cache with no memory, no disk and no directory ("/dev/null" cannot become one).
    private static let diskless: Void = {
        URLCache.shared = URLCache(memoryCapacity: 0, diskCapacity: 0, diskPath: "/dev/null")
    }()

    private static func noDiskCache() { _ = diskless }

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
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        var slice: URL?
        defer { if let slice { unlink(slice.path) } }
        let task: URLSessionTask
        switch request.body {
        case .none:
            task = session.dataTask(with: urlRequest)
        case .data(let body):
            task = session.uploadTask(with: urlRequest, from: body)
        case .file(let url, let range) where range.count <= Self.inMemoryUpload:
            // From memory: URLSession on Linux pauses a file's upload while it reads the file,
            // and a task cancelled then (a sync stopped at once) crashes the process when the
            // read ends (swift-corelibs-foundation's `try!` of curl_easy_pause on a handle
            // already removed). A clip's MP3 is well under the limit.
            task = session.uploadTask(with: urlRequest, from: try FileSlice.read(url, range: range))
        case .file(let url, let range) where range.lowerBound == 0 && range.upperBound == FileSlice.size(of: url):
            task = session.uploadTask(with: urlRequest, fromFile: url)
        case .file(let url, let range):
            let copy = try FileSlice.privateCopy(of: url, range: range)
            slice = copy
            task = session.uploadTask(with: urlRequest, fromFile: copy)
        }
        let transfer = Transfer(
            limit: max(0, request.responseLimit), file: file, progress: request.progress,
            statusOnly: request.statusOnly)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    transfer.begin(continuation)
                    transfers.register(transfer, for: task)
                    task.resume()
                    if Task.isCancelled {
                        task.cancel()
                        transfer.cancel()
                    }
                }
            } onCancel: {
                task.cancel()
                // Under load, URLSession on Linux now and then never reports the end of a task
                // cancelled early (a watch stopped at once hung on two of sixteen uploads): the
                // caller is answered here, whatever URLSession does later.
                transfer.cancel()
            }
        } catch  where Task.isCancelled {
            throw CancellationError()
        }
    }
}

/// A delegate queue that runs each callback where URLSession adds it: on URLSession's own
/// work queue, inside libcurl's read (`URLSessionTransport`'s `inlineCallbacks`).
private final class InlineQueue: OperationQueue, @unchecked Sendable {
    override func addOperation(_ block: @escaping @Sendable () -> Void) { block() }
}

/// Routes URLSession's delegate calls to the transfer each task belongs to.
private final class TransferDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let transfers = Mutex<[Int: Transfer]>([:])
    /// Callbacks run on URLSession's work queue (`InlineQueue`), which URLSession's `cancel`
    /// waits for: anything that calls back into URLSession goes to another thread.
    private let inline: Bool
    /// Tasks told to stop (once each: every chunk libcurl reads before the cancel lands asks).
    private let stopping = Mutex<Set<Int>>([])

    init(inline: Bool) {
        self.inline = inline
    }

    /// Cancels `task` now, or from another thread when this callback runs on URLSession's own.
    private func stop(_ task: URLSessionTask) {
        guard stopping.withLock({ $0.insert(task.taskIdentifier).inserted }) else { return }
        guard inline else { return task.cancel() }
        DispatchQueue.global().async { task.cancel() }
    }

    func register(_ transfer: Transfer, for task: URLSessionTask) {
        transfers.withLock { $0[task.taskIdentifier] = transfer }
    }

    /// The status line and headers: a transfer that wants only them is answered and ended here.
    /// (On Linux, URLSession ignores the disposition and reads on until the cancel takes effect;
    /// the transfer drops whatever comes meanwhile.)
    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let transfer = transfers.withLock({ $0[dataTask.taskIdentifier] }),
            let response = response as? HTTPURLResponse, !transfer.responded(response)
        else { return completionHandler(.allow) }
        stop(dataTask)
        completionHandler(.cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let transfer = transfers.withLock({ $0[dataTask.taskIdentifier] }) else { return }
        let status = (dataTask.response as? HTTPURLResponse)?.statusCode ?? 0
        if !transfer.receive(data, status: status) { stop(dataTask) }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        transfers.withLock { $0[task.taskIdentifier] }?.sent(bytesSent)
    }

    /// Never follow a redirect: Drive's API does not send them, and following one would carry
    /// the bearer token to wherever it points. The 3xx itself is the answer.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    /// A 401 with a WWW-Authenticate header becomes a challenge; ivy answers 401s itself (a
    /// token refresh), so the challenge is declined and the 401 is the answer.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        transfers.withLock { $0[task.taskIdentifier] }?.challenged()
        // Declining cancels the task, which waits for URLSession's own queue.
        guard inline else { return completionHandler(.cancelAuthenticationChallenge, nil) }
        DispatchQueue.global().async { completionHandler(.cancelAuthenticationChallenge, nil) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        stopping.withLock { _ = $0.remove(task.taskIdentifier) }
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        transfer.finish(response: task.response as? HTTPURLResponse, error: error)
    }
}

/// One request's answer as it arrives: counted against the limit, kept in memory or written
/// to the download file, then handed to the waiting caller. (`package` for the tests'
/// in-process transport, which answers through the same rules.)
package final class Transfer: Sendable {
    /// An error answer is read into memory up to this much, whatever the request's limit.
    static let errorBodyLimit: Int64 = 1 << 20

    private struct State {
        var continuation: CheckedContinuation<HTTPResponse, any Error>?
        var body = Data()
        var received: Int64 = 0
        var tooLong = false
        var writeError: Int32?
        var challenged = false
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
    package func responded(_ response: HTTPURLResponse) -> Bool {
        guard statusOnly else { return true }
        var headers: [String: String] = [:]
        for (key, value) in response.allHeaderFields { headers["\(key)".lowercased()] = "\(value)" }
        answerStatusOnly(HTTPResponse(status: response.statusCode, headers: headers))
        return false
    }

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

    func challenged() { state.withLock { $0.challenged = true } }

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
    /// The caller is answered with that failure at once, as `cancel` answers: URLSession on
    /// Linux now and then never reports the end of the task cancelled next.
    package func receive(_ data: Data, status: Int) -> Bool {
        // A status-only caller not answered yet (no headers were told: an answer URLSession
        // keeps to itself until its end, a 3xx) is answered at the first byte of the body.
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
    private func stopped(_ state: State, status: Int) -> (any Error)? {
        if let failure = state.writeError {
            return path.flatMap { StorageError(path: $0, errno: failure) } ?? CocoaError.error(failure, path: path)
        }
        return state.tooLong ? ResponseTooLong(limit: limit, status: status) : nil
    }

    package func finish(response: HTTPURLResponse?, error: (any Error)?) {
        let (continuation, result): (CheckedContinuation<HTTPResponse, any Error>?, Result<HTTPResponse, any Error>) =
            state.withLock { state in
                let continuation = state.continuation
                state.continuation = nil
                let status = response?.statusCode ?? 0
                if let failure = stopped(state, status: status) { return (continuation, .failure(failure)) }
                // A declined challenge ends in a cancellation; the 401 it came with is the answer.
                if let error, !(state.challenged && response?.statusCode == 401) {
                    return (continuation, .failure(error))
                }
                guard let response else { return (continuation, .failure(URLError(.badServerResponse))) }
                var headers: [String: String] = [:]
                for (key, value) in response.allHeaderFields { headers["\(key)".lowercased()] = "\(value)" }
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

/// URLSession uploads whole files; a resumed upload sends only the unconfirmed tail, so the
/// tail is copied in bounded chunks (never read whole into memory) to a `.upload-` file
/// beside the source: ivy's private audio directory, mode 0600. A run killed mid-upload
/// leaves it behind; the next sync removes it (`TransferFiles.removeLeftovers`).
enum FileSlice {
    static let chunk = 1 << 20

    /// The bytes of `range` of `file`, read whole (a range no bigger than
    /// `URLSessionTransport.inMemoryUpload`).
    static func read(_ file: URL, range: Range<Int64>) throws -> Data {
        let input = try FileHandle(forReadingFrom: file)
        defer { try? input.close() }
        try input.seek(toOffset: UInt64(max(0, range.lowerBound)))
        return try input.read(upToCount: Int(range.upperBound - range.lowerBound)) ?? Data()
    }

    static func size(of file: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? NSNumber)?.int64Value ?? -1
    }

    static func privateCopy(of source: URL, range: Range<Int64>) throws -> URL {
        let target = source.deletingLastPathComponent()
            .appendingPathComponent(TransferFiles.uploadPrefix + UUID().uuidString)
        let descriptor: Int32
        do {
            descriptor = try PrivateFile.open(target.path, .createNew)
        } catch {
            throw StorageError(path: target.path, errno: error.code) ?? CocoaError.error(error.code, path: target.path)
        }
        defer { close(descriptor) }
        do {
            let input = try FileHandle(forReadingFrom: source)
            defer { try? input.close() }
            try input.seek(toOffset: UInt64(max(0, range.lowerBound)))
            var remaining = range.upperBound - range.lowerBound
            while remaining > 0 {
                let data = try input.read(upToCount: Int(min(Int64(chunk), remaining))) ?? Data()
                if data.isEmpty { break }
                // A full disk is the sync's stop, said as such, like every other write's.
                if let code = PrivateFile.writeAll(data, to: descriptor) {
                    throw StorageError(path: target.path, errno: code) ?? CocoaError.error(code, path: target.path)
                }
                remaining -= Int64(data.count)
            }
        } catch {
            unlink(target.path)
            throw error
        }
        return target
    }
}
