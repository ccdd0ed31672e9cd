/// How many terminal columns text takes, and text cut or padded to a number of columns, so
/// tables line up and a cut never splits a character: whole grapheme clusters (what a reader
/// sees as one character) are kept or dropped, never a part of one.
///
/// The rules are those terminals follow (wcwidth and its successors): East Asian Wide and
/// Fullwidth characters and emoji take two columns; a ZWJ family, a flag or an emoji with a
/// skin tone is one emoji of two. Any other character is the sum of its code points: marks
/// that do not space, variation selectors and the zero-width joiner add nothing, a spacing
/// vowel sign (Devanagari, Bengali, Thai) adds a column, as glibc's wcswidth counts. A
/// control or format character is shown escaped (`TerminalText.escaped`), so it takes the
/// columns of its escape.
extension TerminalText {
    /// The columns `text` takes on a terminal once escaped.
    package static func width(_ text: String) -> Int {
        var total = 0
        for character in text { total += width(of: character) }
        return total
    }

    /// The columns one grapheme cluster takes.
    package static func width(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.count == 1, (0x20..<0x7F).contains(first.value) { return 1 }
        // A control or format character shows as its escape (a flag's tag characters stay).
        if scalars.contains(where: needsEscape), !isTagFlag(scalars) {
            var total = 0
            for scalar in scalars {
                total += needsEscape(scalar) ? escape(scalar).unicodeScalars.count : width(of: scalar)
            }
            return total
        }
        let properties = first.properties
        if properties.isEmojiPresentation {
            // VS15 asks for the text form of an emoji, one column.
            return scalars.contains("\u{FE0E}") ? 1 : 2
        }
        // VS16 asks for the emoji form of a character that defaults to text (❤️, a keycap 1️⃣);
        // a skin tone (☝🏽) or a zero-width joiner to another emoji makes one too.
        if properties.isEmoji, first.value > 0x7F || scalars.contains("\u{FE0F}"),
            scalars.contains(where: { $0 == "\u{FE0F}" || $0 == "\u{200D}" || $0.properties.isEmojiModifier })
        {
            return 2
        }
        // Two regional indicators are a flag.
        if isRegionalIndicator(first), scalars.count > 1 { return 2 }
        // Anything else is its code points side by side, as wcwidth counts them: an Indic or
        // Thai vowel sign that spaces (the ि of कि, the ำ of น้ำ) takes a column of its own.
        var total = 0
        for scalar in scalars { total += width(of: scalar) }
        return total
    }

    /// The columns one code point takes in a cluster that is not an emoji.
    private static func width(of scalar: Unicode.Scalar) -> Int {
        if isWide(scalar.value) { return 2 }
        switch scalar.properties.generalCategory {
        // Marks that do not space, and format characters (the zero-width joiner).
        case .nonspacingMark, .enclosingMark, .format: return 0
        default:
            // Hangul vowel and final jamo combine with the syllable before them.
            return (0x1160...0x11FF).contains(scalar.value) || (0xD7B0...0xD7FF).contains(scalar.value) ? 0 : 1
        }
    }

    /// `text` escaped and, when it takes more than `columns`, cut to whole characters that
    /// leave room for "…" in the last column. An escape is kept whole or left out, like any
    /// other character.
    package static func truncated(_ text: String, toWidth columns: Int) -> String {
        guard width(text) > columns else { return escaped(text) }
        guard columns > 0 else { return "" }
        var kept = ""
        var used = 0
        for character in text {
            let next = width(of: character)
            if used + next > columns - 1 { break }
            kept += escaped(String(character))
            used += next
        }
        return kept + "…"
    }

    /// `text` with spaces after it to fill `columns`; text already that wide is left as it is.
    package static func padded(_ text: String, toWidth columns: Int) -> String {
        text + String(repeating: " ", count: max(0, columns - width(text)))
    }

    /// A subdivision flag: U+1F3F4 and tag characters (🏴󠁧󠁢󠁳󠁣󠁴󠁿), which `escaped` keeps.
    private static func isTagFlag(_ scalars: Character.UnicodeScalarView) -> Bool {
        scalars.first?.value == blackFlag && scalars.dropFirst().allSatisfy(isTag)
    }

    private static func isRegionalIndicator(_ scalar: Unicode.Scalar) -> Bool {
        (0x1F1E6...0x1F1FF).contains(scalar.value)
    }

    /// Whether the code point is East Asian Wide (W) or Fullwidth (F).
    static func isWide(_ value: UInt32) -> Bool {
        var low = 0
        var high = wideRanges.count
        while low < high {
            let middle = (low + high) / 2
            if wideRanges[middle].upperBound < value {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low < wideRanges.count && wideRanges[low].contains(value)
    }

    /// The code points of East_Asian_Width W or F, in order: every assigned one of Unicode
    /// 14.0 (Python 3.11's `unicodedata`, which carries the Unicode Character Database's
    /// EastAsianWidth.txt), plus the blocks that file's `@missing` lines make Wide even where
    /// unassigned (CJK ideographs U+3400–4DBF, U+4E00–9FFF, U+F900–FAFF, planes 2 and 3), so
    /// ideographs added later count as wide too. Emoji added after 14.0 come out wide through
    /// `isEmojiPresentation`, which is the Swift runtime's own, newer, data.
    private static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0...0x23F0, 0x23F3...0x23F3,
        0x25FD...0x25FE, 0x2614...0x2615, 0x2648...0x2653, 0x267F...0x267F, 0x2693...0x2693, 0x26A1...0x26A1,
        0x26AA...0x26AB, 0x26BD...0x26BE, 0x26C4...0x26C5, 0x26CE...0x26CE, 0x26D4...0x26D4, 0x26EA...0x26EA,
        0x26F2...0x26F3, 0x26F5...0x26F5, 0x26FA...0x26FA, 0x26FD...0x26FD, 0x2705...0x2705, 0x270A...0x270B,
        0x2728...0x2728, 0x274C...0x274C, 0x274E...0x274E, 0x2753...0x2755, 0x2757...0x2757, 0x2795...0x2797,
        0x27B0...0x27B0, 0x27BF...0x27BF, 0x2B1B...0x2B1C, 0x2B50...0x2B50, 0x2B55...0x2B55, 0x2E80...0x2E99,
        0x2E9B...0x2EF3, 0x2F00...0x2FD5, 0x2FF0...0x2FFB, 0x3000...0x303E, 0x3041...0x3096, 0x3099...0x30FF,
        0x3105...0x312F, 0x3131...0x318E, 0x3190...0x31E3, 0x31F0...0x321E, 0x3220...0x3247, 0x3250...0x4DBF,
        0x4E00...0xA48C, 0xA490...0xA4C6, 0xA960...0xA97C, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19,
        0xFE30...0xFE52, 0xFE54...0xFE66, 0xFE68...0xFE6B, 0xFF01...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4,
        0x16FF0...0x16FF1, 0x17000...0x187F7, 0x18800...0x18CD5, 0x18D00...0x18D08, 0x1AFF0...0x1AFF3,
        0x1AFF5...0x1AFFB, 0x1AFFD...0x1AFFE, 0x1B000...0x1B122, 0x1B150...0x1B152, 0x1B164...0x1B167,
        0x1B170...0x1B2FB, 0x1F004...0x1F004, 0x1F0CF...0x1F0CF, 0x1F18E...0x1F18E, 0x1F191...0x1F19A,
        0x1F200...0x1F202, 0x1F210...0x1F23B, 0x1F240...0x1F248, 0x1F250...0x1F251, 0x1F260...0x1F265,
        0x1F300...0x1F320, 0x1F32D...0x1F335, 0x1F337...0x1F37C, 0x1F37E...0x1F393, 0x1F3A0...0x1F3CA,
        0x1F3CF...0x1F3D3, 0x1F3E0...0x1F3F0, 0x1F3F4...0x1F3F4, 0x1F3F8...0x1F43E, 0x1F440...0x1F440,
        0x1F442...0x1F4FC, 0x1F4FF...0x1F53D, 0x1F54B...0x1F54E, 0x1F550...0x1F567, 0x1F57A...0x1F57A,
        0x1F595...0x1F596, 0x1F5A4...0x1F5A4, 0x1F5FB...0x1F64F, 0x1F680...0x1F6C5, 0x1F6CC...0x1F6CC,
        0x1F6D0...0x1F6D2, 0x1F6D5...0x1F6D7, 0x1F6DD...0x1F6DF, 0x1F6EB...0x1F6EC, 0x1F6F4...0x1F6FC,
        0x1F7E0...0x1F7EB, 0x1F7F0...0x1F7F0, 0x1F90C...0x1F93A, 0x1F93C...0x1F945, 0x1F947...0x1F9FF,
        0x1FA70...0x1FA74, 0x1FA78...0x1FA7C, 0x1FA80...0x1FA86, 0x1FA90...0x1FAAC, 0x1FAB0...0x1FABA,
        0x1FAC0...0x1FAC5, 0x1FAD0...0x1FAD9, 0x1FAE0...0x1FAE7, 0x1FAF0...0x1FAF6, 0x20000...0x2FFFD,
        0x30000...0x3FFFD,
    ]
}
