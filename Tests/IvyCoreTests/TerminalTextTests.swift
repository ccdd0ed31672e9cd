import Glibc
import IvyCore
import Testing

@Suite("Text made safe for terminals and logs")
struct TerminalTextTests {
    @Test(
        "control characters are escaped in one readable form",
        arguments: [
            ("line\nbreak", #"line\nbreak"#), ("dos\r\n", #"dos\r\n"#), ("tab\there", #"tab\there"#),
            ("\u{1B}[2J\u{1B}]0;title\u{7}", #"\u{1B}[2J\u{1B}]0;title\u{7}"#), ("nul\u{0}", #"nul\u{0}"#),
            ("del\u{7F}", #"del\u{7F}"#), ("csi\u{9B}31m", #"csi\u{9B}31m"#), ("nel\u{85}", #"nel\u{85}"#),
            // Format characters and separators (issue 40 #5): reversing, isolating, hiding.
            ("id\u{202E}exe.txt", #"id\u{202E}exe.txt"#), ("\u{2066}a\u{2069}", #"\u{2066}a\u{2069}"#),
            ("\u{200E}\u{200F}\u{61C}", #"\u{200E}\u{200F}\u{61C}"#), ("a\u{2028}b\u{2029}", #"a\u{2028}b\u{2029}"#),
            ("zw\u{200B}sp", #"zw\u{200B}sp"#), ("soft\u{AD}hy", #"soft\u{AD}hy"#), ("\u{FEFF}bom", #"\u{FEFF}bom"#),
            ("a\u{E0041}", #"a\u{E0041}"#),
        ])
    func escaped(text: String, expected: String) {
        #expect(TerminalText.escaped(text) == expected)
        #expect(!TerminalText.escaped(text).unicodeScalars.contains(where: TerminalText.needsEscape))
    }

    @Test(
        "ordinary text is left exactly as it is",
        arguments: [
            "Dune", #"C:\notes\new"#, "Émile Zola — «Germinal» 📚", "", "a\u{A0}b", "👨‍👩‍👧‍👦",
            "می\u{200C}خواهم", "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", "עברית",
        ])
    func unchanged(text: String) {
        #expect(TerminalText.escaped(text) == text)
    }
}

@Suite("Display width: what a terminal shows, in columns")
struct DisplayWidthTests {
    @Test(
        "each character takes the columns a terminal gives it",
        arguments: [
            ("a", 1), ("Dune", 4), ("é", 1), ("e\u{301}", 1), ("a\u{301}\u{302}\u{303}", 1),
            ("三体", 4), ("ｶﾀｶﾅ", 4), ("ＡＢ", 4), ("한국어", 6),
            ("\u{1100}\u{1161}\u{11A8}", 2), ("📖", 2), ("👍🏽", 2), ("👨‍👩‍👧‍👦", 2),
            ("🇯🇵", 2), ("🇯🇵🇫🇷", 4), ("🏳️‍🌈", 2), ("❤️", 2), ("❤", 1), ("1️⃣", 2),
            ("☕", 2), ("☕\u{FE0E}", 1), ("\u{1F3FB}", 2), ("\u{200B}", 8), ("\u{301}", 0), ("…", 1),
            ("\u{202E}", 8), ("🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", 2),
            ("\u{3000}", 2), ("𠀋", 2), ("\u{2EBF0}", 2),
            ("हिन्दी", 5), ("कि", 2), ("বাংলা", 5),
            ("น้ำ", 2), ("ภาษาไทย", 7), ("☝🏽", 2), ("☝", 1),
            ("tab\there", 9), ("\u{1B}[2J", 9), ("\r\n", 4), ("\u{9B}", 6),
        ])
    func width(text: String, columns: Int) {
        #expect(TerminalText.width(text) == columns)
    }

    @Test(
        "text that is not emoji takes the columns glibc's wcswidth gives it",
        arguments: [
            "हिन्दी", "कि", "क्षत्रिय", "মাতৃভাষা",
            "বাংলা", "น้ำ", "ภาษาไทย", "กำ", "Cafe\u{301}",
            "三体", "한국어", "\u{1100}\u{1161}\u{11A8}", "Émile Zola", "\u{200D}x",
        ])
    func sameAsGlibc(text: String) throws {
        #expect(TerminalText.width(text) == (try glibcWidth(text)))
    }

    /// wcswidth in C.UTF-8, set for this thread only (tests run side by side).
    private func glibcWidth(_ text: String) throws -> Int {
        let utf8 = try #require(newlocale(LC_CTYPE_MASK, "C.UTF-8", nil))
        defer { freelocale(utf8) }
        let previous = uselocale(utf8)
        defer { uselocale(previous) }
        // Glibc's Swift module leaves wcswidth out (it is an X/Open extension): found by name.
        let process = try #require(dlopen(nil, RTLD_NOW))
        defer { dlclose(process) }
        let symbol = try #require(dlsym(process, "wcswidth"))
        let wcswidth = unsafeBitCast(symbol, to: (@convention(c) (UnsafePointer<wchar_t>?, Int) -> Int32).self)
        let wide = text.unicodeScalars.map { wchar_t(bitPattern: $0.value) } + [0]
        return Int(wcswidth(wide, wide.count - 1))
    }

    @Test("a control character counts as the escape it is shown as")
    func controlsAsEscaped() {
        for text in ["a\u{7}b", "\u{0}", "x\r\ny", "\u{7F}", "\u{85}", "a\u{202E}b", "x\u{2028}", "a\u{E0041}"] {
            #expect(TerminalText.width(text) == TerminalText.escaped(text).count)
        }
    }

    @Test(
        "a cut keeps whole characters and ends in … within the width",
        arguments: [
            ("Dune", 4, "Dune"), ("Dune Messiah", 6, "Dune …"), ("A book 📖", 9, "A book 📖"),
            ("A book 📖", 8, "A book …"), ("A book 📖!", 9, "A book …"),
            ("三体问题", 5, "三体…"), ("三体问题", 4, "三…"),
            ("Family 👨‍👩‍👧‍👦 trip", 9, "Family …"),
            ("Family 👨‍👩‍👧‍👦 trip", 10, "Family 👨‍👩‍👧‍👦…"),
            ("🇯🇵🇫🇷🇩🇪", 5, "🇯🇵🇫🇷…"), ("🇯🇵🇫🇷🇩🇪", 4, "🇯🇵…"),
            ("Cafe\u{301} noir", 5, "Cafe\u{301}…"), ("👍🏽👍🏿", 3, "👍🏽…"),
            ("हिन्दी पुस्तक", 4, "हि…"),
            ("हिन्दी पुस्तक", 6, "हिन्दी…"),
            ("ภาษาไทย", 4, "ภาษ…"), ("☝🏽☝🏽", 3, "☝🏽…"),
            ("bell\u{7}", 6, "bell…"), ("bell\u{7}", 10, #"bell\u{7}"#), ("x", 0, ""), ("xy", 1, "…"),
        ])
    func truncated(text: String, columns: Int, expected: String) {
        let cut = TerminalText.truncated(text, toWidth: columns)
        #expect(cut == expected)
        #expect(TerminalText.width(cut) <= columns)
        #expect(!cut.unicodeScalars.contains("\u{FFFD}"))
        // What is kept is a run of the escaped text's own characters, never a part of one.
        let kept = cut.hasSuffix("…") && !TerminalText.escaped(text).hasSuffix("…") ? String(cut.dropLast()) : cut
        #expect(TerminalText.escaped(text).hasPrefix(kept))
    }

    @Test("padding fills to the same width whatever the text")
    func padded() {
        for text in ["Dune", "三体", "📖 x", "e\u{301}", "👨‍👩‍👧‍👦🇯🇵", ""] {
            let cell = TerminalText.padded(text, toWidth: 8)
            #expect(TerminalText.width(cell) == 8)
            #expect(cell.hasPrefix(text))
        }
        #expect(TerminalText.padded("三体问题三体", toWidth: 8) == "三体问题三体")
    }
}
