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
    static func book(_ text: String, in library: LibraryDatabase) throws -> BookID {
        BookID(try resolve(text, kind: .book, in: library))
    }

    /// The whole clip id `text` names (`resolve(_:kind:in:)`).
    static func clip(_ text: String, in library: LibraryDatabase) throws -> ClipID {
        ClipID(try resolve(text, kind: .clip, in: library))
    }

    /// The whole id `text` names: `text` itself when it is a whole id (whether the library has
    /// it is the command's to say, as before prefixes), else the one id starting with it.
    private static func resolve(_ text: String, kind: EntityKind, in library: LibraryDatabase) throws -> String {
        try check(text, kind: kind)
        if isWhole(text) { return text }
        let matches = try library.matches(kind, idPrefix: text, limit: listed + 1)
        switch matches.count {
        case 0: throw IDPrefixError.unknown(kind: kind, prefix: text)
        case 1: return matches[0].id
        default: throw IDPrefixError.ambiguous(kind: kind, prefix: text, matches: matches)
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

    var errorDescription: String? {
        switch self {
        case .unknown(let kind, let prefix):
            return "no \(kind.rawValue) with id \(prefix) or an id starting with it; `ivy \(kind.rawValue) list"
                + (kind == .book ? " --all" : "") + "` shows them"
        case .ambiguous(let kind, let prefix, let matches):
            let shown = matches.prefix(IDPrefix.listed).map { match in
                let words =
                    switch kind {
                    case .book: Display.cell(match.title, limit: 50)
                    case .clip: Display.cell(match.title, limit: 30) + "  " + Display.cell(match.note, limit: 30)
                    }
                return "  \(match.id)  \(words)"
            }
            let more = matches.count > IDPrefix.listed ? ["  …"] : []
            return (["'\(prefix)' names more than one \(kind.rawValue); give more of the id:"] + shown + more)
                .joined(separator: "\n")
        }
    }

    /// Which id was meant is the person's to say: a usage error (64), as git's is.
    var isUsage: Bool {
        if case .ambiguous = self { true } else { false }
    }
}
