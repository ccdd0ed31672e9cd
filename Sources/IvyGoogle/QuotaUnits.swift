import Foundation
import IvyCore
import Synchronization

/// What each Drive request costs in Google's quota units, the one table of them.
///
/// Since 1 May 2026 Google's Drive API "Usage limits" page
/// (developers.google.com/workspace/drive/api/guides/limits, "per-method quota") bills every
/// call in quota units by kind, with examples only: a read (`files.get`) 5, a list
/// (`files.list`) 100, a download (`files.download`) 200, an edit (`files.update`) 50, any
/// other call (`files.generateIds`) 5; quotas of 325,000 units a minute per user, 1,000,000
/// per project, and 400,000,000 a day per project. These figures are as the project's
/// Google reference (§9.1) records that page; the copies of the page this was checked
/// against show the quotas but not the per-method table, so the figures could not be
/// re-read there. Where Google names no kind, ivy assumes the dearer reading, so that it
/// never spends more than it thinks (marked *assumed*):
/// - `changes.list` bills as a list (100) — *assumed*;
/// - `files.get?alt=media` bills as a download (200) — *assumed*;
/// - `files.create` (metadata, media, multipart, a resumable session's start), every PUT of
///   a resumable session, `files.delete`: edits (50) — *assumed*;
/// - `about.get`, `changes.getStartPageToken`: reads (5) — *assumed*.
package enum QuotaUnits {
    package static let read = 5
    package static let list = 100
    package static let download = 200
    package static let edit = 50
    package static let other = 5

    /// The units `request` costs.
    package static func cost(of request: HTTPRequest) -> Int {
        cost(method: request.method, path: request.url.path, query: request.url.query)
    }

    package static func cost(method: String, path: String, query: String?) -> Int {
        let query = query ?? ""
        switch method {
        case "GET":
            if path.hasSuffix("/files/generateIds") { return other }
            if path.hasSuffix("/drive/v3/files") || path.hasSuffix("/drive/v3/changes") { return list }
            if query.contains("alt=media") { return download }
            return read
        default:
            return edit
        }
    }
}

/// The units ivy may spend a minute (`quota_units_per_minute`, Google's per-user quota
/// unless a Workspace account has another), as a bucket that refills evenly: a request
/// that would overdraw it waits until enough has come back, so a sync slows down before
/// Google has to refuse it.
package final class UnitBudget: Sendable {
    private struct State {
        var available: Double
        var updated: Duration
    }

    private let perMinute: Double
    private let sleep: @Sendable (Duration) async throws -> Void
    private let now: @Sendable () -> Duration
    /// A lock, not an actor, for the reason `Pacer` gives.
    private let state: Mutex<State>

    package init(
        perMinute: Int, sleep: @escaping @Sendable (Duration) async throws -> Void,
        now: @escaping @Sendable () -> Duration
    ) {
        self.perMinute = Double(max(1, perMinute))
        self.sleep = sleep
        self.now = now
        state = Mutex(State(available: Double(max(1, perMinute)), updated: now()))
    }

    /// Takes `units` from the budget, waiting first when the last minute spent too many.
    package func spend(_ units: Int) async throws {
        let wanted = min(Double(units), perMinute)
        while true {
            let short = state.withLock { state -> Double in
                refill(&state)
                guard state.available >= wanted else { return wanted - state.available }
                state.available -= wanted
                return 0
            }
            if short == 0 { return }
            try await sleep(.milliseconds(Int64((short / perMinute * 60 * 1000).rounded(.up))))
        }
    }

    private func refill(_ state: inout State) {
        let time = now()
        let elapsed = time - state.updated
        guard elapsed > .zero else { return }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        state.available = min(perMinute, state.available + seconds * perMinute / 60)
        state.updated = time
    }
}
