import GRDB
import IvyCore

/// A row of `merge_conflicts`, with whether each version it names is still in the history
/// (`versionKept`, `lostVersionKept`: computed by the query, not stored).
struct ConflictRow: SnakeCaseColumns {
    static let databaseTableName = "merge_conflicts"

    var id: Int64
    var entityType: String
    var entityID: String
    var field: String
    var keptJSON: String
    var lostJSON: String?
    var winner: String
    var rule: String
    var recordedAt: Milliseconds
    var historyID: Int64?
    var lostHistoryID: Int64?
    var versionKept: Bool
    var lostVersionKept: Bool

    /// A version pruned from the history since is not offered.
    var record: ConflictRecord {
        ConflictRecord(
            id: id, key: EntityKey(EntityKind(rawValue: entityType) ?? .clip, entityID), field: field,
            kept: ConflictJSON.value(keptJSON), lost: lostJSON.map(ConflictJSON.value), winner: winner, rule: rule,
            recordedAt: recordedAt, version: versionKept ? historyID : nil,
            lostVersion: lostVersionKept ? lostHistoryID : nil)
    }
}
