import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyGoogle

@Suite("Absurd numbers from the OAuth endpoints are clamped, never trap")
struct OAuthNumberTests {
    @Test(
        "absurd expires_in and interval from the device-code endpoint are clamped into 1 min–1 h and 0–60 s",
        arguments: [
            (expires: "9223372036854775807", interval: "9223372036854775807", clamped: (3600, 60)),
            (expires: "99999999999999999999999", interval: "1e300", clamped: (3600, 60)),
            (expires: "-5", interval: "-5", clamped: (60, 0)),
            (expires: "1799.9", interval: "4.5", clamped: (1799, 4)),
            (expires: "\"900\"", interval: "\"7\"", clamped: (900, 7)),
            (expires: "\"soon\"", interval: "null", clamped: (1800, 5)),
            (expires: "[]", interval: "{}", clamped: (1800, 5)),
            (expires: "true", interval: "false", clamped: (60, 0)),
        ])
    func deviceCodeNumbers(expires: String, interval: String, clamped: (Int, Int)) async throws {
        try await withGoogle { google in
            await google.state.addFault(
                FaultRule(pathContains: "/device/code", jsonFields: ["expires_in": expires, "interval": interval]))
            let sleeper = Sleeper { [state = google.state] index, _ in
                if index == 1 { try? await state.approve(userCode: nil, email: "alice@example.com") }
            }
            let flow = google.flow(sleeper)
            let authorization = try await flow.start()
            #expect(authorization.expiresIn == clamped.0 && authorization.interval == clamped.1)
            _ = try await flow.waitForApproval(authorization)
            #expect(sleeper.durations.first == clamped.1)
        }
    }

    @Test(
        "an absurd expires_in from the token endpoint is clamped into 1 min–1 day, on sign-in and on refresh",
        arguments: [
            ("9223372036854775807", 86_400), ("99999999999999999999999", 86_400), ("-1", 60), ("0", 60),
            ("3599.99", 3599), ("\"1200\"", 1200), ("\"later\"", 3600), ("{}", 3600), ("true", 60),
        ])
    func tokenLifetime(raw: String, seconds: Int64) async throws {
        try await withGoogle { google in
            await google.state.addFault(FaultRule(pathContains: "/token", jsonFields: ["expires_in": raw]))
            let provider = try await google.signedIn()
            let signedIn = try #require(google.store.load()?.expiresAt)
            #expect(signedIn == google.clock.now + seconds * 1000)
            google.clock.advance(seconds: 100_000)
            _ = try await provider.accessToken()
            #expect(google.store.load()?.expiresAt == google.clock.now + seconds * 1000)
        }
    }
}
