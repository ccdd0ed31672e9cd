import Foundation
package import IvyCore
package import IvyGoogle
package import IvyStore
import IvySystem
package import Logging
import Synchronization

/// What one sync is asked to do: the engine's options (`ivy sync`'s flags, what a watch
/// remembers of its last sync), who is told as it runs, and who signs in when no one is.
/// Everything else is the door's; its layers (`SyncMiddleware`) may change it on the way in.
package struct SyncRequest: Sendable {
    /// What the engine is asked. Its deadline is the door's (setting `sync_timeout`).
    package var options: SyncOptions
    /// The live progress line, for a person at a terminal.
    package var progress: (@Sendable (SyncProgress) -> Void)?
    /// Told of each finished operation (`--verbose`).
    package var steps: (@Sendable (SyncStep) -> Void)?
    /// Signs in, under the sync lock, when there is no usable sign-in and a person is there to
    /// approve one (an interactive `ivy sync`). Without it such a sync ends `.notSignedIn`.
    package var signInFirst: (@Sendable (TokenStore.SignIn) async throws -> StoredToken)?
    /// Told once the sync has its lock and a sign-in, before it reaches Drive (a health
    /// check's `/start`).
    package var started: (@Sendable () async -> Void)?

    package init(
        dryRun: Bool = false, allowDeletes: Bool = false, full: Bool = false,
        knownSkips: Set<SyncReport.Problem> = [], knownDoubt: String? = nil,
        stopping: @escaping @Sendable () -> Bool = { false }, progress: (@Sendable (SyncProgress) -> Void)? = nil,
        steps: (@Sendable (SyncStep) -> Void)? = nil,
        signInFirst: (@Sendable (TokenStore.SignIn) async throws -> StoredToken)? = nil
    ) {
        options = SyncOptions(
            dryRun: dryRun, allowDeletes: allowDeletes, full: full, knownSkips: knownSkips, knownDoubt: knownDoubt,
            stopping: stopping)
        self.progress = progress
        self.steps = steps
        self.signInFirst = signInFirst
    }

    package var dryRun: Bool { options.dryRun }
}

/// How one sync through the door ended.
package enum SyncOutcome: Sendable {
    /// The sync ran. `cronNews` (through `CronPolicy` only) is what cron has not heard yet.
    case finished(SyncReport, cronNews: CronNews?)
    /// Only through `CronPolicy` (or a watch's `WatchGate`): nothing cron need hear (the gate;
    /// another sync; a sign-in gone or a busy library found on the way, logged).
    case skipped(AutoSkip)
    /// Another sync holds the lock (`CronPolicy` skips instead).
    case busy(pid: Int32?)
    /// No usable sign-in, and no one to sign in.
    case notSignedIn(TokenStore.SignIn)
    /// Google no longer accepts the sign-in (logged, not recorded as an error).
    case signedOut(GoogleError)
    /// Logged and recorded as `last_error`. `cronHears` is `CronPolicy`'s judgement: false for
    /// an unreachable network (not news: the queue keeps everything) and for the same error as
    /// the last run's (already said); the door itself says true.
    case failed(any Error, cronHears: Bool)
}

/// What a sync could not start without: the sync lock and a sign-in. `ivy check` opens the
/// same way, for a look at Drive instead of a sync.
package enum DoorSession<Value: Sendable>: Sendable {
    case ran(Value)
    /// Another sync holds the lock.
    case busy(pid: Int32?)
    /// No usable sign-in, and no one to sign in.
    case notSignedIn(TokenStore.SignIn)
}

/// The one door to a sync: `ivy sync`, each of the watch's syncs and the tests' devices all
/// come through `sync(_:)`, which only opens: the sync lock, the sign-in, the engine with every
/// effect the door was given, and the record of how it ended (the log and `last_error`). Whose
/// sync it is decides the rest, in layers around it (`sync(_:through:)`): cron's policy
/// (`CronPolicy`), health pings (`HealthPings`, `WatchHealthPings`) and a watch's gate
/// (`WatchGate`). Its surroundings (library, token file, lock, clock, log, where requests go,
/// the OAuth client and how requests are made) are given once.
package final class SyncDoor: Sendable {
    package let library: LibraryDatabase
    package let tokens: TokenStore
    package let logger: Logger
    private let lockFile: String
    package let clock: WallClock
    /// Where a sign-in's requests go and the OAuth client that makes them, decided afresh for
    /// each sync (a watch's sign-in may change between them).
    private let setup: SignInSetup
    /// How requests are made and retries wait. Made afresh for the sync after one that failed
    /// or was cut short (a new sign-in may trust other certificate authorities); nil until then.
    private let makeEffects: @Sendable () -> GoogleEffects
    private let effects = Mutex<GoogleEffects?>(nil)
    /// How the engine waits out its deadline (setting `sync_timeout`): real time, or in tests
    /// the event that stands for it.
    private let deadlineSleep: @Sendable (Duration) async throws -> Void
    /// How long a health-check ping may take, all in (10 s; a test's is shorter).
    private let healthDeadline: Duration
    /// Makes the transport health-check pings go through: one of their own, so an answer that
    /// floods it never waits in line with (or ahead of) Drive's transfers.
    private let pingTransport: @Sendable () -> any HTTPTransport
    /// How long the server may keep a sync's requests waiting without a word before the sync
    /// stops (`SyncEngine.silenceBudget`; a test's is shorter).
    private let silenceBudget: Duration

    package init(
        library: LibraryDatabase, tokens: TokenStore, lockFile: String, clock: WallClock, logger: Logger,
        setup: SignInSetup, effects: @escaping @Sendable () -> GoogleEffects,
        deadlineSleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        healthDeadline: Duration = HealthCheck.defaultDeadline,
        pingTransport: (@Sendable () -> any HTTPTransport)? = nil,
        silenceBudget: Duration = SyncEngine.silenceBudget
    ) {
        self.silenceBudget = silenceBudget
        self.library = library
        self.tokens = tokens
        self.lockFile = lockFile
        self.clock = clock
        self.logger = logger
        self.setup = setup
        makeEffects = effects
        self.deadlineSleep = deadlineSleep
        self.healthDeadline = healthDeadline
        // Pings trust the system's certificate authorities alone, and go by the environment's
        // proxies as Google's requests do.
        self.pingTransport = pingTransport ?? { HTTPClientTransport(WireSettings(environment: setup.environment)) }
    }

    /// One sync: the sync lock (held until it returns), the sign-in (or a person signing in),
    /// the Drive client with every injected effect, the engine run to its deadline (setting
    /// `sync_timeout`), the log and `last_error`. Throws only what keeps a sync from starting
    /// (a setting, the lock file, the library, a sign-in that failed, endpoints the sign-in
    /// cannot use, no OAuth client: those last two logged and kept as `last_error`).
    package func sync(_ request: SyncRequest) async throws -> SyncOutcome {
        let session = try await open(binding: !request.dryRun, signInFirst: request.signInFirst) {
            [self] drive, server in
            await request.started?()
            let engine = SyncEngine(
                library: library, drive: drive, clock: clock, logger: logger, progress: request.progress,
                steps: request.steps, sleep: deadlineSleep)
            return await run(engine, request, server: server)
        } couldNotStart: { [self] error in
            // No OAuth client, or a variable naming another server than the sign-in's: kept
            // for `ivy status` (and heard by cron once, as `CronPolicy` judges).
            let message = error.localizedDescription
            logger.error("sync could not start", metadata: ["error": "\(message)"])
            try? await library.recordSetting(.lastError, message)
        }
        switch session {
        case .ran(let outcome):
            if case .failed = outcome { effects.withLock { $0 = nil } }
            return outcome
        case .busy(let pid): return .busy(pid: pid)
        case .notSignedIn(let signIn): return .notSignedIn(signIn)
        }
    }

    /// `sync(_:)` behind `layers`, the first outermost: each sees the request on its way in
    /// and the outcome on its way out, and may answer without going further.
    package func sync(_ request: SyncRequest, through layers: [any SyncMiddleware]) async throws -> SyncOutcome {
        func next(_ index: Int, _ request: SyncRequest) async throws -> SyncOutcome {
            guard index < layers.count else { return try await sync(request) }
            return try await layers[index].handle(request, door: self) { try await next(index + 1, $0) }
        }
        return try await next(0, request)
    }

    /// The door's way in without a sync (`ivy check`): the sync lock, held while `body` runs
    /// (a token refresh writes the token file, which only its holder may), or none when
    /// `readOnly` and the home cannot take one (no sync can run there either); the sign-in
    /// (or `signInFirst`); and the Drive client with every effect the door was given.
    /// `couldNotStart` hears what kept it from making that client (endpoints or OAuth client).
    /// `binding` (a sync that may write) binds the library to the sign-in's account first.
    package func open<Value: Sendable>(
        readOnly: Bool = false, binding: Bool = false,
        signInFirst: (@Sendable (TokenStore.SignIn) async throws -> StoredToken)? = nil,
        _ body: (DriveClient, GoogleEndpoints) async throws -> Value,
        couldNotStart: (any Error) async -> Void = { _ in }
    ) async throws -> DoorSession<Value> {
        var lock: SyncLock?
        do {
            switch try SyncLock.acquire(path: lockFile) {
            case .acquired(let acquired): lock = acquired
            case .busy(let pid): return .busy(pid: pid)
            }
        } catch let error as PrivateFileError where readOnly && error.code == EROFS {
            lock = nil
        }
        return try await withSyncLock(lock) {
            if lock != nil { tokens.removeLeftovers() }
            let signIn = tokens.signIn()
            let token: StoredToken
            if case .signedIn(let signedIn) = signIn {
                token = signedIn
            } else if let signInFirst {
                token = try await signInFirst(signIn)
            } else {
                return .notSignedIn(signIn)
            }
            if binding && !readOnly { try await bind(to: token) }
            let server: GoogleEndpoints
            let client: ClientResolution
            do {
                (server, client) = await (try setup.endpoints(for: token), try setup.client(library))
                _ = try client.required()
            } catch {
                await couldNotStart(error)
                throw error
            }
            let drive = try await Self.drive(
                library: library, tokens: tokens, token: token, endpoints: server, client: client,
                effects: currentEffects())
            return .ran(try await body(drive, server))
        }
    }

    /// A login saves its token, then binds the library to its account (`SignIn.finish`). One
    /// killed in between left the new account's token with the old account's manifest, and
    /// the next sync took every file the old account held for deleted on Drive. The binding
    /// is finished here, before anything is read of Drive: another account forgets the
    /// manifest, and the sync uploads the library to the account signed in.
    private func bind(to token: StoredToken) async throws {
        guard !token.permissionID.isEmpty,
            try await library.internalSetting(.accountPermissionID) != token.permissionID
        else { return }
        let forgot = try await library.bindAccount(permissionID: token.permissionID, email: token.email)
        if forgot {
            logger.notice("the library was bound to another account; bound to the one signed in, and synced afresh")
        }
    }

    /// The Drive client for `token`: token provider (refreshing into `tokens`, so only under
    /// the sync lock) → authorized transport → Drive client at the library's concurrency,
    /// its retries and pacing waiting through `effects.sleep`. Every request of both (token
    /// refreshes too) reports to the client's `silence`, which the sync's silence budget reads.
    package static func drive(
        library: LibraryDatabase, tokens: TokenStore, token: StoredToken, endpoints: GoogleEndpoints,
        client: ClientResolution, effects: GoogleEffects
    ) async throws -> DriveClient {
        let credentials = try client.required()
        let silence = Silence()
        var effects = effects
        effects.transport = SilenceTracking(effects.transport, silence: silence)
        let provider = TokenProvider(
            token: token, store: tokens, endpoints: endpoints, credentials: credentials, effects: effects)
        return try await DriveClient(
            drive: endpoints.drive, authorized: AuthorizedTransport(tokens: provider, transport: effects.transport),
            concurrency: library.number(.concurrency), sleep: effects.sleep, now: effects.elapsed,
            unitsPerMinute: library.number(.quotaUnitsPerMinute), builtInClient: client.source == .builtIn,
            silence: silence)
    }

    /// The health check `health_url` names, or nil when none is set. A value ivy will not
    /// send to (another program wrote it) makes a check whose pings are not sent, each logged
    /// and recorded as such, so `ivy status` and `ivy doctor` say it.
    package func healthCheck() async -> HealthCheck? {
        let stored: String
        do {
            guard let text = try await library.setting(.healthURL) else { return nil }
            stored = text
        } catch {
            logger.warning("no health ping", metadata: ["error": "\(error.localizedDescription)"])
            return nil
        }
        let target: HealthCheck.Target
        do {
            target = .url(try GoogleEndpoints.checkedURL(stored, named: SettingKey.healthURL.rawValue))
        } catch {
            target = .refused(error.localizedDescription)
        }
        let library = library
        let logger = logger
        return HealthCheck(
            target: target, setting: stored, transport: pingTransport(), deadline: healthDeadline, logger: logger,
            clock: clock,
            record: { outcome in
                do {
                    try await library.recordHealthPing(outcome)
                } catch {
                    logger.warning(
                        "recording the health ping failed", metadata: ["error": "\(error.localizedDescription)"])
                }
            })
    }

    private func currentEffects() -> GoogleEffects {
        effects.withLock { effects in
            if let effects { return effects }
            let made = makeEffects()
            effects = made
            return made
        }
    }

    /// Runs `engine` to its deadline (setting `sync_timeout`) and says how it ended; `server`
    /// is where the sign-in sends its requests.
    private func run(_ engine: SyncEngine, _ request: SyncRequest, server: GoogleEndpoints) async -> SyncOutcome {
        do {
            var options = request.options
            options.timeout = try await Duration.seconds(library.number(.syncTimeout))
            options.silenceBudget = silenceBudget
            return .finished(try await engine.run(options), cronNews: nil)
        } catch  where error is CancellationError || Task.isCancelled {
            // Only a stop forced at once cancels a sync (its requests then fail as cancelled):
            // what finished is recorded, and stopping is no error to keep.
            logger.warning("sync cancelled")
            return .failed(CancellationError(), cronHears: false)
        } catch let error as GoogleError {
            switch error {
            case .signedOut, .notSignedIn:
                logger.warning("sync skipped: signed out", metadata: ["reason": "\(error.localizedDescription)"])
                return .signedOut(error)
            default:
                return await record(error, server: server)
            }
        } catch {
            return await record(error, server: server)
        }
    }

    /// The one place a sync that could not run is logged and written to `last_error`: with
    /// what to do when Google could not be reached (`Unreachable`), which `ivy sync` prints
    /// too, so `ivy status` keeps that fix.
    private func record(_ error: any Error, server: GoogleEndpoints) async -> SyncOutcome {
        let message = error.localizedDescription
        // Recording a busy library's error would only wait for the same lock again; and the
        // next sync tries again, so it is a warning.
        if (error as? StoreError)?.isBusy == true {
            logger.warning("sync failed: the library is busy", metadata: ["error": "\(message)"])
        } else {
            logger.error("sync failed", metadata: ["error": "\(message)"])
            let explained = Unreachable.explained(error, server: server.isGoogle ? nil : server)
            try? await library.recordSetting(.lastError, explained.localizedDescription)
        }
        return .failed(error, cronHears: true)
    }
}
