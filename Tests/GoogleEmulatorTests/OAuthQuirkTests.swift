import Foundation
import GoogleEmulator
import Testing

@Suite("Emulated OAuth answers Google documents beyond the happy path")
struct OAuthQuirkTests {
    func refresh(_ google: EmulatorClient, _ token: String, client: EmulatedClient) async throws -> Reply {
        try await google.form(
            "/token",
            [
                "client_id": client.id, "client_secret": client.secret, "grant_type": "refresh_token",
                "refresh_token": token,
            ])
    }

    @Test("too many device codes answer 403 with error_code rate_limit_exceeded; an expired code answers invalid_grant")
    func deviceCodeLimits() async throws {
        try await withEmulatorClient { google in
            await google.state.setDeviceCodeLimit(perMinute: 2)
            #expect(try await google.deviceCode().status == 200)
            let second = try await google.deviceCode()
            let third = try await google.deviceCode()
            #expect(
                third.status == 403 && third.json["error_code"] as? String == "rate_limit_exceeded"
                    && third.json["error"] == nil)
            await google.state.advanceClock(by: 61)
            #expect(try await google.deviceCode().status == 200, "the limit is per minute")

            let stale = try #require(second.json["device_code"] as? String)
            await google.state.advanceClock(by: 1801)
            let expired = try await google.poll(stale)
            #expect(expired.status == 400 && expired.oauthError == "invalid_grant")
        }
    }

    @Test("a fault on the token endpoint answers in OAuth's flat shape, with Retry-After when given")
    func oauthFaults() async throws {
        try await withEmulatorClient { google in
            let tokens = try await google.signIn()
            await google.state.addFault(FaultRule(pathContains: "/token", times: 1, status: 503, retryAfterSeconds: 4))
            let failed = try await refresh(google, tokens.refresh, client: GoogleEmulator.defaultClient)
            #expect(
                failed.status == 503 && failed.oauthError == "internal_failure" && failed.header("Retry-After") == "4")
            #expect(try await refresh(google, tokens.refresh, client: GoogleEmulator.defaultClient).status == 200)
        }
    }
}
