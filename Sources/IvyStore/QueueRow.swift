import GRDB
import IvyCore

/// A row of `sync_queue`.
struct QueueRow: SnakeCaseColumns {
    static let databaseTableName = "sync_queue"

    var entityType: String
    var entityID: String
    var operation: String
    var attempts: Int
    var lastError: String?
    var queuedAt: Milliseconds

    /// The schema allows only known kinds and operations; another program's row is read as
    /// an upsert of a book, as it always was.
    var item: QueueItem {
        QueueItem(
            key: EntityKey(EntityKind(rawValue: entityType) ?? .book, entityID),
            operation: QueueItem.Operation(rawValue: operation) ?? .upsert, attempts: attempts,
            lastError: lastError, queuedAt: queuedAt)
    }
}
