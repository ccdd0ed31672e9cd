/// Reads and writes the times ivy shows: positions, clip starts and durations.
package enum TimeText {
    package struct ParseError: Error, Equatable, Sendable {
        package let text: String
    }

    /// Seconds from `2700`, `2700.5`, `H:MM:SS` or `MM:SS` (seconds may have a fraction).
    /// Negative, empty, non-finite or malformed text is an error.
    package static func seconds(from text: String) throws(ParseError) -> Double {
        let trimmed = text.trimmingSpaces()
        let parts = trimmed.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (1...3).contains(parts.count) else { throw ParseError(text: text) }
        guard let secondsPart = parts.last, let seconds = plainNumber(secondsPart) else {
            throw ParseError(text: text)
        }
        if parts.count == 1 { return seconds }
        // With colons the last field is seconds within a minute, the others whole numbers.
        guard seconds < 60 else { throw ParseError(text: text) }
        let wholes = parts.dropLast().map(wholeNumber)
        guard wholes.allSatisfy({ $0 != nil }) else { throw ParseError(text: text) }
        let values = wholes.compactMap { $0 }
        if values.count == 2 {
            let (hours, minutes) = (values[0], values[1])
            guard minutes < 60 else { throw ParseError(text: text) }
            return Double(hours) * 3600 + Double(minutes) * 60 + seconds
        }
        return Double(values[0]) * 60 + seconds
    }

    /// `H:MM:SS`, with a fraction of a second only when there is one (`0:45:00.5`).
    package static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "0:00:00" }
        let millis = Int64((seconds * 1000).rounded())
        let whole = millis / 1000
        let fraction = millis % 1000
        let hours = whole / 3600
        let minutes = (whole % 3600) / 60
        let secs = whole % 60
        var text = "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))"
        if fraction != 0 {
            var digits = String(fraction)
            digits = String(repeating: "0", count: 3 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            text += "." + digits
        }
        return text
    }

    private static func twoDigits(_ value: Int64) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }

    /// Digits with at most one decimal point: no sign, exponent, `inf` or `nan`.
    private static func plainNumber(_ text: String) -> Double? {
        let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(pieces.count),
            pieces.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) }),
            !pieces[0].isEmpty || (pieces.count == 2 && !pieces[1].isEmpty)
        else { return nil }
        return Double(text)
    }

    private static func wholeNumber(_ text: String) -> Int? {
        guard !text.isEmpty, text.count <= 9, text.allSatisfy(\.isASCIIDigit) else { return nil }
        return Int(text)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isWholeNumber }
}

extension String {
    package func trimmingSpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }
}
