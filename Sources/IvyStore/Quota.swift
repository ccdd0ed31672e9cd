import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
    /// A week of milliseconds: how long the record of units spent is kept.
    static let quotaKept: Milliseconds = 7 * 86_400_000

    /// Records what one sync (or one look of a watch) cost in Google's quota units, and drops
    /// records older than a week.
    package func recordQuotaSpent(at time: Milliseconds, units: Int, requests: Int) async throws {
        guard units > 0 || requests > 0 else { return }
        try await write(.storeQuota) { db in
            try db.execute(
                sql: "INSERT INTO quota_spent (spent_at, units, requests) VALUES (?, ?, ?)",
                arguments: [time, max(0, units), max(0, requests)])
            try db.execute(sql: "DELETE FROM quota_spent WHERE spent_at < ?", arguments: [time - Self.quotaKept])
        }
    }

    /// The quota units and requests this device spent from `since` on.
    package func quotaSpent(since: Milliseconds) async throws -> (units: Int, requests: Int) {
        try await read { db in
            // A library opened read-only before its migration to this table has spent nothing yet.
            guard try db.tableExists("quota_spent") else { return (0, 0) }
            let row = try Row.fetchOne(
                db,
                sql: "SELECT coalesce(sum(units), 0) AS units, coalesce(sum(requests), 0) AS requests "
                    + "FROM quota_spent WHERE spent_at >= ?",
                arguments: [since])
            return (row?["units"] ?? 0, row?["requests"] ?? 0)
        }
    }
}
