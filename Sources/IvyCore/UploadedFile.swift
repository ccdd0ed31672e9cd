/// A file created on Drive, as the create answer describes it: the manifest stores Drive's
/// own id and `modifiedTime`.
package struct UploadedFile: Sendable, Equatable {
    package var id: DriveFileID
    package var modifiedTime: Milliseconds
    package var size: Int64?
    package var md5: String?

    package init(id: DriveFileID, modifiedTime: Milliseconds, size: Int64? = nil, md5: String? = nil) {
        self.id = id
        self.modifiedTime = modifiedTime
        self.size = size
        self.md5 = md5
    }
}
