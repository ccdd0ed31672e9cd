/// Text from the library, Drive or Google made safe to print on a terminal or write as one
/// log line: control characters cannot move the cursor, recolour the screen, set the title,
/// or start a forged line, and invisible format characters cannot reorder what is shown.
package enum TerminalText {
    /// Replaces C0 controls, DEL and C1 controls, the line and paragraph separators (U+2028,
    /// U+2029), and Unicode's format characters (Cf) with Swift-style escapes: `\n`, `\r`,
    /// `\t`, and `\u{1B}` or `\u{202E}` for the others. Format characters include the bidi
    /// embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) and marks (U+200E,
    /// U+200F, U+061C), which make a row display reversed and can spoof an id or a path, and
    /// invisible ones (soft hyphen, word joiner, byte order mark). Two stay: the zero-width
    /// joiner and non-joiner (U+200D, U+200C), with which emoji and several scripts are
    /// written and which move nothing; so do the tag characters of a flag such as 🏴󠁧󠁢󠁳󠁣󠁴󠁿.
    /// Everything else, backslashes included, is left as it is, so ordinary text (`C:\notes`)
    /// reads unchanged.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 8)
        var inFlag = false
        for scalar in text.unicodeScalars {
            let tag = isTag(scalar)
            inFlag = scalar.value == blackFlag || (inFlag && tag)
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where tag && inFlag: result.unicodeScalars.append(scalar)
            case _ where needsEscape(scalar): result += escape(scalar)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// C0 (U+0000–U+001F), DEL (U+007F) and C1 (U+0080–U+009F).
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Whether `scalar` is shown as its escape: a control character, a line or paragraph
    /// separator, or a format character other than the two joiners (tag characters after a
    /// black flag are kept by `escaped`, which sees what precedes them).
    package static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        if isControl(scalar) { return true }
        switch scalar.value {
        case 0x200C, 0x200D: return false
        case 0x2028, 0x2029: return true
        default: return scalar.properties.generalCategory == .format
        }
    }

    /// `\n`, `\r`, `\t`, or `\u{HEX}`.
    static func escape(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\n": "\\n"
        case "\r": "\\r"
        case "\t": "\\t"
        default: "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        }
    }

    /// JSON text with every character `escaped` would escape written as a `\uXXXX` escape (a
    /// surrogate pair above U+FFFF): the same string to a JSON reader, and no bidi override or
    /// line separator for a person who reads the file on a terminal. `json` is an encoder's
    /// output, so such a character can only be inside a string.
    package static func jsonEscaped(_ json: String) -> String {
        // C0 characters are the encoder's to escape, and outside strings they are its whitespace.
        func escapes(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= 0x20 && needsEscape(scalar) }
        guard json.unicodeScalars.contains(where: escapes) else { return json }
        var result = ""
        result.unicodeScalars.reserveCapacity(json.unicodeScalars.count + 8)
        for scalar in json.unicodeScalars {
            guard escapes(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            for unit in String(scalar).utf16 {
                let hex = String(unit, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return result
    }

    static let blackFlag: UInt32 = 0x1F3F4

    /// A tag character (U+E0020–U+E007F), which spells a subdivision flag after U+1F3F4.
    static func isTag(_ scalar: Unicode.Scalar) -> Bool {
        (0xE0020...0xE007F).contains(scalar.value)
    }
}
