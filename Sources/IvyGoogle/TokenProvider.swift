import Foundation
import IvyCore

/// Hands out valid access tokens. Refreshes about a minute before expiry, and many
/// concurrent callers share one refresh (single flight).
package actor TokenProvider {
    /// Refresh this long before the access token expires.
    static let margin: Milliseconds = 60_000

    private let store: TokenStore
    private let endpoints: GoogleEndpoints
    private let credentials: ClientCredentials
    private let effects: GoogleEffects
    private var token: StoredToken
    private var refreshing: Task<String, any Error>?
    /// How many refresh requests this provider made: tests and the report count them.
    package private(set) var refreshCount = 0

    package init(token: StoredToken, store: TokenStore, endpoints: GoogleEndpoints, credentials: ClientCredentials, effects: GoogleEffects) {
        self.token = token
        self.store = store
        self.endpoints = endpoints
        self.credentials = credentials
        self.effects = effects
    }

    package var account: (email: String, permissionID: String) { (token.email, token.permissionID) }

    /// A token valid for at least the margin, refreshing first when needed.
    package func accessToken() async throws -> String {
        if let reason = token.signedOutReason { throw GoogleError.signedOut(reason: reason) }
        if let access = token.accessToken, let expiresAt = token.expiresAt, effects.clock.now() < expiresAt - Self.margin {
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
        let task = Task { try await self.performRefresh() }
        refreshing = task
        let result = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
        refreshing = nil
        return try result.get()
    }

    private func performRefresh() async throws -> String {
        guard let refreshToken = token.refreshToken else { throw GoogleError.notSignedIn }
        refreshCount += 1
        let response = try await FormPost.send(effects.transport, endpoints.oauth.appendingPathComponent("token"), [
            "client_id": credentials.id, "client_secret": credentials.secret,
            "grant_type": "refresh_token", "refresh_token": refreshToken,
        ])
        guard response.status == 200 else {
            let error = response.json?["error"] as? String
            if error == "invalid_grant" {
                let reason = "Google no longer accepts the saved sign-in (revoked, or expired: apps in testing get 7-day sign-ins)"
                token.signedOutReason = reason
                token.signedOutAt = effects.clock.now()
                token.accessToken = nil
                token.expiresAt = nil
                try? store.save(token)
                throw GoogleError.signedOut(reason: reason)
            }
            if error == "invalid_client" { throw GoogleError.invalidClient }
            throw GoogleError.from(response)
        }
        let granted = try DeviceFlow.tokens(response, now: effects.clock.now())
        token.accessToken = granted.accessToken
        token.expiresAt = granted.expiresAt
        if let rotated = granted.refreshToken { token.refreshToken = rotated }
        try store.save(token)
        return granted.accessToken
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

    package func download(_ request: HTTPRequest, to file: URL) async throws -> HTTPResponse {
        try await perform(request) { try await transport.download($0, to: file) }
    }

    private func perform(_ request: HTTPRequest, _ send: (HTTPRequest) async throws -> HTTPResponse) async throws -> HTTPResponse {
        let token = try await tokens.accessToken()
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
    package var email: String
    package var permissionID: String

    package static func fetch(drive: URL, accessToken: String, transport: any HTTPTransport) async throws -> DriveAccount {
        var components = URLComponents(url: drive.appendingPathComponent("drive/v3/about"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "fields", value: "user(emailAddress,permissionId)")]
        guard let url = components?.url else { throw GoogleError.badEndpoint("bad Drive URL \(drive)") }
        let response: HTTPResponse
        do {
            response = try await transport.send(HTTPRequest(method: "GET", url: url, headers: ["Authorization": "Bearer \(accessToken)"]))
        } catch {
            throw GoogleError.network(error.localizedDescription)
        }
        guard response.status == 200, let user = response.json?["user"] as? [String: Any],
            let permissionID = user["permissionId"] as? String
        else { throw GoogleError.from(response) }
        return DriveAccount(email: user["emailAddress"] as? String ?? "unknown", permissionID: permissionID)
    }
}
