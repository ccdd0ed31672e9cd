import Foundation
package import GoogleEmulator
package import IvyCore
package import IvyGoogle
package import IvyStore
package import IvySync
import IvySystem

/// Runs `body` against a fresh emulator on a loopback port of `host` (its randomness seeded,
/// its clock `clock`; or serving an existing `state`), and stops it afterwards whether or not
/// `body` throws. It serves HTTPS with HTTP/2 by ALPN, as Google does, unless `tls` is false
/// (`EmulatorWire.standard`: `IVY_TEST_WIRE=http` runs the suite over plain HTTP/1.1). Starts
/// the test process's `PoolWatchdog` with the first emulator.
///
/// `body` runs on `BlockingExecutor`'s threads, as ivy's commands do: a test's synchronous
/// file and database work (a token file's fsync, a library write) can take seconds on a busy
/// disk, and on one of Swift's two cooperative threads it would hold up the emulators that
/// every test's requests wait on. Two such fsyncs once stopped the pool, and dozens of tests
/// failed with request timeouts 60 s later.
@discardableResult
package func withEmulator<Result>(
    host: String = "127.0.0.1", clock: EmulatorClock = .system, seed: UInt64 = EmulatorState.defaultSeed,
    state: EmulatorState? = nil, tls: Bool = EmulatorWire.standard.tls, _ body: (GoogleEmulator) async throws -> Result
) async throws -> Result {
    PoolWatchdog.start()
    let emulator = try await GoogleEmulator.start(host: host, clock: clock, seed: seed, state: state, tls: tls)
    do {
        let result = try await BlockingExecutor.run { try await body(emulator) }
        await emulator.stop()
        return result
    } catch {
        await emulator.stop()
        throw error
    }
}

/// What a Google client needs to talk to an emulator: its endpoints, the default client's
/// credentials, a transport and a clock. Signs in as a person would, approving the code
/// while the client waits. The transport is `EmulatorRoute.standard`'s (in-process) unless a
/// test gives another.
package struct EmulatedGoogle: Sendable {
    package let emulator: GoogleEmulator
    package let transport: any HTTPTransport
    package let clock: WallClock

    package init(_ emulator: GoogleEmulator, clock: WallClock, transport: (any HTTPTransport)? = nil) {
        self.emulator = emulator
        self.clock = clock
        self.transport = transport ?? EmulatorRoute.standard.transport(to: emulator)
    }

    package var state: EmulatorState { emulator.state }
    package var endpoints: GoogleEndpoints {
        GoogleEndpoints(oauth: emulator.baseURL, drive: emulator.baseURL, caFile: emulator.caFile?.path)
    }
    package var credentials: ClientCredentials {
        ClientCredentials(id: GoogleEmulator.defaultClient.id, secret: GoogleEmulator.defaultClient.secret)
    }
    /// The emulator and its client, as a run's environment names them to the door.
    package var setup: SignInSetup {
        SignInSetup(
            environment: emulator.signInEnvironment.merging([
                "IVY_CLIENT_ID": credentials.id, "IVY_CLIENT_SECRET": credentials.secret,
            ]) { $1 }, builtIn: nil)
    }

    /// Effects that wait for nothing unless `sleep` is given; pacing on `elapsed`, when given.
    package func effects(
        sleep: @escaping @Sendable (Duration) async throws -> Void = { _ in },
        elapsed: (@Sendable () -> Duration)? = nil
    ) -> GoogleEffects {
        guard let elapsed else { return GoogleEffects(transport: transport, clock: clock, sleep: sleep) }
        return GoogleEffects(transport: transport, clock: clock, sleep: sleep, elapsed: elapsed)
    }

    /// A token provider over `token`, refreshing through the emulator into `store`.
    package func provider(_ token: StoredToken, store: TokenStore) -> TokenProvider {
        TokenProvider(token: token, store: store, endpoints: endpoints, credentials: credentials, effects: effects())
    }

    /// The device flow as ivy's Google layer does it, approved as `email`, its token saved
    /// to `store`: for tests of the Google layer, which have no library to bind (ivy's own
    /// sign-in, `signIn(as:library:paths:)`, binds one).
    package func signedIn(as email: String, store: TokenStore) async throws -> TokenProvider {
        await state.setDeviceCode(interval: 0)
        let flow = DeviceFlow(endpoints: endpoints, credentials: credentials, effects: effects())
        let authorization = try await flow.start()
        try await state.approve(userCode: authorization.userCode, email: email)
        let granted = try await flow.waitForApproval(authorization)
        let account = try await DriveAccount.fetch(
            drive: endpoints.drive, accessToken: granted.accessToken, transport: transport)
        let token = StoredToken(
            accessToken: granted.accessToken, refreshToken: granted.refreshToken, expiresAt: granted.expiresAt,
            scope: granted.scope, clientID: credentials.id, email: account.email, permissionID: account.permissionID)
        try store.save(token)
        return provider(token, store: store)
    }

    /// Signs `library` in as `email` the way `ivy login` does, through IvySync's `SignIn`:
    /// the device flow, approved while ivy waits, then the token saved to the home's token
    /// file and the library bound to the account under the sync lock.
    package func signIn(
        as email: String, library: LibraryDatabase, paths: IvyPaths
    ) async throws -> (provider: TokenProvider, signedIn: SignIn.SignedIn) {
        let store = TokenStore(path: paths.tokenFile, warn: { _ in })
        let signIn = SignIn(
            library: library, tokens: store, lockFile: paths.lockFile, endpoints: endpoints,
            credentials: credentials, effects: effects())
        await state.setDeviceCode(interval: 0)
        let authorization = try await signIn.start()
        try await state.approve(userCode: authorization.userCode, email: email)
        let signedIn = try await signIn.finish(authorization, holdingSyncLock: false, waiting: { _ in })
        return (provider(signedIn.token, store: store), signedIn)
    }
}

/// Which wire the tests' emulators serve: HTTPS with HTTP/2 by ALPN (Google's), or plain
/// HTTP/1.1 when the environment has `IVY_TEST_WIRE=http`.
package enum EmulatorWire: Sendable {
    case tls
    case http

    package static let standard: EmulatorWire =
        ProcessInfo.processInfo.environment["IVY_TEST_WIRE"] == "http" ? .http : .tls

    package var tls: Bool { self == .tls }
}

extension GoogleEmulator {
    /// What `ivy login` needs to sign in here: its servers, and over TLS the emulator's
    /// certificate authority (`IVY_CA_FILE`), which the sign-in records.
    /// ivy's HTTP client as it talks to this emulator: trusting its certificate authority.
    package var socketTransport: HTTPClientTransport { HTTPClientTransport(WireSettings(caFile: caFile?.path)) }

    package var signInEnvironment: [String: String] {
        let url = baseURL.absoluteString
        var environment = ["IVY_OAUTH_URL": url, "IVY_DRIVE_URL": url]
        if let caFile { environment["IVY_CA_FILE"] = caFile.path }
        return environment
    }
}
