/// The one range every time of play (a book's position, a clip's start and duration) must be
/// in, wherever it enters: the command line, the store, the database's own triggers and the
/// backup files read from Drive.
package enum TimeRules {
    /// 10,000,000 seconds, about 115 days: far beyond any audiobook, and small enough that its
    /// milliseconds stay exact in a Double and fit an Int64 with room to spare.
    package static let maximumSeconds: Double = 10_000_000

    /// The range in words, for messages.
    package static let range = "0 to 10,000,000 seconds (2777:46:40)"

    /// Finite, not negative and not above the maximum.
    package static func isValid(_ seconds: Double) -> Bool {
        seconds.isFinite && seconds >= 0 && seconds <= maximumSeconds
    }
}
