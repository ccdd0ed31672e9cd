import Foundation
import IvyTestSupport
import Testing

/// A local `WHEN` is read in the zone `TZ` names, in every form the C library takes, through
/// the built binary: glibc reads the process's `TZ`, which only a process of its own has.
@Suite("WHEN in the time zone TZ names")
struct TimeZoneTests {
    /// Every form of `TZ` glibc takes, each for a zone an hour (Berlin) or five (New York)
    /// from UTC, with a local noon in winter, that noon in UTC, and a local time the clocks
    /// passed twice in autumn with both its instants.
    static let zones: [(tz: String, noon: String, twice: String, first: String, second: String)] = [
        (
            "Europe/Berlin", "2026-01-15T11:00:00Z", "2026-10-25 02:30", "2026-10-25 02:30:00 +02:00",
            "2026-10-25 02:30:00 +01:00"
        ),
        (
            ":Europe/Berlin", "2026-01-15T11:00:00Z", "2026-10-25 02:30", "2026-10-25 02:30:00 +02:00",
            "2026-10-25 02:30:00 +01:00"
        ),
        (
            "/usr/share/zoneinfo/Europe/Berlin", "2026-01-15T11:00:00Z", "2026-10-25 02:30",
            "2026-10-25 02:30:00 +02:00", "2026-10-25 02:30:00 +01:00"
        ),
        (
            "CET-1CEST,M3.5.0,M10.5.0/3", "2026-01-15T11:00:00Z", "2026-10-25 02:30", "2026-10-25 02:30:00 +02:00",
            "2026-10-25 02:30:00 +01:00"
        ),
        (
            "EST5EDT,M3.2.0,M11.1.0", "2026-01-15T17:00:00Z", "2026-11-01 01:30", "2026-11-01 01:30:00 -04:00",
            "2026-11-01 01:30:00 -05:00"
        ),
    ]

    /// A library with one book whose only version is dated `recorded` (RFC 3339).
    private func library(recorded: String) async throws -> IvyHome {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let formatter = ISO8601DateFormatter()
        let date = try #require(formatter.date(from: recorded))
        try ivy.execute(
            "UPDATE history SET recorded_at = \(Int64(date.timeIntervalSince1970) * 1000) WHERE entity_id = '\(book)'")
        return ivy
    }

    @Test("a local WHEN is read in TZ's zone, whichever form TZ takes", arguments: zones.map(\.tz))
    func honoured(_ tz: String) async throws {
        let zone = try #require(Self.zones.first { $0.tz == tz })
        let ivy = try await library(recorded: zone.noon)
        let atNoon = try await ivy.runBinaryAsync(
            ["history", "--since", "2026-01-15 12:00", "--json"], environment: ["TZ": tz])
        #expect(atNoon.status == 0, "\(atNoon.stderr)")
        #expect((try atNoon.json() as? [Any])?.count == 1, "TZ=\(tz): local noon is \(zone.noon)")
        let after = try await ivy.runBinaryAsync(
            ["history", "--since", "2026-01-15 12:00:01", "--json"], environment: ["TZ": tz])
        #expect((try after.json() as? [Any])?.isEmpty == true, "TZ=\(tz): \(after.stdout)\(after.stderr)")
    }

    @Test("a local WHEN the clocks passed twice is refused with both instants (exit 64)", arguments: zones.map(\.tz))
    func ambiguous(_ tz: String) async throws {
        let zone = try #require(Self.zones.first { $0.tz == tz })
        let ivy = try await library(recorded: zone.noon)
        for arguments in [["history", "--since", zone.twice], ["restore", "--at", zone.twice, "--dry-run"]] {
            let result = try await ivy.runBinaryAsync(arguments, environment: ["TZ": tz])
            #expect(result.status == 64, "TZ=\(tz) \(arguments): \(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains("happened twice"), "\(result.stderr)")
            #expect(
                result.stderr.contains("give \(zone.first) for the first")
                    && result.stderr.contains("or \(zone.second) for the second"), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        // Each form it offers is taken as it is.
        let first = try await ivy.runBinaryAsync(["history", "--since", zone.first], environment: ["TZ": tz])
        #expect(first.status == 0, "\(first.stderr)")
    }

    @Test("a local WHEN the clocks skipped is refused; a TZ glibc would read as UTC is refused, not guessed")
    func refused() async throws {
        let ivy = try await library(recorded: "2026-01-15T11:00:00Z")
        let gap = try await ivy.runBinaryAsync(
            ["restore", "--at", "2026-03-29 02:30", "--dry-run"], environment: ["TZ": "Europe/Berlin"])
        #expect(gap.status == 64, "\(gap.stdout)\(gap.stderr)")
        #expect(gap.stderr.contains("2026-03-29 02:30:00 never happened in Europe/Berlin"), "\(gap.stderr)")
        let unknown = try await ivy.runBinaryAsync(
            ["history", "--since", "2026-01-15 12:00"], environment: ["TZ": "Mars/Olympus"])
        #expect(unknown.status == 64, "\(unknown.stdout)\(unknown.stderr)")
        #expect(unknown.stderr.contains("TZ 'Mars/Olympus' names no time zone"), "\(unknown.stderr)")
        // A WHEN that needs no zone does not care.
        let rfc = try await ivy.runBinaryAsync(
            ["history", "--since", "2026-01-15T11:00:00Z", "--json"], environment: ["TZ": "Mars/Olympus"])
        #expect(rfc.status == 0, "\(rfc.stderr)")
        #expect((try rfc.json() as? [Any])?.count == 1, "\(rfc.stdout)")
    }

    @Test(
        "times shown for people are in TZ's zone in every form glibc takes, with its offset; a TZ it cannot read: UTC",
        arguments: [
            ("CET-1CEST,M3.5.0,M10.5.0/3", "2026-01-15 12:00 +01:00"), (":Europe/Berlin", "2026-01-15 12:00 +01:00"),
            ("<+0530>-5:30", "2026-01-15 16:30 +05:30"), ("Mars/Olympus_Mons", "2026-01-15 11:00 +00:00"),
        ])
    func shownInZone(tz: String, shown: String) async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        // The last success: 2026-01-15T11:00:00Z.
        try ivy.execute("INSERT INTO settings (key, value) VALUES ('last_success', '1768474800000')")
        let status = try await ivy.runBinaryAsync(["status"], environment: ["TZ": tz])
        #expect(status.status == 0, "\(status.stderr)")
        let line = status.lines.first { $0.hasPrefix("last success") } ?? ""
        #expect(line.contains(" \(shown) ("), "\(line)")
    }

    @Test(
        "status shows every time in one zone with its offset, and a time copied from `ivy history` names that version",
        arguments: [("Europe/Berlin", "12:00:00 +01:00"), ("EST5EDT", "06:00:00 -05:00")])
    func copiedBack(tz: String, noon: String) async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        // Version 1 is recorded 700 ms into a second that is shown whole: copied back, it is
        // still that version's second. Version 2 is recorded now.
        try ivy.execute("UPDATE history SET recorded_at = 1768474800700 WHERE entity_id = '\(book)'")
        _ = try await ivy.run("book", "update", book, "--title", "Dune Messiah")
        for key in ["last_sync_time", "last_success"] {
            try ivy.execute("INSERT OR REPLACE INTO settings (key, value) VALUES ('\(key)', '1768474800000')")
        }
        let status = try await ivy.runBinaryAsync(["status"], environment: ["TZ": tz])
        #expect(status.status == 0, "\(status.stderr)")
        func row(_ name: String) -> String { status.lines.first { $0.hasPrefix(name + " ") } ?? "" }
        #expect(row("last sync").hasSuffix(" 2026-01-15 \(noon)"), "\(status.stdout)")
        #expect(row("last success").contains(" 2026-01-15 \(noon.prefix(5))\(noon.dropFirst(8)) ("), "\(status.stdout)")
        #expect(row("history").contains(" since 2026-01-15 \(noon), "), "\(status.stdout)")

        let history = try await ivy.runBinaryAsync(["history", book], environment: ["TZ": tz])
        #expect(history.status == 0, "\(history.stderr)")
        let first = history.lines.compactMap { $0.firstMatch(of: #/^(\S+ \S+ [+-]\d\d:\d\d)  +1  /#)?.1 }.first
        let time = String(try #require(first, "no version 1 row: \(history.stdout)"))
        #expect(time == "2026-01-15 \(noon)")
        let until = try await ivy.runBinaryAsync(["history", book, "--until", time, "--json"], environment: ["TZ": tz])
        let versions = try #require(try until.json() as? [[String: Any]], "\(until.stdout)\(until.stderr)")
        #expect(versions.map { $0["version"] as? Int } == [1], "\(until.stdout)")
        let restore = try await ivy.runBinaryAsync(
            ["restore", "--at", time, "--dry-run", book], environment: ["TZ": tz])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(restore.stdout.contains("would restore book \(book)") && restore.stdout.contains(": title"))
        // The same moment to the minute, as status shows it, is read the same way, in any zone.
        let minute = String(time.prefix(16)) + String(time.suffix(7))
        let since = try await ivy.runBinaryAsync(
            ["history", book, "--since", minute, "--json"], environment: ["TZ": "UTC"])
        #expect((try since.json() as? [Any])?.count == 2, "\(minute): \(since.stdout)\(since.stderr)")
    }
}
