package import Foundation
import IvyCore
import IvySystem
import Synchronization

/// Hands out valid access tokens. Refreshes about a minute before expiry, and many
/// concurrent callers share one refresh (single flight).
package actor TokenProvider {
    /// Refresh this long before the access token expires.
    static let margin: Milliseconds = 60_000

    /// Where a refreshed or signed-out token goes: the token file, or (doctor) memory.
    private let save: @Sendable (StoredToken) throws -> Void
    private let endpoints: GoogleEndpoints
    private let credentials: ClientCredentials
    private let effects: GoogleEffects
    private let policy: RetryPolicy
    private var token: StoredToken {
        didSet { usable.withLock { $0 = Self.usable(token) } }
    }
    /// The access token and when it expires, while signed in: read by `currentAccessToken`
    /// without a hop onto this actor, which every Drive request would otherwise take.
    private let usable: Mutex<(access: String, expiresAt: Milliseconds)?>
    private var refreshing: Task<String, any Error>?
    /// How many refresh requests this provider made: tests and the report count them.
    package private(set) var refreshCount = 0

    package init(
        token: StoredToken, store: TokenStore, endpoints: GoogleEndpoints, credentials: ClientCredentials,
        effects: GoogleEffects,
        policy: RetryPolicy = RetryPolicy()
    ) {
        self.init(
            token: token, saving: { try store.save($0) }, endpoints: endpoints, credentials: credentials,
            effects: effects, policy: policy)
    }

    /// A provider that hands each token it gets to `saving` instead of the token file: for a
    /// caller that must not write the file while it waits on the network (`ivy doctor`).
    package init(
        token: StoredToken, saving: @escaping @Sendable (StoredToken) throws -> Void, endpoints: GoogleEndpoints,
        credentials: ClientCredentials, effects: GoogleEffects, policy: RetryPolicy = RetryPolicy()
    ) {
        self.token = token
        usable = Mutex(Self.usable(token))
        self.save = saving
        self.endpoints = endpoints
        self.credentials = credentials
        self.effects = effects
        self.policy = policy
    }

    package var account: (email: String, permissionID: String) { (token.email, token.permissionID) }

    private static func usable(_ token: StoredToken) -> (access: String, expiresAt: Milliseconds)? {
        guard token.signedOutReason == nil, let access = token.accessToken, let expiresAt = token.expiresAt else {
            return nil
        }
        return (access, expiresAt)
    }

    /// The access token if it is valid for at least the margin; nil when `accessToken()` must
    /// be asked (to refresh, or to say why there is none).
    package nonisolated func currentAccessToken() -> String? {
        usable.withLock { usable in
            guard let usable, effects.clock.now() < usable.expiresAt - Self.margin else { return nil }
            return usable.access
        }
    }

    /// A token valid for at least the margin, refreshing first when needed.
    package func accessToken() async throws -> String {
        if let reason = token.signedOutReason { throw GoogleError.signedOut(reason: reason) }
        if let access = token.accessToken, let expiresAt = token.expiresAt,
            effects.clock.now() < expiresAt - Self.margin
        {
            return access
        }
        return try await refreshed()
    }

    /// Drive refused `rejected` (401): refresh once, unless another caller already has.
    package func tokenRejected(_ rejected: String) async throws -> String {
        if let current = token.accessToken, current != rejected, token.signedOutReason == nil { return current }
        return try await refreshed()
    }

    private func refreshed() async throws -> String {
        if let inFlight = refreshing { return try await inFlight.valueCancellingWithCaller() }
        let task = Task(executorPreference: BlockingExecutor.shared) { try await self.performRefresh() }
        refreshing = task
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        refreshing = nil
        return try result.get()
    }

    /// Asks the token endpoint for a new access token. A network error, 408, 429, 5xx or an
    /// OAuth `internal_failure`/`server_error`/`temporarily_unavailable` is retried under the
    /// Drive calls' policy (google-auth-library-python's `_can_retry` retries the same);
    /// only `invalid_grant` means the sign-in is over.
    private func performRefresh() async throws -> String {
        guard let refreshToken = token.refreshToken else { throw GoogleError.notSignedIn }
        // Another client's refresh would be refused (invalid_grant or invalid_client), and that
        // refusal must never end a sign-in that works with its own client.
        guard credentials.id == token.clientID else {
            throw GoogleError.clientMismatch(signedInWith: token.clientID, configured: credentials.id)
        }
        let url = endpoints.oauth.appendingPathComponent("token")
        let fields = [
            "client_id": credentials.id, "client_secret": credentials.secret,
            "grant_type": "refresh_token", "refresh_token": refreshToken,
        ]
        let response = try await policy.run(sleep: effects.sleep) { () async throws -> RetryOutcome<HTTPResponse> in
            refreshCount += 1
            let response: HTTPResponse
            do {
                response = try await FormPost.send(effects.transport, url, fields)
            } catch GoogleError.network(let message) {
                return .retry(GoogleError.network(message), retryAfter: nil)
            }
            if response.status == 200 { return .done(response) }
            let code = GoogleError.oauthCode(response)
            if code == "invalid_grant" { throw signOut() }
            if code == "invalid_client" { throw GoogleError.invalidClient }
            guard Self.isRetryable(response) else { throw GoogleError.from(response) }
            return .retry(GoogleError.from(response), retryAfter: response.retryAfter)
        }
        let granted = try DeviceFlow.tokens(response, now: effects.clock.now())
        token.accessToken = granted.accessToken
        token.expiresAt = granted.expiresAt
        if let rotated = granted.refreshToken { token.refreshToken = rotated }
        try save(token)
        return granted.accessToken
    }

    /// Google refused the refresh token: recorded in the token file, so `status` can say why.
    private func signOut() -> GoogleError {
        let reason =
            "Google no longer accepts the saved sign-in (revoked, or expired: apps in testing get 7-day sign-ins)"
        token.signedOutReason = reason
        token.signedOutAt = effects.clock.now()
        token.accessToken = nil
        token.expiresAt = nil
        try? save(token)
        return GoogleError.signedOut(reason: reason)
    }

    static func isRetryable(_ response: HTTPResponse) -> Bool {
        if [408, 429].contains(response.status) || (500...599).contains(response.status) { return true }
        let code = GoogleError.oauthCode(response) ?? ""
        return ["internal_failure", "server_error", "temporarily_unavailable"].contains(code)
    }
}

/// Sends Drive requests with the bearer token; a 401 refreshes once and retries once.
package struct AuthorizedTransport: Sendable {
    package let tokens: TokenProvider
    package let transport: any HTTPTransport

    package init(tokens: TokenProvider, transport: any HTTPTransport) {
        self.tokens = tokens
        self.transport = transport
    }

    package func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await perform(request) { try await transport.send($0) }
    }

    package func download(_ request: HTTPRequest, to file: URL, from offset: Int64 = 0) async throws -> HTTPResponse {
        try await perform(request) { try await transport.download($0, to: file, from: offset) }
    }

    private func perform(_ request: HTTPRequest, _ send: (HTTPRequest) async throws -> HTTPResponse) async throws
        -> HTTPResponse
    {
        let token: String
        if let current = tokens.currentAccessToken() {
            token = current
        } else {
            token = try await tokens.accessToken()
        }
        let first = try await send(Self.authorized(request, token))
        guard first.status == 401 else { return first }
        let fresh = try await tokens.tokenRejected(token)
        return try await send(Self.authorized(request, fresh))
    }

    static func authorized(_ request: HTTPRequest, _ token: String) -> HTTPRequest {
        var copy = request
        copy.headers["Authorization"] = "Bearer \(token)"
        return copy
    }
}

/// Who signed in, from Drive's `about` (`fields=user`).
package struct DriveAccount: Sendable, Equatable {
    /// The account's address, or "Google account PERMISSION_ID" when Drive does not show it.
    package var email: String
    package var permissionID: String
    /// False when Drive left the address out and `email` names the permission id instead.
    package var emailShown = true

    /// The signed-in account. Retried as every Drive request is (network errors, rate limits,
    /// 5xx), through the same policy and the injected `sleep`.
    package static func fetch(
        drive: URL, accessToken: String, transport: any HTTPTransport, policy: RetryPolicy = RetryPolicy(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) async throws -> DriveAccount {
        var components = URLComponents(
            url: drive.appendingPathComponent("drive/v3/about"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "fields", value: "user(emailAddress,permissionId)")]
        guard let url = components?.url else { throw GoogleError.badEndpoint("bad Drive URL \(drive)") }
        let request = HTTPRequest(method: "GET", url: url, headers: ["Authorization": "Bearer \(accessToken)"])
        let response = try await policy.run(sleep: sleep) { () async throws -> RetryOutcome<HTTPResponse> in
            let response: HTTPResponse
            do {
                response = try await transport.send(request)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                return .retry(GoogleError.network(error.localizedDescription), retryAfter: nil)
            }
            if response.status == 200 { return .done(response) }
            guard DriveError.from(response, context: "").isRetryable else { throw GoogleError.from(response) }
            return .retry(GoogleError.from(response), retryAfter: response.retryAfter)
        }
        guard let user = response.decoded(AboutAnswer.self)?.user, let permissionID = user.permissionId else {
            throw GoogleError.from(response)
        }
        // Drive's User resource: the address "may not be present in certain contexts if the
        // user has not made their email address visible to the requester". The permission id
        // always is, and is what ivy keys the account on anyway.
        guard let email = user.emailAddress, !email.isEmpty else {
            return DriveAccount(email: "Google account \(permissionID)", permissionID: permissionID, emailShown: false)
        }
        return DriveAccount(email: email, permissionID: permissionID)
    }
}
