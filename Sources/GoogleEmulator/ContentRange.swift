import Foundation

/// The `Content-Range` header of a resumable upload's PUT.
///
/// Clients send `bytes first-last/total` with a chunk (total `*` while the size is unknown),
/// and `bytes */total` with an empty body to ask how much the server has received.
package enum ContentRange: Sendable, Equatable {
    /// `bytes */1000` or `bytes */*`: a status query, or the final empty chunk of a known total.
    case status(total: Int64?)
    /// `bytes 0-262143/1000000` or `bytes 0-262143/*`: the body holds bytes `first...last`.
    case range(first: Int64, last: Int64, total: Int64?)

    /// Reads a `Content-Range` value, or returns nil when it is malformed.
    ///
    /// Malformed includes `last < first`, a range reaching past a known total, signs, spaces
    /// inside numbers, and numbers too large for `Int64`.
    package static func parse(_ header: String) -> ContentRange? {
        let text = header.trimmingCharacters(in: .whitespaces)
        // RFC 9110 makes the unit case-insensitive and requires whitespace after it.
        guard text.prefix(5).lowercased() == "bytes", let gap = text.dropFirst(5).first, gap == " " || gap == "\t"
        else {
            return nil
        }
        let spec = text.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let total: Int64?
        if halves[1] == "*" {
            total = nil
        } else {
            guard let known = number(halves[1]) else { return nil }
            total = known
        }
        if halves[0] == "*" { return .status(total: total) }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = number(bounds[0]), let last = number(bounds[1]), first <= last else {
            return nil
        }
        if let total, last >= total { return nil }
        return .range(first: first, last: last, total: total)
    }

    /// A non-negative decimal made of ASCII digits only; `Int64.init` would also accept a sign.
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(text)
    }
}
