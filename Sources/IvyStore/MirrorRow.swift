import GRDB
import IvyCore

/// A row of `drive_mirror`: one file of Drive's listing; `parents` is a folder setting
/// (`LibraryDatabase.folderSetting`).
struct MirrorRow: SnakeCaseColumns {
    static let databaseTableName = "drive_mirror"

    var fileID: DriveFileID
    var name: String
    var parents: String
    var mimeType: String
    var size: Int64?
    var md5: String?
    var modifiedTime: Milliseconds
    var createdTime: Milliseconds?

    init(_ mirrored: MirroredFile) {
        let file = mirrored.file
        fileID = file.id
        name = file.name
        parents = LibraryDatabase.folderSetting(mirrored.parents)
        mimeType = mirrored.mimeType
        size = file.size
        md5 = file.md5
        modifiedTime = file.modifiedTime
        createdTime = file.createdTime
    }

    var mirrored: MirroredFile {
        MirroredFile(
            file: RemoteFile(
                id: fileID, name: name, modifiedTime: modifiedTime, createdTime: createdTime, size: size, md5: md5),
            parents: LibraryDatabase.folderIDs(parents), mimeType: mimeType)
    }
}
