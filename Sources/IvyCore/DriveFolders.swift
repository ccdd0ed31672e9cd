/// The folders ivy keeps its files in on Drive (`Ivy`, `Ivy/books`, `Ivy/clips`), twins
/// included, oldest first: new files go to the first. Kept between syncs by the store.
package struct DriveFolders: Sendable, Equatable, Codable {
    package var ivy: [String]
    package var books: [String]
    package var clips: [String]

    package init(ivy: [String], books: [String], clips: [String]) {
        self.ivy = ivy
        self.books = books
        self.clips = clips
    }
}
