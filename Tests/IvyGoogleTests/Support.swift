import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Synchronization
import Testing

@testable import IvyGoogle

/// An emulator and everything a Google client needs to talk to it, in a temporary directory.
/// Its clients reach the emulator in-process unless the test asks for loopback HTTP.
final class GoogleHarness: Sendable {
    let emulator: GoogleEmulator
    let clock = TestClock(1_800_000_000_000)
    private let temporary: TemporaryHome
    let warnings = Mutex<[String]>([])

    var state: EmulatorState { emulator.state }
    var directory: String { temporary.path }
    var google: EmulatedGoogle { EmulatedGoogle(emulator, clock: clock.clock, transport: transport) }
    var endpoints: GoogleEndpoints { google.endpoints }
    var credentials: ClientCredentials { google.credentials }
    let transport: any HTTPTransport

    init(emulator: GoogleEmulator, route: EmulatorRoute = .standard) throws {
        self.emulator = emulator
        transport = route.transport(to: emulator)
        temporary = try TemporaryHome(prefix: "ivy-google")
    }

    var store: TokenStore {
        TokenStore(
            path: directory + "/config/token.json", warn: { [self] message in warnings.withLock { $0.append(message) } }
        )
    }

    func effects(_ sleeper: Sleeper = Sleeper()) -> GoogleEffects {
        google.effects(sleep: sleeper.sleep)
    }

    func flow(_ sleeper: Sleeper = Sleeper()) -> DeviceFlow {
        DeviceFlow(endpoints: endpoints, credentials: credentials, effects: effects(sleeper))
    }

    /// A signed-in token provider for `email`, its token saved to the store. (The Google
    /// layer alone: there is no library here for ivy's own sign-in to bind.)
    func signedIn(as email: String = "alice@example.com") async throws -> TokenProvider {
        try await google.signedIn(as: email, store: store)
    }

    func tokenRequests() async -> Int {
        await state.requests.filter { $0.path == "/token" }.count
    }
}

func withGoogle(_ route: EmulatorRoute = .standard, _ body: (GoogleHarness) async throws -> Void) async throws {
    try await withEmulator { emulator in try await body(try GoogleHarness(emulator: emulator, route: route)) }
}
