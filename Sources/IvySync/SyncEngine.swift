import Foundation
package import IvyCore
package import IvyGoogle
package import IvyStore
import IvySystem
package import Logging
import Synchronization

package struct SyncOptions: Sendable {
    package var dryRun = false
    package var allowDeletes = false
    /// `--full`: list Drive in full and rebuild the mirror, whatever the change feed says.
    package var full = false
    /// The whole sync's deadline (setting `sync_timeout`); nil for none.
    package var timeout: Duration?
    /// How long the server may keep the sync's requests waiting without a word before the
    /// sync stops (`SyncEngine.silenceBudget`); nil for no limit but the deadline.
    package var silenceBudget: Duration?
    /// Whether to stop soon (a watch asked to end): no operation starts once it is true,
    /// those already running finish and are recorded, and the rest waits for the next sync.
    package var stopping: @Sendable () -> Bool
    /// Drive files skipped and already logged by the sync before (a watch's): not logged again.
    package var knownSkips: Set<SyncReport.Problem>
    /// A standing doubt about the mirror the sync before checked against a full listing (its
    /// report's `checkedDoubt`): the same doubt again does not list Drive in full again.
    package var knownDoubt: String?
    package init(
        dryRun: Bool = false, allowDeletes: Bool = false, full: Bool = false, timeout: Duration? = nil,
        knownSkips: Set<SyncReport.Problem> = [], knownDoubt: String? = nil,
        stopping: @escaping @Sendable () -> Bool = { false }
    ) {
        self.knownSkips = knownSkips
        self.knownDoubt = knownDoubt
        self.dryRun = dryRun
        self.allowDeletes = allowDeletes
        self.full = full
        self.timeout = timeout
        self.stopping = stopping
    }
}

/// Why a sync stopped as a whole (an item's failure is in the report instead).
package enum SyncError: LocalizedError, Equatable {
    case timedOut(seconds: Int64)

    package var errorDescription: String? {
        switch self {
        case .timedOut(let seconds):
            "the sync did not finish within \(seconds) s (setting sync_timeout) and was stopped; what finished is "
                + "recorded and the rest is synced next time. If Drive is just slow, raise the limit: "
                + "`ivy config set sync_timeout \(max(seconds * 2, 3600))`"
        }
    }
}

/// One finished operation, for `ivy sync --verbose`: told as it finishes, in the order they
/// finish. What the report counts, one at a time.
package struct SyncStep: Sendable {
    package enum Result: Sendable {
        case done(SyncAction, conflict: Bool)
        case failed(String)
        /// A Drive file that could not be used (the entity is "Drive file <name>").
        case skipped(String)
        /// A stale duplicate of the entity deleted on Drive (its file name).
        case staleDuplicateDeleted(String)
    }

    /// "book <id>" or "clip <id>".
    package var entity: String
    /// A book's title as it stands here after the operation (the one it had, once deleted).
    package var title: String?
    package var result: Result
}

/// Turns the store, the planner and merge, and the Drive client into one safe sync:
/// list, plan, then carry out the plan with every finished operation recorded at once.
package final class SyncEngine: Sendable {
    let library: LibraryDatabase
    let drive: DriveClient
    let clock: WallClock
    let logger: Logger
    /// Told where the sync stands, bytes included as they move; nil (no terminal) saves
    /// counting them.
    let progress: (@Sendable (SyncProgress) -> Void)?
    /// Told of each finished operation; nil (the usual case) saves looking up titles.
    let steps: (@Sendable (SyncStep) -> Void)?
    /// Waits out the deadline; injected so tests decide when it passes.
    let sleep: @Sendable (Duration) async throws -> Void
    /// Operations carried out at the same time; the Drive client caps requests in flight.
    static let window = 16

    package init(
        library: LibraryDatabase, drive: DriveClient, clock: WallClock, logger: Logger,
        progress: (@Sendable (SyncProgress) -> Void)? = nil,
        steps: (@Sendable (SyncStep) -> Void)? = nil,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.library = library
        self.drive = drive
        self.clock = clock
        self.logger = logger
        self.progress = progress
        self.steps = steps
        self.sleep = sleep
    }

    /// How long the server may keep a sync's requests waiting without a word (`Silence`)
    /// before the sync stops, every change kept: a server that takes connections and never
    /// answers (a hung front end, a proxy or firewall that holds connections open) costs a
    /// sync this, not three of its requests' idle timeouts one after another (181 s before),
    /// with the sync lock held. Under a minute all in, with the time before the first request;
    /// the transport's own idle timeout (60 s) still ends a single request that hangs while
    /// others are answered.
    package static let silenceBudget = Duration.seconds(45)

    /// One sync, stopped at `options.timeout`: a Drive that hangs can never hold the lock
    /// (and so every later cron run) forever. Stopping cancels the requests in flight; every
    /// operation that finished before is already recorded. A server silent for
    /// `options.silenceBudget` stops it the same way, sooner (`GoogleError.noAnswer`); and no
    /// retry waits past the deadline (`SyncDeadline`).
    package func run(_ options: SyncOptions) async throws -> SyncReport {
        guard options.timeout != nil || options.silenceBudget != nil else { return try await runToEnd(options) }
        let deadline = options.timeout.map { ContinuousClock.now + min($0, .seconds(366 * 86_400)) }
        return try await SyncDeadline.$current.withValue(deadline) {
            try await withThrowingTaskGroup(of: SyncReport?.self) { group in
                group.addTask { try await self.runToEnd(options) }
                if let timeout = options.timeout {
                    group.addTask {
                        try await Self.wait(timeout, in: Self.deadlineSlice, sleep: self.sleep)
                        return nil
                    }
                }
                if let budget = options.silenceBudget {
                    group.addTask {
                        try await Self.watch(self.drive.silence, budget: budget, logger: self.logger)
                        return nil
                    }
                }
                defer { group.cancelAll() }
                guard let report = try await group.next() ?? nil else {
                    let seconds = options.timeout?.components.seconds ?? 0
                    logger.error("sync stopped at its deadline", metadata: ["seconds": "\(seconds)"])
                    throw SyncError.timedOut(seconds: seconds)
                }
                return report
            }
        }
    }

    /// Returns never: throws `GoogleError.noAnswer` once `silence` reaches `budget` (checked
    /// in slices of at most `deadlineSlice`, on the real clock the silence is measured by),
    /// or the cancellation that ends it with the sync.
    static func watch(_ silence: Silence, budget: Duration, logger: Logger) async throws {
        while true {
            let quiet = silence.quiet()
            if quiet >= budget {
                let seconds = Int(budget.components.seconds)
                logger.error("sync stopped: the server answered nothing", metadata: ["seconds": "\(seconds)"])
                throw GoogleError.noAnswer(seconds: seconds)
            }
            try await Task.sleep(for: min(budget - quiet, deadlineSlice))
        }
    }

    /// The longest single sleep of a sync's deadline. A cancelled `Task.sleep` answers at
    /// once, but on Linux its timer (about 2 KB) stays until the time it was set for: one
    /// sleep to a 30-minute deadline per sync made a watch polling every 2 s grow by 1.8 KB a
    /// poll for half an hour. Slept a slice at a time, a finished sync leaves one slice behind.
    static let deadlineSlice = Duration.seconds(5)

    /// Sleeps `duration` in sleeps of at most `slice`.
    static func wait(
        _ duration: Duration, in slice: Duration, sleep: @Sendable (Duration) async throws -> Void
    ) async throws {
        var left = duration
        while left > .zero {
            let next = min(left, slice)
            try await sleep(next)
            left -= next
        }
    }

    /// One sync in five steps: gather what both sides hold, plan, execute the plan's
    /// operations, settle what is left (stale duplicates, manifest and queue tidying), and
    /// record the outcome. A dry run stops after the plan.
    private func runToEnd(_ options: SyncOptions) async throws -> SyncReport {
        let started = clock.now()
        // Timed by the monotonic clock: Google's time moves as each answer narrows it.
        let began = ContinuousClock.now
        var gathered = try await gather(options)
        var plan = self.plan(gathered, options)
        let allowedDeletions =
            options.allowDeletes && !plan.actions(.deleteLocal).isEmpty ? "deletions allowed by --allow-deletes" : nil
        // A doubt that stays while nothing changes (deletions held back, a listing that lacks
        // many entities) and that the last sync already checked against Drive's own listing
        // (a watch says which) is not checked again: it acts on nothing, and checking it on
        // every poll would list Drive in full every few seconds.
        let standing = plan.listingDistrustedReason ?? plan.deletionsHeldReason
        let unchecked = standing == options.knownDoubt ? nil : standing
        if gathered.fullListingReason == nil,
            let doubt = unchecked ?? allowedDeletions ?? Self.reliesOnAbsence(plan, gathered)
        {
            // The mirror looks wrong (or the deletions it implies are many, or allowed past
            // the safety valve, or the plan acts on a file the mirror lacks): Drive's own
            // listing decides, before anything is deleted, restored or forgotten on the
            // mirror's word. A mirror that drifted from Drive is thus never acted on by what
            // it lacks; what it holds is checked by the transfers themselves.
            gathered = try await gather(options, fullListing: "checking the mirror of Drive: \(doubt)")
            plan = self.plan(gathered, options)
        }
        var report = SyncReport(plan, gathered, dryRun: options.dryRun)
        report.fullListing = gathered.fullListingReason
        let standingNow = plan.listingDistrustedReason ?? plan.deletionsHeldReason
        if gathered.fullListingReason != nil || standingNow == options.knownDoubt {
            report.checkedDoubt = standingNow
        }
        if options.dryRun {
            report.preview(plan)
            try await finish(&report, began: began)
            return report
        }
        // Started only now, so no step before the transfers can fail and leave it writing.
        let mirrorWrite = gathered.saveMirror.map(MirrorWrite.init)
        do {
            return try await carryOut(
                plan, gathered, report, options, started: started, began: began, mirrorWrite: mirrorWrite)
        } catch {
            // Not left writing once the sync lock is let go.
            await mirrorWrite?.abandon()
            throw error
        }
    }

    /// The plan carried out, settled and recorded: `runToEnd` once the plan is made.
    private func carryOut(
        _ plan: SyncPlan, _ gathered: Gathered, _ planned: SyncReport, _ options: SyncOptions, started: Milliseconds,
        began: ContinuousClock.Instant, mirrorWrite: MirrorWrite?
    ) async throws -> SyncReport {
        var report = planned
        // Only a listing taken at its word says what is missing on Drive, and what is not.
        if gathered.remote.isComplete, plan.listingDistrustedReason == nil {
            try await library.recordMissingOnDrive(
                Set(plan.missingOnDrive), entries: gathered.manifest, at: clock.now())
        }
        let trashDays = try await library.number(.trashDays)
        let context = Context(gathered, syncStarted: started, keepsTrash: trashDays > 0)
        let tally = progress.map { told in
            TransferTally(plan, expected: { self.expectedBytes($0, context) }, progress: told)
        }
        let outcomes = try await execute(plan.actions, context, stopping: options.stopping, tally: tally)
        for outcome in outcomes { report.add(outcome) }
        report.leftForNextSync = plan.actions.count - outcomes.count
        report.planned = plan.actions.count
        try await settle(plan, context, into: &report, stopping: options.stopping, tally: tally)
        try await mirrorWrite?.finished()
        report.orphanClips = try await library.orphanClipCount()
        await purgeTrash(keepingDays: trashDays)
        await pruneHistory()
        if !options.stopping() { await drillHistoryIfDue(&report) }
        try await finish(&report, began: began)
        try await record(report, knownSkips: options.knownSkips)
        return report
    }

    /// What one sync starts from: Drive's listing (creating ivy's folders unless this is a
    /// dry run) and the library's rows, queue and manifest, read after it.
    struct Gathered: Sendable {
        let listing: DriveListing
        /// Why Drive was listed in full; nil when the listing is the mirror kept current by
        /// Drive's change feed.
        let fullListingReason: String?
        /// Whether the folder listed is the one this library last synced with.
        let folderIsRecorded: Bool
        /// The mirror of a full listing, to be written beside the sync's transfers
        /// (`MirrorWrite`); nil when the listing came from the mirror, or in a dry run.
        let saveMirror: (@Sendable () async throws -> Void)?
        let queue: [QueueItem]
        let snapshot: LocalSnapshot
        let manifest: [ManifestEntry]
        /// The listing grouped by entity.
        let remote: RemoteListing
        /// How long an absence from Drive must last before it is acted on (`replace_grace`).
        let grace: Milliseconds
    }

    /// The listing comes from the mirror when its change token chain is unbroken: the
    /// changes since the saved token are applied to it, and a no-op sync costs one request.
    /// Otherwise (no mirror yet, `--full`, a token Drive refuses, a page that cannot be read
    /// or followed, a folder of ivy's that changed) Drive is listed in full, with a change
    /// token taken before the listing so no change made meanwhile is missed, and the mirror
    /// is rebuilt from it. ivy's own uploads and deletes of this sync are not written to the
    /// mirror: Drive reports them in the feed after the saved token, and the next sync
    /// applies them like any other device's. The mirror thus only ever holds what Drive
    /// reported, with the token saying up to when; a sync killed after an upload and
    /// before any record of it leaves nothing to repair.
    private func gather(_ options: SyncOptions, fullListing forced: String? = nil) async throws -> Gathered {
        // Under the sync lock no other transfer is running: these are a killed run's.
        if !options.dryRun, !PlantedDefect.keepTransferLeftovers.isPlanted { library.removeTransferLeftovers() }
        if !options.dryRun { await library.removeDeletedClipsAudio() }
        progress?(SyncProgress(phase: "listing Drive"))

        let remembered = try await library.rememberedFolders()
        var fullListingReason = forced ?? (options.full ? "--full" : nil)
        var followed: [RemoteFile]?
        if fullListingReason == nil {
            if let listedAt = try await library.driveMirrorListedAt(), clock.now() - listedAt > Self.mirrorMaximumAge {
                fullListingReason = "the last full listing is over a day old"
            } else if let remembered, let mirror = try await library.driveMirror() {
                switch try await followChanges(mirror, folders: remembered, dryRun: options.dryRun) {
                case .current(let files): followed = files
                case .needsFullListing(let reason): fullListingReason = reason
                }
            } else {
                fullListingReason = "no mirror of Drive's listing yet"
            }
        }
        let listing: DriveListing
        var saveMirror: (@Sendable () async throws -> Void)?
        if let followed, let remembered {
            listing = DriveListing(folders: remembered, files: followed)
        } else {
            let reason = fullListingReason ?? "no mirror of Drive's listing yet"
            fullListingReason = reason
            logger.info("listing Drive in full", metadata: ["reason": "\(reason)"])
            (listing, saveMirror) = try await listInFull(remembered: remembered, dryRun: options.dryRun)
        }
        let folderIsRecorded = remembered.map { $0.ivy.first == listing.folders.ivy.first } ?? true
        if listing.isComplete, !options.dryRun { try await library.forgetUnreadable(keeping: listing.files) }
        return try await Gathered(
            listing: listing, fullListingReason: fullListingReason, folderIsRecorded: folderIsRecorded,
            saveMirror: saveMirror, queue: library.queueItems(),
            snapshot: LocalSnapshot(books: library.books(includeHidden: true), clips: library.clips()),
            manifest: library.manifestEntries(),
            // A twin read once and found unusable is left alone, not downloaded at every sync.
            remote: RemoteListing(files: listing.files, isComplete: listing.isComplete)
                .settingAside(library.unreadableDriveFiles()),
            grace: Milliseconds(library.number(.replaceGrace)) * 1000)
    }

    /// How long the mirror goes without a full listing behind it. Drive's own listing can lag
    /// a change made just before the token a rebuild took, and Drive does not document every
    /// change it reports under drive.file; a daily full listing bounds how long any drift
    /// can last, at 2 + pages requests a day (the token, the folders and their pages).
    package static let mirrorMaximumAge: Milliseconds = 24 * 3600 * 1000

    /// Why a plan made from the mirror must be checked against a full listing: it deletes,
    /// restores or forgets an entity this library synced because the mirror holds no file of
    /// it (or, for a clip, lacks its JSON or its MP3). Edits on other devices replace files,
    /// so they show as other files of the same entity and cost nothing here; only absence,
    /// which a mirror that drifted from Drive would also show, needs Drive's own word.
    static func reliesOnAbsence(_ plan: SyncPlan, _ gathered: Gathered) -> String? {
        let synced = Set(gathered.manifest.map(\.key))
        let missing = plan.actions.first { action in
            guard synced.contains(action.key), action.action != .deleteRemote, action.action != .download else {
                return false
            }
            let remote = action.remote
            return remote?.json == nil || (action.key.kind == .clip && remote?.mp3 == nil)
        }
        if let missing { return "\(missing.key) is not in the mirror (\(missing.action.rawValue))" }
        if let gone = plan.manifestCleanup.first { return "\(gone) is gone from the mirror and from here" }
        return nil
    }

    /// Drive listed in full, and (unless this is a dry run) the mirror rebuilt from it with
    /// a change token taken before the listing, in one transaction with the folders. A
    /// listing that stopped early (or one without a token) is no mirror: the old one is
    /// forgotten first (its folders may no longer be the ones remembered), so the next sync
    /// lists in full again.
    ///
    /// The token is asked for beside the folder lookup, and no folder's files are listed (and
    /// no folder made) before Drive has answered it, so a change to a file made while the
    /// listing runs is in the feed the next sync follows. A folder another device made between
    /// the lookup and the token would be in neither: the mirror's write (`MirrorWrite`) looks
    /// the folders up again first, beside the sync's transfers, and keeps the mirror only when
    /// they are the ones listed. Returns the listing and that write, not yet started.
    private func listInFull(
        remembered: DriveFolders?, dryRun: Bool
    ) async throws -> (DriveListing, (@Sendable () async throws -> Void)?) {
        // A dry run saves no mirror, so it needs no token.
        let tokenAnswer = Task<String?, any Error>(executorPreference: BlockingExecutor.shared) { [drive] in
            dryRun ? nil : try await drive.startPageToken()
        }
        defer { tokenAnswer.cancel() }
        let listing = try await withTaskCancellationHandler {
            try await drive.listLibrary(remembered: remembered, createFolders: !dryRun) { _ = await tokenAnswer.result }
        } onCancel: {
            tokenAnswer.cancel()
        }
        guard !dryRun else { return (listing, nil) }
        var token: String?
        do {
            token = try await tokenAnswer.value
        } catch let error as DriveError {
            // Without a token the listing is still a listing; only the mirror waits.
            logger.warning("no change token: no mirror this time", metadata: ["error": "\(error.localizedDescription)"])
        }
        // No mirror: the old one is forgotten, and the folders listed remembered.
        let noMirror = { @Sendable [library] in
            try await library.clearDriveMirror()
            try await library.rememberFolders(listing.folders)
        }
        guard listing.isComplete, let token else {
            try await noMirror()
            return (listing, nil)
        }
        let listedAt = clock.now()
        let write = { @Sendable [library, drive, logger] in
            let again: DriveFolders?
            do {
                again = try await drive.existingFolders(remembered: listing.folders)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.warning(
                    "looking up ivy's folders again failed: no mirror this time",
                    metadata: ["error": "\(error.localizedDescription)"])
                again = nil
            }
            guard again == listing.folders else {
                if again != nil {
                    logger.info("ivy's folders on Drive changed while they were listed: no mirror this time")
                }
                try await noMirror()
                return
            }
            try await library.replaceDriveMirror(
                listing.mirrored, token: token, folders: listing.folders, listedAt: listedAt)
        }
        return (listing, write)
    }

    private func plan(_ gathered: Gathered, _ options: SyncOptions) -> SyncPlan {
        SyncPlanner.plan(
            PlanInput(
                local: gathered.snapshot, remote: gathered.remote, manifest: gathered.manifest, queue: gathered.queue,
                allowLocalDeletes: options.allowDeletes, folderIsRecorded: gathered.folderIsRecorded,
                now: clock.now(), grace: gathered.grace))
    }

    /// The MP3 bytes an action is expected to move, for the progress line's total: a clip's
    /// audio to upload (none when Drive's MP3 has its size: most likely the same bytes, kept)
    /// or Drive's MP3 to download (none when the one here is that file). A merge's audio is
    /// counted as it moves; each action's figure is set right when it finishes.
    private func expectedBytes(_ action: PlannedAction, _ context: Context) -> Int64 {
        let key = action.key
        guard case .clip(let clipID) = key else { return 0 }
        switch action.action {
        case .upload:
            let audio = URL(fileURLWithPath: library.audioPath(clipID: clipID))
            guard let size = try? LocalFile.size(of: audio), action.remote?.mp3?.size != size else { return 0 }
            return size
        case .download:
            guard let mp3 = action.remote?.mp3 else { return 0 }
            let kept = context.manifest[key]?.remoteMP3FileID == mp3.id && library.hasAudio(clipID: clipID)
            return kept ? 0 : mp3.size ?? 0
        case .merge, .deleteRemote, .deleteLocal:
            return 0
        }
    }

    /// Carries out the planned operations, `window` at a time; each records itself as it
    /// finishes. An error that stops the sync (`SyncFailure`) ends them all; `stopping`
    /// starts no more, and those not started wait for the next sync.
    private func execute(
        _ actions: [PlannedAction], _ context: Context, stopping: @Sendable () -> Bool, tally: TransferTally?
    ) async throws -> [Outcome] {
        try await withThrowingTaskGroup(of: Outcome.self) { group in
            var results: [Outcome] = []
            var pending = actions.enumerated()[...]
            func launch() {
                guard !Task.isCancelled, !stopping(), let (index, action) = pending.popFirst() else { return }
                tally?.started(index)
                group.addTask { [self] in
                    let moved = tally.map { tally in { @Sendable bytes in tally.moved(bytes, by: index) } }
                    let outcome = try await self.perform(action, context, moved: moved)
                    tally?.finished(index, bytes: outcome.bytes)
                    await self.tell(outcome, context.snapshot)
                    return outcome
                }
            }
            for _ in 0..<Self.window { launch() }
            while let outcome = try await group.next() {
                results.append(outcome)
                launch()
            }
            return results
        }
    }

    /// What is left once the operations ran: stale duplicates deleted on Drive, manifest rows
    /// of entities gone on both sides and queue items with nothing left to push dropped.
    private func settle(
        _ plan: SyncPlan, _ context: Context, into report: inout SyncReport, stopping: @Sendable () -> Bool,
        tally: TransferTally?
    ) async throws {
        for stale in plan.staleDuplicates {
            try Task.checkCancellation()
            // A stale duplicate left now is found again by the next sync.
            if stopping() { break }
            do {
                try await drive.delete(stale.file.id)
                report.staleDuplicatesDeleted += 1
                steps?(SyncStep(entity: "\(stale.key)", result: .staleDuplicateDeleted(stale.file.name)))
            } catch {
                if case .stopsSync(let error) = SyncFailure.of(error) { throw error }
                let reason = "deleting a stale duplicate: \(error.localizedDescription)"
                report.failures.append(.init(entity: stale.file.name, reason: reason))
                steps?(SyncStep(entity: stale.file.name, result: .failed(reason)))
            }
            tally?.finished(nil, bytes: 0)
        }
        try await library.cleanUpManifest(plan.manifestCleanup)
        for key in plan.droppedQueueItems { try await library.dropQueueItem(key, queuedAt: context.queuedAt(key)) }
    }

    /// Tells `steps` of one finished operation, with a book's title as it now stands here
    /// (after a download or merge, the one just written; after a delete, the one it had).
    private func tell(_ outcome: Outcome, _ snapshot: LocalSnapshot) async {
        guard let steps else { return }
        let result: SyncStep.Result
        switch outcome.result {
        case .done(let action, let conflict): result = .done(action, conflict: conflict)
        case .failed(let reason): result = .failed(reason)
        case .skipped(let file, let reason): result = .skipped("Drive file \(file): \(reason)")
        case .nothing: return
        }
        let key = outcome.key
        // A clip has no title of its own; its id says which.
        var title: String?
        if let id = key.bookID { title = ((try? await library.book(id: id)) ?? snapshot.books[id])?.title }
        steps(SyncStep(entity: "\(key)", title: title, result: result))
    }

    /// Ends the stay of trash entries older than `trash_days`: one query and a look at the
    /// trash directory. A failure here only delays that, so it is logged, not reported.
    private func purgeTrash(keepingDays days: Int) async {
        do {
            let purged = try await library.purgeTrash(keepingDays: days)
            if purged > 0 { logger.info("purged the local trash", metadata: ["entries": "\(purged)"]) }
        } catch {
            logger.warning("purging the local trash failed", metadata: ["error": "\(error.localizedDescription)"])
        }
    }

    /// Prunes the history as `history_days` says (all of it at 0). A failure only delays that,
    /// so it is logged, not reported.
    private func pruneHistory() async {
        do {
            let pruned = try await library.pruneHistoryIfDue(days: try library.number(.historyDays))
            if pruned > 0 { logger.info("pruned the history", metadata: ["versions": "\(pruned)"]) }
        } catch {
            logger.warning("pruning the history failed", metadata: ["error": "\(error.localizedDescription)"])
        }
    }

    /// The restore drill a sync runs every `history_check_days` (`ivy check --history`'s, small:
    /// 10 versions and every version of one entity, the kept MP3s of those alone), after its
    /// transfers and the prune; the first is due that many days after the library's first sync
    /// (a new history has little to drill). What it finds fails the sync's health ping and is
    /// said. When it ran, or when the count starts, `report.historyCheckedAt` says so, and the
    /// sync's own record keeps it: the drill writes nothing to the library of its own.
    private func drillHistoryIfDue(_ report: inout SyncReport) async {
        do {
            let days = try await library.number(.historyCheckDays)
            guard days > 0 else { return }
            let now = clock.now()
            guard let last = try await library.internalSetting(.historyCheckedAt).flatMap(Milliseconds.init) else {
                report.historyCheckedAt = now
                return
            }
            if now >= last, now - last < Milliseconds(days) * 86_400_000 { return }
            var random = SystemRandomNumberGenerator()
            let drill = try await library.historyDrill(sample: 10, allKept: false, using: &random)
            report.historyCheckedAt = now
            logger.info(
                "drilled the history",
                metadata: ["restored": "\(drill.restored)", "problems": "\(drill.problems.count)"])
            if let first = drill.problems.first {
                logger.error("the history drill found a version that does not restore", metadata: ["first": "\(first)"])
                report.historyDrill =
                    "\(drill.problems.count) problem\(drill.problems.count == 1 ? "" : "s") in the \(drill.restored) "
                    + "version\(drill.restored == 1 ? "" : "s") restored into a scratch copy; first: \(first)"
            }
        } catch {
            logger.warning("the history drill could not run", metadata: ["error": "\(error.localizedDescription)"])
        }
    }

    /// What the report says of every sync, a dry run's included: the changes still held
    /// back, the requests made and the time taken.
    private func finish(_ report: inout SyncReport, began: ContinuousClock.Instant) async throws {
        report.heldChanges = try await heldChanges()
        report.requests = drive.requestCount
        report.quotaUnits = drive.quotaUnits
        report.sharedQuotaWaits = drive.sharedQuotaCount
        let (seconds, attoseconds) = (ContinuousClock.now - began).components
        report.durationMS = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        do {
            try await library.recordQuotaSpent(at: clock.now(), units: report.quotaUnits, requests: report.requests)
        } catch {
            // Only `ivy status`'s count of units misses this sync.
            logger.warning(
                "recording the quota units spent failed", metadata: ["error": "\(error.localizedDescription)"])
        }
    }

    /// Records the sync: its time, its first failure as `last_error` (or none), the deletions it
    /// held back (or none, for `ivy doctor`), and every failure and skipped file in the log (a
    /// skip already logged, as `knownSkips` says, once).
    private func record(_ report: SyncReport, knownSkips: Set<SyncReport.Problem>) async throws {
        try await library.recordSyncOutcome(
            at: clock.now(), succeeded: report.isSuccess,
            lastError: report.failures.first.map { "\($0.entity): \($0.reason)" }, deletionsHeld: report.deletionsHeld,
            historyCheckedAt: report.historyCheckedAt)
        for failure in report.failures {
            logger.error("sync failure", metadata: ["entity": "\(failure.entity)", "reason": "\(failure.reason)"])
        }
        for skipped in report.skipped where !knownSkips.contains(skipped) {
            logger.warning("skipped", metadata: ["entity": "\(skipped.entity)", "reason": "\(skipped.reason)"])
        }
    }

    /// The queue's failed items, read after the sync: what is still not on Drive, and why.
    private func heldChanges() async throws -> [SyncReport.Problem] {
        try await library.heldItems().map {
            .init(entity: "\($0.key)", reason: $0.lastError ?? "no error was recorded")
        }
    }

    /// What every operation of one sync reads: the folders, and the queue, rows and manifest
    /// as they were when the plan was made.
    struct Context: Sendable {
        let folders: DriveFolders
        let queue: [EntityKey: QueueItem]
        let snapshot: LocalSnapshot
        let manifest: [EntityKey: ManifestEntry]
        let syncStarted: Milliseconds
        /// Whether the plan was made from the mirror rather than a full listing.
        let fromMirror: Bool
        /// Whether what the sync removes or overwrites here goes to the local trash first
        /// (`trash_days` above 0).
        let keepsTrash: Bool

        init(_ gathered: Gathered, syncStarted: Milliseconds, keepsTrash: Bool) {
            self.keepsTrash = keepsTrash
            fromMirror = gathered.fullListingReason == nil
            folders = gathered.listing.folders
            queue = Dictionary(gathered.queue.map { ($0.key, $0) }, uniquingKeysWith: { $1 })
            snapshot = gathered.snapshot
            manifest = Dictionary(gathered.manifest.map { ($0.key, $0) }, uniquingKeysWith: { $1 })
            self.syncStarted = syncStarted
        }

        /// When the entity's queue item was queued, so that recording a push removes that
        /// item and not a newer change queued meanwhile.
        func queuedAt(_ key: EntityKey) -> Milliseconds? { queue[key]?.queuedAt }
    }
}

/// How one planned action ended.
struct Outcome: Sendable {
    enum Result: Sendable {
        case done(SyncAction, conflict: Bool)
        case failed(String)
        case skipped(String, String)
        case nothing
    }

    var key: EntityKey
    var result: Result
    var bytes: Int64 = 0
    var bytesUp: Int64 = 0
    var bytesDown: Int64 = 0
}

extension SyncReport {
    /// A report of what the plan holds back or skips, before anything is carried out.
    init(_ plan: SyncPlan, _ gathered: SyncEngine.Gathered, dryRun: Bool) {
        self.init()
        self.dryRun = dryRun
        held = plan.held.map { .init(entity: "\($0.key)", reason: "\($0.action.rawValue) held back: \($0.reason)") }
        deletionsHeld = plan.deletionsHeldReason
        skipped =
            plan.skipped.map { .init(entity: "\($0.key)", reason: $0.reason) }
            + gathered.remote.ignored.map { .init(entity: $0.name, reason: "not an ivy file name; left alone") }
        if let reason = gathered.listing.incompleteReason {
            skipped.append(
                .init(entity: "Drive listing", reason: "stopped early: \(reason); nothing was deleted locally"))
        }
        if let reason = plan.listingDistrustedReason, plan.deletionsHeldReason == nil {
            skipped.append(.init(entity: "Drive listing", reason: reason))
        }
    }

    /// A dry run's report: every planned action with its reason, counted as if done.
    mutating func preview(_ plan: SyncPlan) {
        self.plan =
            plan.actions.map { .init(entity: "\($0.key)", reason: "\($0.action.rawValue): \($0.reason)") }
            + plan.staleDuplicates.map { .init(entity: $0.file.name, reason: "delete stale duplicate \($0.file.id)") }
        for action in plan.actions { count(action.action, action.key.kind) }
    }

    mutating func count(_ action: SyncAction, _ kind: EntityKind) {
        switch action {
        case .upload: uploaded.add(kind)
        case .download: downloaded.add(kind)
        case .merge: merged.add(kind)
        case .deleteRemote: deletedRemote.add(kind)
        case .deleteLocal: deletedLocal.add(kind)
        }
    }

    mutating func add(_ outcome: Outcome) {
        bytesUploaded += outcome.bytesUp
        bytesDownloaded += outcome.bytesDown
        switch outcome.result {
        case .done(let action, let conflict):
            count(action, outcome.key.kind)
            if conflict { conflicts.append("\(outcome.key)") }
        case .failed(let reason): failures.append(.init(entity: "\(outcome.key)", reason: reason))
        case .skipped(let file, let reason): skipped.append(.init(entity: file, reason: reason))
        case .nothing: break
        }
    }
}

/// The mirror of a full listing, written beside the sync's transfers rather than before them
/// (it is not needed until the next sync): the first downloads start as soon as the plan is made.
final class MirrorWrite: Sendable {
    private let task: Task<Void, any Error>

    init(_ work: @escaping @Sendable () async throws -> Void) {
        task = Task(executorPreference: BlockingExecutor.shared, operation: work)
    }

    /// Waits for the write; its failure is the sync's.
    func finished() async throws { try await task.value }

    /// Stops it where it stands and waits: a mirror is kept only if its transaction committed,
    /// and one not kept costs the next sync a full listing, nothing else.
    func abandon() async {
        task.cancel()
        _ = await task.result
    }
}
