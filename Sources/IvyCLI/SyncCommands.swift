import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySystem
import IvySync
import Logging

/// Exit statuses beyond 0 (success or skip), 1 (error) and 64 (usage).
enum IvyExit {
    static let notSignedIn: Int32 = 3
    static let busy: Int32 = 4
    static let partialFailure: Int32 = 5
}

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync the library with Google Drive.",
        discussion: """
            Lists Drive, compares both sides with what was last synced, and then uploads, downloads, merges and \
            deletes as needed. --auto is for cron: it does nothing, silently, when signed out, when sync_enabled \
            is false, within auto_sync_cooldown seconds of the last sync, or while another sync runs.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "For cron: silent unless something fails; skips when there is nothing it should do.") var auto = false
    @Flag(help: "Print the plan with reasons and change nothing, here or on Drive.") var dryRun = false
    @Flag(help: "Print the report as one JSON object.") var json = false
    @Flag(help: "Allow a sync to delete many clips here (overrides the safety valve).") var allowDeletes = false

    func run() async throws {
        let context = try global.context()
        let library: LibraryDatabase
        do {
            library = try context.library()
        } catch let error as StoreError where auto && error.isBusy {
            // Another program holds a long write: like another sync running, cron need not hear.
            return
        }
        let logger = try context.logger()
        // Cron never hears about sign-in: a damaged token file is logged, not printed.
        let store = auto ? TokenStore(path: context.paths.tokenFile, warn: { logger.warning("\($0)") }) : context.tokenStore

        if auto {
            guard try library.setting(.syncEnabled) == "true" else { return }
            let cooldown = Milliseconds(try library.number(.autoSyncCooldown)) * 1000
            if let last = try library.localStatus().lastSyncTime, context.clock.now() - last < cooldown { return }
            guard case .signedIn = store.signIn() else { return }
        }
        let lock: SyncLock
        switch try SyncLock.acquire(path: context.paths.lockFile) {
        case .acquired(let held): lock = held
        case .busy(let pid):
            if auto { return }
            context.output.error("Error: another sync is running\(pid.map { " (process \($0))" } ?? ""); wait for it to finish")
            throw ExitCode(IvyExit.busy)
        }
        defer { withExtendedLifetime(lock) {} }

        let signIn = store.signIn()
        var token: StoredToken? = if case .signedIn(let saved) = signIn { saved } else { nil }
        if token == nil {
            guard context.stdinIsTerminal, !auto else {
                if auto { return }
                context.output.error("Error: \(SignInText.problem(signIn) ?? "not signed in"); run `ivy login`")
                throw ExitCode(IvyExit.notSignedIn)
            }
            token = try await LoginCommand.signIn(context, library: library, holdingSyncLock: true)
        }
        guard let token else { throw ExitCode(IvyExit.notSignedIn) }

        let endpoints = try context.endpoints()
        let effects = context.google
        let provider = TokenProvider(
            token: token, store: store, endpoints: endpoints, credentials: try context.credentials(library), effects: effects)
        let concurrency = try library.number(.concurrency)
        let drive = DriveClient(
            drive: endpoints.drive, authorized: AuthorizedTransport(tokens: provider, transport: effects.transport), concurrency: concurrency)
        let live = !auto && !json && isatty(STDERR_FILENO) == 1
        let engine = SyncEngine(library: library, drive: drive, clock: context.clock, logger: logger, progress: { progress in
            guard live else { return }
            let megabytes = Double(progress.bytes) / 1_048_576
            let line = "\r\(progress.phase) \(progress.done)/\(progress.total)" + (progress.bytes > 0 ? String(format: ", %.1f MB", megabytes) : "")
            FileHandle.standardError.write(Data(line.utf8))
        })

        let report: SyncReport
        do {
            let timeout = Duration.seconds(try library.number(.syncTimeout))
            report = try await engine.run(SyncOptions(dryRun: dryRun, allowDeletes: allowDeletes, timeout: timeout))
        } catch let error as GoogleError {
            if live { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            switch error {
            case .signedOut, .notSignedIn:
                logger.warning("sync skipped: signed out", metadata: ["reason": "\(error.localizedDescription)"])
                if auto { return }
                context.output.error("Error: \(error.localizedDescription)")
                throw ExitCode(IvyExit.notSignedIn)
            default:
                throw try record(error, library: library, logger: logger)
            }
        } catch {
            if live { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            if auto, (error as? StoreError)?.isBusy == true {
                logger.warning(
                    "sync skipped: the library is busy", metadata: ["error": "\(error.localizedDescription)"])
                return
            }
            throw try record(error, library: library, logger: logger)
        }
        if live { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        logger.info("sync finished", metadata: ["summary": "\(report.summary)"])

        if json {
            try context.output.json(report)
        } else if dryRun {
            for entry in report.plan { context.output.line(Display.safe("\(entry.entity): \(entry.reason)")) }
            for entry in report.held { context.output.line(Display.safe("\(entry.entity): \(entry.reason)")) }
            context.output.line(Display.safe(report.summary))
        } else if !auto {
            context.output.line(Display.safe(report.summary))
            for failure in report.failures { context.output.error("failed: \(failure.entity): \(failure.reason)") }
        }
        if auto { return try tellCron(report, library: library, output: context.output) }
        if let held = report.deletionsHeld, !json { context.output.error("Held back: \(held)") }
        if !report.isComplete { throw ExitCode(IvyExit.partialFailure) }
    }

    /// Cron hears once about a failure: a change newly held back (one line, exit 5), or the
    /// safety valve newly holding deletions. A failure that may pass by itself (an attempt
    /// short of the third) is logged only, and the same news is never repeated.
    private func tellCron(_ report: SyncReport, library: LibraryDatabase, output: Output) throws {
        try library.setInternalSetting(.autoReportedError, nil)
        let newlyHeld = try library.takeUnreportedHeldItems()
        if let hold = report.deletionsHeld {
            if try library.internalSetting(.autoReportedHold) != hold {
                try library.setInternalSetting(.autoReportedHold, hold)
                output.error("ivy sync: held back: \(hold)")
            }
        } else {
            try library.setInternalSetting(.autoReportedHold, nil)
        }
        guard let first = newlyHeld.first else { return }
        let count = newlyHeld.count == 1 ? "1 change" : "\(newlyHeld.count) changes"
        output.error(
            "ivy sync: \(count) held back after failing \(QueueItem.maximumAttempts) times; first: \(first.key): "
                + "\(first.lastError ?? "no error was recorded"); run `ivy retry-failed`")
        throw ExitCode(IvyExit.partialFailure)
    }

    /// Logs and records a sync that could not run; for --auto an unreachable network is
    /// not an error (the queue keeps everything), anything else is one line for cron to mail.
    private func record(_ error: any Error, library: LibraryDatabase, logger: Logger) throws -> any Error {
        let message = error.localizedDescription
        logger.error("sync failed", metadata: ["error": "\(message)"])
        // Recording a busy library's error would only wait for the same lock again.
        if (error as? StoreError)?.isBusy != true { try? library.recordSetting(.lastError, message) }
        let unreachable = (error as? DriveError)?.kind == .network || {
            if case .network = error as? GoogleError { return true }
            return false
        }()
        if auto {
            // Offline is not news; the same error as the last run's was already said.
            if unreachable || (try? library.internalSetting(.autoReportedError)) == message { return ExitCode.success }
            try? library.setInternalSetting(.autoReportedError, message)
            FileHandle.standardError.write(Data("ivy sync: \(Display.safe(message))\n".utf8))
            return ExitCode.failure
        }
        return error
    }
}

struct QueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue", abstract: "List local changes still to reach Drive, with attempts and the last error.")

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print one JSON array.") var json = false

    struct Item: Encodable {
        let entity_type: String, entity_id: String, operation: String, attempts: Int, failed: Bool, last_error: String?
        let queued_at: Milliseconds

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(entity_type, forKey: .entity_type)
            try container.encode(entity_id, forKey: .entity_id)
            try container.encode(operation, forKey: .operation)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(failed, forKey: .failed)
            try container.encode(last_error, forKey: .last_error)
            try container.encode(queued_at, forKey: .queued_at)
        }

        enum Keys: String, CodingKey { case entity_type, entity_id, operation, attempts, failed, last_error, queued_at }
    }

    func run() throws {
        let context = try global.context()
        let items = try context.library(readOnly: true).queueItems()
        if json {
            return try context.output.json(items.map {
                Item(entity_type: $0.kind.rawValue, entity_id: $0.entityID, operation: $0.operation.rawValue, attempts: $0.attempts,
                    failed: $0.hasFailed, last_error: $0.lastError, queued_at: $0.queuedAt)
            })
        }
        guard !items.isEmpty else { return context.output.line("The queue is empty: everything has reached Drive.") }
        context.output.table(["KIND", "ID", "OPERATION", "STATE", "ATTEMPTS", "LAST ERROR"], items.map {
            [$0.kind.rawValue, $0.entityID, $0.operation.rawValue, $0.hasFailed ? "failed" : "pending", String($0.attempts), Display.cell($0.lastError, limit: 60)]
        })
    }
}

struct RetryFailedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry-failed", abstract: "Give failed queue items another chance: they become pending again.")

    @OptionGroup var global: GlobalOptions

    func run() throws {
        let context = try global.context()
        let count = try context.library().retryFailed()
        context.output.line(count == 0 ? "No failed items." : "\(count) failed item\(count == 1 ? "" : "s") will be tried again at the next sync.")
    }
}

struct ResetManifestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset-manifest",
        abstract: "Forget what was synced; the next sync compares everything afresh.",
        discussion: """
            Clears the sync manifest and the remembered Drive folders (queued changes stay). The next sync is a full \
            re-sync: entities on both sides are merged field by field, so nothing is duplicated or lost.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Do not ask for confirmation.") var yes = false

    func run() throws {
        let context = try global.context()
        let library = try context.library()
        if !yes {
            guard context.stdinIsTerminal else {
                throw ValidationError("reset-manifest needs confirmation; run it on a terminal or pass --yes")
            }
            context.output.line("Forget what this library last synced? The next sync re-compares everything. [y/N] ")
            context.output.flush()
            guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
                return context.output.line("Nothing changed.")
            }
        }
        let entries = try library.localStatus().manifestEntries
        try library.resetManifest()
        context.output.line("Forgot \(entries) synced entr\(entries == 1 ? "y" : "ies"); the next `ivy sync` is a full re-sync.")
    }
}
