import Foundation
import IvyCore
import Testing

@Suite("Tables line up by what a terminal shows, and cut only between characters")
struct TableTextTests {
    /// Titles and the columns each takes on a terminal, counted by hand: a CJK character or an
    /// emoji (a ZWJ family and a flag are one each) takes two, a combining accent none.
    static let titles: [(title: String, columns: Int, shown: String)] = [
        ("Plain", 5, "Plain"),
        ("三体", 4, "三体"),
        (
            "Family \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}", 9,
            "Family \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}"
        ),
        ("Ends in emoji \u{1F4D6}", 16, "Ends in emoji \u{1F4D6}"),
        // 39 columns of text, then the emoji: 41 in all, over the column's 40.
        ("A long title that ends in a book emoji \u{1F4D6}", 40, "A long title that ends in a book emoji …"),
        ("\u{1F1EF}\u{1F1F5} flag", 7, "\u{1F1EF}\u{1F1F5} flag"),
        ("Cafe\u{301}", 4, "Cafe\u{301}"),
        ("Skin \u{1F44D}\u{1F3FD}", 7, "Skin \u{1F44D}\u{1F3FD}"),
        // 24 characters of two columns: 19 fit before the "…" in 40.
        (
            String(repeating: "长篇小说的标题非常长", count: 2) + "长篇小说", 39,
            String(repeating: "长篇小说的标题非常长", count: 2).dropLast() + "…"
        ),
    ]

    @Test("book list through the binary: every column starts at the same terminal column, no character is halved")
    func bookList() async throws {
        let ivy = try IvyHome()
        for (index, entry) in Self.titles.enumerated() {
            let added = try await ivy.runBinaryAsync(
                "book", "add", "--title", entry.title, "--artist", "artist-\(index)")
            #expect(added.status == 0, "\(added.stderr)")
        }
        let list = try await ivy.runBinaryAsync("book", "list", "--full-ids")
        #expect(list.status == 0, "\(list.stderr)")
        // runBinaryAsync decodes with replacement: broken UTF-8 would show as U+FFFD.
        #expect(!list.stdout.unicodeScalars.contains("\u{FFFD}"))
        let header = try #require(list.lines.first)
        let artistStart = try #require(header.range(of: "ARTIST"))
        let artistColumn = TerminalText.width(String(header[..<artistStart.lowerBound]))
        // ID (36) and TITLE (as wide as the widest cell, 40), each followed by two spaces.
        #expect(artistColumn == 36 + 2 + 40 + 2)
        for (index, entry) in Self.titles.enumerated() {
            let line = try #require(list.lines.first { $0.contains("artist-\(index) ") }, "row \(index) missing")
            let artist = try #require(line.range(of: "artist-\(index)"))
            let before = String(line[..<artist.lowerBound])
            #expect(TerminalText.width(before) == artistColumn, "row \(index): \(line)")
            // The title cell as shown, then exactly the spaces its hand-counted width leaves.
            let cell = String(before.dropFirst(38))
            #expect(cell == entry.shown + String(repeating: " ", count: 40 - entry.columns + 2), "row \(index)")
        }
    }

    @Test("clip list cuts a long note on a character boundary, an emoji whole or not at all")
    func clipNotes() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.runBinaryAsync("book", "add", "--title", "Dune").stdout.trimmingCharacters(
            in: .newlines)
        let audio = try ivy.mp3("a.mp3")
        // 38 columns of text and a 2-column emoji: 40 fit; one more letter and the emoji must go.
        let notes = [String(repeating: "n", count: 38) + "\u{1F4D6}", String(repeating: "n", count: 39) + "\u{1F4D6}"]
        for note in notes {
            let added = try await ivy.runBinaryAsync(
                "clip", "add", "--book", book, "--start", "0", "--duration", "1", "--audio", audio, "--note", note)
            #expect(added.status == 0, "\(added.stderr)")
        }
        let list = try await ivy.runBinaryAsync("clip", "list")
        #expect(list.status == 0 && !list.stdout.unicodeScalars.contains("\u{FFFD}"))
        #expect(list.lines.contains { $0.hasSuffix("  " + notes[0]) })
        #expect(list.lines.contains { $0.hasSuffix("  " + String(repeating: "n", count: 39) + "…") })
    }

    @Test("a short note whose first line ends in … of its own still shows that more lines follow")
    func noteEndingInEllipsis() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.runBinaryAsync("book", "add", "--title", "Dune").stdout.trimmingCharacters(
            in: .newlines)
        let audio = try ivy.mp3("a.mp3")
        let added = try await ivy.runBinaryAsync(
            "clip", "add", "--book", book, "--start", "0", "--duration", "1", "--audio", audio, "--note",
            "Wait for it…\nthe second line")
        #expect(added.status == 0, "\(added.stderr)")
        let list = try await ivy.runBinaryAsync("clip", "list")
        #expect(list.lines.contains { $0.hasSuffix("  Wait for it… …") }, "\(list.stdout)")
    }
}
