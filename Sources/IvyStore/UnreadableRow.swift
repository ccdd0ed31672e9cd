import GRDB
import IvyCore

/// A row of `unreadable_drive_files`.
struct UnreadableRow: SnakeCaseColumns {
    static let databaseTableName = "unreadable_drive_files"

    var fileID: DriveFileID
    var entityType: String
    var entityID: String
    var name: String
    var modifiedTime: Milliseconds
    var md5: String?
    var reason: String
    var readAt: Milliseconds

    init(_ file: UnreadableDriveFile) {
        fileID = file.fileID
        entityType = file.key.kind.rawValue
        entityID = file.key.id
        name = file.name
        modifiedTime = file.modifiedTime
        md5 = file.md5
        reason = file.reason
        readAt = file.readAt
    }

    var file: UnreadableDriveFile {
        UnreadableDriveFile(
            key: EntityKey(EntityKind(rawValue: entityType) ?? .clip, entityID), fileID: fileID, name: name,
            modifiedTime: modifiedTime, md5: md5, reason: reason, readAt: readAt)
    }
}
