package import Foundation

/// The bytes of a reply's JSON: what `JSONSerialization` writes with `.sortedKeys`, byte for
/// byte, for the values replies are made of (strings, Swift integers and booleans, arrays,
/// objects, NSNull); anything else goes to JSONSerialization itself.
///
/// Why not JSONSerialization always: with sorted keys it compares every pair of keys through
/// NSString with a locale, and bridges every value; for a page of 1,000 files that was most of
/// a listing's time.
package enum ReplyJSON {
    package static func data(_ object: [String: Any]) -> Data {
        if let fast = fastData(object) { return fast }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    /// The bytes written without JSONSerialization; nil when `object` holds a value left to it.
    /// Apart from `data` so a test can tell that the replies that matter take this path.
    package static func fastData(_ object: [String: Any]) -> Data? {
        var writer = Writer()
        guard (try? writer.write(object)) != nil else { return nil }
        return Data(writer.bytes)
    }

    /// A value the fast path leaves to JSONSerialization.
    struct Unsupported: Error {}

    private struct Writer {
        var bytes: [UInt8] = []

        mutating func write(_ value: Any) throws(Unsupported) {
            switch value {
            case let text as String: write(string: text)
            case let object as [String: Any]: try write(object: object)
            case let array as [Any]:
                bytes.append(UInt8(ascii: "["))
                for (index, element) in array.enumerated() {
                    if index > 0 { bytes.append(UInt8(ascii: ",")) }
                    try write(element)
                }
                bytes.append(UInt8(ascii: "]"))
            // Exactly these types: an NSNumber (which `as? Int` would also match) is left to
            // JSONSerialization, which tells its booleans from its numbers.
            case let flag as Bool where type(of: value) == Bool.self:
                bytes += Array((flag ? "true" : "false").utf8)
            case let number as Int where type(of: value) == Int.self:
                bytes += Array(String(number).utf8)
            case is NSNull:
                bytes += Array("null".utf8)
            default:
                throw Unsupported()
            }
        }

        mutating func write(object: [String: Any]) throws(Unsupported) {
            bytes.append(UInt8(ascii: "{"))
            // Pairs, not `object[key] as Any`: that is an Optional<Any> holding the value, which
            // no case below matches as Bool or Int, and every reply went to JSONSerialization.
            for (index, pair) in object.sorted(by: { Self.precedes($0.key, $1.key) }).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(string: pair.key)
                bytes.append(UInt8(ascii: ":"))
                try write(pair.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }

        /// JSONSerialization's order of keys: NSString's compare with `.numeric`,
        /// `.caseInsensitive` and `.forcedOrdering` in the system locale. Decided here where
        /// that is plain: the first difference is between two ASCII letters, compared without
        /// case, or one key is the other plus more. Any other pair (digits, punctuation,
        /// non-ASCII, keys differing only in case) is asked of NSString itself.
        static func precedes(_ left: String, _ right: String) -> Bool {
            var leftBytes = left.utf8.makeIterator()
            var rightBytes = right.utf8.makeIterator()
            while true {
                switch (leftBytes.next(), rightBytes.next()) {
                case (nil, nil): return foundationPrecedes(left, right)
                case (nil, .some(let next)): return isLetter(next) ? true : foundationPrecedes(left, right)
                case (.some(let next), nil): return isLetter(next) ? false : foundationPrecedes(left, right)
                case (.some(let a), .some(let b)):
                    guard isLetter(a), isLetter(b) else { return foundationPrecedes(left, right) }
                    let (lowerA, lowerB) = (a | 0x20, b | 0x20)
                    if lowerA != lowerB { return lowerA < lowerB }
                }
            }
        }

        private static func isLetter(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
        }

        private static func foundationPrecedes(_ left: String, _ right: String) -> Bool {
            left.compare(
                right, options: [.numeric, .caseInsensitive, .forcedOrdering], range: left.startIndex..<left.endIndex,
                locale: NSLocale.system) == .orderedAscending
        }

        /// As JSONSerialization escapes: quote, backslash, slash, and control characters.
        mutating func write(string: String) {
            bytes.append(UInt8(ascii: "\""))
            for byte in string.utf8 {
                switch byte {
                case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
                case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case UInt8(ascii: "/"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "/")]
                case 0x08: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
                case 0x0C: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
                case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
                default: bytes.append(byte)
                }
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }
}
