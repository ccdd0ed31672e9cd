import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySystem
import Logging

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

/// One `ivy sync` from the gate to the record: it holds the sync lock for its whole life,
/// wires the token provider through the authorized transport and the Drive client to the
/// engine, and is the one place a failed sync is logged and written to `last_error`.
/// What to print is the caller's; what counts as news for cron is decided here.
package final class SyncSession: Sendable {
    package let library: LibraryDatabase
    package let tokens: TokenStore
    package let logger: Logger
    let clock: WallClock
    let auto: Bool
    private let lock: SyncLock

    private init(
        library: LibraryDatabase, tokens: TokenStore, logger: Logger, clock: WallClock, auto: Bool, lock: SyncLock
    ) {
        self.library = library
        self.tokens = tokens
        self.logger = logger
        self.clock = clock
        self.auto = auto
        self.lock = lock
    }

    /// The `--auto` gate before the lock: sync enabled, past the cooldown, signed in.
    package static func autoGate(library: LibraryDatabase, tokens: TokenStore, now: Milliseconds) throws -> AutoGate {
        guard try library.setting(.syncEnabled) == "true" else { return .skips(.syncDisabled) }
        let cooldown = Milliseconds(try library.number(.autoSyncCooldown)) * 1000
        if let last = try library.localStatus().lastSyncTime, now - last < cooldown { return .skips(.coolingDown) }
        guard case .signedIn = tokens.signIn() else { return .skips(.signedOut) }
        return .runs
    }

    package enum Start {
        case started(SyncSession)
        /// Only with `auto`.
        case skipped(AutoSkip)
        /// Another sync holds the lock (never with `auto`, which skips instead).
        case busy(pid: Int32?)
    }

    /// Passes the gate (with `auto`) and takes the sync lock without waiting.
    package static func start(
        library: LibraryDatabase, tokens: TokenStore, lockFile: String, clock: WallClock, logger: Logger, auto: Bool
    ) throws -> Start {
        if auto, case .skips(let why) = try autoGate(library: library, tokens: tokens, now: clock.now()) {
            return .skipped(why)
        }
        switch try SyncLock.acquire(path: lockFile) {
        case .acquired(let lock):
            return .started(
                SyncSession(library: library, tokens: tokens, logger: logger, clock: clock, auto: auto, lock: lock))
        case .busy(let pid):
            return auto ? .skipped(.anotherSyncRunning) : .busy(pid: pid)
        }
    }

    /// The sign-in as it stands now, under the lock.
    package func signIn() -> TokenStore.SignIn {
        tokens.signIn()
    }

    /// The Drive client for `token`: token provider (refreshing into `tokens`, so only under
    /// the sync lock) → authorized transport → Drive client at the library's concurrency.
    package static func drive(
        library: LibraryDatabase, tokens: TokenStore, token: StoredToken, endpoints: GoogleEndpoints,
        credentials: ClientCredentials, effects: GoogleEffects
    ) throws -> DriveClient {
        let provider = TokenProvider(
            token: token, store: tokens, endpoints: endpoints, credentials: credentials, effects: effects)
        return DriveClient(
            drive: endpoints.drive, authorized: AuthorizedTransport(tokens: provider, transport: effects.transport),
            concurrency: try library.number(.concurrency))
    }

    /// The engine for `token`: token provider → authorized transport → Drive client.
    package func engine(
        token: StoredToken, endpoints: GoogleEndpoints, credentials: ClientCredentials, effects: GoogleEffects,
        progress: (@Sendable (SyncProgress) -> Void)?, steps: (@Sendable (SyncStep) -> Void)? = nil
    ) throws -> SyncEngine {
        let drive = try Self.drive(
            library: library, tokens: tokens, token: token, endpoints: endpoints, credentials: credentials,
            effects: effects)
        return SyncEngine(
            library: library, drive: drive, clock: clock, logger: logger, progress: progress, steps: steps)
    }

    /// How a sync ended.
    package enum Ending {
        case finished(SyncReport)
        /// Only with `auto`: the library was busy mid-sync (logged).
        case skipped(AutoSkip)
        /// Google no longer accepts the sign-in (logged, not recorded as an error).
        case signedOut(GoogleError)
        /// Logged and recorded as `last_error`. With `auto`, `cronHears` is false for an
        /// unreachable network (not news: the queue keeps everything) and for the same
        /// error as the last run's (already said).
        case failed(any Error, cronHears: Bool)
    }

    /// Runs `engine` to its deadline (setting `sync_timeout`) and says how it ended.
    package func run(
        _ engine: SyncEngine, dryRun: Bool, allowDeletes: Bool, full: Bool = false,
        knownSkips: Set<SyncReport.Problem> = [], knownDoubt: String? = nil,
        stopping: @escaping @Sendable () -> Bool = { false }
    ) async -> Ending {
        do {
            let timeout = Duration.seconds(try library.number(.syncTimeout))
            return .finished(
                try await engine.run(
                    SyncOptions(
                        dryRun: dryRun, allowDeletes: allowDeletes, full: full, timeout: timeout,
                        knownSkips: knownSkips, knownDoubt: knownDoubt, stopping: stopping)))
        } catch  where error is CancellationError || Task.isCancelled {
            // Only a watch stopped at once cancels a sync (its requests then fail as
            // cancelled): what finished is recorded, and stopping is no error to keep.
            logger.warning("sync cancelled")
            return .failed(CancellationError(), cronHears: false)
        } catch let error as GoogleError {
            switch error {
            case .signedOut, .notSignedIn:
                logger.warning("sync skipped: signed out", metadata: ["reason": "\(error.localizedDescription)"])
                return .signedOut(error)
            default:
                return record(error)
            }
        } catch {
            if auto, (error as? StoreError)?.isBusy == true {
                logger.warning(
                    "sync skipped: the library is busy", metadata: ["error": "\(error.localizedDescription)"])
                return .skipped(.libraryBusy)
            }
            return record(error)
        }
    }

    /// The one place a sync that could not run is logged and written to `last_error`.
    private func record(_ error: any Error) -> Ending {
        let message = error.localizedDescription
        logger.error("sync failed", metadata: ["error": "\(message)"])
        // Recording a busy library's error would only wait for the same lock again.
        if (error as? StoreError)?.isBusy != true { try? library.recordSetting(.lastError, message) }
        guard auto else { return .failed(error, cronHears: true) }
        if GoogleError.isUnreachable(error) || (try? library.internalSetting(.autoReportedError)) == message {
            return .failed(error, cronHears: false)
        }
        try? library.setInternalSetting(.autoReportedError, message)
        return .failed(error, cronHears: true)
    }

    /// What cron has not heard yet after a finished `--auto` sync.
    package struct CronNews {
        /// The safety valve's hold, when it is new (or changed) since cron last heard.
        package let newHold: String?
        /// Changes held back since cron last heard (each is heard once).
        package let newlyHeld: [QueueItem]
    }

    /// Settles what cron was told: a finished sync clears the last error said, and a hold
    /// or a held change is news once.
    package func cronNews(_ report: SyncReport) throws -> CronNews {
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
