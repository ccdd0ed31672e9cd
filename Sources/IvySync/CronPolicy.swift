import Foundation
package import IvyCore
package import IvyGoogle
package import IvyStore
package import IvySystem
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

/// What cron has not heard yet after a finished `--auto` sync.
package struct CronNews: Sendable {
    /// The safety valve's hold, when it is new (or changed) since cron last heard: marked told
    /// by the command once it told it.
    package let newHold: String?
    /// Changes held back since cron last heard (each is heard once): marked told by the
    /// command once it told them (`LibraryDatabase.markHeldReported`).
    package let newlyHeld: [QueueItem]
}

/// `ivy sync --auto`'s policy, for cron: the gate (sync enabled, past the cooldown, signed
/// in); another sync, a sign-in gone or a busy library is a skip, not news; a failure is heard
/// once (an unreachable network never: the queue keeps everything); and after a finished sync,
/// what cron has not heard yet (`CronNews`). The command prints only what this says cron hears.
package struct CronPolicy: SyncMiddleware {
    package init() {}

    package func handle(
        _ request: SyncRequest, door: SyncDoor, next: (SyncRequest) async throws -> SyncOutcome
    ) async throws -> SyncOutcome {
        let library = door.library
        // The home is used again: a refusal cron heard is over, and a new one is news.
        DirectoryNote(Self.refusalNote, in: library.paths.dataDirectory).remove()
        if case .skips(let why) = try await Self.gate(library: library, tokens: door.tokens, now: door.clock.now()) {
            return .skipped(why)
        }
        let outcome: SyncOutcome
        do {
            outcome = try await next(request)
        } catch {
            // A busy library is a skip however it is found; anything else that kept the sync
            // from starting is said once, not every run.
            if (error as? StoreError)?.isBusy == true {
                door.logger.warning(
                    "sync skipped: the library is busy", metadata: ["error": "\(error.localizedDescription)"])
                return .skipped(.libraryBusy)
            }
            guard await Self.isNews(error, library: library) else { return .failed(error, cronHears: false) }
            throw error
        }
        switch outcome {
        case .finished(let report, _):
            return try await .finished(report, cronNews: Self.news(after: report, library: library))
        case .busy:
            return .skipped(.anotherSyncRunning)
        case .notSignedIn, .signedOut:
            return .skipped(.signedOut)
        case .failed(let error, _) where (error as? StoreError)?.isBusy == true:
            return .skipped(.libraryBusy)
        case .failed(let error, _) where error is CancellationError || GoogleError.isUnreachable(error):
            return .failed(error, cronHears: false)
        case .failed(let error, _):
            return await .failed(error, cronHears: Self.isNews(error, library: library))
        case .skipped:
            return outcome
        }
    }

    /// The gate before the lock: sync enabled, past the cooldown, signed in.
    package static func gate(library: LibraryDatabase, tokens: TokenStore, now: Milliseconds) async throws -> AutoGate {
        guard try await library.setting(.syncEnabled) == "true" else { return .skips(.syncDisabled) }
        let cooldown = try await Milliseconds(library.number(.autoSyncCooldown)) * 1000
        if let last = try await library.localStatus().lastSyncTime, now - last < cooldown {
            return .skips(.coolingDown)
        }
        guard case .signedIn = tokens.signIn() else { return .skips(.signedOut) }
        return .runs
    }

    /// The note beside the library that says which refusal of the home cron heard.
    package static let refusalNote = "cron-refusal"

    /// `ivy sync --auto` in a home ivy refuses (`PrivateDirectory.refusals`): nothing in it is
    /// used, and cron hears it as it hears a sync that could not start, once, while the health
    /// check hears it every run (`health_url/fail`, its kind and no path). `health_url` is
    /// looked at read-only (`LibraryDatabase.peekSetting`), and only when the library's own
    /// directory is the user's and private, so only what is above it is at fault; what cron
    /// heard is kept as a `DirectoryNote` there, written through the directory itself. Where it
    /// cannot be kept (no library directory yet, or that directory is the one at fault) every
    /// run says it. Returns whether cron hears it this run.
    package static func refused(
        _ refusal: UnsafeDirectoryError, paths: IvyPaths, clock: WallClock, deadline: Duration,
        environment: [String: String], pingTransport: (any HTTPTransport)? = nil
    ) async -> Bool {
        let note = DirectoryNote(refusalNote, in: paths.dataDirectory)
        guard note.directoryIsPrivate else { return true }
        if let stored = await LibraryDatabase.peekSetting(.healthURL, paths: paths) {
            let target: HealthCheck.Target
            do {
                target = .url(try GoogleEndpoints.checkedURL(stored, named: SettingKey.healthURL.rawValue))
            } catch {
                target = .refused(error.localizedDescription)
            }
            // Neither logged nor recorded: the log and the library are in the home refused.
            let check = HealthCheck(
                target: target, setting: stored,
                transport: pingTransport ?? HTTPClientTransport(WireSettings(environment: environment)),
                deadline: deadline,
                logger: Logger(label: "ivy", factory: { _ in SwiftLogNoOpLogHandler() }), clock: clock,
                record: { _ in })
            await check.ping(.fail, HealthText.kind(of: refusal))
        }
        let said = refusal.description
        if note.read() == said { return false }
        note.write(said)
        return true
    }

    /// Whether cron has yet to hear `error`: not when the last run's was the same. Only
    /// asked: the command marks it told (`told`) once it has printed it, so a run killed
    /// between the two tells it again rather than never.
    private static func isNews(_ error: any Error, library: LibraryDatabase) async -> Bool {
        await (try? library.internalSetting(.autoReportedError)) != error.localizedDescription
    }

    /// Marks `error` told to cron, after the command printed it; kept until a sync finishes.
    package static func told(_ error: any Error, library: LibraryDatabase) async {
        try? await library.setInternalSetting(.autoReportedError, error.localizedDescription)
    }

    /// Settles what cron was told: a finished sync clears the last error said, and a hold
    /// or a held change is news once.
    private static func news(after report: SyncReport, library: LibraryDatabase) async throws -> CronNews {
        // Cleared only when set: most runs of cron find nothing to clear, and write nothing.
        if try await library.internalSetting(.autoReportedError) != nil {
            try await library.setInternalSetting(.autoReportedError, nil)
        }
        let newlyHeld = try await library.unreportedHeldItems()
        var newHold: String?
        if let hold = report.deletionsHeld {
            // Marked told by the command once it told cron (`SyncCommand.tellCron`).
            if try await library.internalSetting(.autoReportedHold) != hold { newHold = hold }
        } else if try await library.internalSetting(.autoReportedHold) != nil {
            try await library.setInternalSetting(.autoReportedHold, nil)
        }
        return CronNews(newHold: newHold, newlyHeld: newlyHeld)
    }
}
