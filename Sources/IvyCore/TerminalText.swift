/// Text from the library, Drive or Google made safe to print on a terminal or write as one
/// log line: control characters cannot move the cursor, recolour the screen, set the title,
/// or start a forged line.
package enum TerminalText {
    /// Replaces C0 controls, DEL and C1 controls with Swift-style escapes: `\n`, `\r`, `\t`,
    /// and `\u{1B}` for the others. Everything else, backslashes included, is left as it is,
    /// so ordinary text (`C:\notes`) reads unchanged.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where isControl(scalar):
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// C0 (U+0000–U+001F), DEL (U+007F) and C1 (U+0080–U+009F).
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
