/// What `book list --search` and `clip list --search` look for: text contained anywhere in a
/// field, in any case. Matched here rather than with SQL's LIKE, which folds only ASCII letters
/// (`é` would not find `É`) and reads `%` and `_` in the search as wildcards.
package struct TextSearch: Sendable {
    private let folded: String

    package init(_ text: String) {
        folded = text.lowercased()
    }

    package func matches(_ field: String?) -> Bool {
        guard let field else { return false }
        return field.lowercased().contains(folded)
    }
}
