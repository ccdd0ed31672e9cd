/// The folders ivy keeps its files in on Drive (`Ivy`, `Ivy/books`, `Ivy/clips`), twins
/// included, oldest first: new files go to the first. Kept between syncs by the store.
package struct DriveFolders: Sendable, Equatable, Codable {
    package var ivy: [DriveFileID]
    package var books: [DriveFileID]
    package var clips: [DriveFileID]

    package init(ivy: [DriveFileID], books: [DriveFileID], clips: [DriveFileID]) {
        self.ivy = ivy
        self.books = books
        self.clips = clips
    }
}
