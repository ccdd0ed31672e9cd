import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyGoogle

/// Every retry of the Google clients waits in one place (`RetryBudget.backOff`); these are the
/// paths that reached it last.
@Suite("Every retried path honours Retry-After through the one retry helper")
struct RetryPathTests {
    @Test("login's account look-up is retried after a dropped connection and a 503, waiting Retry-After")
    func aboutRetried() async throws {
        try await withGoogle { google in
            await google.state.setDeviceCode(interval: 0)
            let approve = Sleeper { [state = google.state] index, _ in
                if index == 1 { try? await state.approve(userCode: nil, email: "alice@example.com") }
            }
            let flow = google.flow(approve)
            let tokens = try await flow.waitForApproval(try await flow.start())
            await google.state.addFault(FaultRule(pathContains: "/drive/v3/about", nth: 1, dropAfterBytes: 0))
            await google.state.addFault(
                FaultRule(pathContains: "/drive/v3/about", times: 1, status: 503, retryAfterSeconds: 6))
            let sleeper = Sleeper()
            let account = try await DriveAccount.fetch(
                drive: google.endpoints.drive, accessToken: tokens.accessToken, transport: google.transport,
                sleep: sleeper.sleep)
            #expect(account.email == "alice@example.com")
            #expect(sleeper.durations.count == 2 && sleeper.durations.last == 6)
            #expect(await google.state.requests.filter { $0.path == "/drive/v3/about" }.count == 3)
        }
    }

    @Test("login's account look-up is not retried when Drive refuses for good")
    func aboutRefused() async throws {
        try await withGoogle { google in
            let provider = try await google.signedIn()
            let access = try await provider.accessToken()
            await google.state.clearRequests()
            await google.state.setDriveAPI(enabled: false)
            let sleeper = Sleeper()
            await #expect {
                try await DriveAccount.fetch(
                    drive: google.endpoints.drive, accessToken: access, transport: google.transport,
                    sleep: sleeper.sleep)
            } throws: { error in
                if case .driveAPIDisabled = error as? GoogleError { return true }
                return false
            }
            #expect(sleeper.durations.isEmpty)
            #expect(await google.state.requests.filter { $0.path == "/drive/v3/about" }.count == 1)
        }
    }

    @Test("the waits asked for spend the retry time bound even when the sleep returns at once")
    func waitsSpendTheBound() async throws {
        try await withGoogle { google in
            let sleeper = Sleeper()
            let provider = try await google.provider(sleeper)
            await google.state.addFault(FaultRule(pathContains: "/token", status: 503, retryAfterSeconds: 50))
            google.clock.advance(seconds: 3600)
            await #expect(throws: GoogleError.self) { try await provider.accessToken() }
            // 150 s waited; another 50 s would pass the policy's 180 s.
            #expect(sleeper.durations == [50, 50, 50])
            #expect(await provider.refreshCount == 4)
        }
    }

    @Test("a Retry-After longer than ivy waits (60 s) is not waited at all: the request ends at once, said as such")
    func retryAfterPastTheLongestWait() async throws {
        try await withGoogle { google in
            let sleeper = Sleeper()
            let provider = try await google.provider(sleeper)
            await google.state.addFault(FaultRule(pathContains: "/token", status: 503, retryAfterSeconds: 61))
            google.clock.advance(seconds: 3600)
            await #expect(throws: GoogleError.retryLater(.askedTooLong)) { try await provider.accessToken() }
            #expect(sleeper.durations.isEmpty)
            #expect(await provider.refreshCount == 1)
        }
    }

    @Test("a Drive request waits Retry-After, and a wait past what ivy waits is not taken")
    func driveRetryAfterBound() async throws {
        try await withGoogle { google in
            let sleeper = Sleeper()
            let drive = try await google.drive(sleeper: sleeper)
            _ = try await drive.folders()
            await google.state.addFault(
                FaultRule(method: "GET", pathContains: "/drive/v3/files", nth: 1, status: 503, retryAfterSeconds: 5))
            _ = try await drive.listLibrary(remembered: nil)
            #expect(sleeper.durations == [5])
            await google.state.addFault(
                FaultRule(method: "GET", pathContains: "/drive/v3/files", times: 1, status: 503, retryAfterSeconds: 181)
            )
            await #expect(throws: GoogleError.retryLater(.askedTooLong)) {
                try await drive.listLibrary(remembered: nil)
            }
            #expect(sleeper.durations == [5], "181 s is past the 60 s ivy waits: no wait, the sync stops")
        }
    }

    @Test("a wait that would run past the sync's deadline is not taken: the request ends at once, said as such")
    func waitPastTheDeadline() async throws {
        try await withGoogle { google in
            let sleeper = Sleeper()
            let drive = try await google.drive(sleeper: sleeper)
            _ = try await drive.folders()
            await google.state.addFault(
                FaultRule(method: "GET", pathContains: "/drive/v3/files", times: 1, status: 503, retryAfterSeconds: 30))
            await SyncDeadline.$current.withValue(ContinuousClock.now + .seconds(20)) {
                await #expect(throws: GoogleError.retryLater(.pastDeadline)) {
                    try await drive.listLibrary(remembered: nil)
                }
            }
            #expect(sleeper.durations.isEmpty)
        }
    }

    @Test("Retry-After: seconds, dates, and anything else read without a trap")
    func retryAfterText() {
        let now: Int64 = 1_790_000_000_000
        #expect(RetryAfter.wait("7", now: now) == .seconds(7))
        #expect(RetryAfter.wait(" 0007 ", now: now) == .seconds(7))
        #expect(RetryAfter.wait("0", now: now) == .zero)
        #expect(RetryAfter.wait("9223372036854775807", now: now) == .seconds(999_999_999_999))
        #expect(RetryAfter.wait(String(repeating: "9", count: 400), now: now) == .seconds(999_999_999_999))
        for unreadable in [nil, "", "-5", "1e30", "1.5", "+3", "0x10", "soon", "-9223372036854775808"] {
            #expect(RetryAfter.wait(unreadable, now: now) == nil, "\(unreadable ?? "nil")")
        }
        // 2026-09-21 14:13:20 GMT is `now`.
        #expect(RetryAfter.wait("Mon, 21 Sep 2026 14:13:50 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.wait("Mon, 21 Sep 2026 13:00:00 GMT", now: now) == .zero, "a date past is no wait")
        #expect(RetryAfter.wait("Fri, 31 Dec 9999 23:59:59 GMT", now: now).map { $0 > .seconds(86_400) } == true)
        #expect(RetryAfter.wait("Fri, 31 Dec 9999 23:59:59 GMT", now: Int64.min) == nil, "no overflow")
        let policy = RetryPolicy()
        #expect(policy.delay(attempt: Int.max, retryAfter: nil, random: .infinity) <= RetryPolicy.longestWait)
        #expect(policy.delay(attempt: Int.min, retryAfter: nil, random: .nan) == .zero)
        #expect(policy.sharedQuotaDelay(attempt: 40, retryAfter: nil, random: 1) == RetryPolicy.longestWait)
        #expect(policy.delay(attempt: 1, retryAfter: .seconds(Int64.max), random: 0) == RetryPolicy.longestWait)
    }
}
