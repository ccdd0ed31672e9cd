import Foundation
import GRDB
import IvyCore

/// A row of `trash`. `history_mark` is nil in a library whose trash an older ivy made.
struct TrashRow: SnakeCaseColumns {
    static let databaseTableName = "trash"

    var id: Int64
    var entityType: String
    var entityID: String
    var reason: String
    var trashedAt: Milliseconds
    var json: String
    var audioFile: String?
    var historyMark: Int64?

    var entry: TrashEntry {
        TrashEntry(
            id: id, key: EntityKey(EntityKind(rawValue: entityType) ?? .clip, entityID),
            reason: TrashReason(rawValue: reason) ?? .download, trashedAt: trashedAt, json: Data(json.utf8),
            audioFile: audioFile, historyMark: historyMark)
    }
}
