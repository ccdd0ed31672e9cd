import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP request, independent of the client library that sends it.
package struct HTTPRequest: Sendable {
    package enum Body: Sendable {
        case none
        case data(Data)
        /// Bytes `range` of a file, streamed from disk instead of read into memory.
        case file(URL, range: Range<Int64>)
    }

    package var method: String
    package var url: URL
    package var headers: [String: String]
    package var body: Body

    package init(method: String, url: URL, headers: [String: String] = [:], body: Body = .none) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
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

    package var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
}

/// Sends HTTP requests. The real one is URLSession; tests use the same one against the
/// loopback emulator, so nothing at the HTTP layer is mocked.
package protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
    /// Streams the response body into `file` (created or replaced); the returned response has an empty body.
    func download(_ request: HTTPRequest, to file: URL) async throws -> HTTPResponse
}

/// HTTP through Foundation's URLSession (libcurl and OpenSSL on Linux).
package final class URLSessionTransport: HTTPTransport {
    private let session: URLSession

    package init(timeout: TimeInterval = 60) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpMaximumConnectionsPerHost = 16
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    package func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let urlRequest = Self.urlRequest(request)
        let (data, response): (Data, URLResponse)
        switch request.body {
        case .none:
            (data, response) = try await run { session.dataTask(with: urlRequest, completionHandler: $0) }
        case .data(let body):
            (data, response) = try await run { session.uploadTask(with: urlRequest, from: body, completionHandler: $0) }
        case .file(let url, let range) where range.lowerBound == 0 && range.upperBound == FileSlice.size(of: url):
            (data, response) = try await run { session.uploadTask(with: urlRequest, fromFile: url, completionHandler: $0) }
        case .file(let url, let range):
            let slice = try FileSlice.temporaryCopy(of: url, range: range)
            defer { try? FileManager.default.removeItem(at: slice) }
            (data, response) = try await run { session.uploadTask(with: urlRequest, fromFile: slice, completionHandler: $0) }
        }
        return Self.response(response, body: data)
    }

    package func download(_ request: HTTPRequest, to file: URL) async throws -> HTTPResponse {
        let urlRequest = Self.urlRequest(request)
        // URLSession deletes its temporary file when the handler returns: move it there.
        let (_, response) = try await run { (finish: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void) in
            session.downloadTask(with: urlRequest) { temporary, response, error in
                var failure = error
                if failure == nil, let temporary {
                    do {
                        try? FileManager.default.removeItem(at: file)
                        try FileManager.default.moveItem(at: temporary, to: file)
                    } catch {
                        failure = error
                    }
                }
                finish(Data(), response, failure)
            }
        }
        return Self.response(response, body: Data())
    }

    /// Runs a URLSession task and cancels it when the awaiting task is cancelled (a sync
    /// stopped at its deadline); Foundation's async methods on Linux do not.
    private func run(
        _ make: (@escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void) -> URLSessionTask
    ) async throws -> (Data, URLResponse) {
        let handle = CancellableTask()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = make { data, response, error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let response {
                        continuation.resume(returning: (data ?? Data(), response))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                handle.start(task)
            }
        } onCancel: {
            handle.cancel()
        }
    }

    private static func urlRequest(_ request: HTTPRequest) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        return urlRequest
    }

    private static func response(_ response: URLResponse, body: Data) -> HTTPResponse {
        let http = response as? HTTPURLResponse
        var headers: [String: String] = [:]
        for (key, value) in http?.allHeaderFields ?? [:] { headers["\(key)".lowercased()] = "\(value)" }
        return HTTPResponse(status: http?.statusCode ?? 0, headers: headers, body: body)
    }
}

/// A URLSession task that a cancellation may reach before or after it starts.
private final class CancellableTask: @unchecked Sendable {
    private let lock = NSLock()
    private var task: URLSessionTask?
    private var cancelled = false

    func start(_ task: URLSessionTask) {
        lock.lock()
        self.task = task
        let cancelled = cancelled
        lock.unlock()
        task.resume()
        if cancelled { task.cancel() }
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let task = task
        lock.unlock()
        task?.cancel()
    }
}

/// URLSession uploads whole files; a resumed upload sends only the unconfirmed tail, so the
/// tail is copied to a temporary file in bounded chunks (never read whole into memory).
enum FileSlice {
    static let chunk = 1 << 20

    static func size(of file: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? NSNumber)?.int64Value ?? -1
    }

    static func temporaryCopy(of source: URL, range: Range<Int64>) throws -> URL {
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("ivy-upload-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: target.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown)
        }
        let input = try FileHandle(forReadingFrom: source)
        let output = try FileHandle(forWritingTo: target)
        defer {
            try? input.close()
            try? output.close()
        }
        try input.seek(toOffset: UInt64(range.lowerBound))
        var remaining = range.upperBound - range.lowerBound
        while remaining > 0 {
            let data = try input.read(upToCount: min(chunk, Int(remaining))) ?? Data()
            if data.isEmpty { break }
            try output.write(contentsOf: data)
            remaining -= Int64(data.count)
        }
        return target
    }
}
