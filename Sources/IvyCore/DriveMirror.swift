/// A file of the mirror of Drive's listing kept in the library: a file in one of ivy's
/// books or clips folders, as Drive last reported it.
package struct MirroredFile: Sendable, Equatable {
    package var file: RemoteFile
    package var parents: [DriveFileID]
    package var mimeType: String

    package init(file: RemoteFile, parents: [DriveFileID], mimeType: String) {
        self.file = file
        self.parents = parents
        self.mimeType = mimeType
    }
}

/// What one page of Drive's change feed does to the mirror: files to write (new or changed)
/// and file ids to drop, and the token the feed goes on from once they are applied.
package struct MirrorUpdate: Sendable, Equatable {
    package var upserts: [MirroredFile]
    package var removals: [DriveFileID]
    package var token: String
    /// A file the mirror never held came and went (made and deleted or trashed since the last
    /// sync): perhaps a newer copy of an entity missing on Drive, so no absence seen so far
    /// may count as unbroken.
    package var unseenFileGone: Bool

    package init(upserts: [MirroredFile], removals: [DriveFileID], token: String, unseenFileGone: Bool = false) {
        self.upserts = upserts
        self.removals = removals
        self.token = token
        self.unseenFileGone = unseenFileGone
    }
}

/// The mirror as saved: its files and the change token they are current up to.
package struct DriveMirror: Sendable, Equatable {
    package var files: [MirroredFile]
    package var token: String

    package init(files: [MirroredFile], token: String) {
        self.files = files
        self.token = token
    }
}
