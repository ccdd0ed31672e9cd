import Foundation
import Testing

@testable import IvyCore

@Suite("Google's quota day")
struct GoogleDayTests {
    private static func utc(_ text: String) -> Milliseconds {
        let formatter = ISO8601DateFormatter()
        return Milliseconds((formatter.date(from: text)?.timeIntervalSince1970 ?? 0) * 1000)
    }

    @Test(
        "it begins at midnight Pacific time: 08:00 UTC in winter, 07:00 UTC in summer, and on the days clocks change",
        arguments: [
            ("2026-12-08T00:17:00Z", "2026-12-07T08:00:00Z"),  // winter, before Pacific midnight
            ("2026-12-08T08:00:00Z", "2026-12-08T08:00:00Z"),  // winter, at it
            ("2026-07-01T06:59:59Z", "2026-06-30T07:00:00Z"),  // summer
            ("2026-07-01T07:00:00Z", "2026-07-01T07:00:00Z"),
            ("2026-03-08T12:00:00Z", "2026-03-08T08:00:00Z"),  // daylight time began at 10:00 UTC
            ("2026-03-09T06:00:00Z", "2026-03-08T08:00:00Z"),
            ("2026-11-01T12:00:00Z", "2026-11-01T07:00:00Z"),  // daylight time ended at 09:00 UTC
            ("2026-11-02T07:30:00Z", "2026-11-01T07:00:00Z"),
            ("2027-03-14T09:59:59Z", "2027-03-14T08:00:00Z"),
        ])
    func start(time: String, expected: String) {
        #expect(GoogleDay.start(containing: Self.utc(time)) == Self.utc(expected), "\(time)")
    }
}
