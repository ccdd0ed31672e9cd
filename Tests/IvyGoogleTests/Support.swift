import Foundation
import GoogleEmulator
import IvyCore
import Synchronization
import Testing

@testable import IvyGoogle

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let value: Mutex<Milliseconds>
    init(_ start: Milliseconds = 1_800_000_000_000) { value = Mutex(start) }
    func advance(seconds: Int64) { value.withLock { $0 += seconds * 1000 } }
    var now: Milliseconds { value.withLock { $0 } }
    var clock: WallClock { WallClock { [self] in value.withLock { $0 } } }
}

/// Records the sleeps asked for; the test decides what happens during each.
final class Sleeper: Sendable {
    private let recorded = Mutex<[Int]>([])
    private let onSleep: @Sendable (Int, Duration) async -> Void

    init(_ onSleep: @escaping @Sendable (Int, Duration) async -> Void = { _, _ in }) { self.onSleep = onSleep }

    var durations: [Int] { recorded.withLock { $0 } }

    var sleep: @Sendable (Duration) async throws -> Void {
        { [self] duration in
            let index = recorded.withLock { list in
                list.append(Int(duration.components.seconds))
                return list.count
            }
            await onSleep(index, duration)
        }
    }
}

/// An emulator and everything a Google client needs to talk to it, in a temporary directory.
final class GoogleHarness: Sendable {
    let emulator: GoogleEmulator
    let clock = TestClock()
    let directory: String
    let warnings = Mutex<[String]>([])

    var state: EmulatorState { emulator.state }
    var endpoints: GoogleEndpoints { GoogleEndpoints(oauth: emulator.baseURL, drive: emulator.baseURL) }
    let credentials = ClientCredentials(
        id: GoogleEmulator.defaultClient.id, secret: GoogleEmulator.defaultClient.secret)
    let transport = URLSessionTransport()

    init(emulator: GoogleEmulator) {
        self.emulator = emulator
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("ivy-google-\(UUID().uuidString)").path
    }

    var store: TokenStore {
        TokenStore(
            path: directory + "/config/token.json", warn: { [self] message in warnings.withLock { $0.append(message) } }
        )
    }

    func effects(_ sleeper: Sleeper = Sleeper()) -> GoogleEffects {
        GoogleEffects(transport: transport, clock: clock.clock, sleep: sleeper.sleep)
    }

    func flow(_ sleeper: Sleeper = Sleeper()) -> DeviceFlow {
        DeviceFlow(endpoints: endpoints, credentials: credentials, effects: effects(sleeper))
    }

    /// A signed-in token provider for `email`, its token saved to the store.
    func signedIn(as email: String = "alice@example.com") async throws -> TokenProvider {
        await state.setDeviceCode(interval: 0)
        let sleeper = Sleeper { [state] index, _ in
            if index == 1 { try? await state.approve(userCode: nil, email: email) }
        }
        let flow = flow(sleeper)
        let tokens = try await flow.waitForApproval(try await flow.start())
        let account = try await DriveAccount.fetch(
            drive: endpoints.drive, accessToken: tokens.accessToken, transport: transport)
        let token = StoredToken(
            accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresAt: tokens.expiresAt,
            scope: tokens.scope,
            clientID: credentials.id, email: account.email, permissionID: account.permissionID)
        try store.save(token)
        return TokenProvider(
            token: token, store: store, endpoints: endpoints, credentials: credentials, effects: effects())
    }

    func tokenRequests() async -> Int {
        await state.requests.filter { $0.path == "/token" }.count
    }
}

func withGoogle(_ body: (GoogleHarness) async throws -> Void) async throws {
    let harness = GoogleHarness(emulator: try await GoogleEmulator.start())
    defer { try? FileManager.default.removeItem(atPath: harness.directory) }
    do {
        try await body(harness)
    } catch {
        await harness.emulator.stop()
        throw error
    }
    await harness.emulator.stop()
}
