import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyGoogle

extension GoogleHarness {
    /// A provider for alice's saved sign-in whose waits go to `sleeper`.
    func provider(_ sleeper: Sleeper) async throws -> TokenProvider {
        _ = try await signedIn()
        let token = try #require(store.load())
        return TokenProvider(
            token: token, store: store, endpoints: endpoints, credentials: credentials, effects: effects(sleeper))
    }
}

@Suite("The token endpoint as Google runs it")
struct TokenEndpointTests {
    // google-auth-library-python (google/oauth2/_client.py, _can_retry) retries the token
    // endpoint's 5xx, 408 and 429 and its internal_failure answers; Drive's own policy is ivy's.
    @Test(
        "a refresh that meets a dropped connection and 5xx answers is retried, waits Retry-After, and signs nobody out")
    func refreshRetried() async throws {
        try await withGoogle { google in
            let sleeper = Sleeper()
            let provider = try await google.provider(sleeper)
            await google.state.addFault(FaultRule(pathContains: "/token", nth: 1, dropAfterBytes: 0))
            await google.state.addFault(FaultRule(pathContains: "/token", times: 1, status: 503, retryAfterSeconds: 7))
            google.clock.advance(seconds: 3600)
            let access = try await provider.accessToken()
            #expect(google.store.load()?.accessToken == access)
            #expect(google.store.load()?.isSignedIn == true)
            #expect(sleeper.durations.count == 2 && sleeper.durations.last == 7)
            #expect(await provider.refreshCount == 3)
        }
    }

    @Test("a token endpoint that keeps failing gives up within the retry bound, still signed in")
    func refreshGivesUp() async throws {
        try await withGoogle { google in
            let sleeper = Sleeper()
            let provider = try await google.provider(sleeper)
            await google.state.addFault(FaultRule(pathContains: "/token", status: 500))
            google.clock.advance(seconds: 3600)
            await #expect { try await provider.accessToken() } throws: { error in
                guard case .http(500, "internal_failure", _) = error as? GoogleError else { return false }
                return true
            }
            #expect(sleeper.durations.count == RetryPolicy().maxAttempts - 1)
            #expect(google.store.load()?.isSignedIn == true, "only invalid_grant means signed out")
        }
    }

    // Google's device-flow guide, Step 1: over the quota for code requests the answer is 403
    // with {"error_code": "rate_limit_exceeded"}.
    @Test("a device-code quota error says to wait and try later")
    func codeQuota() async throws {
        try await withGoogle { google in
            await google.state.setDeviceCodeLimit(perMinute: 1)
            _ = try await google.flow().start()
            await #expect(throws: GoogleError.codeRateLimited) { try await google.flow().start() }
            let message = GoogleError.codeRateLimited.localizedDescription
            #expect(message.contains("wait") && message.contains("ivy login"))
        }
    }

    @Test("invalid_grant once Google's clock has passed the code's deadline says the code expired")
    func codeExpiredAtGoogle() async throws {
        try await withGoogle { google in
            await google.state.setDeviceCode(lifetime: 60, interval: 5)
            // Google's clock runs 10 s ahead of ivy's (the code's answer took that long to arrive):
            // its deadline passes while ivy's has not.
            let flow = google.flow(
                Sleeper { [clock = google.clock, state = google.state] index, duration in
                    clock.advance(seconds: duration.components.seconds)
                    await state.advanceClock(by: Double(duration.components.seconds) + (index == 1 ? 10 : 0))
                })
            let authorization = try await flow.start()
            await #expect(throws: GoogleError.codeExpired) { try await flow.waitForApproval(authorization) }
            #expect(google.clock.now < 1_800_000_000_000 + 60_000, "ivy's own deadline had not passed")
        }
    }
}
