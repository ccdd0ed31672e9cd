package import IvyCore
import IvyGoogle

/// What one sync did, for the summary line, `--json` and the log.
package struct SyncReport: Sendable, Encodable {
    package struct Count: Sendable, Encodable, Equatable {
        package var books = 0
        package var clips = 0

        mutating func add(_ kind: EntityKind) {
            if kind == .book { books += 1 } else { clips += 1 }
        }

        package var total: Int { books + clips }
    }

    package struct Problem: Sendable, Encodable, Hashable {
        package var entity: String
        package var reason: String

        package init(entity: String, reason: String) {
            self.entity = entity
            self.reason = reason
        }
    }

    package var dryRun = false
    package var uploaded = Count()
    package var downloaded = Count()
    package var merged = Count()
    package var deletedRemote = Count()
    package var deletedLocal = Count()
    package var staleDuplicatesDeleted = 0
    /// Entities merged because both sides changed, by "kind id".
    package var conflicts: [String] = []
    package var failures: [Problem] = []
    /// Remote files that could not be used (bad JSON, wrong id, too large, incomplete clip).
    package var skipped: [Problem] = []
    /// Actions held back (failed items, the safety valve).
    package var held: [Problem] = []
    /// Every change held back after failing, as the queue stands after this sync, with its
    /// last error: nothing here reaches Drive until `ivy retry-failed`.
    package var heldChanges: [Problem] = []
    @Null package var deletionsHeld: String?
    /// What the restore drill this sync ran found (`history_check_days`); nil when it ran none,
    /// or every version it restored came back as recorded.
    @Null package var historyDrill: String?
    /// When this sync ran the restore drill, or started the count to the first; not in `--json`.
    package var historyCheckedAt: Milliseconds?
    package var orphanClips = 0
    package var bytesUploaded: Int64 = 0
    package var bytesDownloaded: Int64 = 0
    package var requests = 0
    /// Google's quota units those requests cost (IvyGoogle's `QuotaUnits`).
    package var quotaUnits = 0
    /// Answers that said the whole Cloud project's quota (every user of the OAuth client)
    /// was spent for now, which ivy waited out.
    package var sharedQuotaWaits = 0
    /// Planned operations not started because the sync was asked to stop (a watch ending);
    /// the next sync plans them again.
    package var leftForNextSync = 0
    /// Operations the plan held (done, failed or left); not in the JSON, which counts each kind.
    package var planned = 0
    /// A standing doubt about the mirror (deletions held back, a listing lacking many
    /// entities) that Drive's full listing confirmed; not printed.
    package var checkedDoubt: String?
    /// Why Drive was listed in full; nil when the change feed kept the mirror current.
    @Null package var fullListing: String?
    /// `duration_ms` in JSON.
    package var durationMS: Int64 = 0
    /// `--dry-run`: every planned action with its reason.
    package var plan: [Problem] = []

    package init() {}

    /// What `--json` prints (`JSONOutput`): every property but the plan's count and the
    /// doubt the listing confirmed.
    enum CodingKeys: CodingKey {
        case dryRun, uploaded, downloaded, merged, deletedRemote, deletedLocal, staleDuplicatesDeleted
        case conflicts, failures, skipped, held, heldChanges, deletionsHeld, historyDrill, orphanClips
        case bytesUploaded, bytesDownloaded, requests, quotaUnits, sharedQuotaWaits, leftForNextSync
        case fullListing, durationMS, plan
    }

    package var hasFailures: Bool { !failures.isEmpty }

    /// Exit 0 means everything here is on Drive: not with a failure, nor with a change held back.
    package var isComplete: Bool { failures.isEmpty && heldChanges.isEmpty && leftForNextSync == 0 }

    /// A success, for `last_success` and health checks: a sync that ran to the end with nothing
    /// failed or held (changes or deletions), and not a dry run.
    package var isSuccess: Bool { !dryRun && isComplete && deletionsHeld == nil && historyDrill == nil }

    /// Said once when Drive answered that the quota everyone using the OAuth client shares
    /// was spent (however many requests it refused): whose limit it was, and the way round it,
    /// which depends on whether the client is the one built into this release.
    package func sharedQuotaNotice(builtInClient: Bool) -> String? {
        guard sharedQuotaWaits > 0 else { return nil }
        return GoogleError.sharedQuotaName(builtInClient: builtInClient) + " ran out for a while, so this sync "
            + "waited. " + GoogleError.sharedQuotaFix(builtInClient: builtInClient)
    }

    /// `1 change held back after failing 3 times: book … (reason); run `ivy retry-failed``.
    package var heldSummary: String? {
        guard let first = heldChanges.first else { return nil }
        let count = heldChanges.count == 1 ? "1 change" : "\(heldChanges.count) changes"
        let more = heldChanges.count > 1 ? " and \(heldChanges.count - 1) more" : ""
        return
            "\(count) held back after failing \(QueueItem.maximumAttempts) times: \(first.entity) "
            + "(\(first.reason))\(more); "
            + "run `ivy retry-failed`"
    }

    /// What keeps this sync short of complete besides its failures (said one by one): changes
    /// held back, and operations a stop left for the next sync. `--quiet` prints only these.
    package var incompleteness: [String] {
        var lines: [String] = []
        if let heldSummary { lines.append(heldSummary) }
        if leftForNextSync > 0 { lines.append("stopped early: \(leftForNextSync) operations left for the next sync") }
        return lines
    }

    /// One line for people: what moved, what failed, what it cost.
    package var summary: String { summary(skipsListed: false) }

    /// The summary; `skipsListed`: each skipped Drive file was just listed, with why (`sync -v`).
    package func summary(skipsListed: Bool) -> String {
        var line = moved
        if leftForNextSync > 0 { line += "; stopped early, \(leftForNextSync) left for the next sync" }
        if !failures.isEmpty { line += "; \(failures.count) failed (see `ivy queue`)" }
        if skipsListed, !skipped.isEmpty {
            line += "; \(skipped.count == 1 ? "1 Drive file" : "\(skipped.count) Drive files") skipped (above)"
        } else if let first = skipped.first {
            // What was left alone, and why: a name alone would leave a person guessing.
            let what = "\(first.entity) (\(first.reason))"
            line +=
                skipped.count == 1
                ? "; skipped on Drive: \(what)"
                : "; \(skipped.count) skipped on Drive: \(what) and \(skipped.count - 1) more "
                    + "(`ivy sync -v` lists them, and why)"
        }
        if orphanClips > 0 {
            line += orphanClips == 1 ? "; 1 clip without its book" : "; \(orphanClips) clips without their book"
        }
        if let heldSummary { line += "; " + heldSummary }
        return line
    }

    /// `Synced: 1 uploaded, 2 downloaded; 5 requests in 0.3 s`: what moved, and what it cost.
    package var moved: String {
        var parts: [String] = []
        func add(_ count: Count, _ verb: String) {
            guard count.total > 0 else { return }
            parts.append("\(count.total) \(verb)")
        }
        add(uploaded, "uploaded")
        add(downloaded, "downloaded")
        add(merged, "merged")
        add(deletedRemote, "deleted on Drive")
        add(deletedLocal, "deleted here")
        let what = parts.isEmpty ? "nothing to do" : parts.joined(separator: ", ")
        return "\(dryRun ? "Would sync" : "Synced"): \(what); \(requests) request\(requests == 1 ? "" : "s") in "
            + "\(Double(durationMS) / 1000) s"
    }
}
