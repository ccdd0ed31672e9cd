import IvyCore
import Testing

@Suite("The sync's progress line: rclone's figures, on a scripted clock")
struct ProgressLineTests {
    static let mebibyte: Int64 = 1 << 20

    static let sizeCases: [(Int64, String)] = [
        (0, "0 B"), (900, "900 B"), (1023, "1023 B"), (1024, "1.00 KiB"), (1536, "1.50 KiB"),
        (12_900_000, "12.3 MiB"), (40 * mebibyte, "40.0 MiB"), (123 * 1024 * mebibyte, "123 GiB"),
        (5 * 1024 * 1024 * mebibyte, "5.00 TiB"),
    ]

    @Test("sizes in binary units with three figures, as rclone writes them", arguments: sizeCases)
    func sizes(bytes: Int64, text: String) {
        #expect(ProgressReading.size(bytes) == text)
    }

    static let durationCases: [(Double, String)] = [
        (0, "0s"), (13, "13s"), (59, "59s"), (60, "1m0s"), (90, "1m30s"), (3599, "59m59s"), (3600, "1h0m"),
        (7380, "2h3m"), (400_000, "111h6m"),
    ]

    @Test("durations: seconds, minutes and seconds, hours and minutes", arguments: durationCases)
    func durations(seconds: Double, text: String) {
        #expect(ProgressReading.duration(seconds: seconds) == text)
    }

    @Test("items, bytes, percentage, rate and ETA on one line; the ETA rounds up")
    func wholeLine() {
        let progress = SyncProgress(
            phase: "syncing", done: 12, total: 40, bytesDone: 12_900_000, bytesTotal: 40 * Self.mebibyte)
        let reading = ProgressReading(progress: progress, bytesPerSecond: 2.1 * Double(Self.mebibyte))
        #expect(reading.text(width: 200) == "syncing 12 / 40 items, 12.3 MiB / 40.0 MiB, 30%, 2.10 MiB/s, ETA 14s")
    }

    @Test("no rate yet, no rate and no ETA; a rate of nothing has an ETA of -; all done is ETA 0s")
    func rateAndETA() {
        var progress = SyncProgress(phase: "syncing", done: 1, total: 4, bytesDone: 1000, bytesTotal: 4000)
        #expect(
            ProgressReading(progress: progress, bytesPerSecond: nil).text(width: 200)
                == "syncing 1 / 4 items, 1000 B / 3.91 KiB, 25%")
        #expect(
            ProgressReading(progress: progress, bytesPerSecond: 0).text(width: 200)
                == "syncing 1 / 4 items, 1000 B / 3.91 KiB, 25%, 0 B/s, ETA -")
        progress.done = 4
        progress.bytesDone = 4000
        #expect(
            ProgressReading(progress: progress, bytesPerSecond: 500).text(width: 200)
                == "syncing 4 / 4 items, 3.91 KiB / 3.91 KiB, 100%, 500 B/s, ETA 0s")
    }

    @Test("a sync that moves no audio says items only; listing Drive says just that")
    func itemsOnly() {
        let books = SyncProgress(phase: "syncing", done: 3, total: 10)
        #expect(ProgressReading(progress: books, bytesPerSecond: nil).text(width: 80) == "syncing 3 / 10 items")
        let listing = SyncProgress(phase: "listing Drive")
        #expect(ProgressReading(progress: listing, bytesPerSecond: nil).text(width: 80) == "listing Drive")
    }

    static let widthCases: [(Int, String)] = [
        (200, "syncing 12 / 40 items, 12.3 MiB / 40.0 MiB, 30%, 2.10 MiB/s, ETA 14s"),
        (69, "syncing 12 / 40 items, 12.3 MiB / 40.0 MiB, 30%, 2.10 MiB/s, ETA 14s"),
        (68, "syncing 12 / 40 items, 12.3 MiB / 40.0 MiB, 30%, 2.10 MiB/s"),
        (50, "syncing 12 / 40 items, 12.3 MiB / 40.0 MiB, 30%"),
        (40, "syncing 12 / 40 items"),
        (12, "syncing 12 "),
        (1, ""),
        (0, ""),
    ]

    @Test(
        "the line stays under the terminal's width: the last parts go first, then the first is cut",
        arguments: widthCases)
    func width(columns: Int, text: String) {
        let progress = SyncProgress(
            phase: "syncing", done: 12, total: 40, bytesDone: 12_900_000, bytesTotal: 40 * Self.mebibyte)
        let line = ProgressReading(progress: progress, bytesPerSecond: 2.1 * Double(Self.mebibyte)).text(width: columns)
        #expect(line == text)
        #expect(line.count < max(1, columns))
    }

    @Test("redrawn at most ten times a second, but a new phase and the last operation always")
    func redraws() {
        var meter = ProgressMeter()
        let start: Milliseconds = 1_000_000
        #expect(meter.update(SyncProgress(phase: "listing Drive"), now: start) != nil)
        #expect(meter.update(SyncProgress(phase: "syncing", total: 3), now: start + 10) != nil, "a new phase")
        #expect(meter.update(SyncProgress(phase: "syncing", done: 1, total: 3), now: start + 60) == nil)
        #expect(meter.update(SyncProgress(phase: "syncing", done: 1, total: 3), now: start + 109) == nil)
        #expect(meter.update(SyncProgress(phase: "syncing", done: 2, total: 3), now: start + 110) != nil)
        let last = meter.update(SyncProgress(phase: "syncing", done: 3, total: 3), now: start + 111)
        #expect(last?.progress.done == 3, "the last operation is drawn at once")
    }

    @Test("the rate is known once readings span a second, and follows the last five seconds")
    func movingRate() throws {
        var meter = ProgressMeter()
        let start: Milliseconds = 5_000_000
        let total = 100 * Self.mebibyte
        func reading(at milliseconds: Milliseconds, bytes: Int64) -> ProgressReading? {
            meter.update(
                SyncProgress(phase: "syncing", done: 0, total: 10, bytesDone: bytes, bytesTotal: total),
                now: start + milliseconds)
        }
        #expect(reading(at: 0, bytes: 0)?.bytesPerSecond == nil)
        #expect(reading(at: 500, bytes: Self.mebibyte / 2)?.bytesPerSecond == nil, "half a second is too short")
        let first = try #require(reading(at: 1000, bytes: Self.mebibyte))
        #expect(first.bytesPerSecond == Double(Self.mebibyte))
        #expect(first.text(width: 200).hasSuffix("1.00 MiB/s, ETA 1m39s"))
        // Ten seconds at 1 MiB/s, then 4 MiB/s: five seconds on, the old pace has left the window.
        for second in 2...10 { _ = reading(at: Milliseconds(second) * 1000, bytes: Int64(second) * Self.mebibyte) }
        for second in 11...14 {
            _ = reading(at: Milliseconds(second) * 1000, bytes: (10 + 4 * Int64(second - 10)) * Self.mebibyte)
        }
        let fast = try #require(reading(at: 15_000, bytes: 30 * Self.mebibyte))
        #expect(fast.bytesPerSecond == 4 * Double(Self.mebibyte))
        // Nothing moves for a while: the rate falls to nothing, and the ETA says "-".
        let stalled = try #require(reading(at: 30_000, bytes: 30 * Self.mebibyte))
        #expect(stalled.bytesPerSecond == 0)
        #expect(stalled.text(width: 200).hasSuffix("0 B/s, ETA -"))
    }

    @Test("a clock that steps back starts the rate afresh instead of showing a negative one")
    func clockStepsBack() {
        var meter = ProgressMeter()
        let progress = SyncProgress(phase: "syncing", done: 0, total: 2, bytesDone: 0, bytesTotal: 1000)
        _ = meter.update(progress, now: 10_000)
        var later = progress
        later.bytesDone = 500
        #expect(meter.update(later, now: 12_000)?.bytesPerSecond == 250)
        later.bytesDone = 600
        #expect(meter.update(later, now: 3_000)?.bytesPerSecond == nil)
    }

    @Test("bytes done that drop start the rate afresh instead of showing a negative one")
    func bytesDrop() {
        var meter = ProgressMeter()
        var progress = SyncProgress(phase: "syncing", done: 0, total: 2, bytesDone: 0, bytesTotal: 1000)
        _ = meter.update(progress, now: 10_000)
        progress.bytesDone = 500
        #expect(meter.update(progress, now: 12_000)?.bytesPerSecond == 250)
        progress.bytesDone = 100
        #expect(meter.update(progress, now: 13_000)?.bytesPerSecond == nil)
        progress.bytesDone = 300
        #expect(meter.update(progress, now: 14_000)?.bytesPerSecond == 200)
    }
}
