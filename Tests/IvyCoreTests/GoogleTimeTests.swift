import Foundation
import IvyCore
import Synchronization
import Testing

/// Google's clock as one run of ivy knows it: answers' `Date` headers, carried by the boot
/// clock (issue 48, item 1).
@Suite("Google's time, carried by the boot clock")
struct GoogleTimeTests {
    /// A Google time, whole seconds (an HTTP `Date`).
    static let date: Milliseconds = 1_796_000_000_000

    final class Clocks: Sendable {
        let wall = Mutex<Milliseconds>(0)
        let boot = Mutex<Milliseconds>(1_000)

        func time(boot id: String = "boot-1") -> GoogleTime {
            GoogleTime(wall: { self.wall.withLock { $0 } }, bootClock: { self.boot.withLock { $0 } }, boot: id)
        }
    }

    @Test("before any answer the device's own clock is read, unsure; after one, Google's, sure")
    func learns() {
        let clocks = Clocks()
        clocks.wall.withLock { $0 = Self.date + 2 * 86_400_000 }
        let time = clocks.time()
        #expect(time.reading() == ClockReading(now: Self.date + 2 * 86_400_000, sure: false))
        // Asked at boot time 1,000, answered at 1,100, dated `date`: Google's time at 1,100 is
        // between `date` and `date` + 999, the middle taken.
        clocks.boot.withLock { $0 = 1_100 }
        time.learn(date: Self.date, sent: 1_000, received: 1_100)
        let reading = time.reading()
        #expect(reading.sure && reading.now >= Self.date && reading.now <= Self.date + 999, "\(reading)")
        // The wall clock steps back two days: nothing moves; the boot clock runs on an hour.
        clocks.wall.withLock { $0 = Self.date }
        clocks.boot.withLock { $0 += 3_600_000 }
        #expect(time.reading().now == reading.now + 3_600_000)
        #expect(WallClock(google: time).wall() == Self.date)
    }

    @Test("each answer narrows the range; one that does not fit starts it afresh")
    func narrows() {
        var range = GoogleTimeRange(date: Self.date, sent: 0, received: 400, boot: "b")
        #expect(range.low == Self.date - 400 && range.high == Self.date + 999)
        // An answer dated a second later, asked at 1,300 and answered at 1,350.
        range = range.narrowed(by: GoogleTimeRange(date: Self.date + 1000, sent: 1_300, received: 1_350, boot: "b"))
        #expect(range.low == Self.date - 350 && range.high == Self.date + 699)
        #expect(range.seen == Self.date + 1000)
        // Google's clock (or this machine's boot) changed: the old range is no use.
        let moved = GoogleTimeRange(date: Self.date + 60_000, sent: 2_000, received: 2_100, boot: "b")
        #expect(range.narrowed(by: moved) == moved)
        let other = GoogleTimeRange(date: Self.date, sent: 0, received: 100, boot: "c")
        #expect(range.narrowed(by: other) == other)
        #expect(GoogleTimeRange(text: range.text) == range)
        #expect(GoogleTimeRange(text: "1 0 b 5") == nil && GoogleTimeRange(text: "x") == nil)
    }

    @Test("a range kept by an earlier run counts in the same boot; from another boot, only as a floor")
    func adopts() {
        let clocks = Clocks()
        let kept = GoogleTimeRange(low: Self.date - 500, high: Self.date - 400, boot: "boot-1", seen: Self.date)
        let same = clocks.time()
        same.adopt(kept)
        #expect(same.reading() == ClockReading(now: 1_000 + Self.date - 450, sure: true))

        // After a reboot the boot clock restarted; the wall clock is a day behind Google's
        // last answer: the time is at least that answer's, and unsure.
        clocks.wall.withLock { $0 = Self.date - 86_400_000 }
        let rebooted = clocks.time(boot: "boot-2")
        rebooted.adopt(kept)
        #expect(rebooted.reading() == ClockReading(now: Self.date, sure: false))
        // A boot whose id cannot be read never takes a kept range for its own.
        let unknown = clocks.time(boot: "")
        unknown.adopt(GoogleTimeRange(low: 0, high: 10, boot: "", seen: 5))
        #expect(!unknown.reading().sure)
    }

    @Test("an HTTP Date reads as its instant; anything else as none")
    func httpDate() {
        #expect(HTTPDateHeader.milliseconds("Tue, 03 Nov 2026 10:00:00 GMT") == 1_793_700_000_000)
        #expect(HTTPDateHeader.milliseconds("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDateHeader.milliseconds("Tue, 29 Feb 2028 23:59:59 GMT") == 1_835_481_599_000)
        #expect(HTTPDateHeader.milliseconds("Sat, 31 Dec 2016 23:59:60 GMT") == 1_483_228_800_000)
        for text in [
            "2026-11-03T10:00:00Z", "Tue, 03 Nov 2026 10:00:00 UTC", "Tue, 3 Nov 2026 10:00:00 GMT",
            "Tue, 03 nov 2026 10:00:00 GMT", "Tuesday, 03-Nov-26 10:00:00 GMT", "Tue Nov  3 10:00:00 2026",
            "Xyz, 03 Nov 2026 10:00:00 GMT", "Mon, 29 Feb 2027 10:00:00 GMT", "Mon, 31 Apr 2027 10:00:00 GMT",
            "Mon, 00 Apr 2027 10:00:00 GMT", "Tue, 03 Nov 2026 24:00:00 GMT", "Tue, 03 Nov 2026 10:60:00 GMT",
            "Tue, 03 Nov 2026 10:00:61 GMT", "Tue, 03 Nov 2026 10:00:00 GMT ", "Tue, 03 Nov 2026 1O:00:00 GMT",
            "Tue, \u{0663}3 Nov 2026 10:00:00 GMT", "",
        ] {
            #expect(HTTPDateHeader.milliseconds(text) == nil, "\(text)")
        }
    }

    @Test("an HTTP Date reads as Foundation's formatter reads it, over four centuries of days")
    func httpDateAsFoundation() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SystemRandomNumberGenerator()
        // A day a week from 1900 to 2300 (each weekday, month and leap year), at a random second of it.
        for day in stride(from: Int64(-25_567), to: 120_000, by: 7) {
            let instant = Date(
                timeIntervalSince1970: TimeInterval(day * 86_400 + Int64.random(in: 0..<86_400, using: &generator)))
            let text = formatter.string(from: instant)
            #expect(HTTPDateHeader.milliseconds(text) == Int64(instant.timeIntervalSince1970) * 1000, "\(text)")
        }
    }

    @Test("a time from another device is bounded by when Google received its file, plus a minute")
    func bounded() throws {
        let received = Self.date
        let book = BookBackup(
            id: BookID("b1"), title: "Dune", createdAt: received + 20 * 3_600_000, updatedAt: received + 20 * 3_600_000)
        let bounded = try #require(book.bounded(received: received, now: received + 5_000))
        #expect(bounded.updatedAt == received && bounded.createdAt == received)
        var near = book
        (near.createdAt, near.updatedAt) = (received - 10_000, received + 30_000)
        #expect(near.bounded(received: received, now: received) == nil, "within the minute's allowance")
        // A modifiedTime is a client's to set: never past this clock by more than a day.
        var far = book
        far.updatedAt = received + 10 * 86_400_000
        let limited = far.bounded(received: received + 9 * 86_400_000, now: received)
        #expect(limited?.updatedAt == received)
    }
}
