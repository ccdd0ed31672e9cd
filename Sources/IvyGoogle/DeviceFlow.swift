import Foundation
import IvyCore

/// The effects the Google clients use, injected so tests control time.
package struct GoogleEffects: Sendable {
    package var transport: any HTTPTransport
    package var clock: WallClock
    package var sleep: @Sendable (Duration) async throws -> Void

    package init(transport: any HTTPTransport, clock: WallClock, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.transport = transport
        self.clock = clock
        self.sleep = sleep
    }
}

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
        guard response.status == 200, let json = response.json else { throw Self.failure(response) }
        guard let deviceCode = json["device_code"] as? String, let userCode = json["user_code"] as? String,
            let url = json["verification_url"] as? String ?? json["verification_uri"] as? String
        else {
            throw GoogleError.unexpectedResponse("the device code answer lacks device_code, user_code or verification_url")
        }
        return DeviceAuthorization(
            deviceCode: deviceCode, userCode: userCode, verificationURL: url,
            expiresIn: json["expires_in"] as? Int ?? 1800, interval: json["interval"] as? Int ?? 5)
    }

    /// Polls until the person approves, denies, or the code expires. `slow_down` adds 5 s
    /// to the interval; network trouble backs off and keeps polling until the code expires.
    package func waitForApproval(_ authorization: DeviceAuthorization) async throws -> GrantedTokens {
        let deadline = effects.clock.now() + Milliseconds(authorization.expiresIn) * 1000
        var interval = max(0, authorization.interval)
        var backoff = 1
        while true {
            try await effects.sleep(.seconds(interval))
            guard effects.clock.now() < deadline else { throw GoogleError.codeExpired }
            let response: HTTPResponse
            do {
                response = try await post("token", [
                    "client_id": credentials.id, "client_secret": credentials.secret,
                    "device_code": authorization.deviceCode, "grant_type": Self.grantType,
                ])
            } catch {
                try await effects.sleep(.seconds(backoff))
                backoff = min(backoff * 2, 60)
                continue
            }
            if response.status == 200 { return try Self.tokens(response, now: effects.clock.now()) }
            switch response.json?["error"] as? String {
            case "authorization_pending": continue
            case "slow_down": interval += 5
            case "access_denied": throw GoogleError.accessDenied
            case "expired_token": throw GoogleError.codeExpired
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
    package static func revoke(_ token: String, endpoints: GoogleEndpoints, transport: any HTTPTransport) async throws -> HTTPResponse {
        try await FormPost.send(transport, endpoints.oauth.appendingPathComponent("revoke"), ["token": token])
    }

    func post(_ path: String, _ fields: [String: String]) async throws -> HTTPResponse {
        try await FormPost.send(effects.transport, endpoints.oauth.appendingPathComponent(path), fields)
    }

    static func tokens(_ response: HTTPResponse, now: Milliseconds) throws -> GrantedTokens {
        guard let json = response.json, let access = json["access_token"] as? String else {
            throw GoogleError.unexpectedResponse("the token answer has no access_token")
        }
        let lifetime = json["expires_in"] as? Int ?? 3600
        return GrantedTokens(
            accessToken: access, refreshToken: json["refresh_token"] as? String,
            expiresAt: now + Milliseconds(lifetime) * 1000, scope: json["scope"] as? String)
    }

    static func failure(_ response: HTTPResponse) -> GoogleError {
        switch response.json?["error"] as? String {
        case "invalid_client": .invalidClient
        default: GoogleError.from(response)
        }
    }
}

/// `application/x-www-form-urlencoded` POSTs, as the OAuth endpoints take them.
enum FormPost {
    static let allowed: CharacterSet = {
        var set = CharacterSet.alphanumerics
        set.insert(charactersIn: "-._~")
        return set
    }()

    static func send(_ transport: any HTTPTransport, _ url: URL, _ fields: [String: String]) async throws -> HTTPResponse {
        let body = fields.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
            .joined(separator: "&")
        let request = HTTPRequest(
            method: "POST", url: url, headers: ["Content-Type": "application/x-www-form-urlencoded"], body: .data(Data(body.utf8)))
        do {
            return try await transport.send(request)
        } catch {
            throw GoogleError.network(error.localizedDescription)
        }
    }
}
