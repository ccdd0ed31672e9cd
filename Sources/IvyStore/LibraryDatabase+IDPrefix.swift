import Foundation
import GRDB
package import IvyCore

/// A book or clip whose id starts with a prefix a person typed, with what lets them tell it
/// from the others.
package struct IDMatch: Sendable, Equatable {
    package let id: String
    /// A book's title; for a clip, its book's title (nil when the book is not here).
    package let title: String?
    /// A clip's note.
    package let note: String?

    package init(id: String, title: String?, note: String?) {
        self.id = id
        self.title = title
        self.note = note
    }
}

extension LibraryDatabase {
    /// The books or clips whose ids start with `prefix`, by id, at most `limit` of them, in one
    /// query. Archived and deleted books are books too (`book unarchive` names them), so they
    /// match; a deleted clip has no row and cannot.
    package func matches(_ kind: EntityKind, idPrefix prefix: String, limit: Int) async throws -> [IDMatch] {
        // Ids are checked to be hex and dashes before they get here; the escape keeps LIKE's
        // wildcards literal whatever reaches it.
        let pattern = prefix.replacing("\\", with: "\\\\").replacing("%", with: "\\%").replacing("_", with: "\\_") + "%"
        let sql =
            switch kind {
            case .book:
                "SELECT id, title, NULL AS note FROM books WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?"
            case .clip:
                """
                SELECT clips.id, books.title, clips.note FROM clips LEFT JOIN books ON books.id = clips.book_id
                WHERE clips.id LIKE ? ESCAPE '\\' ORDER BY clips.id LIMIT ?
                """
            }
        return try await read { db in
            try Row.fetchAll(db, sql: sql, arguments: [pattern, limit]).map { row in
                IDMatch(id: row["id"], title: row["title"], note: row["note"])
            }
        }
    }
}

extension LibraryDatabase {
    /// The books and clips whose ids start with `prefix` that only the history knows (a clip
    /// deleted here, say), by kind and id, at most `limit` of them: each with its newest kept
    /// version's title (a clip's book title is not kept in its JSON, so a clip has its note).
    package func historyMatches(idPrefix prefix: String, limit: Int) async throws -> [(
        kind: EntityKind, match: IDMatch
    )] {
        let pattern = prefix.replacing("\\", with: "\\\\").replacing("%", with: "\\%").replacing("_", with: "\\_") + "%"
        return try await read { db in
            // A library an older ivy wrote last, read without migrating it, has no history.
            guard try db.tableExists("history") else { return [] }
            // SQLite takes a bare column from the row max() chose: the newest version's JSON.
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT entity_type, entity_id, json, max(id) FROM history WHERE entity_id LIKE ? ESCAPE '\\'
                    GROUP BY entity_type, entity_id ORDER BY entity_id, entity_type LIMIT ?
                    """,
                arguments: [pattern, limit])
            return rows.compactMap { row in
                guard let kind = EntityKind(rawValue: row["entity_type"] ?? "") else { return nil }
                let text: String? = row["json"]
                let object = text.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                let match = IDMatch(
                    id: row["entity_id"], title: kind == .book ? object?["title"] as? String : nil,
                    note: kind == .clip ? object?["note"] as? String : nil)
                return (kind, match)
            }
        }
    }
}
