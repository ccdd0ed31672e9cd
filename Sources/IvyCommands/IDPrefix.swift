import ArgumentParser
import Foundation
import IvyCore
import IvyStore

/// A book or clip id as a person types it: the whole id, or its first characters when no other
/// id of that kind starts with them, as git and restic take them (`ivy book show 2b48`).
///
/// A command checks the shape in `validate()` (so a bad one prints that command's usage) and
/// resolves it against the library once, at the start of `run`, before anything else uses it.
enum IDPrefix {
    /// Fewer characters would name too many ids to be of use, and a typo could name another.
    static let shortest = 4
    /// Tables cut ids to the shortest width that keeps them apart, and never below this.
    static let shortestShown = 8
    /// How many matches an ambiguous prefix lists.
    static let listed = 10

    /// `text` when it can name a `kind` id: a whole id, or `shortest` or more of its first characters.
    @discardableResult
    static func check(_ text: String, kind: EntityKind) throws -> String {
        guard EntityID.isValid(text) else {
            throw ValidationError(
                "'\(text)' is not a \(kind.rawValue) id: ids are lowercase UUIDs such as 3f2a9c1e-…, or their "
                    + "first \(shortest) or more characters; `ivy \(kind.rawValue) list` shows them")
        }
        guard text.count >= shortest else {
            throw ValidationError(
                "'\(text)' is too short to name a \(kind.rawValue): give at least \(shortest) characters of its id "
                    + "(`ivy \(kind.rawValue) list` shows them)")
        }
        return text
    }

    /// The whole book id `text` names (`resolve(_:kind:in:)`).
    static func book(_ text: String, in library: LibraryDatabase) async throws -> BookID {
        try await BookID(resolve(text, kind: .book, in: library))
    }

    /// The whole clip id `text` names (`resolve(_:kind:in:)`).
    static func clip(_ text: String, in library: LibraryDatabase) async throws -> ClipID {
        try await ClipID(resolve(text, kind: .clip, in: library))
    }

    /// The book or clip `text` names, of this library or only of its history (a clip deleted
    /// here): a whole id, or the first `shortest` or more characters of one id alone among
    /// them all. `ivy history` and `ivy restore` take either kind.
    ///
    /// A book and a clip may share an id (another program wrote one, or Drive holds both):
    /// such an id is refused naming both, and `book:ID` or `clip:ID` (`kind`) picks one.
    static func entity(_ text: String, kind: EntityKind? = nil, in library: LibraryDatabase) async throws -> EntityKey {
        let kinds = kind.map { [$0] } ?? EntityKind.allCases
        if isWhole(text) {
            var found: [EntityKind] = []
            // Each kind in the library, or else only in its history (a clip deleted here).
            for kind in kinds {
                var known = try await exists(text, kind, in: library)
                if !known { known = try await !library.history(of: EntityKey(kind, text)).isEmpty }
                if known { found.append(kind) }
            }
            switch found.count {
            case 0: throw IDPrefixError.unknownEntity(prefix: text)
            case 1: return EntityKey(found[0], text)
            default: throw IDPrefixError.bothKinds(id: text, matches: try await words(text, of: found, in: library))
            }
        }
        guard text.count >= shortest else {
            throw ValidationError(
                "'\(text)' is too short to name a book or clip: give at least \(shortest) characters of its id "
                    + "(`ivy history` shows them)")
        }
        var matches: [(kind: EntityKind, match: IDMatch)] = []
        for kind in kinds {
            matches += try await library.matches(kind, idPrefix: text, limit: listed + 1).map { (kind, $0) }
        }
        let here = Set(matches.map { EntityKey($0.kind, $0.match.id) })
        matches += try await library.historyMatches(idPrefix: text, limit: listed + 1 + here.count)
            .filter { kinds.contains($0.kind) && !here.contains(EntityKey($0.kind, $0.match.id)) }
        switch matches.count {
        case 0: throw IDPrefixError.unknownEntity(prefix: text)
        case 1: return EntityKey(matches[0].kind, matches[0].match.id)
        default:
            // More of the id cannot tell a book from a clip of the same id: only its kind can.
            if Set(matches.map(\.match.id)).count == 1 {
                throw IDPrefixError.bothKinds(id: matches[0].match.id, matches: matches)
            }
            throw IDPrefixError.ambiguousEntity(prefix: text, matches: matches.sorted { $0.match.id < $1.match.id })
        }
    }

    /// What tells the book from the clip of one id (`bothKinds`): a title, a note, from the
    /// library or else from the history.
    private static func words(
        _ id: String, of kinds: [EntityKind], in library: LibraryDatabase
    ) async throws -> [(kind: EntityKind, match: IDMatch)] {
        let kept = try await library.historyMatches(idPrefix: id, limit: EntityKind.allCases.count)
        var found: [(kind: EntityKind, match: IDMatch)] = []
        for kind in kinds {
            let match =
                try await library.matches(kind, idPrefix: id, limit: 1).first
                ?? kept.first { $0.kind == kind }?.match ?? IDMatch(id: id, title: nil, note: nil)
            found.append((kind, match))
        }
        return found
    }

    /// `book:` or `clip:` before an id (or its first characters) for `ivy history` and
    /// `ivy restore`, which take either kind: the kind it names, and the id after it.
    static func kindPrefixed(_ text: String) -> (kind: EntityKind?, id: String) {
        for kind in EntityKind.allCases where text.hasPrefix(kind.rawValue + ":") {
            return (kind, String(text.dropFirst(kind.rawValue.count + 1)))
        }
        return (nil, text)
    }

    /// The whole id `text` names: `text` itself when it is a whole id (whether the library has
    /// it is the command's to say, as before prefixes), else the one id starting with it.
    private static func resolve(_ text: String, kind: EntityKind, in library: LibraryDatabase) async throws -> String {
        try check(text, kind: kind)
        // A book's id given for a clip, or a clip's for a book, is said to be one.
        let other: EntityKind = kind == .book ? .clip : .book
        if isWhole(text) {
            if try await !exists(text, kind, in: library), try await exists(text, other, in: library) {
                throw IDPrefixError.otherKind(kind: other, id: text)
            }
            return text
        }
        let matches = try await library.matches(kind, idPrefix: text, limit: listed + 1)
        switch matches.count {
        case 0:
            let others = try await library.matches(other, idPrefix: text, limit: 2)
            if others.count == 1 { throw IDPrefixError.otherKind(kind: other, id: others[0].id) }
            throw IDPrefixError.unknown(kind: kind, prefix: text)
        case 1: return matches[0].id
        default: throw IDPrefixError.ambiguous(kind: kind, prefix: text, matches: matches)
        }
    }

    private static func exists(_ id: String, _ kind: EntityKind, in library: LibraryDatabase) async throws -> Bool {
        switch kind {
        case .book: try await library.book(id: BookID(id)) != nil
        case .clip: try await library.clip(id: ClipID(id)) != nil
        }
    }

    /// A UUID's length and dashes: no other id can start with it.
    static func isWhole(_ text: String) -> Bool {
        text.count == 36
            && text.split(separator: "-", omittingEmptySubsequences: false).map(\.count) == [8, 4, 4, 4, 12]
    }

    /// The width that keeps `ids` apart when each is cut to it: `shortestShown` or more.
    static func width(_ ids: some Sequence<String>) -> Int {
        let ids = Set(ids)
        let longest = ids.map(\.count).max() ?? 0
        var width = shortestShown
        while width < longest, Set(ids.map { $0.prefix(width) }).count < ids.count { width += 1 }
        return width
    }

    /// Cuts every id of a table's column to one width that keeps them apart, unless `full`.
    static func shown(_ ids: [String], full: Bool) -> (String) -> String {
        guard !full else { return { $0 } }
        let width = width(ids)
        return { String($0.prefix(width)) }
    }

    static func shown<ID: TextIdentifier>(_ ids: [ID], full: Bool) -> (ID) -> String {
        let cut = shown(ids.map(\.rawValue), full: full)
        return { cut($0.rawValue) }
    }
}

/// A prefix that names no id, or more than one.
enum IDPrefixError: LocalizedError {
    case unknown(kind: EntityKind, prefix: String)
    case ambiguous(kind: EntityKind, prefix: String, matches: [IDMatch])
    /// A prefix of `ivy history` or `ivy restore`, which take books and clips alike.
    case ambiguousEntity(prefix: String, matches: [(kind: EntityKind, match: IDMatch)])
    /// An id, or a prefix, that names no book or clip of the library or its history.
    case unknownEntity(prefix: String)
    /// The id of a `kind` given where the other kind was asked for.
    case otherKind(kind: EntityKind, id: String)
    /// A whole id (or a prefix of it alone) that a book and a clip both have.
    case bothKinds(id: String, matches: [(kind: EntityKind, match: IDMatch)])

    var errorDescription: String? {
        switch self {
        case .unknown(let kind, let prefix):
            return "no \(kind.rawValue) with id \(prefix) or an id starting with it; `ivy \(kind.rawValue) list"
                + (kind == .book ? " --all" : "") + "` shows them"
        case .unknownEntity(let prefix):
            return IDPrefix.isWhole(prefix)
                ? "no book or clip \(prefix) in this library or its history"
                : "no book or clip with an id starting \(prefix) in this library or its history"
        case .otherKind(.book, let id):
            return "\(id) is a book, not a clip: `ivy book show \(id)` shows it, and `ivy clip list --book \(id)` "
                + "its clips"
        case .otherKind(.clip, let id):
            return "\(id) is a clip, not a book: `ivy clip show \(id)` shows it and its book"
        case .ambiguous(let kind, let prefix, let matches):
            let shown = matches.prefix(IDPrefix.listed).map { "  \($0.id)  \(Self.words(kind, $0))" }
            let more = matches.count > IDPrefix.listed ? ["  …"] : []
            return (["'\(prefix)' names more than one \(kind.rawValue); give more of the id:"] + shown + more)
                .joined(separator: "\n")
        case .bothKinds(let id, let matches):
            let shown = matches.map { "  \($0.kind.rawValue) \(id)  \(Self.words($0.kind, $0.match))" }
            return (["\(id) is the id of a book and of a clip; give book:\(id) or clip:\(id) to say which:"] + shown)
                .joined(separator: "\n")
        case .ambiguousEntity(let prefix, let matches):
            let shown = matches.prefix(IDPrefix.listed).map {
                "  \($0.kind.rawValue) \($0.match.id)  \(Self.words($0.kind, $0.match))"
            }
            let more = matches.count > IDPrefix.listed ? ["  …"] : []
            return (["'\(prefix)' names more than one book or clip; give more of the id:"] + shown + more)
                .joined(separator: "\n")
        }
    }

    /// What tells a match from the others: a book's title, a clip's book title and note.
    private static func words(_ kind: EntityKind, _ match: IDMatch) -> String {
        switch kind {
        case .book: Display.cell(match.title, limit: 50)
        case .clip: Display.cell(match.title, limit: 30) + "  " + Display.cell(match.note, limit: 30)
        }
    }

    /// Which id was meant is the person's to say: a usage error (64), as git's is.
    var isUsage: Bool {
        switch self {
        case .ambiguous, .ambiguousEntity, .bothKinds: true
        case .unknown, .unknownEntity, .otherKind: false
        }
    }
}
