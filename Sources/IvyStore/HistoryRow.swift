import Foundation
import GRDB
import IvyCore

/// A row of `history`; the `previous…` columns only when the query joins each version to
/// the one before it of the same entity (`versions(of:since:until:)`).
struct HistoryRow: SnakeCaseColumns {
    static let databaseTableName = "history"

    var id: Int64
    var entityType: String
    var entityID: String
    var recordedAt: Milliseconds
    var source: String
    var json: String?
    var audioMD5: String?
    /// Which clock dated it (`google`, `device`); none for versions older ivy recorded.
    var clock: String?
    var previousID: Int64?
    var previousJSON: String?
    var previousMD5: String?

    var key: EntityKey { EntityKey(EntityKind(rawValue: entityType) ?? .clip, entityID) }

    /// The version with no fields marked changed.
    var version: HistoryVersion { version(changed: []) }

    /// The version with the fields changed since the version before it: every field of the
    /// first version, an MP3 whose md5 differs from the one before.
    var versionWithChanges: HistoryVersion {
        let data = json.map { Data($0.utf8) }
        let previous = previousJSON.flatMap { History.object(Data($0.utf8)) }
        let hadPrevious = previousID != nil
        let audioChanged = data != nil && hadPrevious && previous != nil && audioMD5 != previousMD5
        return version(
            changed: History.changedFields(
                from: hadPrevious ? previous ?? [:] : nil, to: data.flatMap(History.object), audioChanged: audioChanged)
        )
    }

    private func version(changed: [String]) -> HistoryVersion {
        HistoryVersion(
            id: id, key: key, recordedAt: recordedAt, source: HistorySource(rawValue: source) ?? .here,
            json: json.map { Data($0.utf8) }, audioMD5: audioMD5, changed: changed, sureClock: clock == "google")
    }
}
