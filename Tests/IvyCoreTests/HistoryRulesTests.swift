import Foundation
import IvyCore
import Testing

@Suite("History rules: retention, moments, changed fields")
struct HistoryRulesTests {
    static let minute: Milliseconds = 60_000
    static let hour: Milliseconds = 3_600_000
    static let day: Milliseconds = 86_400_000
    /// A Monday at noon UTC, well after the epoch.
    static let now: Milliseconds = 1_767_009_600_000

    /// Versions of one entity at these ages (newest first is not required); returns the ages kept.
    static func kept(ages: [Milliseconds], deletedNewest: Bool = false, days: Int = 365) -> [Milliseconds] {
        let versions = ages.enumerated().map { index, age in
            History.Version(
                id: Int64(ages.count - index), recordedAt: now - age,
                deleted: deletedNewest && age == ages.min())
        }
        let pruned = Set(History.prunable(versions, newest: now, days: days))
        return versions.filter { !pruned.contains($0.id) }.map { now - $0.recordedAt }.sorted()
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let ages: [Milliseconds]
        let kept: [Milliseconds]
        var deletedNewest = false
        var days = 365
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "every version of the last hour stays",
            ages: (0..<60).map { Milliseconds($0) * minute }, kept: (0..<60).map { Milliseconds($0) * minute }),
        Case(
            name: "older than an hour: the newest of each hour",
            ages: [0, 2 * hour + 10 * minute, 2 * hour + 20 * minute, 2 * hour + 30 * minute],
            kept: [0, 2 * hour + 10 * minute]),
        Case(
            name: "between 1 and 30 days: one a day",
            ages: [0, 3 * day, 3 * day + hour, 3 * day + 2 * hour, 10 * day],
            kept: [0, 3 * day, 10 * day]),
        Case(
            name: "beyond 30 days: one a week, none older than history_days",
            ages: [0, 40 * day, 41 * day, 100 * day, 400 * day],
            kept: [0, 40 * day, 100 * day]),
        Case(name: "the current state stays whatever its age", ages: [500 * day, 600 * day], kept: [500 * day]),
        Case(
            name: "a deleted entity keeps its tombstone and the state before it while young",
            ages: [2 * day, 200 * day, 300 * day, 300 * day + hour], kept: [2 * day, 200 * day, 300 * day],
            deletedNewest: true),
        Case(
            name: "a deleted entity older than history_days goes entirely",
            ages: [400 * day, 500 * day], kept: [], deletedNewest: true),
        Case(name: "history_days 0 removes everything", ages: [0, minute, day], kept: [], days: 0),
        Case(
            name: "a short history_days cuts older versions", ages: [0, 3 * day, 9 * day], kept: [0, 3 * day],
            days: 7),
    ]

    @Test("staggered retention", arguments: cases)
    func retention(_ test: Case) {
        let kept = Self.kept(ages: test.ages, deletedNewest: test.deletedNewest, days: test.days)
        #expect(kept == test.kept.sorted())
    }

    @Test("pruning twice removes nothing more: the spans are fixed in time")
    func idempotent() {
        let versions = (0..<2000).map {
            History.Version(id: Int64(2000 - $0), recordedAt: Self.now - Int64($0) * 10 * Self.minute, deleted: false)
        }
        let first = Set(History.prunable(versions, newest: Self.now, days: 365))
        let left = versions.filter { !first.contains($0.id) }
        #expect(History.prunable(left, newest: Self.now, days: 365).isEmpty)
        #expect(History.prunable(left, newest: Self.now + Self.minute, days: 365).count <= 3)
    }

    @Test("a year of a position changing every 10 s, 2 hours a day, keeps under 500 versions")
    func yearOfPositions() {
        var versions: [History.Version] = []
        var id: Int64 = 0
        for day in 0..<365 {
            for step in stride(from: 0, to: 7200, by: 10) {
                id += 1
                let at = Self.now - Milliseconds(day) * Self.day - Milliseconds(step) * 1000
                versions.append(History.Version(id: id, recordedAt: at, deleted: false))
            }
        }
        let pruned = Set(History.prunable(versions, newest: Self.now, days: 365))
        // The last hour's 360 are all kept; then about 2 for the rest of the day, 29 days and 48 weeks.
        #expect(versions.count - pruned.count < 500, "\(versions.count - pruned.count) kept")
    }

    @Test("the version written last is the current state, whatever the clock said when it was written")
    func orderOfChanges() {
        // Written while the clock ran two hours ahead, then after NTP stepped it back: the older
        // change carries the later time. Five days on, both fall in one day's span.
        let ahead = History.Version(id: 1, recordedAt: Self.now + 2 * Self.hour + 50 * Self.minute, deleted: false)
        let current = History.Version(id: 2, recordedAt: Self.now + 2 * Self.hour + 10 * Self.minute, deleted: false)
        let pruned = History.prunable([ahead, current], newest: Self.now + 5 * Self.day, days: 365)
        #expect(pruned == [1])
    }

    @Test("ages count back from the library's newest version: an idle year prunes nothing more")
    func idleMachineKeepsItsPast() {
        let versions = (0..<10).map {
            History.Version(id: Int64(10 - $0), recordedAt: Self.now - Int64($0) * 5 * Self.minute, deleted: false)
        }
        // A year of no change: the newest version is still the one of a year ago.
        #expect(History.prunable(versions, newest: Self.now, days: 365).isEmpty)
    }

    @Test("WHEN: RFC 3339, local date and time, or a duration ago")
    func moments() throws {
        let utc = LocalZone(try #require(TimeZone(identifier: "UTC")))
        let paris = LocalZone(try #require(TimeZone(identifier: "Europe/Paris")))
        let now: Milliseconds = 1_767_009_600_000
        #expect(try History.moment("2h", now: now, zone: utc) == now - 2 * Self.hour)
        #expect(try History.moment("90m", now: now, zone: utc) == now - 90 * Self.minute)
        #expect(try History.moment("3d", now: now, zone: nil) == now - 3 * Self.day)
        #expect(try History.moment("2025-12-29T12:00:00Z", now: now, zone: paris) == 1_767_009_600_000)
        #expect(try History.moment("2025-12-29T13:00:00.5+01:00", now: now, zone: nil) == 1_767_009_600_500)
        #expect(try History.moment("2025-12-29", now: now, zone: utc) == 1_766_966_400_000)
        #expect(try History.moment("2025-12-29 13:00", now: now, zone: paris) == 1_767_009_600_000)
        #expect(try History.moment("2025-12-29 12:00:30", now: now, zone: utc) == 1_767_009_630_000)
        #expect(try History.moment("-2h", now: now, zone: utc) == now - 2 * Self.hour, "as people write ago")
        for bad in ["", "yesterday", "2h ago", "--2h", "2025-13-01", "2025-02-29", "12:00", "2025-12-29 24:00"] {
            #expect(throws: MomentError.malformed, "\(bad)") { try History.moment(bad, now: now, zone: utc) }
        }
        #expect(throws: MomentError.noZone) { try History.moment("2025-12-29", now: now, zone: nil) }
    }

    @Test("WHEN takes back a time as ivy shows it, offset and all, with no zone to read it in")
    func shownMoments() throws {
        let now: Milliseconds = 1_767_009_600_000
        let berlin = LocalZone(try #require(TimeZone(identifier: "Europe/Berlin")))
        let shown = LocalTime.shown(utcSeconds: 1_767_009_630, offset: 3600)
        #expect(shown == "2025-12-29 13:00:30 +01:00")
        #expect(
            LocalTime.shown(utcSeconds: 1_767_009_630, offset: -18_000, seconds: false) == "2025-12-29 07:00 -05:00")
        #expect(LocalTime.shown(utcSeconds: 1_767_009_630, offset: 19_800) == "2025-12-29 17:30:30 +05:30")
        for (text, expected) in [
            (shown, 1_767_009_630_000), ("2025-12-29 13:00 +01:00", 1_767_009_600_000),
            ("2025-12-29 07:00:30 -05:00", 1_767_009_630_000), (" 2025-12-29 12:00 +00:00 ", 1_767_009_600_000),
            ("2025-12-29 12:00 -00:00", 1_767_009_600_000), ("2025-12-29T17:30 +05:30", 1_767_009_600_000),
        ] as [(String, Milliseconds)] {
            #expect(try History.moment(text, now: now, zone: nil) == expected, "\(text)")
            // The offset given wins over the zone's (+01:00 in December).
            #expect(try History.moment(text, now: now, zone: berlin) == expected, "\(text)")
        }
        for bad in [
            "2025-12-29 13:00 +25:00", "2025-12-29 13:00 +1", "2025-12-29 13:00 +0100", "2025-12-29 13:00 +01:60",
            "2025-12-29 13:00 +01:00:00", "2025-12-29 13:00 01:00", "2025-12-29 13:00 + 01:00", "13:00 +01:00",
            "2025-12-29 25:00 +01:00", "2025-12-29 13:00 UTC",
        ] {
            #expect(throws: MomentError.malformed, "\(bad)") { try History.moment(bad, now: now, zone: berlin) }
        }
    }

    @Test("an end WHEN given to the second takes in that whole second, up to now")
    func endMoments() throws {
        let now: Milliseconds = 1_767_009_600_000
        let berlin = LocalZone(try #require(TimeZone(identifier: "Europe/Berlin")))
        let second: Milliseconds = 1_767_009_500_000
        for text in ["2025-12-29 12:58:20 +01:00", "2025-12-29T11:58:20Z", "2025-12-29 12:58:20"] {
            #expect(try History.moment(text, now: now, zone: berlin) == second, "\(text)")
            #expect(try History.moment(text, now: now, zone: berlin, end: true) == second + 999, "\(text)")
            // The second that holds now ends at now: never a moment still to come.
            #expect(try History.moment(text, now: second + 300, zone: berlin, end: true) == second + 300)
        }
        // A fraction, or a duration, is exact already.
        #expect(try History.moment("2025-12-29T11:58:20.5Z", now: now, zone: nil, end: true) == second + 500)
        #expect(try History.moment("2h", now: now, zone: nil, end: true) == now - 2 * Self.hour)
    }

    @Test("a local WHEN the clocks skipped is refused; one they passed twice is refused with both instants")
    func momentsAtClockChanges() throws {
        let berlin = LocalZone(try #require(TimeZone(identifier: "Europe/Berlin")))
        // 2026-03-29 02:00 CET the clocks went to 03:00 CEST; 2026-10-25 03:00 CEST back to 02:00 CET.
        let gap = try #require(LocalTime.wall("2026-03-29 02:30"))
        #expect(throws: MomentError.skipped(wall: gap)) { try History.moment("2026-03-29 02:30", now: 0, zone: berlin) }
        let twice = try #require(LocalTime.wall("2026-10-25 02:30"))
        let first = LocalInstant(utcSeconds: 1_792_888_200, offset: 7200)
        let second = LocalInstant(utcSeconds: 1_792_891_800, offset: 3600)
        #expect(throws: MomentError.ambiguous(wall: twice, first: first, second: second)) {
            try History.moment("2026-10-25 02:30", now: 0, zone: berlin)
        }
        #expect(first.shown == "2026-10-25 02:30:00 +02:00" && first.utc == "2026-10-25T00:30:00Z")
        #expect(second.shown == "2026-10-25 02:30:00 +01:00" && second.utc == "2026-10-25T01:30:00Z")
        #expect(try History.moment(first.shown, now: 0, zone: nil) == first.utcSeconds * 1000)
        #expect(try History.moment(second.shown, now: 0, zone: berlin) == second.utcSeconds * 1000)
        #expect(try History.moment("2026-10-25 03:30", now: 0, zone: berlin) == (1_792_891_800 + 3600) * 1000)
        #expect(try History.moment("2026-03-29 03:00", now: 0, zone: berlin) == 1_774_746_000 * 1000)
    }

    @Test("local dates are civil dates, leap years included; TZ's POSIX rules are told by their text")
    func localTimeText() {
        #expect(LocalTime.wall("1970-01-01") == 0)
        #expect(LocalTime.wall("2024-02-29 23:59:59") == 1_709_251_199)
        #expect(LocalTime.wall("2024-02-29T12:00") == 1_709_208_000)
        #expect(LocalTime.wall("1969-12-31 23:00") == -3600)
        #expect(LocalTime.text(wall: 1_709_251_199) == "2024-02-29 23:59:59")
        #expect(LocalTime.text(wall: -3600) == "1969-12-31 23:00:00")
        for rule in [
            "EST5EDT", "EST5EDT,M3.2.0,M11.1.0", "CET-1CEST,M3.5.0,M10.5.0/3", "<+0330>-3:30", "UTC0", "JST-9",
        ] {
            #expect(POSIXTimeZoneRule.matches(rule), "\(rule)")
        }
        for other in ["Europe/Berlin", "Mars/Olympus", "EST", "CET-1CEST,M3.5.0", "5EST", ""] {
            #expect(!POSIXTimeZoneRule.matches(other), "\(other)")
        }
    }

    @Test("changed fields: every field of a first version, the differing ones after, never updated_at")
    func changed() {
        let first: [String: JSONValue] = ["id": .string("a"), "title": .string("A"), "updated_at": .number(1)]
        var second = first
        second["title"] = .string("B")
        second["updated_at"] = .number(2)
        #expect(History.changedFields(from: nil, to: first) == ["id", "title"])
        #expect(History.changedFields(from: first, to: second) == ["title"])
        #expect(History.changedFields(from: first, to: second, audioChanged: true) == ["audio", "title"])
        #expect(History.changedFields(from: first, to: nil).isEmpty)
    }
}
