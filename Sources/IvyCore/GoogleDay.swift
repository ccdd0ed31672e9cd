import Foundation

/// Google's quota day: it ends at midnight Pacific time (UTC-8, or UTC-7 while California
/// keeps daylight time), as Google's quota pages say. Worked out here rather than from the
/// time zone database, which a minimal machine may not have: daylight time runs from the
/// second Sunday of March, 02:00 standard time, to the first Sunday of November, 02:00
/// daylight time (the United States' rule since 2007).
package enum GoogleDay {
    private static let hour: Milliseconds = 3_600_000
    private static let day: Milliseconds = 86_400_000

    /// When the quota day holding `time` began (a UTC instant in milliseconds).
    package static func start(containing time: Milliseconds) -> Milliseconds {
        let local = time + offset(at: time)
        let midnight = floorDivide(local, day) * day
        // Midnight's own offset: on the days the clocks change, it is not the one at `time`.
        let guess = midnight - offset(at: time)
        return midnight - offset(at: guess)
    }

    /// Pacific time's offset from UTC at `time`: -7 hours in daylight time, else -8.
    static func offset(at time: Milliseconds) -> Milliseconds {
        let year = utc.component(.year, from: Date(timeIntervalSince1970: Double(time) / 1000))
        let begins = sunday(year: year, month: 3, nth: 2) + 10 * hour
        let ends = sunday(year: year, month: 11, nth: 1) + 9 * hour
        return time >= begins && time < ends ? -7 * hour : -8 * hour
    }

    /// Midnight UTC of the `nth` Sunday of `month`.
    private static func sunday(year: Int, month: Int, nth: Int) -> Milliseconds {
        let first = utc.date(from: DateComponents(year: year, month: month, day: 1)) ?? Date(timeIntervalSince1970: 0)
        let weekday = utc.component(.weekday, from: first)  // 1 is Sunday
        let firstSunday = 1 + (8 - weekday) % 7
        let days = firstSunday - 1 + 7 * (nth - 1)
        return Milliseconds(first.timeIntervalSince1970 * 1000) + Milliseconds(days) * day
    }

    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        return calendar
    }()

    private static func floorDivide(_ value: Milliseconds, _ divisor: Milliseconds) -> Milliseconds {
        value >= 0 ? value / divisor : (value - divisor + 1) / divisor
    }
}
