package import Foundation

/// The time zone a local `WHEN` (`2026-03-29 02:30`) is read in, as its offset from UTC at any
/// instant. The `ivy` binary makes it from `TZ` as the C library reads it (a zone name, a
/// file, a POSIX rule); anything else can make one from a rule of its own.
package struct LocalZone: Sendable {
    /// What the zone is called in messages: `TZ`'s value, or where the system's comes from.
    package let name: String
    private let offsetAt: @Sendable (_ utcSeconds: Int64) -> Int

    /// `offset` gives the zone's offset from UTC, in seconds east, at a UTC second.
    package init(name: String, offset: @escaping @Sendable (_ utcSeconds: Int64) -> Int) {
        self.name = name
        self.offsetAt = offset
    }

    /// Foundation's zone: its rules come from the same tz database as the C library's.
    package init(_ zone: TimeZone, name: String? = nil) {
        self.init(name: name ?? zone.identifier) { seconds in
            zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(seconds)))
        }
    }

    /// The zone's offset from UTC (seconds east) at a UTC second.
    package func offset(at utcSeconds: Int64) -> Int { offsetAt(utcSeconds) }

    /// Every instant whose local time reads `wall` (a local date and time counted in seconds
    /// as if it were UTC), earliest first, each with the offset it has there: one, none when
    /// the clocks jumped forward over it, two when they went back over it.
    package func instants(wall: Int64) -> [(utcSeconds: Int64, offset: Int)] {
        // Offsets are within a day of UTC, so every instant that can read `wall` lies within a
        // day of it; rules never change twice in three hours, so probes that far apart see
        // every offset in force around it.
        var offsets: Set<Int> = []
        for step in -10...10 { offsets.insert(offset(at: wall + Int64(step) * 3 * 3600)) }
        let found = offsets.compactMap { offset -> (utcSeconds: Int64, offset: Int)? in
            let instant = wall - Int64(offset)
            return self.offset(at: instant) == offset ? (instant, offset) : nil
        }
        return found.sorted { $0.utcSeconds < $1.utcSeconds }
    }
}

/// Why a `WHEN` names no single moment.
package enum MomentError: Error, Equatable, Sendable {
    /// None of the accepted forms.
    case malformed
    /// A local time read without a zone to read it in.
    case noZone
    /// A local time the clocks skipped (spring forward): it never happened.
    case skipped(wall: Int64)
    /// A local time that happened twice (fall back): each instant, with its offset.
    case ambiguous(wall: Int64, first: LocalInstant, second: LocalInstant)
}

/// One instant with the local offset it had.
package struct LocalInstant: Equatable, Sendable {
    package let utcSeconds: Int64
    /// Seconds east of UTC.
    package let offset: Int

    package init(utcSeconds: Int64, offset: Int) {
        self.utcSeconds = utcSeconds
        self.offset = offset
    }

    /// The local time with its offset, as ivy shows times and a `WHEN` takes them back:
    /// `2026-10-25 02:30:00 +02:00`.
    package var shown: String { LocalTime.shown(utcSeconds: utcSeconds, offset: offset) }

    /// The same instant in UTC: `2026-10-25T00:30:00Z`.
    package var utc: String { LocalTime.text(wall: utcSeconds, separator: "T") + "Z" }
}

/// Local dates and times as `WHEN` takes them, read without a calendar library: the civil
/// calendar is plain arithmetic, and the zone is the caller's.
package enum LocalTime {
    /// `YYYY-MM-DD` (its midnight), `YYYY-MM-DD HH:MM`, `YYYY-MM-DD HH:MM:SS` or the same with a
    /// `T`, as seconds since the epoch as if the local time were UTC; nil for anything else
    /// (a 31 April included).
    package static func wall(_ text: String) -> Int64? {
        let parts = text.split(omittingEmptySubsequences: false) { $0 == " " || $0 == "T" }
        guard parts.count == 1 || parts.count == 2 else { return nil }
        let date = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard date.count == 3, date[0].count == 4, date[1].count == 2, date[2].count == 2,
            let year = number(date[0]), let month = number(date[1]), let day = number(date[2]),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        var seconds: Int64 = 0
        if parts.count == 2 {
            let time = parts[1].split(separator: ":", omittingEmptySubsequences: false)
            guard time.count == 2 || time.count == 3, time.allSatisfy({ $0.count == 2 }),
                let hour = number(time[0]), let minute = number(time[1]),
                let second = time.count == 3 ? number(time[2]) : 0,
                hour < 24, minute < 60, second < 60
            else { return nil }
            seconds = Int64(hour * 3600 + minute * 60 + second)
        }
        return days(year: year, month: month, day: day) * 86_400 + seconds
    }

    /// `2026-10-25 02:30:00` (or with `separator` between), for a wall time.
    package static func text(wall: Int64, separator: String = " ") -> String {
        let days = wall >= 0 ? wall / 86_400 : (wall - 86_399) / 86_400
        let seconds = Int(wall - days * 86_400)
        let (year, month, day) = civil(days: days)
        return String(format: "%04d-%02d-%02d", year, month, day) + separator
            + String(format: "%02d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60)
    }

    /// `2026-11-29 01:20:43 +01:00` (to the minute without `seconds`): the one form ivy shows
    /// a moment in to people. The offset makes it one instant wherever it is read, so it can be
    /// given back as a `WHEN` with no zone to look up and no autumn hour to choose between.
    package static func shown(utcSeconds: Int64, offset: Int, seconds: Bool = true) -> String {
        let text = Self.text(wall: utcSeconds + Int64(offset))
        let sign = offset < 0 ? "-" : "+"
        let minutes = abs(offset) / 60
        return (seconds ? text : String(text.prefix(16))) + " " + sign
            + String(format: "%02d:%02d", minutes / 60, minutes % 60)
    }

    /// `+01:00`, `-05:00` as seconds east of UTC; nil for anything else (`+1`, `+25:00`,
    /// `+0100`), as RFC 3339 would refuse it.
    package static func offset(_ text: Substring) -> Int? {
        guard let sign = text.first, sign == "+" || sign == "-" else { return nil }
        let parts = text.dropFirst().split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 }), let hours = number(parts[0]),
            let minutes = number(parts[1]), hours < 24, minutes < 60
        else { return nil }
        return (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60)
    }

    private static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) else { return nil }
        return Int(text)
    }

    /// The days `month` (1-12) of `year` has, in the proleptic Gregorian calendar.
    package static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`).
    package static func days(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = Int64((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1)
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a day since 1970-01-01 (`civil_from_days`).
    private static func civil(days: Int64) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * shifted + 2) / 5 + 1)
        let month = Int(shifted < 10 ? shifted + 3 : shifted - 9)
        let year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }
}

/// The forms of `TZ` the C library (glibc) reads, as far as they can be told apart by their
/// text: a POSIX rule such as `CET-1CEST,M3.5.0,M10.5.0/3` or `EST5EDT`. A zone name or a
/// file is the caller's to find.
package enum POSIXTimeZoneRule {
    private static let name = #"(?:[A-Za-z]{3,}|<[A-Za-z0-9+\-]{3,}>)"#
    private static let offset = #"[+\-]?[0-9]{1,2}(?::[0-9]{1,2}){0,2}"#
    private static let time = #"[+\-]?[0-9]{1,3}(?::[0-9]{1,2}){0,2}"#
    private static let date = #"(?:J[0-9]{1,3}|[0-9]{1,3}|M[0-9]{1,2}\.[0-9]\.[0-9])"#
    private static let rule = ",\(date)(?:/\(time))?,\(date)(?:/\(time))?"
    private static let pattern = "^\(name)\(offset)(?:\(name)(?:\(offset))?(?:\(rule))?)?$"

    /// Whether `text` is a POSIX `TZ` rule: std name, offset, and optionally a DST name, its
    /// offset and the rule for when it starts and ends.
    package static func matches(_ text: String) -> Bool {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return false }
        let range = NSRange(text.startIndex..., in: text)
        return expression.firstMatch(in: text, range: range) != nil
    }
}
