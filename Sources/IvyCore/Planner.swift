/// What a sync does to one entity.
package enum SyncAction: String, Sendable, CaseIterable, Codable {
    /// Local → Drive (replacing any files of that name).
    case upload
    /// Drive → local.
    case download
    /// Both changed: download, merge, write locally, upload the result.
    case merge
    /// Delete the entity's files on Drive (a clip deleted here).
    case deleteRemote = "delete_remote"
    /// Delete the local entity (a clip deleted on another device).
    case deleteLocal = "delete_local"
}

/// One decision of the plan, with the reason shown by `ivy sync --dry-run` and the log.
package struct PlannedAction: Sendable, Equatable {
    package var key: EntityKey
    package var action: SyncAction
    package var reason: String
    /// The entity's files seen on Drive: what to fetch for a download or merge, what to
    /// delete before an upload creates the new file, what a remote delete removes.
    package var remote: RemoteEntity?

    package init(key: EntityKey, action: SyncAction, reason: String, remote: RemoteEntity? = nil) {
        self.key = key
        self.action = action
        self.reason = reason
        self.remote = remote
    }
}

/// An entity that needed an action but will not get it in this sync, and why.
package struct HeldAction: Sendable, Equatable {
    package var key: EntityKey
    package var action: SyncAction
    package var reason: String
}

/// An entity left alone on purpose, and why (an incomplete clip on Drive, a listing
/// that stopped early).
package struct SkippedEntity: Sendable, Equatable {
    package var key: EntityKey
    package var reason: String
}

package struct StaleFile: Sendable, Equatable {
    package var key: EntityKey
    package var file: RemoteFile
}

/// Everything one sync will do, decided before anything touches the network.
package struct SyncPlan: Sendable, Equatable {
    package var actions: [PlannedAction] = []
    /// Older files sharing a name with an entity's current file, to delete.
    package var staleDuplicates: [StaleFile] = []
    /// Manifest rows whose entity is gone on both sides.
    package var manifestCleanup: [EntityKey] = []
    /// Queue items with nothing left to push (entity gone, never synced).
    package var droppedQueueItems: [EntityKey] = []
    /// Failed items held back from pushes, and deletions held by the safety valve.
    package var held: [HeldAction] = []
    package var skipped: [SkippedEntity] = []
    /// Why local deletions were held back, when they were.
    package var deletionsHeldReason: String?
    /// Why a listing that read every page was still not taken at its word, when it was not.
    package var listingDistrustedReason: String?
    /// Synced entities found missing on Drive (whole, or a clip's JSON) where another
    /// device's replace may be the cause: the sync records since when, and the planner
    /// restores them only once they have been missing for `SyncPlanner.replaceGrace`.
    package var missingOnDrive: [EntityKey] = []

    package init() {}

    package func actions(_ action: SyncAction, _ kind: EntityKind? = nil) -> [PlannedAction] {
        actions.filter { $0.action == action && (kind == nil || $0.key.kind == kind) }
    }

    package var isEmpty: Bool {
        actions.isEmpty && staleDuplicates.isEmpty && manifestCleanup.isEmpty && droppedQueueItems.isEmpty
    }
}

/// Everything the planner reads. Pure data: no database, network or clock.
package struct PlanInput: Sendable {
    package var local: LocalSnapshot
    package var remote: RemoteListing
    package var manifest: [EntityKey: ManifestEntry]
    package var queue: [EntityKey: QueueItem]
    /// `--allow-deletes`: overrides the safety valve.
    package var allowLocalDeletes: Bool
    /// False when the Ivy folder on Drive is not the one this library last synced with.
    package var folderIsRecorded: Bool
    /// This device's time now, to tell how long an entity has been missing on Drive.
    package var now: Milliseconds
    /// How long an absence must last before it is acted on (setting `replace_grace`).
    package var grace: Milliseconds

    package init(
        local: LocalSnapshot, remote: RemoteListing, manifest: [ManifestEntry] = [], queue: [QueueItem] = [],
        allowLocalDeletes: Bool = false, folderIsRecorded: Bool = true, now: Milliseconds = 0,
        grace: Milliseconds = SyncPlanner.replaceGrace
    ) {
        self.now = now
        self.grace = grace
        self.local = local
        self.remote = remote
        self.manifest = Dictionary(manifest.map { ($0.key, $0) }, uniquingKeysWith: { $1 })
        self.queue = Dictionary(queue.map { ($0.key, $0) }, uniquingKeysWith: { $1 })
        self.allowLocalDeletes = allowLocalDeletes
        self.folderIsRecorded = folderIsRecorded
    }
}

/// Turns local state, the Drive listing, the manifest and the queue into a plan.
///
/// Three-way: the manifest says what both sides looked like when they last agreed, so
/// comparing each side with it tells who changed. Queued edits go through the same rules
/// as everything else: never pushed blindly over a change made on another device.
package enum SyncPlanner {
    /// The safety valve lets a sync delete this many clips locally whatever the share.
    package static let deletionFloor = 10

    /// How long a synced entity unchanged here must stay missing on Drive (across syncs this
    /// long apart) before this device restores it. ivy and the Ivy app replace a file by
    /// deleting it and then creating the new one; a listing between the two sees it missing.
    /// Restoring it then would put this device's older copy beside (or after) the other
    /// device's new one. A replace that died is still repaired, after this long. The default
    /// of the setting `replace_grace`.
    package static let replaceGrace: Milliseconds = 60_000

    package static func plan(_ input: PlanInput) -> SyncPlan {
        var plan = SyncPlan()
        let keys = Set(input.local.keys).union(input.remote.entities.keys).union(input.manifest.keys).union(
            input.queue.keys)
        for key in keys.sorted() {
            decide(key, input, into: &plan)
        }
        applySafetyValve(input, to: &plan)
        return plan
    }

    /// Puts what the rules say of one entity (`EntityRules`) into the plan.
    private static func decide(_ key: EntityKey, _ input: PlanInput, into plan: inout SyncPlan) {
        let entity = EntityRules(key, input)
        func act(_ action: SyncAction, _ reason: String) {
            let isPush = action == .upload || action == .merge || action == .deleteRemote
            if isPush, let queued = entity.queued, queued.hasFailed {
                plan.held.append(
                    HeldAction(
                        key: key, action: action,
                        reason:
                            "failed \(queued.attempts) times (\(queued.lastError ?? "unknown error")); `ivy "
                            + "retry-failed` tries again"
                    ))
                return
            }
            plan.actions.append(PlannedAction(key: key, action: action, reason: reason, remote: entity.remote))
        }
        func skip(_ reason: String) { plan.skipped.append(SkippedEntity(key: key, reason: reason)) }

        switch entity.verdict() {
        case .act(let action, let reason):
            act(action, reason)
        case .afterGrace(let action, let reason, let missing):
            plan.missingOnDrive.append(key)
            if let since = entity.manifest?.missingSince, input.now - since >= input.grace {
                act(action, reason)
            } else {
                skip(
                    "\(missing) on Drive, perhaps while another device replaces it (delete, then create); "
                        + "\(action == .merge ? "merged and uploaded" : "uploaded from here") if it is still "
                        + "missing \(input.grace / 1000) s after a sync first saw it so")
            }
        case .skip(let reason):
            skip(reason)
        case .forget:
            if entity.manifest != nil { plan.manifestCleanup.append(key) }
            if entity.queued != nil { plan.droppedQueueItems.append(key) }
        case .nothing:
            break
        }

        // Stale duplicates go with the entity's upload or remote delete when it has one. Twin
        // files (JSON, or MP3s of other content) are never deleted unread: the download or
        // merge that reads them does, and without one (held back, left alone) they stay.
        let mine = plan.actions.last.flatMap { $0.key == key ? $0.action : nil }
        let replaced = mine == .upload || mine == .merge || mine == .deleteRemote
        if !replaced, let remote = entity.remote {
            plan.staleDuplicates += remote.stale.filter { !entity.twins.contains($0) }.map {
                StaleFile(key: key, file: $0)
            }
        }
    }

    /// True when a sync would act on this many of the `known` entities only with a look first:
    /// more than `deletionFloor`, and more than half.
    static func isSuspicious(_ count: Int, of known: Int) -> Bool {
        count > deletionFloor && count * 2 > known
    }

    /// Why a listing that read every page cannot be the whole truth: it lacks more of the
    /// books (or clips) this library synced than the safety valve lets go at once. Drive can
    /// answer a query with results silently missing (rclone's `--drive-fast-list-bug-fix`).
    /// A folder that is not the recorded one has a rule of its own.
    private static func shortListing(_ input: PlanInput) -> String? {
        guard input.remote.isComplete, input.folderIsRecorded else { return nil }
        for kind in EntityKind.allCases {
            let known = input.manifest.keys.filter { $0.kind == kind }
            let missing = known.filter { input.remote.entities[$0] == nil }.count
            if isSuspicious(missing, of: known.count) {
                return "the Drive listing shows only \(known.count - missing) of the \(known.count) "
                    + "\(kind == .book ? "books" : "clips") this library synced, so it is taken as incomplete"
            }
        }
        return nil
    }

    /// Holds back local deletions when there are suspiciously many, or when the Drive
    /// folder is not the one this library synced with, unless the caller allows them. A
    /// listing far shorter than what was synced is treated as incomplete besides: taken at its
    /// word it would delete here what Drive only left out, and upload again beside the file
    /// still on Drive every entity it lacks (books are restored when missing).
    private static func applySafetyValve(_ input: PlanInput, to plan: inout SyncPlan) {
        guard !input.allowLocalDeletes else { return }
        let short = shortListing(input)
        if let short {
            plan.listingDistrustedReason =
                "\(short): nothing was deleted here and nothing it lacks was uploaded again. "
                + "If Drive really lost them, `ivy sync --allow-deletes` goes by the listing"
            let lacking = plan.actions.filter { action in
                action.action == .upload && action.remote == nil && input.manifest[action.key] != nil
            }
            plan.actions.removeAll { action in lacking.contains { $0.key == action.key } }
            plan.held += lacking.map { HeldAction(key: $0.key, action: $0.action, reason: short) }
            // Gone from the listing is not gone from Drive: keep the records of what was synced.
            plan.manifestCleanup = []
            plan.droppedQueueItems.removeAll { input.manifest[$0] != nil }
        }
        let deletions = plan.actions(.deleteLocal)
        guard !deletions.isEmpty else { return }
        let known = input.manifest.keys.filter { $0.kind == .clip }.count
        let reason: String
        if !input.folderIsRecorded {
            reason = "the Ivy folder on Drive is not the one this library last synced with"
        } else if isSuspicious(deletions.count, of: known) {
            reason = "\(deletions.count) of the \(known) clips this library synced would be deleted here"
        } else if let short {
            reason = short
        } else {
            return
        }
        // Said once: a listing taken as incomplete is part of this statement, not a second one.
        let incomplete = short != nil && reason != short ? ", and the Drive listing is taken as incomplete" : ""
        let lacking = short == nil ? "" : " and nothing the listing lacks was uploaded again"
        plan.deletionsHeldReason =
            "\(reason)\(incomplete); nothing was deleted locally\(lacking). Check Drive, then run "
            + "`ivy sync --allow-deletes` to \(short == nil ? "delete them" : "go by the listing")"
        plan.actions.removeAll { $0.action == .deleteLocal }
        plan.held += deletions.map { HeldAction(key: $0.key, action: .deleteLocal, reason: reason) }
    }
}
