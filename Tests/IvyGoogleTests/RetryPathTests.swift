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
            await google.state.addFault(FaultRule(pathContains: "/token", status: 503, retryAfterSeconds: 100))
            google.clock.advance(seconds: 3600)
            await #expect(throws: GoogleError.self) { try await provider.accessToken() }
            // 100 s waited; another 100 s would pass the policy's 180 s.
            #expect(sleeper.durations == [100])
            #expect(await provider.refreshCount == 2)
        }
    }

    @Test("a Drive request waits Retry-After, and a wait past the time bound is not taken")
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
            await #expect(throws: DriveError.self) { try await drive.listLibrary(remembered: nil) }
            #expect(sleeper.durations == [5], "181 s is past the 180 s bound: no wait, the error")
        }
    }
}
