import Foundation
import IvyCore
import IvySystem
import Synchronization

/// Sends Drive requests under the client's shared limits and retry policy: every Drive
/// request of the client goes through `attempt` (one try) and all but a resumable upload's
/// own PUTs through `execute` (tries until done, via `RetryPolicy.run`).
final class DriveRequester: Sendable {
    let base: URL
    let authorized: AuthorizedTransport
    let policy: RetryPolicy
    let pacer: Pacer
    let limiter: RequestLimiter
    let sleep: @Sendable (Duration) async throws -> Void
    let requests = Mutex(0)
    let rateLimitedAnswers = Mutex(0)
    /// Rate-limit answers that named the whole Cloud project's quota (`quota_limit`
    /// `…PerProject`), not this user's.
    let sharedQuotaAnswers = Mutex(0)
    /// Quota units of every request sent (`QuotaUnits.cost`).
    let units = Mutex(0)
    /// Spends units within the per-minute budget, waiting when the minute's are spent.
    let budget: UnitBudget
    /// Whether the sign-in's OAuth client is the one built into this release: what a spent
    /// per-project quota says to do depends on it (`GoogleError.sharedQuotaExhausted`).
    let builtInClient: Bool

    init(
        base: URL, authorized: AuthorizedTransport, concurrency: Int, policy: RetryPolicy,
        sleep: @escaping @Sendable (Duration) async throws -> Void, now: @escaping @Sendable () -> Duration,
        unitsPerMinute: Int = QuotaBudget.perUserPerMinute, builtInClient: Bool = false
    ) {
        self.builtInClient = builtInClient
        self.base = base
        self.authorized = authorized
        self.policy = policy
        self.sleep = sleep
        pacer = Pacer(sleep: sleep, now: now)
        limiter = RequestLimiter(limit: concurrency)
        budget = UnitBudget(perMinute: unitsPerMinute, sleep: sleep, now: now)
    }

    // MARK: requests

    func url(_ path: String, _ query: [String: String] = [:]) -> URL {
        var components = URLComponents(url: base.appendingPathComponent(path), resolvingAgainstBaseURL: false)
        if !query.isEmpty {
            components?.queryItems = query.sorted { $0.key < $1.key }.map {
                URLQueryItem(name: $0.key, value: $0.value)
            }
            // URLComponents leaves '+' alone, which servers read as a space.
            let encoded = components?.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
            components?.percentEncodedQuery = encoded
        }
        return components?.url ?? base
    }

    /// One try: a slot under the concurrency limit, the pacer's turn, the bearer token.
    /// A rate-limit answer slows the pacer for everyone.
    func attempt(_ request: HTTPRequest, download file: (url: URL, offset: Int64)? = nil) async throws -> HTTPResponse {
        await limiter.acquire()
        let outcome: Result<HTTPResponse, any Error>
        do {
            outcome = .success(try await paced(request, download: file))
        } catch {
            outcome = .failure(error)
        }
        limiter.release()
        return try outcome.get()
    }

    private func paced(_ request: HTTPRequest, download file: (url: URL, offset: Int64)?) async throws -> HTTPResponse {
        let cost = QuotaUnits.cost(of: request)
        try await budget.spend(cost)
        let pace = try await pacer.wait()
        requests.withLock { $0 += 1 }
        units.withLock { $0 += cost }
        do {
            let response: HTTPResponse
            if let file {
                response = try await authorized.download(request, to: file.url, from: file.offset)
            } else {
                response = try await authorized.send(request)
            }
            if let limit = Self.rateLimit(response) {
                rateLimitedAnswers.withLock { $0 += 1 }
                if limit.sharedQuota { sharedQuotaAnswers.withLock { $0 += 1 } }
                pacer.rateLimited(pace: pace)
            }
            return response
        } catch let error as GoogleError {
            throw error
        } catch let error as StorageError {
            // A full or read-only disk here: no retry can help, and it is not the network's fault.
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
    func execute(
        _ request: HTTPRequest, accept: Set<Int> = [200], context: String,
        download file: (url: URL, offset: Int64)? = nil
    ) async throws -> HTTPResponse {
        try await policy.run(sleep: sleep, builtInClient: builtInClient) {
            () async throws -> RetryOutcome<HTTPResponse> in
            let failure: DriveError
            var retryAfter: Duration?
            do {
                let response = try await attempt(request, download: file)
                if accept.contains(response.status) {
                    pacer.succeeded()
                    return .done(response)
                }
                failure = DriveError.from(response, context: context)
                // Read without trapping on any text; one past what ivy waits ends the sync.
                retryAfter = response.retryAfter
            } catch let error as DriveError {
                failure = error
            }
            guard failure.isRetryable else { throw failure.escalated }
            return .retry(failure, retryAfter: retryAfter)
        }
    }

    /// The rate limit an answer is, in either of Google's shapes; nil for any other answer.
    static func rateLimit(_ response: HTTPResponse) -> DriveError? {
        guard response.status == 429 || response.status == 403 else { return nil }
        let error = DriveError.from(response, context: "")
        return error.kind == .rateLimited ? error : nil
    }

    /// The answer as `T`, or an error naming `context` when it is not a JSON object.
    func decode<T: Decodable>(_ type: T.Type, _ response: HTTPResponse, context: String) throws -> T {
        guard let value = response.decoded(T.self) else {
            throw DriveError(.unexpected, status: response.status, message: "\(context): the answer is not JSON")
        }
        return value
    }

    // MARK: ids

    func generateIDs(_ count: Int) async throws -> [String] {
        let context = "generating file ids"
        let response = try await execute(
            HTTPRequest(
                method: "GET",
                url: url("drive/v3/files/generateIds", ["count": String(count), "space": "drive", "type": "files"])),
            context: context)
        guard let ids = try decode(GeneratedIDs.self, response, context: context).ids, !ids.isEmpty else {
            throw DriveError(.unexpected, message: "generating file ids: no ids in the answer")
        }
        return ids
    }

    // MARK: metadata

    func uploaded(_ response: HTTPResponse, context: String) throws -> UploadedFile {
        guard let file = try decode(WireFile.self, response, context: context).remote else {
            throw DriveError(.unexpected, message: "\(context): the create answer lacks id or modifiedTime")
        }
        return UploadedFile(id: file.id, modifiedTime: file.modifiedTime, size: file.size, md5: file.md5)
    }
}
