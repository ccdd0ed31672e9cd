import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging
import Synchronization

struct SyncCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync the library with Google Drive.",
        discussion: """
            Reads what changed on Drive since the last sync (Drive's change feed, applied to a mirror of the \
            Drive listing kept in the library; a full listing the first time, with --full, or whenever the feed \
            cannot be followed), compares both sides with what was last synced, and then uploads, downloads, \
            merges and deletes as needed. --auto is for cron: it does nothing, silently, when signed out, when \
            sync_enabled is false, within auto_sync_cooldown seconds of the last sync, or while another sync runs.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "For cron: silent unless something fails; skips when there is nothing it should do.") var auto = false
    @Flag(help: "Print the plan with reasons and change nothing, here or on Drive.") var dryRun = false
    @Flag(help: "Print the report as one JSON object.") var json = false
    @Flag(
        name: [.short, .long],
        help: "Print only problems: no summary, no progress line; failures and errors still on standard error.")
    var quiet = false
    @Flag(
        name: [.short, .long],
        help: ArgumentHelp(
            "Print a line for each operation as it finishes (uploaded, downloaded, merged, deleted, failed), "
                + "then the summary, ending with the Google quota units the sync spent."))
    var verbose = false
    @Flag(help: "Allow a sync to delete many clips here (overrides the safety valve).") var allowDeletes = false
    @Flag(
        help: ArgumentHelp(
            "List Drive in full instead of reading only its changes, and rebuild the mirror of Drive kept here: "
                + "the repair when a sync seems to miss what is on Drive."))
    var full = false
    @Flag(
        help: ArgumentHelp(
            "Keep running until Ctrl-C or SIGTERM: sync about a second after a change here, and read Drive's "
                + "change feed every --interval seconds (one request when nothing changed)."))
    var watch = false
    @Option(
        help: ArgumentHelp(
            "With --watch: seconds between looks at Drive (default 10; 2 to 86400).", valueName: "SECONDS"))
    var interval: Int?

    func validate() throws {
        if quiet && verbose { throw ValidationError("--quiet and --verbose contradict each other; use one of them") }
        if json && (quiet || verbose) {
            let flag = quiet ? "--quiet" : "--verbose"
            throw ValidationError(
                "--json prints the whole report (every failure included) and nothing else; drop \(flag)")
        }
        if auto && verbose {
            throw ValidationError("--auto is for cron and prints only what cron must hear; drop --verbose")
        }
        if dryRun && quiet { throw ValidationError("--dry-run prints the plan; a quiet one would print nothing") }
        if let interval {
            guard watch else { throw ValidationError("--interval is for --watch; add --watch, or drop --interval") }
            guard (WatchSchedule.shortestInterval...WatchSchedule.longestInterval).contains(interval) else {
                throw ValidationError(
                    "--interval must be from \(WatchSchedule.shortestInterval) to \(WatchSchedule.longestInterval) "
                        + "seconds (a day)")
            }
        }
        guard watch else { return }
        if auto {
            throw ValidationError("--watch keeps running and --auto is for cron; use one of them")
        }
        if dryRun { throw ValidationError("--watch cannot be a dry run; use `ivy sync --dry-run` once") }
        if allowDeletes {
            throw ValidationError(
                "--watch cannot allow deletions past the safety valve; run `ivy sync --allow-deletes` once")
        }
    }

    func run(_ context: Context) async throws {
        let home: Home
        do {
            home = try global.home(context)
        } catch let refusal as UnsafeDirectoryError where auto {
            return try await tellCron(refusal, context)
        }
        if watch {
            return try await SyncWatch(
                home: home, interval: interval ?? 10, json: json, full: full, quiet: quiet, verbose: verbose
            ).run()
        }
        guard let library = try await openLibrary(home) else { return }
        let logger = try await home.logger(library)
        // Cron never hears about sign-in: a damaged token file is logged, not printed.
        let tokens = auto ? home.tokenStore(warn: { logger.warning("\($0)") }) : home.tokenStore
        var request = SyncRequest(dryRun: dryRun, allowDeletes: allowDeletes, full: full)
        // --verbose says what finished, line by line; a progress line rewritten between them
        // would only garble them.
        let live = !auto && !json && !quiet && !verbose && home.terminal.error
        let output = home.output
        // What -v said of skipped Drive files as they happened; the rest it lists at the end.
        let toldSkips = Mutex<Set<String>>([])
        if verbose {
            request.steps = { @Sendable step in
                output.step(step)
                if case .skipped(let reason) = step.result { toldSkips.withLock { _ = $0.insert(reason) } }
            }
        }
        let line = live ? ProgressLine(output: output, clock: home.clock, width: home.terminal.errorWidth) : nil
        if let line { request.progress = { @Sendable in line.show($0) } }
        if home.terminal.input && !auto {
            request.signInFirst = { _ in
                try await LoginCommand.signIn(home, library: library, tokens: tokens, holdingSyncLock: true)
            }
        }
        // Ctrl-C (or SIGTERM) lets the operations in flight finish and be recorded and starts
        // no more, as a watch's does; a second one cancels them.
        let stop = StopRequest()
        request.options.stopping = { stop.requested }
        home.context.interruptions { _ in
            if !stop.requested { line?.stopping() }
            stop.request()
        }
        let door = home.syncDoor(library, tokens: tokens, logger: logger)
        // Cron's policy inside the health pings: a skip it judges no news pings nothing.
        let layers: [any SyncMiddleware] = auto ? [HealthPings(), CronPolicy()] : [HealthPings()]
        let result = await stop.cancellable { [request] () async -> Result<SyncOutcome, any Error> in
            do { return .success(try await door.sync(request, through: layers)) } catch { return .failure(error) }
        }
        if auto, case .failure(let error) = result, !(error is ExitCode), !(error is CancellationError) {
            // Cron's policy let it through as news: said, and only then marked told.
            let status = IvyCommand.status(for: error, context: context)
            await CronPolicy.told(error, library: library)
            throw ExitCode(status)
        }
        let outcome = try result.get()
        line?.clear()
        // A sign-in made at another server than Google's (ivy-emulator) names it when it is gone.
        let server = tokens.quietLoad().flatMap { try? home.endpoints(for: $0) }.flatMap { $0.isGoogle ? nil : $0 }
        if case .failed(let error, _) = outcome, error is CancellationError, stop.requested {
            // A second Ctrl-C: the operations in flight were cancelled; each that finished
            // before was recorded as it finished, and every other change is still queued.
            logger.notice("sync stopped at once by a second signal")
            output.error("Stopped at once: what finished is recorded, and the rest is queued for the next sync")
            throw ExitCode(IvyExit.partialFailure)
        }
        guard
            case (let report, let cronNews)? = try await finished(
                outcome, server: server, output: output, zone: home.displayZone, library: library)
        else {
            return
        }
        logger.info("sync finished", metadata: ["summary": "\(report.summary)"])
        let builtInClient = (try? await home.client(library).source) == .builtIn
        try show(report, output: output, toldSkips: toldSkips.withLock { $0 }, builtInClient: builtInClient)
        if stop.requested, report.leftForNextSync > 0 {
            let done = report.planned - report.leftForNextSync
            logger.notice(
                "sync stopped by a signal",
                metadata: ["done": "\(done)", "planned": "\(report.planned)", "left": "\(report.leftForNextSync)"])
            if !json {
                output.error("Stopped: \(done) of \(report.planned) done; the rest is queued for the next sync")
            }
        }
        if let cronNews { return try await tellCron(cronNews, library: library, output: output) }
        if let held = report.deletionsHeld, !json { output.error("Held back: \(held)") }
        if let drill = report.historyDrill, !json {
            output.error("History drill: \(drill); `ivy check --history` runs the whole drill")
        }
        if !report.isComplete { throw ExitCode(IvyExit.partialFailure) }
    }

    /// --auto in a home ivy refuses: nothing in it is used; cron hears it once, as a sync that
    /// could not start (exit 1), and the health check every run (`CronPolicy.refused`).
    private func tellCron(_ refusal: UnsafeDirectoryError, _ context: Context) async throws {
        let paths = try global.home(context, checked: false).paths
        guard
            await CronPolicy.refused(
                refusal, paths: paths, clock: context.clock, deadline: context.healthDeadline,
                environment: context.environment)
        else { return }
        Output(context).errorText("ivy sync: \(Display.safe(refusal.description))\n")
        throw ExitCode.failure
    }

    /// The library, or nil for --auto while another program holds a long write: like
    /// another sync running, cron need not hear.
    private func openLibrary(_ home: Home) async throws -> LibraryDatabase? {
        do {
            return try await home.library()
        } catch let error as StoreError where auto && error.isBusy {
            return nil
        }
    }

    /// The report of a sync that ran (with what cron has not heard, for --auto), or nil when
    /// --auto has nothing to say; a sync that could not run ends the command with its status.
    private func finished(
        _ outcome: SyncOutcome, server: GoogleEndpoints?, output: Output, zone: LocalZone?, library: LibraryDatabase
    ) async throws -> (SyncReport, CronNews?)? {
        switch outcome {
        case .finished(let report, let cronNews):
            return (report, cronNews)
        case .skipped:
            return nil
        case .busy(let pid):
            output.error("Error: another sync is running\(pid.map { " (process \($0))" } ?? ""); wait for it to finish")
            throw ExitCode(IvyExit.busy)
        case .notSignedIn(let signIn):
            output.error("Error: \(SignInText.problem(signIn, zone: zone) ?? "not signed in"); run `ivy login`")
            throw ExitCode(IvyExit.notSignedIn)
        case .signedOut(let error):
            output.error("Error: \(error.localizedDescription)")
            throw ExitCode(IvyExit.notSignedIn)
        case .failed(let error, let cronHears):
            // As the door recorded it for `ivy status`: with what to do when Google could not be reached.
            guard auto else { throw Unreachable.explained(error, server: server) }
            guard cronHears else { return nil }
            output.errorText("ivy sync: \(Display.safe(error.localizedDescription))\n")
            // Marked told only now that cron was told: a run killed between the two tells it again.
            await CronPolicy.told(error, library: library)
            throw ExitCode.failure
        }
    }

    private func show(_ report: SyncReport, output: Output, toldSkips: Set<String>, builtInClient: Bool) throws {
        if json {
            try output.json(report)
        } else if dryRun {
            for entry in report.plan { output.line(Display.safe("\(entry.entity): \(entry.reason)")) }
            for entry in report.held { output.line(Display.safe("\(entry.entity): \(entry.reason)")) }
            output.line(Display.safe(report.summary))
        } else if !auto {
            // -v lists every Drive file the sync skipped, with why (those skipped while it ran were
            // said then), and what the sync cost in Google's quota units at the end of the summary.
            if verbose {
                for skip in report.skipped where !toldSkips.contains("Drive file \(skip.entity): \(skip.reason)") {
                    output.line(Display.safe("skipped \(skip.entity): \(skip.reason)"))
                }
            }
            let units = verbose ? "; \(report.quotaUnits) Google quota units" : ""
            if !quiet { output.line(Display.safe(report.summary(skipsListed: verbose)) + units) }
            if let notice = report.sharedQuotaNotice(builtInClient: builtInClient) { output.error(notice) }
            // --verbose said each failure as it happened.
            if !verbose {
                for failure in report.failures { output.error("failed: \(failure.entity): \(failure.reason)") }
            }
            // Quiet drops the summary, not what keeps the sync short of complete (exit 5).
            if quiet { for problem in report.incompleteness { output.error(problem) } }
        }
    }

    /// Cron hears once about a failure: a change newly held back (one line, exit 5), or the
    /// safety valve newly holding deletions. A failure that may pass by itself (an attempt
    /// short of the third) is logged only, and the same news is never repeated.
    private func tellCron(_ news: CronNews, library: LibraryDatabase, output: Output) async throws {
        if let hold = news.newHold {
            output.error("ivy sync: held back: \(hold)")
            // Marked told only now, as a held change is below.
            try await library.setInternalSetting(.autoReportedHold, hold)
        }
        if let first = news.newlyHeld.first {
            let count = news.newlyHeld.count == 1 ? "1 change" : "\(news.newlyHeld.count) changes"
            output.error(
                "ivy sync: \(count) held back after failing \(QueueItem.maximumAttempts) times; first: \(first.key): "
                    + "\(first.lastError ?? "no error was recorded"); run `ivy retry-failed`")
        }
        // Marked told only now that cron was told: a run killed between the two tells it again.
        try await library.markHeldReported(news.newlyHeld)
        if !news.newlyHeld.isEmpty { throw ExitCode(IvyExit.partialFailure) }
    }
}
