/// A book as stored in the `books` table. `position` is in seconds. `Codable` so the store
/// reads and writes its row from these properties (IvyStore's `Book+Record.swift`).
package struct Book: Sendable, Equatable, Codable {
    package var id: BookID
    package var title: String
    package var artist: String?
    package var artwork: String?
    package var position: Double
    package var hidden: Bool
    package var uri: String?
    package var createdAt: Milliseconds
    package var updatedAt: Milliseconds

    package init(
        id: BookID, title: String, artist: String? = nil, artwork: String? = nil,
        position: Double = 0, hidden: Bool = false, uri: String? = nil,
        createdAt: Milliseconds, updatedAt: Milliseconds
    ) {
        self.id = id
        self.title = title
        self.artist = artist
        self.artwork = artwork
        self.position = position
        self.hidden = hidden
        self.uri = uri
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A clip (a bookmark with a note and an MP3 snippet) as stored in the `clips` table.
/// `start` and `duration` are in seconds; the audio lives at `audio/<id>.mp3`. `Codable` for
/// its row, as `Book` is.
package struct Clip: Sendable, Equatable, Codable {
    package var id: ClipID
    package var bookID: BookID
    package var start: Double
    package var duration: Double
    package var note: String?
    package var transcription: String?
    package var createdAt: Milliseconds
    package var updatedAt: Milliseconds

    package init(
        id: ClipID, bookID: BookID, start: Double, duration: Double,
        note: String? = nil, transcription: String? = nil,
        createdAt: Milliseconds, updatedAt: Milliseconds
    ) {
        self.id = id
        self.bookID = bookID
        self.start = start
        self.duration = duration
        self.note = note
        self.transcription = transcription
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// What `ivy book update` may change; `nil` leaves a field as it is.
package struct BookChanges: Sendable, Equatable {
    package var title: String?
    /// For the optional columns, `.some(nil)` clears the value.
    package var artist: String??
    package var artwork: String??
    package var position: Double?
    package var hidden: Bool?
    package var uri: String??

    package init(
        title: String? = nil, artist: String?? = nil, artwork: String?? = nil,
        position: Double? = nil, hidden: Bool? = nil, uri: String?? = nil
    ) {
        self.title = title
        self.artist = artist
        self.artwork = artwork
        self.position = position
        self.hidden = hidden
        self.uri = uri
    }

    /// The book with these changes applied (timestamps untouched).
    package func applied(to book: Book) -> Book {
        var result = book
        if let title { result.title = title }
        if let artist { result.artist = artist }
        if let artwork { result.artwork = artwork }
        if let position { result.position = position }
        if let hidden { result.hidden = hidden }
        if let uri { result.uri = uri }
        return result
    }
}

/// What `ivy clip update` may change; `nil` leaves a field as it is.
package struct ClipChanges: Sendable, Equatable {
    package var start: Double?
    package var duration: Double?
    /// `.some(nil)` clears the value.
    package var note: String??
    package var transcription: String??

    package init(start: Double? = nil, duration: Double? = nil, note: String?? = nil, transcription: String?? = nil) {
        self.start = start
        self.duration = duration
        self.note = note
        self.transcription = transcription
    }

    package func applied(to clip: Clip) -> Clip {
        var result = clip
        if let start { result.start = start }
        if let duration { result.duration = duration }
        if let note { result.note = note }
        if let transcription { result.transcription = transcription }
        return result
    }
}
