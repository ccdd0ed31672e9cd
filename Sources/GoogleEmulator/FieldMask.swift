import Foundation

/// A parsed `fields` parameter: which keys of a Drive response to send back.
///
/// Syntax: a comma-separated list of field names, each optionally followed by a parenthesised
/// sub-selection (`files(id,name)`); `a/b` is shorthand for `a(b)`; `*` selects everything at
/// its level. Whitespace around names and punctuation is ignored. Naming a key more than once
/// merges the selections, and a bare name wins over any sub-selection of it.
package struct FieldMask: Sendable, Equatable {
    /// The selected keys with the selection for each one's value, or nil when everything is selected.
    package var keys: [String: FieldMask]?

    /// Selects every key.
    package static let all = FieldMask(keys: nil)

    package init(keys: [String: FieldMask]?) {
        self.keys = keys
    }

    /// Parses a `fields` value, or throws for unbalanced parentheses and empty names.
    ///
    /// Positions in messages are 0-based character offsets into `text`.
    package static func parse(_ text: String) throws(FieldMaskError) -> FieldMask {
        var parser = Parser(characters: Array(text))
        let mask = try parser.parseList()
        if let stray = parser.current {
            throw .invalid("unexpected '\(stray)' at position \(parser.index)")
        }
        return mask
    }

    /// Keeps only the selected keys of a JSON object.
    ///
    /// A sub-selection applies to a nested object, and to every object in an array; it leaves
    /// other values (strings, numbers, arrays of scalars) whole. Unknown keys select nothing.
    package func apply(to object: [String: any Sendable]) -> [String: any Sendable] {
        guard let keys else { return object }
        var result: [String: any Sendable] = [:]
        for (key, mask) in keys {
            guard let value = object[key] else { continue }
            result[key] = mask.applyToValue(value)
        }
        return result
    }

    /// The same as `apply(to:)` for an object from `JSONSerialization`.
    package func apply(toJSONObject object: [String: Any]) -> [String: Any] {
        guard let keys else { return object }
        var result: [String: Any] = [:]
        for (key, mask) in keys {
            guard let value = object[key] else { continue }
            result[key] = mask.applyToJSONValue(value)
        }
        return result
    }

    private func applyToValue(_ value: any Sendable) -> any Sendable {
        if keys == nil { return value }
        if let object = value as? [String: any Sendable] { return apply(to: object) }
        if let array = value as? [any Sendable] { return array.map { applyToValue($0) } }
        return value
    }

    private func applyToJSONValue(_ value: Any) -> Any {
        if keys == nil { return value }
        if let object = value as? [String: Any] { return apply(toJSONObject: object) }
        if let array = value as? [Any] { return array.map { applyToJSONValue($0) } }
        return value
    }

    /// The union of two selections of the same value.
    fileprivate func merged(with other: FieldMask) -> FieldMask {
        guard let keys, let otherKeys = other.keys else { return .all }
        return FieldMask(keys: keys.merging(otherKeys) { $0.merged(with: $1) })
    }
}

/// Why a `fields` value was rejected; `message` is what the emulator answers with.
package struct FieldMaskError: Error, Equatable, Sendable {
    package let message: String

    package init(_ message: String) {
        self.message = message
    }

    fileprivate static func invalid(_ detail: String) -> FieldMaskError {
        FieldMaskError("Invalid field selection: \(detail)")
    }
}

/// Recursive descent over: list := item (',' item)*; item := path ['(' list ')'];
/// path := segment ('/' segment)*; segment := name | '*'.
private struct Parser {
    let characters: [Character]
    var index = 0

    init(characters: [Character]) {
        self.characters = characters
    }

    var current: Character? { index < characters.count ? characters[index] : nil }

    mutating func skipWhitespace() {
        while let character = current, character.isWhitespace { index += 1 }
    }

    /// Parses items up to the first character that is not a ',' after an item; the caller
    /// decides whether what stopped the list (the end, a ')', anything else) is allowed.
    mutating func parseList() throws(FieldMaskError) -> FieldMask {
        var mask = FieldMask(keys: [:])
        while true {
            mask = mask.merged(with: try parseItem())
            skipWhitespace()
            guard current == "," else { return mask }
            index += 1
        }
    }

    mutating func parseItem() throws(FieldMaskError) -> FieldMask {
        skipWhitespace()
        let start = index
        let segment = readName()
        if segment.isEmpty {
            throw .invalid("empty field name at position \(start)")
        }
        skipWhitespace()
        if segment == "*" {
            if current == "/" || current == "(" {
                throw .invalid("'*' cannot have a sub-selection (position \(index))")
            }
            return .all
        }
        let inner: FieldMask
        if current == "/" {
            index += 1
            inner = try parseItem()
        } else if current == "(" {
            let open = index
            index += 1
            inner = try parseList()
            switch current {
            case ")": index += 1
            case nil: throw .invalid("missing ')' for '(' at position \(open)")
            case let stray?: throw .invalid("unexpected '\(stray)' at position \(index)")
            }
        } else {
            inner = .all
        }
        return FieldMask(keys: [segment: inner])
    }

    /// Reads a name, or a lone `*`, and returns it (empty when neither is there).
    mutating func readName() -> String {
        if current == "*" {
            index += 1
            return "*"
        }
        let start = index
        while let character = current, !character.isWhitespace, !",()/*".contains(character) {
            index += 1
        }
        return String(characters[start..<index])
    }
}
