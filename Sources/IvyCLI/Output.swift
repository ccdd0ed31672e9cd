import Foundation
import IvyCore

/// Everything ivy prints goes through here: tables for people, JSON for programs.
struct Output {
    /// Bold table headers only for a person at a terminal who has not asked for NO_COLOR.
    let styled: Bool

    init(environment: [String: String]) {
        styled = isatty(STDOUT_FILENO) == 1 && environment["NO_COLOR"] == nil
    }

    func line(_ text: String = "") {
        print(text)
    }

    /// Pushes buffered standard output out now (before a long wait).
    func flush() {
        fflush(nil)
    }

    func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Left-aligned columns, two spaces apart; the last column is not padded.
    func table(_ headers: [String], _ rows: [[String]]) {
        let widths = headers.indices.map { column in
            ([headers[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0
        }
        func render(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                column == cells.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        let header = render(headers)
        line(styled ? "\u{1B}[1m\(header)\u{1B}[0m" : header)
        rows.forEach { line(render($0)) }
    }

    /// `label  value` lines with the labels aligned.
    func fields(_ pairs: [(String, String)]) {
        let width = pairs.map(\.0.count).max() ?? 0
        for (label, value) in pairs {
            line(label.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value)
        }
    }

    func json(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // A row written before the time rules may hold an infinity, which JSON has no number for.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        line(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}

enum Display {
    /// Cells show one line: the first line of a note, cut to `limit` characters.
    static func cell(_ text: String?, limit: Int = 40) -> String {
        guard let text, !text.isEmpty else { return "-" }
        let first = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let multiline = first.count < text.count
        if first.count > limit { return String(first.prefix(limit - 1)) + "…" }
        return multiline ? first + " …" : first
    }

    static func optional(_ text: String?) -> String {
        guard let text, !text.isEmpty else { return "-" }
        return text
    }

    static func date(_ milliseconds: Milliseconds) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
