package import Foundation

/// A parsed `q` filter of Drive's `files.list`, limited to the terms ivy sends.
///
/// Supported terms: `name` and `mimeType` with `=`, `!=` or `contains` and a string;
/// `'ID' in parents`; `'me'` (or an address) `in owners`; `trashed` and `starred` with `=`
/// or `!=` and `true` or `false`; `modifiedTime` with `<`, `<=`, `=`, `!=`, `>` or `>=` and
/// an RFC 3339 time (UTC when it names no zone). Terms combine with
/// `and`, `or`, prefix `not` and parentheses; `and` binds tighter than `or`, and both group
/// to the left. Keywords are case-insensitive, field names are not (as in Drive).
package indirect enum DriveQuery: Sendable, Equatable {
    case and(DriveQuery, DriveQuery)
    case or(DriveQuery, DriveQuery)
    case not(DriveQuery)
    case name(Comparison, String)
    case mimeType(Comparison, String)
    case inParents(String)
    case inOwners(String)
    /// Matches items whose trashed flag equals the value; `trashed != x` parses as `trashed(!x)`.
    case trashed(Bool)
    case starred(Bool)
    case modifiedTime(Order, Date)

    /// How a time is compared with the query's value.
    package enum Order: String, Sendable, Equatable {
        case less = "<"
        case lessOrEqual = "<="
        case equal = "="
        case notEqual = "!="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    /// How a string field is compared with the query's value.
    package enum Comparison: Sendable, Equatable {
        /// Exact, case-sensitive equality.
        case equals
        /// Anything but exact equality.
        case notEquals
        /// For `name`, a case-insensitive prefix: Drive's search guide says "The contains
        /// operator only performs prefix matching for a name term" (`name contains 'Hello'`
        /// finds HelloWorld, `name contains 'World'` does not). For `mimeType`, a substring.
        case contains
    }

    /// What a query is evaluated against: the parts of a Drive file the supported terms read.
    package struct Subject: Sendable, Equatable {
        package var name: String
        package var mimeType: String
        package var parents: [String]
        package var trashed: Bool
        package var modifiedTime: Date
        package var starred: Bool
        /// The owner's address, and "me" when that is the caller.
        package var owners: [String]

        package init(
            name: String, mimeType: String, parents: [String], trashed: Bool, modifiedTime: Date = .distantPast,
            starred: Bool = false, owners: [String] = ["me"]
        ) {
            self.name = name
            self.mimeType = mimeType
            self.parents = parents
            self.trashed = trashed
            self.modifiedTime = modifiedTime
            self.starred = starred
            self.owners = owners
        }
    }

    /// Parses a `q` expression, or throws an "Invalid Value" error naming what is wrong and where.
    ///
    /// Positions in messages are 0-based character offsets into `text`.
    package static func parse(_ text: String) throws(DriveQueryError) -> DriveQuery {
        var parser = try Parser(tokens: Lexer.tokens(of: text))
        return try parser.parseQuery()
    }

    /// True when `subject` satisfies the query.
    package func matches(_ subject: Subject) -> Bool {
        switch self {
        case .and(let left, let right): left.matches(subject) && right.matches(subject)
        case .or(let left, let right): left.matches(subject) || right.matches(subject)
        case .not(let query): !query.matches(subject)
        case .name(.contains, let value):
            value.isEmpty || subject.name.range(of: value, options: [.caseInsensitive, .anchored]) != nil
        case .name(let comparison, let value): Self.compare(subject.name, comparison, value)
        case .mimeType(let comparison, let value): Self.compare(subject.mimeType, comparison, value)
        case .inParents(let id): subject.parents.contains(id)
        case .inOwners(let owner): subject.owners.contains(owner)
        case .trashed(let value): subject.trashed == value
        case .starred(let value): subject.starred == value
        case .modifiedTime(let order, let time): Self.compare(subject.modifiedTime, order, time)
        }
    }

    /// True when some term tests the name: Drive answers such a query from its name index.
    package var mentionsName: Bool {
        switch self {
        case .and(let left, let right), .or(let left, let right): left.mentionsName || right.mentionsName
        case .not(let query): query.mentionsName
        case .name: true
        case .mimeType, .inParents, .inOwners, .trashed, .starred, .modifiedTime: false
        }
    }

    /// The folder ids of `in parents` terms that an `or` joins to another parent's, in the
    /// order they appear: the queries whose results Drive sometimes leaves short.
    package var orParents: [String] {
        var found: [String] = []
        collectOrParents(into: &found)
        return found
    }

    private var parentIDs: [String] {
        switch self {
        case .and(let left, let right), .or(let left, let right): left.parentIDs + right.parentIDs
        case .not(let query): query.parentIDs
        case .inParents(let id): [id]
        case .name, .mimeType, .inOwners, .trashed, .starred, .modifiedTime: []
        }
    }

    private func collectOrParents(into found: inout [String]) {
        switch self {
        case .or(let left, let right):
            if !left.parentIDs.isEmpty, !right.parentIDs.isEmpty {
                for id in left.parentIDs + right.parentIDs where !found.contains(id) { found.append(id) }
            }
            left.collectOrParents(into: &found)
            right.collectOrParents(into: &found)
        case .and(let left, let right):
            left.collectOrParents(into: &found)
            right.collectOrParents(into: &found)
        case .not(let query):
            query.collectOrParents(into: &found)
        case .name, .mimeType, .inParents, .inOwners, .trashed, .starred, .modifiedTime:
            break
        }
    }

    private static func compare(_ actual: String, _ comparison: Comparison, _ value: String) -> Bool {
        switch comparison {
        case .equals: actual == value
        case .notEquals: actual != value
        // Foundation finds no range for an empty needle, but every string contains "".
        case .contains: value.isEmpty || actual.range(of: value, options: .caseInsensitive) != nil
        }
    }

    private static func compare(_ actual: Date, _ order: Order, _ value: Date) -> Bool {
        switch order {
        case .less: actual < value
        case .lessOrEqual: actual <= value
        case .equal: actual == value
        case .notEqual: actual != value
        case .greater: actual > value
        case .greaterOrEqual: actual >= value
        }
    }
}

/// Why a `q` expression was rejected; `message` is what the emulator answers with.
package struct DriveQueryError: Error, Equatable, Sendable {
    package let message: String

    package init(_ message: String) {
        self.message = message
    }

    fileprivate static func invalid(_ detail: String) -> DriveQueryError {
        DriveQueryError("Invalid Value: \(detail)")
    }
}

// MARK: - Lexing

private struct Token: Equatable {
    enum Kind: Equatable {
        case string(String)
        /// A bare word: a keyword, field name, `parents`, `true` or `false`.
        case word(String)
        case equals
        case notEquals
        /// `<`, `<=`, `>` or `>=`.
        case order(DriveQuery.Order)
        case open
        case close
        case end
    }

    var kind: Kind
    var position: Int

    /// How the token reads in an error message.
    var description: String {
        switch kind {
        case .string(let value): "'\(value)'"
        case .word(let word): "'\(word)'"
        case .equals: "'='"
        case .notEquals: "'!='"
        case .order(let order): "'\(order.rawValue)'"
        case .open: "'('"
        case .close: "')'"
        case .end: "the end of the query"
        }
    }

    func isKeyword(_ keyword: String) -> Bool {
        if case .word(let word) = kind { word.lowercased() == keyword } else { false }
    }
}

private enum Lexer {
    static func tokens(of text: String) throws(DriveQueryError) -> [Token] {
        let characters = Array(text)
        var tokens: [Token] = []
        var index = 0
        while index < characters.count {
            let character = characters[index]
            let start = index
            if character.isWhitespace {
                index += 1
            } else if character == "'" {
                tokens.append(Token(kind: .string(try string(characters, from: &index)), position: start))
            } else if character == "=" {
                tokens.append(Token(kind: .equals, position: start))
                index += 1
            } else if character == "!", index + 1 < characters.count, characters[index + 1] == "=" {
                tokens.append(Token(kind: .notEquals, position: start))
                index += 2
            } else if character == "<" || character == ">" {
                let equals = index + 1 < characters.count && characters[index + 1] == "="
                let order: DriveQuery.Order =
                    character == "<" ? (equals ? .lessOrEqual : .less) : (equals ? .greaterOrEqual : .greater)
                tokens.append(Token(kind: .order(order), position: start))
                index += equals ? 2 : 1
            } else if character == "(" {
                tokens.append(Token(kind: .open, position: start))
                index += 1
            } else if character == ")" {
                tokens.append(Token(kind: .close, position: start))
                index += 1
            } else if isWordCharacter(character) {
                while index < characters.count, isWordCharacter(characters[index]) { index += 1 }
                tokens.append(Token(kind: .word(String(characters[start..<index])), position: start))
            } else {
                throw .invalid("unexpected character '\(character)' at position \(start)")
            }
        }
        tokens.append(Token(kind: .end, position: characters.count))
        return tokens
    }

    private static func isWordCharacter(_ character: Character) -> Bool {
        character.isLetter || character.isNumber || character == "_"
    }

    /// Reads a single-quoted string starting at `index` (the opening quote) and moves past it.
    private static func string(_ characters: [Character], from index: inout Int) throws(DriveQueryError) -> String {
        let start = index
        var value = ""
        index += 1
        while index < characters.count {
            let character = characters[index]
            if character == "'" {
                index += 1
                return value
            }
            if character == "\\" {
                guard index + 1 < characters.count else { break }
                let escaped = characters[index + 1]
                // Drive only defines these two escapes; guessing at others would hide client bugs.
                guard escaped == "'" || escaped == "\\" else {
                    throw .invalid("unsupported escape '\\\(escaped)' at position \(index)")
                }
                value.append(escaped)
                index += 2
            } else {
                value.append(character)
                index += 1
            }
        }
        throw .invalid("unterminated string starting at position \(start)")
    }
}

// MARK: - Parsing

/// Recursive descent over: query := or; or := and ('or' and)*; and := unary ('and' unary)*;
/// unary := 'not' unary | '(' or ')' | term.
private struct Parser {
    var tokens: [Token]
    var index = 0

    init(tokens: [Token]) {
        self.tokens = tokens
    }

    var current: Token { tokens[min(index, tokens.count - 1)] }

    mutating func advance() -> Token {
        let token = current
        if index < tokens.count - 1 { index += 1 }
        return token
    }

    mutating func parseQuery() throws(DriveQueryError) -> DriveQuery {
        if current.kind == .end { throw .invalid("the query is empty") }
        let query = try parseOr()
        guard current.kind == .end else {
            throw .invalid(
                "unexpected \(current.description) at position \(current.position) after a complete expression")
        }
        return query
    }

    mutating func parseOr() throws(DriveQueryError) -> DriveQuery {
        var query = try parseAnd()
        while current.isKeyword("or") {
            _ = advance()
            query = .or(query, try parseAnd())
        }
        return query
    }

    mutating func parseAnd() throws(DriveQueryError) -> DriveQuery {
        var query = try parseUnary()
        while current.isKeyword("and") {
            _ = advance()
            query = .and(query, try parseUnary())
        }
        return query
    }

    mutating func parseUnary() throws(DriveQueryError) -> DriveQuery {
        if current.isKeyword("not") {
            _ = advance()
            return .not(try parseUnary())
        }
        if current.kind == .open {
            let open = advance()
            let query = try parseOr()
            guard current.kind == .close else {
                throw .invalid(
                    "expected ')' to close '(' at position \(open.position), found \(current.description) at "
                        + "position \(current.position)"
                )
            }
            _ = advance()
            return query
        }
        return try parseTerm()
    }

    mutating func parseTerm() throws(DriveQueryError) -> DriveQuery {
        let first = advance()
        switch first.kind {
        case .string(let id):
            guard current.isKeyword("in") else {
                throw .invalid(
                    "expected 'in' after \(first.description), found \(current.description) at position "
                        + "\(current.position)"
                )
            }
            _ = advance()
            switch current.kind {
            case .word("parents"):
                _ = advance()
                return .inParents(id)
            case .word("owners"):
                _ = advance()
                return .inOwners(id)
            default:
                throw .invalid(
                    "expected 'parents' or 'owners' after 'in', found \(current.description) at position "
                        + "\(current.position)")
            }
        case .word("name"):
            let (comparison, value) = try stringComparison(after: first)
            return .name(comparison, value)
        case .word("mimeType"):
            let (comparison, value) = try stringComparison(after: first)
            return .mimeType(comparison, value)
        case .word("trashed"):
            return .trashed(try boolean(after: first))
        case .word("starred"):
            return .starred(try boolean(after: first))
        case .word("modifiedTime"):
            let order: DriveQuery.Order
            switch current.kind {
            case .equals: order = .equal
            case .notEquals: order = .notEqual
            case .order(let given): order = given
            default: throw missingOperator(after: first, expected: "'<', '<=', '=', '!=', '>' or '>='")
            }
            _ = advance()
            guard case .string(let text) = current.kind, let time = RFC3339.date(text) else {
                throw .invalid(
                    "expected an RFC 3339 time after 'modifiedTime', found \(current.description) at position "
                        + "\(current.position)")
            }
            _ = advance()
            return .modifiedTime(order, time)
        case .word(let word):
            throw .invalid("unknown field '\(word)' at position \(first.position)")
        default:
            throw .invalid("expected a search term, found \(first.description) at position \(first.position)")
        }
    }

    /// `= true`, `!= false` and the like after a boolean field; `!= x` reads as `= !x`.
    mutating func boolean(after field: Token) throws(DriveQueryError) -> Bool {
        let negated: Bool
        switch current.kind {
        case .equals: negated = false
        case .notEquals: negated = true
        default: throw missingOperator(after: field, expected: "'=' or '!='")
        }
        _ = advance()
        let value: Bool
        if current.isKeyword("true") {
            value = true
        } else if current.isKeyword("false") {
            value = false
        } else {
            throw .invalid(
                "expected true or false after \(field.description), found \(current.description) at position "
                    + "\(current.position)"
            )
        }
        _ = advance()
        return negated ? !value : value
    }

    mutating func stringComparison(after field: Token) throws(DriveQueryError) -> (DriveQuery.Comparison, String) {
        let comparison: DriveQuery.Comparison
        switch current.kind {
        case .equals: comparison = .equals
        case .notEquals: comparison = .notEquals
        case _ where current.isKeyword("contains"): comparison = .contains
        default: throw missingOperator(after: field, expected: "'=', '!=' or 'contains'")
        }
        _ = advance()
        guard case .string(let value) = current.kind else {
            throw .invalid(
                "expected a quoted string after \(field.description), found \(current.description) at position "
                    + "\(current.position)"
            )
        }
        _ = advance()
        return (comparison, value)
    }

    func missingOperator(after field: Token, expected: String) -> DriveQueryError {
        .invalid(
            "expected \(expected) after \(field.description), found \(current.description) at position "
                + "\(current.position)"
        )
    }
}
