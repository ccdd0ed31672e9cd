/// An MP3 upload's Drive session as the library keeps it between runs, so that a sync killed
/// mid-upload resumes where Drive has the file rather than sending it all again: the session
/// URI, the bytes Drive last confirmed, the file's md5 and size (a session is resumed only for
/// the same bytes), the pre-generated id the session creates the file under, and when the
/// session was opened (Drive ends a session a week after it began).
package struct UploadSessionRecord: Sendable, Equatable {
    package var clipID: ClipID
    package var uri: String
    package var fileID: DriveFileID
    /// What Drive's last answer confirmed (a 308's `Range`); never more than it said.
    package var committed: Int64
    package var md5: String
    package var size: Int64
    package var startedAt: Milliseconds

    package init(
        clipID: ClipID, uri: String, fileID: DriveFileID, committed: Int64, md5: String, size: Int64,
        startedAt: Milliseconds
    ) {
        self.clipID = clipID
        self.uri = uri
        self.fileID = fileID
        self.committed = committed
        self.md5 = md5
        self.size = size
        self.startedAt = startedAt
    }
}
