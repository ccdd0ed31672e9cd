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

/// A download's `Range` header against a file of known size, read as RFC 7233 §2.1 says
/// (Google's downloads guide sends partial downloads through it and answers as HTTP does).
package enum ByteRange: Sendable, Equatable {
    /// Send bytes `start...end` with 206.
    case bytes(start: Int, end: Int)
    /// 416 with `Content-Range: bytes */size`: a start at or past the end, a zero suffix, or
    /// any range of an empty file (RFC 7233 §2.1 and §4.4).
    case unsatisfiable
    /// Not a single byte range (another unit, several ranges, last before first): the
    /// header is ignored and the whole file sent with 200 (RFC 7233 §3.1).
    case ignored

    /// `bytes=first-last`, `bytes=first-` or the suffix form `bytes=-N` (the last N bytes,
    /// all of them when the file is shorter).
    package static func parse(_ header: String, size: Int) -> ByteRange {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=") else { return .ignored }
        let bounds = text.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
            .split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2 else { return .ignored }
        func number(_ text: Substring) -> Int? {
            text.allSatisfy({ $0.isASCII && $0.isNumber }) ? Int(text) : nil
        }
        if bounds[0].isEmpty {
            guard let suffix = number(bounds[1]) else { return .ignored }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .bytes(start: max(0, size - suffix), end: size - 1)
        }
        guard let start = number(bounds[0]) else { return .ignored }
        var end = size - 1
        if !bounds[1].isEmpty {
            guard let last = number(bounds[1]), last >= start else { return .ignored }
            end = min(last, size - 1)
        }
        return start < size ? .bytes(start: start, end: end) : .unsatisfiable
    }
}
