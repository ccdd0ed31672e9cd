/// An HTTP `Date` header (`Tue, 03 Nov 2026 10:00:00 GMT`, RFC 9110's IMF-fixdate), read by
/// hand: every answer carries one, and a `DateFormatter` made for each cost ivy 15 % of its
/// CPU in a new device's download (ICU builds its calendar and symbols each time).
package enum HTTPDateHeader {
    private static let dayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// The header's time in ms since the epoch; nil for anything else. Exactly IMF-fixdate:
    /// `day-name "," SP day SP month SP year SP hour ":" minute ":" second SP "GMT"`, with a
    /// day the month has and a second up to 60 (a leap second, counted as the next minute's
    /// first). The day-name must be one, but as RFC 9110 says it is redundant, it is not
    /// checked against the date.
    package static func milliseconds(_ text: String) -> Milliseconds? {
        let bytes = Array(text.utf8)
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[4] == space, bytes[7] == space,
            bytes[11] == space, bytes[16] == space, bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"),
            bytes[25] == space, bytes[26...] == Array("GMT".utf8)[...],
            dayNames.contains(where: { Array($0.utf8)[...] == bytes[0..<3] }),
            let month = monthNames.firstIndex(where: { Array($0.utf8)[...] == bytes[8..<11] }).map({ $0 + 1 }),
            let day = number(bytes[5..<7]), let year = number(bytes[12..<16]), let hour = number(bytes[17..<19]),
            let minute = number(bytes[20..<22]), let second = number(bytes[23..<25]),
            (1...LocalTime.daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        let days = LocalTime.days(year: year, month: month, day: day)
        let seconds = ((days * 24 + Int64(hour)) * 60 + Int64(minute)) * 60 + Int64(second)
        return seconds * 1000
    }

    private static let space = UInt8(ascii: " ")

    /// The decimal number the ASCII digits spell; nil if any byte is not one.
    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}
