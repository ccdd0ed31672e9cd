/// Which entity a Drive file belongs to, by its name: `book_<id>.json`,
/// `clip_<id>.json` and `clip_<id>.mp3`. Any other name is not ivy's and is ignored.
package struct EntityFileName: Sendable, Hashable {
    package enum Format: String, Sendable {
        case json, mp3
    }

    package var key: EntityKey
    package var format: Format

    package init(key: EntityKey, format: Format) {
        self.key = key
        self.format = format
    }

    /// Reads `^(book|clip)_([a-f0-9-]+)\.(json|mp3)$`; books have no MP3.
    package init?(parsing name: String) {
        guard let underscore = name.firstIndex(of: "_"), let dot = name.lastIndex(of: "."), underscore < dot else {
            return nil
        }
        guard let kind = EntityKind(rawValue: String(name[..<underscore])),
            let format = Format(rawValue: String(name[name.index(after: dot)...]))
        else { return nil }
        let id = String(name[name.index(after: underscore)..<dot])
        guard EntityID.isValid(id), !(kind == .book && format == .mp3) else { return nil }
        self.init(key: EntityKey(kind, id), format: format)
    }

    package var name: String { "\(key.kind.rawValue)_\(key.id).\(format.rawValue)" }
}

extension EntityKey {
    /// The name of the entity's backup JSON on Drive: `book_<id>.json` or `clip_<id>.json`.
    package var jsonFileName: String { EntityFileName(key: self, format: .json).name }

    /// The name of a clip's audio on Drive: `clip_<id>.mp3`.
    package var mp3FileName: String { EntityFileName(key: self, format: .mp3).name }
}

/// One entity: a book or a clip, by its id.
///
/// The queue, manifest, trash and history tables keep both kinds in one `entity_id` column,
/// and Drive names both `<kind>_<id>`; `init(_:_:)`, `kind` and `id` are for those edges.
/// Code that holds a typed id makes the key from it, so it cannot pair a clip's id with the
/// book kind, and takes it back out with `case` or `bookID`/`clipID`.
package enum EntityKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    case book(BookID)
    case clip(ClipID)

    package init(_ kind: EntityKind, _ id: String) {
        switch kind {
        case .book: self = .book(BookID(id))
        case .clip: self = .clip(ClipID(id))
        }
    }

    package init(_ id: BookID) { self = .book(id) }

    package init(_ id: ClipID) { self = .clip(id) }

    package var kind: EntityKind {
        switch self {
        case .book: .book
        case .clip: .clip
        }
    }

    /// The id as the tables and Drive's file names hold it.
    package var id: String {
        switch self {
        case .book(let id): id.rawValue
        case .clip(let id): id.rawValue
        }
    }

    /// The book's id when this is a book.
    package var bookID: BookID? {
        if case .book(let id) = self { id } else { nil }
    }

    /// The clip's id when this is a clip.
    package var clipID: ClipID? {
        if case .clip(let id) = self { id } else { nil }
    }

    package static func < (lhs: EntityKey, rhs: EntityKey) -> Bool {
        (lhs.kind.rawValue, lhs.id) < (rhs.kind.rawValue, rhs.id)
    }

    package var description: String { "\(kind.rawValue) \(id)" }
}
