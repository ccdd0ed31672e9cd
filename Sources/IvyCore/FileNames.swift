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

/// One entity: its kind and id.
package struct EntityKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var kind: EntityKind
    package var id: String

    package init(_ kind: EntityKind, _ id: String) {
        self.kind = kind
        self.id = id
    }

    package static func < (lhs: EntityKey, rhs: EntityKey) -> Bool {
        (lhs.kind.rawValue, lhs.id) < (rhs.kind.rawValue, rhs.id)
    }

    package var description: String { "\(kind.rawValue) \(id)" }
}
