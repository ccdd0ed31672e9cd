import Foundation

/// An HTTP `Date` header (`Tue, 03 Nov 2026 10:00:00 GMT`, RFC 9110's IMF-fixdate).
package enum HTTPDateHeader {
    /// The header's time in ms since the epoch; nil for anything else.
    package static func milliseconds(_ text: String) -> Milliseconds? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text).map { Milliseconds(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}
