import Foundation
import IvyCore
import Synchronization

/// A file created on Drive, as the create response describes it: the manifest stores
/// Drive's own id and `modifiedTime`.
package struct UploadedFile: Sendable, Equatable {
    package var id: String
    package var modifiedTime: Milliseconds
    package var size: Int64?
    package var md5: String?
}

/// The folders ivy keeps its files in, twins included, oldest first: new files go to the first.
package struct DriveFolders: Sendable, Equatable {
    package var ivy: [String]
    package var books: [String]
    package var clips: [String]

    package init(ivy: [String], books: [String], clips: [String]) {
        self.ivy = ivy
        self.books = books
        self.clips = clips
    }
}

/// Everything in the books and clips folders, and whether every page was read.
package struct DriveListing: Sendable {
    package var folders: DriveFolders
    package var files: [RemoteFile]
    /// Why the listing stopped before its end; nil when every page was read. An incomplete
    /// listing never causes a local deletion.
    package var incompleteReason: String?
    package var isComplete: Bool { incompleteReason == nil }
}

/// Google Drive v3 as ivy uses it: folders, listing, delete-then-create uploads, downloads,
/// deletes — through one retry policy, one pacer and one concurrency limit.
package final class DriveClient: Sendable {
    package static let folderType = "application/vnd.google-apps.folder"
    static let fileFields = "id,name,mimeType,size,md5Checksum,modifiedTime,createdTime,parents"

    let http: DriveRequester
    let ids: IDPool
    let folderCache: FolderCache

    package init(
        drive: URL, authorized: AuthorizedTransport, concurrency: Int = 8, policy: RetryPolicy = RetryPolicy(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        let http = DriveRequester(base: drive, authorized: authorized, concurrency: concurrency, policy: policy, sleep: sleep)
        self.http = http
        ids = IDPool { count in try await http.generateIDs(count) }
        folderCache = FolderCache()
    }

    /// Requests sent (retries included), for the sync report and benchmarks.
    package var requestCount: Int { http.requests.withLock { $0 } }
    package var rateLimitCount: Int { http.rateLimitedAnswers.withLock { $0 } }
}

/// Sends Drive requests under the client's shared limits and retry policy.
final class DriveRequester: Sendable {
    let base: URL
    let authorized: AuthorizedTransport
    let policy: RetryPolicy
    let pacer: Pacer
    let limiter: RequestLimiter
    let sleep: @Sendable (Duration) async throws -> Void
    let requests = Mutex(0)
    let rateLimitedAnswers = Mutex(0)

    init(base: URL, authorized: AuthorizedTransport, concurrency: Int, policy: RetryPolicy, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.base = base
        self.authorized = authorized
        self.policy = policy
        self.sleep = sleep
        pacer = Pacer(sleep: sleep)
        limiter = RequestLimiter(limit: concurrency)
    }

    // MARK: requests

    func url(_ path: String, _ query: [String: String] = [:]) -> URL {
        var components = URLComponents(url: base.appendingPathComponent(path), resolvingAgainstBaseURL: false)
        if !query.isEmpty {
            components?.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
            // URLComponents leaves '+' alone, which servers read as a space.
            let encoded = components?.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
            components?.percentEncodedQuery = encoded
        }
        return components?.url ?? base
    }

    /// One try: a slot under the concurrency limit, the pacer's turn, the bearer token.
    /// A rate-limit answer slows the pacer for everyone.
    func attempt(_ request: HTTPRequest, download file: URL? = nil) async throws -> HTTPResponse {
        await limiter.acquire()
        let outcome: Result<HTTPResponse, any Error>
        do {
            outcome = .success(try await paced(request, download: file))
        } catch {
            outcome = .failure(error)
        }
        await limiter.release()
        return try outcome.get()
    }

    private func paced(_ request: HTTPRequest, download file: URL?) async throws -> HTTPResponse {
        let pace = try await pacer.wait()
        requests.withLock { $0 += 1 }
        do {
            let response: HTTPResponse
            if let file {
                response = try await authorized.download(request, to: file)
            } else {
                response = try await authorized.send(request)
            }
            if Self.isRateLimit(response) {
                rateLimitedAnswers.withLock { $0 += 1 }
                await pacer.rateLimited(pace: pace)
            }
            return response
        } catch let error as GoogleError {
            throw error
        } catch let tooLong as ResponseTooLong {
            // Not retried: the same request would get the same overlong answer.
            throw DriveError(
                .fileTooLarge, status: tooLong.status,
                message: "\(request.method) \(request.url.path): the answer ran past "
                    + "\(AudioRules.grouped(tooLong.limit)) bytes and was cut off")
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw DriveError(.network, message: "\(request.method) \(request.url.path): \(error.localizedDescription)")
        }
    }

    /// Sends with retries: network errors, 429, 403 rate limits and 5xx back off with full
    /// jitter (or as long as Retry-After says), bounded in attempts and total time.
    func execute(_ request: HTTPRequest, accept: Set<Int> = [200], context: String, download file: URL? = nil) async throws -> HTTPResponse {
        let started = ContinuousClock.now
        var attemptNumber = 0
        while true {
            // A sync stopped at its deadline sends nothing more.
            try Task.checkCancellation()
            attemptNumber += 1
            let failure: DriveError
            var retryAfter: Duration?
            do {
                let response = try await attempt(request, download: file)
                if accept.contains(response.status) {
                    await pacer.succeeded()
                    return response
                }
                failure = DriveError.from(response, context: context)
                // A negative Retry-After is no wait; a huge one fails the retry bound below.
                retryAfter = response.retryAfter
            } catch let error as DriveError {
                failure = error
            }
            let wait = policy.delay(attempt: attemptNumber, retryAfter: retryAfter, random: Double.random(in: 0...1))
            guard failure.isRetryable, attemptNumber < policy.maxAttempts,
                ContinuousClock.now - started + wait < policy.maxTotal
            else { throw failure }
            try await sleep(wait)
        }
    }

    static func isRateLimit(_ response: HTTPResponse) -> Bool {
        guard response.status == 429 || response.status == 403 else { return false }
        return DriveError.from(response, context: "").kind == .rateLimited
    }

    func json(_ response: HTTPResponse, context: String) throws -> [String: Any] {
        guard let object = response.json else { throw DriveError(.unexpected, status: response.status, message: "\(context): the answer is not JSON") }
        return object
    }

    // MARK: ids

    func generateIDs(_ count: Int) async throws -> [String] {
        let response = try await execute(
            HTTPRequest(method: "GET", url: url("drive/v3/files/generateIds", ["count": String(count), "space": "drive", "type": "files"])),
            context: "generating file ids")
        guard let ids = try json(response, context: "generating file ids")["ids"] as? [String], !ids.isEmpty else {
            throw DriveError(.unexpected, message: "generating file ids: no ids in the answer")
        }
        return ids
    }

    // MARK: metadata

    static func remoteFile(_ object: [String: Any]) -> RemoteFile? {
        guard let id = object["id"] as? String, let name = object["name"] as? String,
            let modified = (object["modifiedTime"] as? String).flatMap(DriveTime.milliseconds)
        else { return nil }
        return RemoteFile(
            id: id, name: name, modifiedTime: modified,
            createdTime: (object["createdTime"] as? String).flatMap(DriveTime.milliseconds),
            size: size(object["size"]), md5: object["md5Checksum"] as? String)
    }

    /// Drive's `size`, an int64 written as a JSON string. Digits too many for Int64 mean a
    /// file larger than ivy can count (Int64.max, over every cap); anything else that is not
    /// a whole number of bytes, a negative one included, means no usable size: the download
    /// is then bounded by the 50 MB cap and checked against the md5.
    static func size(_ value: Any?) -> Int64? {
        guard let text = value as? String, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return nil
        }
        return Int64(text) ?? Int64.max
    }

    func uploaded(_ response: HTTPResponse, context: String) throws -> UploadedFile {
        let object = try json(response, context: context)
        guard let file = Self.remoteFile(object) else {
            throw DriveError(.unexpected, message: "\(context): the create answer lacks id or modifiedTime")
        }
        return UploadedFile(id: file.id, modifiedTime: file.modifiedTime, size: file.size, md5: file.md5)
    }

}

extension DriveClient {
    /// Deletes a file for good; a file already gone (404) counts as deleted.
    package func delete(_ id: String) async throws {
        _ = try await http.execute(
            HTTPRequest(method: "DELETE", url: http.url("drive/v3/files/\(id)")), accept: [204, 200, 404], context: "deleting \(id)")
    }

    /// After a create answered 409, the file with our id exists: read what Drive made.
    func existing(_ id: String, context: String) async throws -> UploadedFile {
        let response = try await http.execute(
            HTTPRequest(method: "GET", url: http.url("drive/v3/files/\(id)", ["fields": "id,name,size,md5Checksum,modifiedTime"])),
            context: context)
        return try http.uploaded(response, context: context)
    }
}

/// Drive's RFC 3339 times with milliseconds.
package enum DriveTime {
    package static func milliseconds(_ text: String) -> Milliseconds? { RFC3339Time.milliseconds(text) }
}
