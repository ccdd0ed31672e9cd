import Foundation
import IvyCore

/// Everything ivy prints goes through here: tables for people, JSON for programs.
struct Output {
    let streams: Streams
    /// Bold table headers only for a person at a terminal who has not asked for NO_COLOR.
    let styled: Bool

    init(_ context: Context) {
        streams = context.streams
        styled = context.terminal.styled
    }

    func line(_ text: String = "") {
        streams.output(text + "\n")
    }

    /// One line on standard error; what it echoes (a Drive error, a file name) is escaped.
    func error(_ text: String) {
        streams.error(TerminalText.escaped(text) + "\n")
    }

    /// Text on standard error as it is: already escaped, or a progress line's control codes.
    func errorText(_ text: String) {
        streams.error(text)
    }

    /// Left-aligned columns, two spaces apart; the last column is not padded. Every cell is
    /// escaped, whoever built it. Columns are measured in terminal columns, not characters:
    /// a CJK title or an emoji takes two (`TerminalText.width`).
    func table(_ headers: [String], _ rows: [[String]]) {
        let rows = rows.map { $0.map(TerminalText.escaped) }
        let widths = headers.indices.map { column in
            ([headers[column]] + rows.map { $0[column] }).map(TerminalText.width).max() ?? 0
        }
        func render(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                column == cells.count - 1 ? cell : TerminalText.padded(cell, toWidth: widths[column])
            }.joined(separator: "  ")
        }
        let header = render(headers)
        line(styled ? "\u{1B}[1m\(header)\u{1B}[0m" : header)
        for row in rows { line(render(row)) }
    }

    /// `label  value` lines with the labels aligned.
    func fields(_ pairs: [(String, String)]) {
        let width = pairs.map { TerminalText.width($0.0) }.max() ?? 0
        for (label, value) in pairs {
            line(TerminalText.padded(label, toWidth: width) + "  " + TerminalText.escaped(value))
        }
    }

    /// One JSON document for `--json`, written by ivy's one convention (`JSONOutput`).
    func json(_ value: some Encodable) throws {
        line(try JSONOutput.text(value))
    }
}

/// Text from the library, Drive or Google is shown with its control characters escaped
/// (`TerminalText`): tables and `show` fields escape every value, `error` every line, and
/// the few plain lines that echo such text use `Display.safe`. JSON is escaped by its encoder.
enum Display {
    /// Cells show one line: the first line of a note, escaped and cut to `limit` terminal
    /// columns on a character boundary (an emoji is kept whole or left out, never halved).
    static func cell(_ text: String?, limit: Int = 40) -> String {
        guard let text, !text.isEmpty else { return "-" }
        let lines = text.unicodeScalars.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        var first = lines.first.map { String(String.UnicodeScalarView($0)) } ?? ""
        if first.unicodeScalars.last == "\r" { first.unicodeScalars.removeLast() }
        // A line that was cut already ends in "…"; one that ends in "…" of its own was not.
        let cut = TerminalText.width(first) > limit
        let shown = TerminalText.truncated(first, toWidth: limit)
        return lines.count > 1 && !cut ? shown + " …" : shown
    }

    static func optional(_ text: String?) -> String {
        guard let text, !text.isEmpty else { return "-" }
        return safe(text)
    }

    static func safe(_ text: String) -> String {
        TerminalText.escaped(text)
    }

    /// A past time for people, to the minute with its offset and its age:
    /// `2026-11-26 10:00 +01:00 (3 days ago)`.
    static func dateWithAge(_ milliseconds: Milliseconds, now: Milliseconds, zone: LocalZone?) -> String {
        "\(time(milliseconds, zone: zone, seconds: false)) (\(age(now - milliseconds)))"
    }

    /// A moment as people read it, and give it back as a `WHEN`: `2026-11-26 10:00:00 +01:00`
    /// (`LocalTime.shown`), in `zone` (the zone `TZ` names, read as the C library reads it in
    /// the binary), or in UTC (`+00:00`) when there is none to read.
    static func time(_ milliseconds: Milliseconds, zone: LocalZone?, seconds: Bool = true) -> String {
        let utc = Int64((Double(milliseconds) / 1000).rounded(.down))
        return LocalTime.shown(utcSeconds: utc, offset: zone?.offset(at: utc) ?? 0, seconds: seconds)
    }

    /// The local time of day, `10:00:00`, for lines that follow one another within a run.
    static func clock(_ milliseconds: Milliseconds, zone: LocalZone?) -> String {
        String(time(milliseconds, zone: zone).dropFirst(11).prefix(8))
    }

    /// `just now`, `5 minutes ago`, `1 hour ago`, `3 days ago`.
    static func age(_ milliseconds: Milliseconds) -> String {
        let minutes = max(0, milliseconds) / 60_000
        func ago(_ count: Milliseconds, _ unit: String) -> String { "\(count) \(unit)\(count == 1 ? "" : "s") ago" }
        if minutes < 1 { return "just now" }
        if minutes < 60 { return ago(minutes, "minute") }
        if minutes < 48 * 60 { return ago(minutes / 60, "hour") }
        return ago(minutes / (24 * 60), "day")
    }

    /// RFC 3339 in UTC, `2026-11-26T09:00:00Z`: for `--json`, which programs read.
    static func rfc3339(_ milliseconds: Milliseconds) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
