import Foundation
import GRDB
import IvyCore
import IvySystem

/// Notices, cheaply, that a change waits to reach Drive: another program (or another ivy
/// command) committed to the library and the sync queue's pending rows are not what they
/// were. `PRAGMA data_version` on a connection of its own changes exactly when another
/// connection commits, so most looks cost one pragma and read no table; only after a
/// commit is the queue read (its pending rows' count and their times and attempts summed).
package final class LocalChangeProbe: Sendable {
    private let connection: DatabaseQueue

    /// What the sync queue's pending rows add up to: different whenever a change is queued,
    /// replaced, retried (`ivy retry-failed`) or pushed.
    package struct Pending: Sendable, Equatable {
        package let count: Int
        package let queuedAt: Int64
        package let attempts: Int64
        package let dataVersion: Int64
        /// Changes no sync has tried yet (made since the last one started, most likely).
        package let fresh: Int

        package init(count: Int, queuedAt: Int64, attempts: Int64, dataVersion: Int64, fresh: Int? = nil) {
            self.count = count
            self.queuedAt = queuedAt
            self.attempts = attempts
            self.dataVersion = dataVersion
            self.fresh = fresh ?? (attempts == 0 ? count : 0)
        }

        package static func == (lhs: Pending, rhs: Pending) -> Bool {
            lhs.count == rhs.count && lhs.queuedAt == rhs.queuedAt && lhs.attempts == rhs.attempts
        }

        /// Whether nothing waits to be pushed.
        package var isEmpty: Bool { count == 0 }
    }

    /// A read-only connection to `library`'s file, beside the library's own.
    package init(_ library: LibraryDatabase) throws {
        connection = try DatabaseQueue(
            path: library.paths.database, configuration: LibraryDatabase.configuration(readOnly: true))
    }

    /// The queue's pending rows as they stand; `last` is returned as it was when nothing was
    /// committed since it was read.
    package func pending(since last: Pending?) async throws -> Pending {
        try await connection.read { db in
            BlockingCalls.check("a look at the queue")
            let version = try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0
            if let last, last.dataVersion == version { return last }
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*) AS count, coalesce(sum(queued_at), 0) AS queued,
                        coalesce(sum(attempts), 0) AS tries, coalesce(sum(attempts = 0), 0) AS fresh
                    FROM sync_queue WHERE attempts < ?
                    """,
                arguments: [QueueItem.maximumAttempts])
            return Pending(
                count: row?["count"] ?? 0, queuedAt: row?["queued"] ?? 0, attempts: row?["tries"] ?? 0,
                dataVersion: version, fresh: row?["fresh"] ?? 0)
        }
    }
}
