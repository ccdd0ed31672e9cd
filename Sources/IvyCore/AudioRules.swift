/// What ivy accepts as clip audio.
package enum AudioRules {
    /// 50 MB: the mobile app's cap. Exactly this many bytes is allowed.
    package static let maximumBytes: Int64 = 52_428_800

    /// Whether audio of `bytes` bytes may be a clip's; every check of the cap goes through here.
    package static func allows(_ bytes: Int64) -> Bool { bytes <= maximumBytes }

    /// The cap as people read it: "50 MB".
    package static var limitText: String { "\(maximumBytes >> 20) MB" }

    /// "clip audio is limited to 50 MB (52,428,800 bytes)".
    package static var limitSentence: String {
        "clip audio is limited to \(limitText) (\(grouped(maximumBytes)) bytes)"
    }

    /// Why audio of `bytes` bytes cannot be a clip's, "53,000,000 bytes, over the 50 MB clip
    /// limit"; nil when it can.
    package static func overLimit(_ bytes: Int64) -> String? {
        allows(bytes) ? nil : "\(grouped(bytes)) bytes, over the \(limitText) clip limit"
    }

    /// How many leading bytes `looksLikeMP3` needs.
    package static let sniffLength = 4

    /// True when the bytes start with an ID3v2 tag or an MPEG audio frame header.
    package static func looksLikeMP3(_ header: some Collection<UInt8>) -> Bool {
        let bytes = Array(header.prefix(sniffLength))
        guard bytes.count >= 3 else { return false }
        if bytes[0] == UInt8(ascii: "I"), bytes[1] == UInt8(ascii: "D"), bytes[2] == UInt8(ascii: "3") {
            return true
        }
        guard bytes.count >= 2 else { return false }
        // 11 sync bits, then a version that is not "reserved" (01) and a layer that is not "reserved" (00).
        let sync = bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0
        let version = (bytes[1] >> 3) & 0x03
        let layer = (bytes[1] >> 1) & 0x03
        return sync && version != 0x01 && layer != 0x00
    }

    /// "52,428,800": byte counts in messages are easier to read with separators.
    package static func grouped(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return value < 0 ? "-" + out : out
    }
}
