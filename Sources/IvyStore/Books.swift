import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
    /// Books by title; archived (hidden) books only when `includeHidden`; with `search`, only
    /// those whose title or artist contains it, in any case (`TextSearch`).
    package func books(includeHidden: Bool, search: String? = nil) async throws -> [Book] {
        let books = try await read { db in
            let filter = includeHidden ? "" : "WHERE hidden = 0"
            return try Book.fetchAll(
                db, sql: "SELECT * FROM books \(filter) ORDER BY title COLLATE NOCASE, created_at, id"
            )
        }
        guard let search else { return books }
        let query = TextSearch(search)
        return books.filter { query.matches($0.title) || query.matches($0.artist) }
    }

    package func book(id: BookID) async throws -> Book? {
        try await read { db in try Self.book(id: id, in: db) }
    }

    static func book(id: BookID, in db: Database) throws -> Book? {
        let statement = try db.cachedStatement(sql: "SELECT * FROM books WHERE id = ?")
        return try Book.fetchOne(statement, arguments: [id])
    }

    /// Adds a book with a fresh id; the trigger queues its upload.
    @discardableResult
    package func addBook(
        id: BookID, title: String, artist: String?, artwork: String?, position: Double
    ) async throws -> Book {
        try Self.checkTitle(title)
        try Self.checkTime(position, field: "position")
        let now = clock.now()
        let book = Book(
            id: id, title: title, artist: artist, artwork: artwork, position: position,
            createdAt: now, updatedAt: now)
        try await write(.storeBookAdd) { db in try book.upsert(db) }
        return book
    }

    /// Applies `changes`. When they leave the book as it was, nothing is written
    /// (so nothing is queued) and `changed` is false.
    @discardableResult
    package func updateBook(id: BookID, _ changes: BookChanges) async throws -> (book: Book, changed: Bool) {
        if let title = changes.title { try Self.checkTitle(title) }
        if let position = changes.position { try Self.checkTime(position, field: "position") }
        return try await write(.storeBookUpdate) { db in
            guard let current = try Self.book(id: id, in: db) else { throw StoreError.bookNotFound(id: id) }
            var updated = changes.applied(to: current)
            guard updated != current else { return (current, false) }
            try Self.checkStoredTime(updated.position, field: "position", kind: .book, option: "--position")
            updated.updatedAt = Timestamp.next(now: clock.now(), previous: current.updatedAt)
            try updated.upsert(db)
            return (updated, true)
        }
    }

    static func checkTitle(_ title: String) throws {
        if title.trimmingSpaces().isEmpty { throw StoreError.emptyTitle }
    }

    static func checkTime(_ value: Double, field: String) throws {
        if !TimeRules.isValid(value) { throw StoreError.invalidTime(field: field, value: value) }
    }

    /// A time kept from the row being changed: another program (or an ivy before the time
    /// rules) may have stored one out of range, and the database refuses to write it back.
    static func checkStoredTime(_ value: Double, field: String, kind: EntityKind, option: String) throws {
        if !TimeRules.isValid(value) {
            throw StoreError.storedTimeOutOfRange(kind: kind, field: field, value: value, option: option)
        }
    }
}
