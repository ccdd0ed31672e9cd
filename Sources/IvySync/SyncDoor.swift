import Foundation
package import IvyCore
package import IvyGoogle
package import IvyStore
import IvySystem
package import Logging
import Synchronization

/// Why `ivy sync --auto` does nothing this time. Cron hears none of these: each passes by
/// itself, and the queue keeps every change for the next run.
package enum AutoSkip: Sendable, Equatable {
    /// Another program holds a long write on the library.
    case libraryBusy
    /// The setting `sync_enabled` is false.
    case syncDisabled
    /// Within `auto_sync_cooldown` seconds of the last sync.
    case coolingDown
    /// No usable sign-in; `ivy status` says why.
    case signedOut
    /// Another sync holds the sync lock.
    case anotherSyncRunning
}

/// Whether `ivy sync --auto` runs, or why it skips.
package enum AutoGate: Sendable, Equatable {
    case runs
    case skips(AutoSkip)
}

/// What one sync is asked to do: the flags of `ivy sync`, what a watch remembers of its last
/// sync, and who is told as it runs. Everything else is the door's.
package struct SyncRequest: Sendable {
    /// `--auto`, for cron: the gate first, and an outcome that says only what cron must hear.
    package var auto: Bool
    package var dryRun: Bool
    package var allowDeletes: Bool
    /// `--full`: list Drive in full and rebuild the mirror.
    package var full: Bool
    /// Drive files skipped and logged by the sync before (a watch's): not logged again.
    package var knownSkips: Set<SyncReport.Problem>
    /// The standing doubt about the mirror the sync before checked (a watch's).
    package var knownDoubt: String?
    /// Whether to stop soon: a watch asked to end.
    package var stopping: @Sendable () -> Bool
    /// The live progress line, for a person at a terminal.
    package var progress: (@Sendable (SyncProgress) -> Void)?
    /// Told of each finished operation (`--verbose`).
    package var steps: (@Sendable (SyncStep) -> Void)?
    /// Signs in, under the sync lock, when there is no usable sign-in and a person is there to
    /// approve one (an interactive `ivy sync`). Without it such a sync ends `.notSignedIn`.
    package var signInFirst: (@Sendable (TokenStore.SignIn) async throws -> StoredToken)?
    /// One of a watch's syncs: the watch logs those that changed something itself, so an idle
    /// poll every few seconds leaves no line in the log.
    package var watched: Bool

    package init(
        auto: Bool = false, dryRun: Bool = false, allowDeletes: Bool = false, full: Bool = false,
        knownSkips: Set<SyncReport.Problem> = [], knownDoubt: String? = nil,
        stopping: @escaping @Sendable () -> Bool = { false }, progress: (@Sendable (SyncProgress) -> Void)? = nil,
        steps: (@Sendable (SyncStep) -> Void)? = nil,
        signInFirst: (@Sendable (TokenStore.SignIn) async throws -> StoredToken)? = nil, watched: Bool = false
    ) {
        self.auto = auto
        self.dryRun = dryRun
        self.allowDeletes = allowDeletes
        self.full = full
        self.knownSkips = knownSkips
        self.knownDoubt = knownDoubt
        self.stopping = stopping
        self.progress = progress
        self.steps = steps
        self.signInFirst = signInFirst
        self.watched = watched
    }
}

/// How one sync through the door ended.
package enum SyncOutcome: Sendable {
    /// The sync ran. `cronNews` (with `auto` only) is what cron has not heard yet.
    case finished(SyncReport, cronNews: CronNews?)
    /// Only with `auto`: nothing cron need hear (the gate; another sync; a sign-in gone or a
    /// busy library found on the way, logged).
    case skipped(AutoSkip)
    /// Another sync holds the lock (never with `auto`, which skips instead).
    case busy(pid: Int32?)
    /// No usable sign-in, and no one to sign in (never with `auto`).
    case notSignedIn(TokenStore.SignIn)
    /// Google no longer accepts the sign-in (logged, not recorded as an error; never with `auto`).
    case signedOut(GoogleError)
    /// Logged and recorded as `last_error`. With `auto`, `cronHears` is false for an
    /// unreachable network (not news: the queue keeps everything) and for the same error as
    /// the last run's (already said).
    case failed(any Error, cronHears: Bool)
}

/// What cron has not heard yet after a finished `--auto` sync.
package struct CronNews: Sendable {
    /// The safety valve's hold, when it is new (or changed) since cron last heard.
    package let newHold: String?
    /// Changes held back since cron last heard (each is heard once).
    package let newlyHeld: [QueueItem]
}

/// The one door to a sync: `ivy sync`, each of the watch's syncs and the tests' devices all
/// come through `sync(_:)`, which owns a sync from the gate to the report. Its surroundings
/// (library, token file, lock, clock, log, where requests go and how they are made) are given
/// once; a caller only says what it wants (`SyncRequest`) and shows what came of it
/// (`SyncOutcome`). The one place that wires a sign-in to the engine, and the one place a
/// failed sync is logged, written to `last_error` and judged news for cron or not.
package final class SyncDoor: Sendable {
    package let library: LibraryDatabase
    package let tokens: TokenStore
    package let logger: Logger
    private let lockFile: String
    let clock: WallClock
    /// Where a sign-in's requests go (it may change between a watch's syncs).
    private let endpoints: @Sendable (StoredToken) throws -> GoogleEndpoints
    private let credentials: @Sendable () throws -> ClientCredentials
    /// How requests are made and retries wait. Made afresh for the sync after one that failed
    /// or was cut short, so a request URLSession never ended cannot hold a connection of later
    /// syncs; nil until then.
    private let makeEffects: @Sendable () -> GoogleEffects
    private let effects = Mutex<GoogleEffects?>(nil)
    /// How long a health-check ping may take, all in (10 s; a test's is shorter).
    private let healthDeadline: Duration
    /// Makes the transport health-check pings go through: one of their own, so an answer that
    /// floods it never waits in line with (or ahead of) Drive's transfers.
    private let pingTransport: @Sendable () -> any HTTPTransport
    /// What a watch last pinged (`watchPing`): a success at most once a minute, a signed-out
    /// wait once.
    let watchPings = Mutex<WatchPings>(WatchPings())

    package init(
        library: LibraryDatabase, tokens: TokenStore, lockFile: String, clock: WallClock, logger: Logger,
        endpoints: @escaping @Sendable (StoredToken) throws -> GoogleEndpoints,
        credentials: @escaping @Sendable () throws -> ClientCredentials,
        effects: @escaping @Sendable () -> GoogleEffects, healthDeadline: Duration = HealthCheck.defaultDeadline,
        pingTransport: @escaping @Sendable () -> any HTTPTransport = {
            URLSessionTransport(inlineCallbacks: true)
        }
    ) {
        self.library = library
        self.tokens = tokens
        self.lockFile = lockFile
        self.clock = clock
        self.logger = logger
        self.endpoints = endpoints
        self.credentials = credentials
        makeEffects = effects
        self.healthDeadline = healthDeadline
        self.pingTransport = pingTransport
    }

    /// One sync: the `--auto` gate, the sync lock (held until it returns), the sign-in (or a
    /// person signing in), the Drive client with every injected effect, the engine run to its
    /// deadline (setting `sync_timeout`), the log, `last_error` and what cron hears. Throws
    /// only what keeps a sync from starting (a setting, the lock file, the library, a sign-in
    /// that failed, endpoints the sign-in cannot use) or from settling what cron heard.
    ///
    /// With `health_url` set, pings `URL/start` once it has a sign-in, and at the end `URL`
    /// or `URL/fail` with the summary (`HealthCheck`); a skip pings nothing, except `--auto`
    /// signed out, which pings `URL/fail` with the reason. A watch's syncs ping by the
    /// watch's rules instead (`watchSync`), and a dry run not at all.
    package func sync(_ request: SyncRequest) async throws -> SyncOutcome {
        let health = request.watched || request.dryRun ? nil : healthCheck()
        let outcome: SyncOutcome
        do {
            outcome = try await pass(request) { await health?.ping(.start, "") }
        } catch {
            // A busy library is a skip for `--auto`, however it is found: no news.
            if !(request.auto && (error as? StoreError)?.isBusy == true) {
                await health?.ping(.fail, HealthText.kind(of: error))
            }
            throw error
        }
        if let health, case (let signal, let text)? = Self.ping(for: outcome) { await health.ping(signal, text) }
        return outcome
    }

    /// The health check `health_url` names, or nil when none is set. A value ivy will not
    /// send to (another program wrote it) makes a check whose pings are not sent, each logged
    /// and recorded as such, so `ivy status` and `ivy doctor` say it.
    func healthCheck() -> HealthCheck? {
        let stored: String
        do {
            guard let text = try library.setting(.healthURL) else { return nil }
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
                    try library.recordHealthPing(outcome)
                } catch {
                    logger.warning(
                        "recording the health ping failed", metadata: ["error": "\(error.localizedDescription)"])
                }
            })
    }

    /// What a sync's end pings, if anything: skips for the cooldown, a disabled sync, a busy
    /// library or another sync are no news.
    static func ping(for outcome: SyncOutcome) -> (HealthCheck.Signal, String)? {
        switch outcome {
        case .finished(let report, _):
            return (report.isSuccess ? .success : .fail, HealthText.of(report))
        case .skipped(.signedOut):
            return (.fail, "signed out: run ivy login")
        case .skipped, .busy:
            return nil
        case .notSignedIn:
            return (.fail, "not signed in: run ivy login")
        case .signedOut:
            return (.fail, "signed out: run ivy login")
        case .failed(let error, _):
            if error is CancellationError { return nil }
            return (.fail, HealthText.kind(of: error))
        }
    }

    private func pass(_ request: SyncRequest, started: () async -> Void) async throws -> SyncOutcome {
        if request.auto, case .skips(let why) = try Self.autoGate(library: library, tokens: tokens, now: clock.now()) {
            return .skipped(why)
        }
        let lock: SyncLock
        switch try SyncLock.acquire(path: lockFile) {
        case .acquired(let acquired): lock = acquired
        case .busy(let pid): return request.auto ? .skipped(.anotherSyncRunning) : .busy(pid: pid)
        }
        // Held to the end: the token provider refreshes into the token file, which only the
        // holder of the sync lock may write.
        return try await withSyncLock(lock) {
            let signIn = tokens.signIn()
            let token: StoredToken
            if case .signedIn(let signedIn) = signIn {
                token = signedIn
            } else if request.auto {
                return .skipped(.signedOut)
            } else if let signInFirst = request.signInFirst {
                token = try await signInFirst(signIn)
            } else {
                return .notSignedIn(signIn)
            }
            await started()
            let server: GoogleEndpoints
            let client: ClientCredentials
            do {
                (server, client) = (try endpoints(token), try credentials())
            } catch {
                // No OAuth client, or a variable naming another server than the sign-in's: logged
                // and kept as `last_error` for `ivy status`, and cron hears it once, not every run.
                let message = error.localizedDescription
                logger.error("sync could not start", metadata: ["error": "\(message)"])
                try? library.recordSetting(.lastError, message)
                if request.auto {
                    if (try? library.internalSetting(.autoReportedError)) == message {
                        return .failed(error, cronHears: false)
                    }
                    try? library.setInternalSetting(.autoReportedError, message)
                }
                throw error
            }
            let drive = try Self.drive(
                library: library, tokens: tokens, token: token, endpoints: server, credentials: client,
                effects: currentEffects())
            let engine = SyncEngine(
                library: library, drive: drive, clock: clock, logger: logger, progress: request.progress,
                steps: request.steps)
            let outcome = await run(engine, request, server: server)
            switch outcome {
            case .finished(let report, _):
                if !request.watched { logger.info("sync finished", metadata: ["summary": "\(report.summary)"]) }
                return request.auto ? .finished(report, cronNews: try cronNews(report)) : outcome
            case .failed:
                effects.withLock { $0 = nil }
                return outcome
            default:
                return outcome
            }
        }
    }

    /// The `--auto` gate before the lock: sync enabled, past the cooldown, signed in.
    package static func autoGate(library: LibraryDatabase, tokens: TokenStore, now: Milliseconds) throws -> AutoGate {
        guard try library.setting(.syncEnabled) == "true" else { return .skips(.syncDisabled) }
        let cooldown = Milliseconds(try library.number(.autoSyncCooldown)) * 1000
        if let last = try library.localStatus().lastSyncTime, now - last < cooldown { return .skips(.coolingDown) }
        guard case .signedIn = tokens.signIn() else { return .skips(.signedOut) }
        return .runs
    }

    /// The Drive client for `token`: token provider (refreshing into `tokens`, so only under
    /// the sync lock) → authorized transport → Drive client at the library's concurrency,
    /// its retries and pacing waiting through `effects.sleep`. `ivy check` uses it too.
    package static func drive(
        library: LibraryDatabase, tokens: TokenStore, token: StoredToken, endpoints: GoogleEndpoints,
        credentials: ClientCredentials, effects: GoogleEffects
    ) throws -> DriveClient {
        let provider = TokenProvider(
            token: token, store: tokens, endpoints: endpoints, credentials: credentials, effects: effects)
        return DriveClient(
            drive: endpoints.drive, authorized: AuthorizedTransport(tokens: provider, transport: effects.transport),
            concurrency: try library.number(.concurrency), sleep: effects.sleep, now: effects.elapsed,
            unitsPerMinute: try library.number(.quotaUnitsPerMinute))
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
            let timeout = Duration.seconds(try library.number(.syncTimeout))
            return .finished(
                try await engine.run(
                    SyncOptions(
                        dryRun: request.dryRun, allowDeletes: request.allowDeletes, full: request.full,
                        timeout: timeout, knownSkips: request.knownSkips, knownDoubt: request.knownDoubt,
                        stopping: request.stopping)),
                cronNews: nil)
        } catch  where error is CancellationError || Task.isCancelled {
            // Only a watch stopped at once cancels a sync (its requests then fail as
            // cancelled): what finished is recorded, and stopping is no error to keep.
            logger.warning("sync cancelled")
            return .failed(CancellationError(), cronHears: false)
        } catch let error as GoogleError {
            switch error {
            case .signedOut, .notSignedIn:
                logger.warning("sync skipped: signed out", metadata: ["reason": "\(error.localizedDescription)"])
                return request.auto ? .skipped(.signedOut) : .signedOut(error)
            default:
                return record(error, request, server: server)
            }
        } catch {
            if request.auto, (error as? StoreError)?.isBusy == true {
                logger.warning(
                    "sync skipped: the library is busy", metadata: ["error": "\(error.localizedDescription)"])
                return .skipped(.libraryBusy)
            }
            return record(error, request, server: server)
        }
    }

    /// The one place a sync that could not run is logged and written to `last_error`: with
    /// what to do when Google could not be reached (`Unreachable`), which `ivy sync` prints
    /// too, so `ivy status` keeps that fix. (A watch tries again by itself, and says when.)
    private func record(_ error: any Error, _ request: SyncRequest, server: GoogleEndpoints) -> SyncOutcome {
        let message = error.localizedDescription
        logger.error("sync failed", metadata: ["error": "\(message)"])
        // Recording a busy library's error would only wait for the same lock again.
        if (error as? StoreError)?.isBusy != true {
            let explained =
                request.watched ? error : Unreachable.explained(error, server: server.isGoogle ? nil : server)
            try? library.recordSetting(.lastError, explained.localizedDescription)
        }
        guard request.auto else { return .failed(error, cronHears: true) }
        if GoogleError.isUnreachable(error) || (try? library.internalSetting(.autoReportedError)) == message {
            return .failed(error, cronHears: false)
        }
        try? library.setInternalSetting(.autoReportedError, message)
        return .failed(error, cronHears: true)
    }

    /// Settles what cron was told: a finished sync clears the last error said, and a hold
    /// or a held change is news once.
    private func cronNews(_ report: SyncReport) throws -> CronNews {
        try library.setInternalSetting(.autoReportedError, nil)
        let newlyHeld = try library.takeUnreportedHeldItems()
        var newHold: String?
        if let hold = report.deletionsHeld {
            if try library.internalSetting(.autoReportedHold) != hold {
                try library.setInternalSetting(.autoReportedHold, hold)
                newHold = hold
            }
        } else {
            try library.setInternalSetting(.autoReportedHold, nil)
        }
        return CronNews(newHold: newHold, newlyHeld: newlyHeld)
    }
}

/// A sync that could not reach Google says what to do next, and that nothing is lost.
package struct Unreachable: LocalizedError {
    package let errorDescription: String?

    /// `error` with that said when it means Google could not be reached (else `error` itself);
    /// `server`: the sign-in's servers when they are not Google's.
    package static func explained(_ error: any Error, server: GoogleEndpoints? = nil) -> any Error {
        guard GoogleError.isUnreachable(error) else { return error }
        if let server {
            return Unreachable(
                errorDescription: error.localizedDescription
                    + "; the server this sign-in was made at, \(server.oauth.absoluteString), does not answer: if it "
                    + "was ivy-emulator, start it again (with --state it listens on its old port when it can), or run "
                    + "`ivy login` against the one running now (every change here stays queued until then)")
        }
        return Unreachable(
            errorDescription: error.localizedDescription
                + "; Google could not be reached: check the network connection, then run `ivy sync` again "
                + "(every change here stays queued until then)")
    }
}
