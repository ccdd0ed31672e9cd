import GRDB
import IvyCore

// Decoding throws rather than traps: other programs may write odd values into these tables.

extension Book {
    init(row: Row) throws {
        self.init(
            id: try row.decode(forColumn: "id"),
            title: try row.decode(forColumn: "title"),
            artist: try row.decode(forColumn: "artist"),
            artwork: try row.decode(forColumn: "artwork"),
            position: try row.decode(forColumn: "position"),
            hidden: try row.decode(forColumn: "hidden"),
            uri: try row.decode(forColumn: "uri"),
            createdAt: try row.decode(forColumn: "created_at"),
            updatedAt: try row.decode(forColumn: "updated_at")
        )
    }

    var arguments: StatementArguments {
        [
            "id": id, "title": title, "artist": artist, "artwork": artwork, "position": position,
            "hidden": hidden, "uri": uri, "created_at": createdAt, "updated_at": updatedAt,
        ]
    }

    static let upsertSQL = """
        INSERT INTO books (id, title, artist, artwork, position, hidden, uri, created_at, updated_at)
        VALUES (:id, :title, :artist, :artwork, :position, :hidden, :uri, :created_at, :updated_at)
        ON CONFLICT (id) DO UPDATE SET
            title = excluded.title, artist = excluded.artist, artwork = excluded.artwork,
            position = excluded.position, hidden = excluded.hidden, uri = excluded.uri,
            created_at = excluded.created_at, updated_at = excluded.updated_at
        """
}

extension Clip {
    init(row: Row) throws {
        self.init(
            id: try row.decode(forColumn: "id"),
            bookID: try row.decode(forColumn: "book_id"),
            start: try row.decode(forColumn: "start"),
            duration: try row.decode(forColumn: "duration"),
            note: try row.decode(forColumn: "note"),
            transcription: try row.decode(forColumn: "transcription"),
            createdAt: try row.decode(forColumn: "created_at"),
            updatedAt: try row.decode(forColumn: "updated_at")
        )
    }

    var arguments: StatementArguments {
        [
            "id": id, "book_id": bookID, "start": start, "duration": duration, "note": note,
            "transcription": transcription, "created_at": createdAt, "updated_at": updatedAt,
        ]
    }

    static let upsertSQL = """
        INSERT INTO clips (id, book_id, start, duration, note, transcription, created_at, updated_at)
        VALUES (:id, :book_id, :start, :duration, :note, :transcription, :created_at, :updated_at)
        ON CONFLICT (id) DO UPDATE SET
            book_id = excluded.book_id, start = excluded.start, duration = excluded.duration,
            note = excluded.note, transcription = excluded.transcription,
            created_at = excluded.created_at, updated_at = excluded.updated_at
        """
}
