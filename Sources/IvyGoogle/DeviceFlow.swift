import Foundation
package import IvyCore

/// What the person needs to approve a sign-in.
package struct DeviceAuthorization: Sendable, Equatable {
    package var deviceCode: String
    package var userCode: String
    package var verificationURL: String
    package var expiresIn: Int
    package var interval: Int
}

/// Tokens from a finished sign-in or a refresh.
package struct GrantedTokens: Sendable {
    package var accessToken: String
    package var refreshToken: String?
    package var expiresAt: Milliseconds
    package var scope: String?
}

/// Google's OAuth 2.0 device authorization grant: works on a headless machine and over SSH.
package struct DeviceFlow: Sendable {
    package static let scope = "https://www.googleapis.com/auth/drive.file"
    static let grantType = "urn:ietf:params:oauth:grant-type:device_code"

    let endpoints: GoogleEndpoints
    let credentials: ClientCredentials
    let effects: GoogleEffects

    package init(endpoints: GoogleEndpoints, credentials: ClientCredentials, effects: GoogleEffects) {
        self.endpoints = endpoints
        self.credentials = credentials
        self.effects = effects
    }

    /// Asks for a device code and the user code to show.
    package func start() async throws -> DeviceAuthorization {
        let response = try await post("device/code", ["client_id": credentials.id, "scope": Self.scope])
        guard response.status == 200, let answer = response.decoded(DeviceCodeAnswer.self) else {
            throw Self.failure(response)
        }
        guard let deviceCode = answer.deviceCode, let userCode = answer.userCode, let url = answer.verificationURL
        else {
            throw GoogleError.unexpectedResponse(
                "the device code answer lacks device_code, user_code or verification_url")
        }
        return DeviceAuthorization(
            deviceCode: deviceCode, userCode: userCode, verificationURL: url,
            expiresIn: OAuthLimits.seconds(answer.expiresIn, in: OAuthLimits.deviceCodeLifetime) ?? 1800,
            interval: OAuthLimits.seconds(answer.interval, in: OAuthLimits.pollInterval) ?? 5)
    }

    /// Polls until the person approves, denies, or the code expires. `slow_down` adds 5 s
    /// to the interval; network trouble backs off and keeps polling until the code expires.
    package func waitForApproval(_ authorization: DeviceAuthorization) async throws -> GrantedTokens {
        let lifetime = authorization.expiresIn.clamped(to: OAuthLimits.deviceCodeLifetime)
        let deadline = effects.clock.now() + Milliseconds(lifetime) * 1000
        var interval = authorization.interval.clamped(to: OAuthLimits.pollInterval)
        var backoff = 1
        while true {
            try await effects.sleep(.seconds(interval))
            guard effects.clock.now() < deadline else { throw GoogleError.codeExpired }
            let response: HTTPResponse
            do {
                response = try await post(
                    "token",
                    [
                        "client_id": credentials.id, "client_secret": credentials.secret,
                        "device_code": authorization.deviceCode, "grant_type": Self.grantType,
                    ])
            } catch {
                try await effects.sleep(.seconds(backoff))
                backoff = min(backoff * 2, 60)
                continue
            }
            if response.status == 200 { return try Self.tokens(response, now: effects.clock.now()) }
            switch GoogleError.oauthCode(response) {
            case "authorization_pending": continue
            case "slow_down": interval += 5
            case "access_denied": throw GoogleError.accessDenied
            // Google answers invalid_grant for a device code it no longer takes (its own
            // clock passed the code's deadline a little before ivy's did); RFC 8628 says
            // expired_token. A code ivy polls for was never redeemed, so either means expired.
            case "invalid_grant", "expired_token": throw GoogleError.codeExpired
            case "invalid_client": throw GoogleError.invalidClient
            default:
                guard response.status >= 500 else { throw Self.failure(response) }
                try await effects.sleep(.seconds(backoff))
                backoff = min(backoff * 2, 60)
            }
        }
    }

    /// Revokes a token (either of a pair revokes both). Google answers 200, or 400 for a
    /// token it no longer knows; both mean the sign-in is gone.
    package static func revoke(_ token: String, endpoints: GoogleEndpoints, transport: any HTTPTransport) async throws
        -> HTTPResponse
    {
        try await FormPost.send(transport, endpoints.oauth.appendingPathComponent("revoke"), ["token": token])
    }

    func post(_ path: String, _ fields: [String: String]) async throws -> HTTPResponse {
        try await FormPost.send(effects.transport, endpoints.oauth.appendingPathComponent(path), fields)
    }

    static func tokens(_ response: HTTPResponse, now: Milliseconds) throws -> GrantedTokens {
        guard let answer = response.decoded(TokenAnswer.self), let access = answer.accessToken else {
            throw GoogleError.unexpectedResponse("the token answer has no access_token")
        }
        let lifetime = OAuthLimits.seconds(answer.expiresIn, in: OAuthLimits.accessTokenLifetime) ?? 3600
        return GrantedTokens(
            accessToken: access, refreshToken: answer.refreshToken,
            expiresAt: now + Milliseconds(lifetime) * 1000, scope: answer.scope)
    }

    static func failure(_ response: HTTPResponse) -> GoogleError {
        // The device-code quota answer keys its code as `error_code`, not `error` (Google's
        // "OAuth 2.0 for TV and Limited-Input Device Applications", Step 1).
        let answer = response.decoded(GoogleErrorAnswer.self)
        if response.status == 403, answer?.errorCode == "rate_limit_exceeded" { return .codeRateLimited }
        switch answer?.code {
        case "invalid_client": return .invalidClient
        default: return GoogleError.from(response)
        }
    }
}

/// The ranges ivy accepts the OAuth answers' numbers in. Google documents 1800 s codes, a
/// 5 s interval and about an hour of token life; a value outside these (huge, negative, a
/// fraction, a string) is clamped into them, so no answer can overflow a time computation,
/// make ivy poll without pause or wait for ever.
package enum OAuthLimits {
    /// An access token is used for at least a minute and at most a day before refreshing.
    package static let accessTokenLifetime = 60...86_400
    /// A sign-in code is waited for at least a minute and at most an hour.
    package static let deviceCodeLifetime = 60...3_600
    /// Polls are at most a minute apart. Zero is allowed (slow_down still adds 5 s): the
    /// emulator uses it to make sign-in tests fast.
    package static let pollInterval = 0...60

    /// Whole seconds from a JSON number (a fraction is dropped) or a numeric string, clamped
    /// into `range`; nil when it is no number at all, so the caller's default applies.
    static func seconds(_ value: OAuthNumber?, in range: ClosedRange<Int>) -> Int? {
        let number: Double
        switch value {
        case .whole(let whole): return whole.clamped(to: range)
        case .real(let real): number = real
        case .text(let text):
            guard let parsed = Double(text.trimmingCharacters(in: .whitespaces)) else { return nil }
            number = parsed
        case nil: return nil
        }
        guard !number.isNaN else { return nil }
        if number <= Double(range.lowerBound) { return range.lowerBound }
        if number >= Double(range.upperBound) { return range.upperBound }
        return Int(number.rounded(.down))
    }
}

extension Int {
    func clamped(to range: ClosedRange<Int>) -> Int { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}

/// `application/x-www-form-urlencoded` POSTs, as the OAuth endpoints take them.
enum FormPost {
    static let allowed: CharacterSet = {
        var set = CharacterSet.alphanumerics
        set.insert(charactersIn: "-._~")
        return set
    }()

    static func send(_ transport: any HTTPTransport, _ url: URL, _ fields: [String: String]) async throws
        -> HTTPResponse
    {
        let body = fields.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
            .joined(separator: "&")
        let request = HTTPRequest(
            method: "POST", url: url, headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: .data(Data(body.utf8)))
        do {
            return try await transport.send(request)
        } catch  where error is CancellationError || Task.isCancelled {
            // Stopped (a deadline, Ctrl-C): no network failure to report.
            throw CancellationError()
        } catch {
            throw GoogleError.network(error.localizedDescription)
        }
    }
}
