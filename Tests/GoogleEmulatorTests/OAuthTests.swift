import Foundation
import GoogleEmulator
import Testing

@Suite("Emulated OAuth device flow")
struct OAuthTests {
    @Test("a device code has Google's shape; polling is pending until a person approves")
    func approve() async throws {
        try await withEmulatorClient { google in
            await google.state.setDeviceCode(interval: 0)
            let code = try await google.deviceCode()
            #expect(code.status == 200)
            let userCode = try #require(code.json["user_code"] as? String)
            #expect(userCode.range(of: "^[A-Z]{4}-[A-Z]{4}$", options: .regularExpression) != nil)
            #expect((code.json["verification_url"] as? String)?.hasPrefix(google.base) == true)
            #expect(code.json["expires_in"] as? Int == 1800)
            #expect(code.json["interval"] as? Int == 0)
            let deviceCode = try #require(code.json["device_code"] as? String)
            let pending = try await google.poll(deviceCode)
            #expect(pending.status == 428 && pending.oauthError == "authorization_pending")
            #expect(await google.state.pendingUserCodes() == [userCode])
            try await google.state.approve(userCode: nil, email: "bob@example.com")
            let tokens = try await google.poll(deviceCode)
            #expect(tokens.status == 200)
            #expect(tokens.json["token_type"] as? String == "Bearer")
            #expect(tokens.json["expires_in"] as? Int == 3599)
            #expect(tokens.json["scope"] as? String == "https://www.googleapis.com/auth/drive.file")
            let access = try #require(tokens.json["access_token"] as? String)
            #expect((tokens.json["refresh_token"] as? String)?.isEmpty == false)
            let about = try await google.request("GET", "/drive/v3/about?fields=user", token: access)
            let user = about.json["user"] as? [String: Any]
            #expect(user?["emailAddress"] as? String == "bob@example.com")
            #expect(user?["permissionId"] as? String == "09998765432109876543")
            // A device code is good for one sign-in only.
            #expect(try await google.poll(deviceCode).oauthError == "invalid_grant")
        }
    }

    @Test("polling faster than the interval answers slow_down")
    func slowDown() async throws {
        try await withEmulatorClient { google in
            // A long interval, so a loaded machine cannot make the second poll late enough by itself.
            await google.state.setDeviceCode(interval: 30)
            let deviceCode = try #require(try await google.deviceCode().json["device_code"] as? String)
            #expect(try await google.poll(deviceCode).status == 428)
            let fast = try await google.poll(deviceCode)
            #expect(fast.status == 403 && fast.oauthError == "slow_down")
            await google.state.advanceClock(by: 36)
            #expect(try await google.poll(deviceCode).oauthError == "authorization_pending")
        }
    }

    @Test("a denied sign-in answers access_denied; an old code answers invalid_grant")
    func deniedAndExpired() async throws {
        try await withEmulatorClient { google in
            await google.state.setDeviceCode(interval: 0)
            let denied = try #require(try await google.deviceCode().json["device_code"] as? String)
            try await google.state.deny(userCode: nil)
            let answer = try await google.poll(denied)
            #expect(answer.status == 403 && answer.oauthError == "access_denied")
            let stale = try #require(try await google.deviceCode().json["device_code"] as? String)
            await google.state.advanceClock(by: 1801)
            // Google's list of token errors has invalid_grant for this, not RFC 8628's expired_token.
            #expect(try await google.poll(stale).oauthError == "invalid_grant")
        }
    }

    @Test("an unknown client or a wrong secret answers invalid_client; a scope outside the list invalid_scope")
    func invalidClient() async throws {
        try await withEmulatorClient { google in
            let unknown = try await google.deviceCode(client: "someone-else")
            #expect(unknown.status == 401 && unknown.oauthError == "invalid_client")
            let deviceCode = try #require(try await google.deviceCode().json["device_code"] as? String)
            let wrong = try await google.poll(deviceCode, secret: "guess")
            #expect(wrong.status == 401 && wrong.oauthError == "invalid_client")
            let scope = try await google.deviceCode(scope: "https://www.googleapis.com/auth/drive")
            #expect(scope.status == 400 && scope.oauthError == "invalid_scope")
        }
    }

    @Test("refresh grants new access tokens with the configured lifetime; expired tokens get 401")
    func refresh() async throws {
        try await withEmulatorClient { google in
            // Expiry comes from the emulator's clock, moved by hand: no race with real time.
            await google.state.setTokenLifetime(seconds: 120)
            let tokens = try await google.signIn()
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: tokens.access).status == 200)
            await google.state.advanceClock(by: 121)
            let expired = try await google.request("GET", "/drive/v3/about?fields=user", token: tokens.access)
            #expect(expired.status == 401 && expired.driveReason == "authError")
            #expect(expired.header("WWW-Authenticate")?.contains("invalid_token") == true)
            await google.state.setTokenLifetime(seconds: 3600)
            let refreshed = try await google.form(
                "/token",
                [
                    "client_id": EmulatorClient.client.id, "client_secret": EmulatorClient.client.secret,
                    "grant_type": "refresh_token", "refresh_token": tokens.refresh,
                ])
            #expect(refreshed.status == 200 && refreshed.json["expires_in"] as? Int == 3600)
            #expect(refreshed.json["refresh_token"] == nil, "Google does not rotate refresh tokens")
            let fresh = try #require(refreshed.json["access_token"] as? String)
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: fresh).status == 200)
        }
    }

    @Test("revoked refresh tokens answer invalid_grant, and their access tokens stop working")
    func revoke() async throws {
        try await withEmulatorClient { google in
            let first = try await google.signIn()
            await google.state.revoke(refreshToken: first.refresh)
            let refused = try await google.form(
                "/token",
                [
                    "client_id": EmulatorClient.client.id, "client_secret": EmulatorClient.client.secret,
                    "grant_type": "refresh_token", "refresh_token": first.refresh,
                ])
            #expect(refused.status == 400 && refused.oauthError == "invalid_grant")
            #expect(refused.json["error_description"] as? String == "Token has been expired or revoked.")
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: first.access).status == 401)
            let second = try await google.signIn()
            #expect(try await google.form("/revoke", ["token": second.refresh]).status == 200)
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: second.access).status == 401)
            #expect(try await google.form("/revoke", ["token": "never-issued"]).status == 400)
        }
    }
}
