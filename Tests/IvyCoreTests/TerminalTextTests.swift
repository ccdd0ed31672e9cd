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
        ])
    func escaped(text: String, expected: String) {
        #expect(TerminalText.escaped(text) == expected)
        #expect(!TerminalText.escaped(text).unicodeScalars.contains(where: TerminalText.isControl))
    }

    @Test(
        "ordinary text is left exactly as it is",
        arguments: [
            "Dune", #"C:\notes\new"#, "Émile Zola — «Germinal» 📚", "", "a\u{A0}b", "\u{200B}",
        ])
    func unchanged(text: String) {
        #expect(TerminalText.escaped(text) == text)
    }
}
