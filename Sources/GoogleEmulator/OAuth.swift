import Foundation

/// Google's OAuth 2.0 device authorization grant, refresh and revocation.
extension EmulatorState {
    static let deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

    func handleDeviceCode(_ request: EmulatedRequest) -> EmulatorReply {
        let form = request.form
        guard let clientID = form["client_id"], clients.contains(where: { $0.id == clientID }) else {
            return .oauthError(401, "invalid_client", "The OAuth client was not found.")
        }
        guard let scope = form["scope"], !scope.isEmpty else {
            return .oauthError(400, "invalid_scope", "Missing required parameter: scope")
        }
        let allowed: Set<String> = [
            "openid", "email", "profile", "https://www.googleapis.com/auth/drive.file",
            "https://www.googleapis.com/auth/drive.appdata",
        ]
        if let bad = scope.split(separator: " ").map(String.init).first(where: { !allowed.contains($0) }) {
            return .oauthError(400, "invalid_scope", "Invalid device flow scope: \(bad)")
        }
        if let limit = deviceCodeLimit {
            // Google's documented answer to too many code requests: 403 with `error_code`, not `error`.
            let time = now()
            let recent = (deviceCodeRequests[clientID] ?? []).filter { time.timeIntervalSince($0) < 60 }
            guard recent.count < limit else { return .json(403, ["error_code": "rate_limit_exceeded"]) }
            deviceCodeRequests[clientID] = recent + [time]
        }
        let letters = Array("BCDFGHJKLMNPQRSTVWXZ")
        let deviceCode = token("AH-1Ng", length: 40)
        let userCode = [0, 1].map { _ in
            String((0..<4).map { _ in letters[Int.random(in: 0..<letters.count, using: &random)] })
        }.joined(separator: "-")
        var session = DeviceSession(
            deviceCode: deviceCode, userCode: userCode, clientID: clientID, scope: scope, requestedAt: now(),
            order: deviceCodesIssued, expiresAt: now().addingTimeInterval(TimeInterval(deviceCodeLifetime)),
            interval: pollInterval,
            lastPoll: nil,
            decision: .pending, grantedScope: nil)
        signInEvents += 1
        session.lastEvent = signInEvents
        devices[session.deviceCode] = session
        deviceCodesIssued += 1
        return .json(
            200,
            [
                "device_code": session.deviceCode, "user_code": session.userCode,
                "verification_url": "\(request.headers["x-emulator-base"] ?? "https://www.google.com")/device",
                "expires_in": deviceCodeLifetime, "interval": pollInterval,
            ])
    }

    func handleToken(_ request: EmulatedRequest) -> EmulatorReply {
        let form = request.form
        guard let clientID = form["client_id"], let client = clients.first(where: { $0.id == clientID }),
            form["client_secret"] == client.secret
        else {
            return .oauthError(401, "invalid_client", "Unauthorized")
        }
        switch form["grant_type"] {
        case Self.deviceGrant: return pollDevice(form["device_code"] ?? "", clientID: clientID)
        case "refresh_token": return refresh(form["refresh_token"] ?? "", clientID: clientID)
        default: return .oauthError(400, "unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
    }

    private func pollDevice(_ code: String, clientID: String) -> EmulatorReply {
        guard var session = devices[code], session.clientID == clientID else {
            return .oauthError(400, "invalid_grant", "Malformed auth code.")
        }
        let time = now()
        signInEvents += 1
        session.lastEvent = signInEvents
        devices[code] = session
        guard session.expiresAt > time else {
            // Google documents invalid_grant for a device code it no longer takes; RFC 8628's
            // expired_token is not in its list.
            devices[code] = nil
            return .oauthError(400, "invalid_grant", "Bad Request")
        }
        // Polling faster than the interval: Google answers slow_down (and RFC 8628 adds 5 s).
        if let last = session.lastPoll, time.timeIntervalSince(last) < Double(session.interval) - 0.05 {
            session.lastPoll = time
            session.interval += 5
            devices[code] = session
            return .oauthError(403, "slow_down", "Forbidden")
        }
        session.lastPoll = time
        devices[code] = session
        switch session.decision {
        case .pending:
            return .oauthError(428, "authorization_pending", "Precondition Required")
        case .denied:
            devices[code] = nil
            return .oauthError(403, "access_denied", "Forbidden")
        case .approved(let email):
            devices[code] = nil
            let refreshToken = token("1//0g", length: 48)
            let scope = Self.grantedNames(session.grantedScope ?? session.scope)
            refreshTokens[refreshToken] = RefreshGrant(email: email, clientID: clientID, scope: scope, revoked: false)
            let access = issueAccessToken(email: email, refreshToken: refreshToken)
            return .json(
                200,
                [
                    "access_token": access, "expires_in": tokenLifetime, "refresh_token": refreshToken,
                    "scope": scope, "token_type": "Bearer",
                ])
        }
    }

    private func refresh(_ refreshToken: String, clientID: String) -> EmulatorReply {
        guard let grant = refreshTokens[refreshToken], !grant.revoked, grant.clientID == clientID else {
            return .oauthError(400, "invalid_grant", "Token has been expired or revoked.")
        }
        let access = issueAccessToken(email: grant.email, refreshToken: refreshToken)
        return .json(
            200, ["access_token": access, "expires_in": tokenLifetime, "scope": grant.scope, "token_type": "Bearer"])
    }

    func issueAccessToken(email: String, refreshToken: String) -> String {
        let access = token("ya29.a0", length: 60)
        accessTokens[access] = AccessGrant(
            email: email, refreshToken: refreshToken, expiresAt: now().addingTimeInterval(TimeInterval(tokenLifetime)))
        return access
    }

    /// The granted `scope` as Google's token endpoint writes it: the short names `email` and
    /// `profile` asked for come back as their full URLs (the device-flow guide's sample
    /// response and its allowed-scopes table; `openid` stays as it is).
    static func grantedNames(_ scope: String) -> String {
        let full = [
            "email": "https://www.googleapis.com/auth/userinfo.email",
            "profile": "https://www.googleapis.com/auth/userinfo.profile",
        ]
        return scope.split(separator: " ").map { full[String($0)] ?? String($0) }.joined(separator: " ")
    }

    /// Revoking either token of a pair revokes both, as Google does. A token already revoked
    /// (or never issued) answers 400 `invalid_token`: the guide's "Token revocation" gives 200
    /// only for a revocation that happened, and an error code otherwise.
    func handleRevoke(_ request: EmulatedRequest) -> EmulatorReply {
        let token = request.form["token"] ?? ""
        if let grant = refreshTokens[token], !grant.revoked {
            revoke(refreshToken: token)
        } else if let grant = accessTokens[token] {
            revoke(refreshToken: grant.refreshToken)
        } else {
            return .oauthError(400, "invalid_token", "Token expired or revoked")
        }
        return .json(200, [:])
    }
}
