/// Reads and writes the times ivy shows: positions, clip starts and durations.
package enum TimeText {
    package struct ParseError: Error, Equatable, Sendable {
        package enum Problem: Sendable {
            /// Not seconds, `H:MM:SS` or `MM:SS`.
            case malformed
            /// A well-formed time with a minus sign.
            case negative
            /// Above `TimeRules.maximumSeconds`.
            case tooLarge
        }

        package let text: String
        package var problem: Problem = .malformed
    }

    /// Seconds from `2700`, `2700.5`, `H:MM:SS` or `MM:SS` (seconds may have a fraction),
    /// within `TimeRules`. Negative, empty, non-finite, malformed or too large text is an error.
    package static func seconds(from text: String) throws(ParseError) -> Double {
        let trimmed = text.trimmingSpaces()
        if trimmed.hasPrefix("-"), (try? unsignedSeconds(String(trimmed.dropFirst()))) != nil {
            throw ParseError(text: text, problem: .negative)
        }
        guard let value = try? unsignedSeconds(trimmed) else { throw ParseError(text: text) }
        guard TimeRules.isValid(value) else { throw ParseError(text: text, problem: .tooLarge) }
        return value
    }

    private struct Malformed: Error {}

    private static func unsignedSeconds(_ trimmed: String) throws(Malformed) -> Double {
        let parts = trimmed.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (1...3).contains(parts.count) else { throw Malformed() }
        guard let secondsPart = parts.last, let seconds = plainNumber(secondsPart) else {
            throw Malformed()
        }
        if parts.count == 1 { return seconds }
        // With colons the last field is seconds within a minute, the others whole numbers.
        guard seconds < 60 else { throw Malformed() }
        let wholes = parts.dropLast().map(wholeNumber)
        guard wholes.allSatisfy({ $0 != nil }) else { throw Malformed() }
        let values = wholes.compactMap { $0 }
        if values.count == 2 {
            let (hours, minutes) = (values[0], values[1])
            guard minutes < 60 else { throw Malformed() }
            return Double(hours) * 3600 + Double(minutes) * 60 + seconds
        }
        return Double(values[0]) * 60 + seconds
    }

    /// `H:MM:SS`, with a fraction of a second only when there is one (`0:45:00.5`).
    ///
    /// Never traps: a database written by another program (or before the time rules) may hold
    /// anything. Negative times keep their sign, and what cannot be a clock time at all (NaN,
    /// infinities, values whose milliseconds overflow) shows as plain seconds (`1e+300 s`).
    package static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return "\(seconds) s" }
        if seconds < 0 { return "-" + clock(-seconds) }
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

/// RFC 3339 times as Drive writes them (`2026-11-22T06:46:09.123Z`), read without a
/// formatter: a listing of 10,000 files has 20,000 of them.
package enum RFC3339Time {
    package static func milliseconds(_ text: String) -> Milliseconds? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == 45, bytes[7] == 45, bytes[10] == 84 || bytes[10] == 116, bytes[13] == 58,
            bytes[16] == 58,
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month),
            (1...31).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis = 0
        if index < bytes.count, bytes[index] == 46 {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 3 { millis = millis * 10 + Int(bytes[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        guard index < bytes.count else { return nil }
        var offset = 0
        switch bytes[index] {
        case 90, 122: index += 1
        case 43, 45:
            guard let hours = number(index + 1..<index + 3), bytes.count > index + 3, bytes[index + 3] == 58,
                let minutes = number(index + 4..<index + 6)
            else { return nil }
            offset = (hours * 60 + minutes) * (bytes[index] == 43 ? 1 : -1)
            index += 6
        default: return nil
        }
        guard index == bytes.count else { return nil }
        // Days from civil (Howard Hinnant), then seconds.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset * 60
        return Milliseconds(seconds) * 1000 + Milliseconds(millis)
    }
}
